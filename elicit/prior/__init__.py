"""The prior set-up, everything decided before the expert's first answer: the coupled set J,
the threshold prior and the no-feedback MAP (:mod:`~elicit.prior.setup`), and the choice of
tau^2 (:mod:`~elicit.prior.tau2`).
"""

from elicit.prior.setup import (
    PLACEHOLDER_THRESHOLD_MEAN,
    coupled_candidates,
    coupled_features,
    fit_no_feedback,
    fixed_hyper,
    no_feedback_data,
)
from elicit.prior.tau2 import (
    ESTIMATOR_TAU2_GRID,
    SWEEP_TAU2_GRID,
    TAU2_MODES,
    check_grid,
    check_tau2,
    cv_tau2,
    ml_tau2,
)

__all__ = [
    "ESTIMATOR_TAU2_GRID",
    "PLACEHOLDER_THRESHOLD_MEAN",
    "SWEEP_TAU2_GRID",
    "TAU2_MODES",
    "check_grid",
    "check_tau2",
    "coupled_candidates",
    "coupled_features",
    "cv_tau2",
    "fit_no_feedback",
    "fixed_hyper",
    "ml_tau2",
    "no_feedback_data",
]
