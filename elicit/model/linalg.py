"""Dense linear algebra shared by the numpy engine and the fast utility screen."""

from __future__ import annotations

import numpy as np
from scipy.linalg import LinAlgError, cho_factor, cho_solve, get_lapack_funcs


def damped_cho_factor(A: np.ndarray):
    """Cholesky factor of a symmetric A that should be positive definite.

    Away from a MAP (a stale Hessian, or a point an optimiser left early) A can be
    indefinite; a growing multiple of the identity is then added, Levenberg-style, until
    the factorisation succeeds.
    """
    if A.size == 0:
        return cho_factor(A, check_finite=False)
    scale = max(1.0, float(np.max(np.abs(np.diag(A)))))
    lam = 0.0
    eye = np.eye(len(A))
    # LAPACK's potrf as scipy's cho_factor calls it (upper factor, not cleaned, on a copy),
    # without cho_factor's checks: an indefinite A takes up to twenty tries here, and on the
    # Newton steps' small systems the checks cost five times the factorisation.
    potrf, = get_lapack_funcs(("potrf",), (A,))
    while True:
        c, info = potrf(A + lam * eye, lower=False, overwrite_a=True, clean=False)
        if info == 0:
            return c, False
        if info < 0:
            raise ValueError(f"potrf: illegal value in argument {-info}")
        lam = 1e-8 * scale if lam == 0.0 else lam * 10.0
        if not np.isfinite(lam) or lam > 1e12 * scale:
            raise LinAlgError(f"{info}-th leading minor of the array is not positive "
                              "definite, even damped")


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
