"""The model before any answer, which every fit starts from: the coupled set J, the threshold
prior (without answers xi is independent of everything else, so ``"auto"`` is a placeholder
until gamma0 is fitted) and the no-feedback MAP.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import numpy as np

from elicit.engines.base import Engine
from elicit.internal.threads import single_blas_thread
from elicit.model.result import MAPResult
from elicit.model.spec import Hyper, ModelData, all_pairs, auto_threshold_mean

#: The threshold prior mean of a fit without answers (module docstring).
PLACEHOLDER_THRESHOLD_MEAN = 1.0


def coupled_features(p: int, pairs: np.ndarray | None) -> np.ndarray:
    """The coupled set J as a boolean mask of length p: the features in the candidate
    ``pairs`` (None: all pairs)."""
    if pairs is None:
        return np.full(p, p >= 2)
    mask = np.zeros(p, dtype=bool)
    mask[np.asarray(pairs, dtype=int).reshape(-1)] = True
    return mask


def coupled_candidates(answered: np.ndarray, coupled: Sequence[int] | None = None,
                       ) -> np.ndarray:
    """The candidate pairs of a known-coupling model whose answers come first (the estimator):
    every pair within J, ``coupled`` (column indices) or else the features of ``answered``."""
    features = np.asarray(answered if coupled is None else coupled, dtype=int).reshape(-1)
    J = np.unique(features)
    return J[all_pairs(len(J))]


def no_feedback_data(X: np.ndarray, y: np.ndarray, U: np.ndarray, hyper: Hyper,
                     coupled: np.ndarray | None = None, relevance: np.ndarray | None = None,
                     ) -> ModelData:
    """The model data without pair answers (``"auto"`` threshold mean: the placeholder);
    ``relevance``: the relevance model's classes (default: nothing judged)."""
    if hyper.threshold_mean == "auto":
        hyper = hyper.with_threshold_mean(PLACEHOLDER_THRESHOLD_MEAN)
    return ModelData(X, y, U, hyper, coupled=coupled, relevance=relevance)


def fixed_hyper(tau2: float, model: str = "paper", **priors: float) -> Hyper:
    """The fixed-tau2 hyperparameters of a no-feedback fit at ``tau2`` (``priors``: a_sigma,
    b_sigma if not the paper's)."""
    return Hyper(variant="fixed", tau2=float(tau2), model=model, **priors)


@single_blas_thread
def fit_no_feedback(engine: Engine, X, y, U, hyper: Hyper, candidates: np.ndarray | None,
                    relevance: np.ndarray | None = None) -> tuple[ModelData, MAPResult]:
    """The no-feedback model an elicitation starts from: its data (J from ``candidates``, None for
    all pairs) and its MAP. The authors' ``"auto"`` threshold mean is the mean of ``gamma0 . w``
    over the candidates at the no-feedback MAP gamma0, which does not depend on the
    placeholder: the second fit only moves xi."""
    coupled = coupled_features(np.shape(X)[1], candidates)
    probe = no_feedback_data(X, y, U, hyper, coupled, relevance)
    fit0 = engine.fit(probe)
    if hyper.threshold_mean != "auto":
        return probe, fit0
    data = ModelData(X, y, U, hyper.with_threshold_mean(
        auto_threshold_mean(U, fit0.gamma, candidates)), coupled=coupled, relevance=relevance)
    fit = engine.fit(data, init=fit0)
    # that refit's Hessian belongs to the placeholder prior: not for later refits
    return data, dataclasses.replace(fit, warm_hessian=None)
