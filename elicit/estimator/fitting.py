"""The estimator's model from its resolved inputs: tau2 (given, chosen on the no-feedback model,
or learned) and the MAP with the answers.
"""

from __future__ import annotations

import numpy as np

from elicit.elicitation.answers import Answer
from elicit.elicitation.kinds.pairs import PAIRS
from elicit.engines.base import Engine
from elicit.errors import ElicitError
from elicit.model.result import MAPResult
from elicit.model.spec import Hyper, ModelData
from elicit.prior.setup import coupled_features, fit_no_feedback, no_feedback_data
from elicit.prior.tau2 import cv_tau2, ml_tau2

#: Folds of ``tau2="cv"`` (fewer when there are fewer samples).
CV_FOLDS = 5


def choose_tau2(tau2: float | str, grid: list[float], X: np.ndarray, y: np.ndarray,
                U: np.ndarray, eng: Engine, model: str, a_sigma: float, b_sigma: float,
                candidates: np.ndarray | None = None,
                ) -> tuple[float, dict[float, float] | None]:
    """tau2 of the model and the grid's scores: given, or chosen on the no-feedback model
    ("ml", "cv"; a known-coupling model's J: the features of ``candidates``)."""
    if tau2 == "ml":
        coupled = None if candidates is None else coupled_features(X.shape[1], candidates)
        return ml_tau2(X, y, U, grid, float(a_sigma), float(b_sigma), eng,
                       model=model, coupled=coupled)
    if tau2 == "cv":
        n = X.shape[0]
        if n < 2:
            raise ElicitError(f"tau2='cv' needs at least 2 samples, got n_samples = {n}; "
                              "give tau2 a number or use 'ml'")
        # with the paper's sigma prior: with normalised y it barely matters (docs/estimator.md)
        return cv_tau2(X, y, U, grid, min(CV_FOLDS, n), engine=eng, model=model,
                       candidates=candidates)
    if tau2 == "learned":
        return Hyper().tau2, None  # a placeholder: the learned variant ignores it
    return float(tau2), None


def fit_map(X: np.ndarray, y: np.ndarray, U: np.ndarray, hyper: Hyper, eng: Engine,
            feedback: list[tuple[int, int, Answer]], candidates: np.ndarray,
            relevance: np.ndarray | None = None) -> tuple[ModelData, MAPResult, bool]:
    """The model's data and MAP, and whether any pair answer entered it. ``candidates`` set J
    and the pairs ``"auto"`` averages over; ``relevance`` (the relevance model's classes)
    enter with the answers, after the threshold prior, as in an Elicitor."""
    pairs = np.array([(i, j) for i, j, a in feedback if a.outcome is not None],
                     dtype=int).reshape(-1, 2)
    f = np.array([a.outcome for _, _, a in feedback if a.outcome is not None], dtype=int)
    if len(f) == 0:
        # xi does not enter the model: the placeholder saves resolving "auto"
        data = no_feedback_data(X, y, U, hyper, coupled_features(X.shape[1], candidates), relevance)
        return data, eng.fit(data), False
    base, fit0 = fit_no_feedback(eng, X, y, U, hyper, candidates)
    data = base.with_feedback(pairs, f)
    if relevance is not None:
        data = data.with_relevance(relevance)
    data = PAIRS.judged(data, pairs)  # as an Elicitor enters them: both features relevant
    # from the no-feedback MAP's point (not a warm refit): no second d n^2 Hessian
    return data, eng.fit(data, init=fit0.params), True
