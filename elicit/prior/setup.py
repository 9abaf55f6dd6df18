"""The model before any answer: the coupled set J, the threshold prior and the no-feedback MAP.

Every path that fits the model starts here: an :class:`~elicit.elicitation.elicitor.Elicitor`
(sweeps and sessions), the estimator, the reference lines and the Table 1 loops of the
experiments, and the tau2 choices of :mod:`elicit.prior.tau2`. Three rules are stated once:

* **The coupled set J** of the known-coupling models is the set of features that occur in
  the candidate pairs, i.e. those the expert can be asked about (:func:`coupled_features`).
  The other models ignore it. When the answers come first and no question set exists (the
  estimator), the candidates are the pairs within J, and J defaults to the features the
  expert judged: those of the similar/dissimilar answers (:func:`coupled_candidates`).
* **The threshold placeholder.** Without answers the threshold xi is independent of
  everything else, so its prior mean changes neither gamma's MAP nor any prediction; a fit
  with no answers uses :data:`PLACEHOLDER_THRESHOLD_MEAN` where ``threshold_mean`` is
  ``"auto"`` (:func:`no_feedback_data`) instead of resolving it.
* **The authors' threshold rule.** ``threshold_mean="auto"`` is the mean of
  ``gamma0 . w`` over the candidate pairs at the no-feedback MAP ``gamma0``
  (:func:`~elicit.model.spec.auto_threshold_mean`, resolved by :func:`fit_no_feedback`).
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
    """The coupled set J as a boolean mask of length p: the features that occur in ``pairs``
    (the candidate pairs, i.e. what the expert can be asked about; None: all pairs)."""
    if pairs is None:
        return np.full(p, p >= 2)
    mask = np.zeros(p, dtype=bool)
    mask[np.asarray(pairs, dtype=int).reshape(-1)] = True
    return mask


def coupled_candidates(answered: np.ndarray, coupled: Sequence[int] | None = None,
                       ) -> np.ndarray:
    """The candidate pairs of a known-coupling model whose answers are given up front (no
    question set to take J from): every pair within J.

    J is ``coupled`` (column indices) or, when None, the features of the ``answered`` pairs
    (those with a similar/dissimilar answer), i.e. the features the expert could judge.
    :func:`coupled_features` of the result gives J back whenever J holds two features or more.
    """
    features = np.asarray(answered if coupled is None else coupled, dtype=int).reshape(-1)
    J = np.unique(features)
    return J[all_pairs(len(J))]


def no_feedback_data(X: np.ndarray, y: np.ndarray, U: np.ndarray, hyper: Hyper,
                     coupled: np.ndarray | None = None, relevance: np.ndarray | None = None,
                     ) -> ModelData:
    """The model data without pair answers; ``threshold_mean="auto"`` becomes the placeholder
    :data:`PLACEHOLDER_THRESHOLD_MEAN` (xi does not enter a fit without pair answers).
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
    coupled set J from ``candidates``, None for all pairs, which are then not listed) and
    its MAP.

    ``threshold_mean="auto"`` is the authors' rule: the mean of ``gamma0 . w`` over the
    candidate pairs at the no-feedback MAP ``gamma0``. With no feedback xi is independent of
    everything else, so gamma0 does not depend on the placeholder mean of the first fit, and
    the second fit only moves xi.

    The relevance model's start has no relevance answers either (``relevance``: its classes,
    default nothing judged); zeta is fitted with gamma (its MAP: the share of relevant
    features the data suggest).
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
    # The Hessian that refit used belongs to the placeholder threshold prior: later refits
    # from this MAP must not be preconditioned with it.
    return data, dataclasses.replace(fit, warm_hessian=None)
