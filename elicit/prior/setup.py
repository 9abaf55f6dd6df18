"""The model before any answer: the coupled set J, the threshold prior and the no-feedback MAP.

Every path that fits the model starts here (elicitations, the estimator, the experiments, the
tau2 choices of :mod:`elicit.prior.tau2`). Three rules are stated once:

* **The coupled set J** of the known-coupling models is the set of features in the candidate
  pairs (:func:`coupled_features`). When the answers come first (the estimator), the
  candidates are the pairs within J, and J defaults to the features of the similar/dissimilar
  answers (:func:`coupled_candidates`).
* **The threshold placeholder.** Without answers xi is independent of everything else, so a
  fit with no answers uses :data:`PLACEHOLDER_THRESHOLD_MEAN` for ``threshold_mean="auto"``
  (:func:`no_feedback_data`).
* **The authors' threshold rule.** ``"auto"`` is the mean of ``gamma0 . w`` over the candidate
  pairs at the no-feedback MAP ``gamma0`` (resolved by :func:`fit_no_feedback`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import numpy as np

from elicit.engines.base import Engine
from elicit.internal.threads import single_blas_thread
from elicit.model.result import MAPResult
from elicit.model.spec import Hyper, ModelData, all_pairs, auto_threshold_mean

#: The threshold prior mean of a fit without answers (see the module docstring).
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
    """The candidate pairs of a known-coupling model whose answers are given up front: every
    pair within J, which is ``coupled`` (column indices) or else the features of the
    ``answered`` pairs (:func:`coupled_features` of the result gives J back if |J| >= 2)."""
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
    """The no-feedback model an elicitation starts from: its data (threshold prior resolved,
    J from ``candidates``, None for all pairs) and its MAP.

    ``"auto"`` (the module docstring): gamma0 does not depend on the placeholder mean of the
    first fit, so the second fit only moves xi. The relevance model's zeta is fitted with
    gamma (``relevance``: its classes, default nothing judged).
    """
    coupled = coupled_features(np.shape(X)[1], candidates)
    if hyper.threshold_mean != "auto":
        data = ModelData(X, y, U, hyper, coupled=coupled, relevance=relevance)
        return data, engine.fit(data)
    probe = no_feedback_data(X, y, U, hyper, coupled, relevance)
    fit0 = engine.fit(probe)
    data = ModelData(X, y, U, hyper.with_threshold_mean(
        auto_threshold_mean(U, fit0.gamma, candidates)), coupled=coupled, relevance=relevance)
    fit = engine.fit(data, init=fit0)
    # that refit's Hessian belongs to the placeholder prior: not for later refits
    return data, dataclasses.replace(fit, warm_hessian=None)
