"""Dense linear algebra shared by the numpy engine and the fast utility screen."""

from __future__ import annotations

import numpy as np
from scipy.linalg import LinAlgError, cho_factor, cho_solve


def damped_cho_factor(A: np.ndarray):
    """Cholesky factor of a symmetric A that should be positive definite.

    Away from a MAP (a stale Hessian, or a point an optimiser left early) A can be
    indefinite; a growing multiple of the identity is then added, Levenberg-style, until
    the factorisation succeeds.
    """
    scale = max(1.0, float(np.max(np.abs(np.diag(A))))) if A.size else 1.0
    lam = 0.0
    eye = np.eye(len(A))
    while True:
        try:
            return cho_factor(A + lam * eye, check_finite=False)
        except LinAlgError:
            lam = 1e-8 * scale if lam == 0.0 else lam * 10.0
            if not np.isfinite(lam) or lam > 1e12 * scale:
                raise


def damped_solve(A: np.ndarray, g: np.ndarray) -> np.ndarray:
    """Solve A x = g with :func:`damped_cho_factor`.

    When A is positive definite (the common case) numpy's own calls are used: on the small
    systems of Newton steps (d + 1 ~ 10-100 parameters) scipy's per-call overhead would cost
    more than the factorisation.
    """
    try:
        np.linalg.cholesky(A)
    except np.linalg.LinAlgError:
        return cho_solve(damped_cho_factor(A), g, check_finite=False)
    return np.linalg.solve(A, g)
