"""Dense linear algebra shared by the numpy engine and the fast utility screen."""

from __future__ import annotations

import numpy as np
from scipy.linalg import LinAlgError, cho_factor, cho_solve, get_lapack_funcs


def damped_cho_factor(A: np.ndarray):
    """Cholesky factor of a symmetric A, with a growing multiple of the identity added
    (Levenberg) while it is not positive definite (a stale Hessian away from a MAP)."""
    if A.size == 0:
        return cho_factor(A, check_finite=False)
    scale = max(1.0, float(np.max(np.abs(np.diag(A)))))
    lam = 0.0
    eye = np.eye(len(A))
    # potrf as cho_factor calls it, without its checks: on the Newton steps' small systems
    # (up to twenty tries) the checks cost five times the factorisation.
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
    """Solve A x = g with :func:`damped_cho_factor`; numpy's calls when A is positive
    definite (scipy's per-call overhead exceeds the factorisation of small systems)."""
    try:
        np.linalg.cholesky(A)
    except np.linalg.LinAlgError:
        return cho_solve(damped_cho_factor(A), g, check_finite=False)
    return np.linalg.solve(A, g)


def stacked_cholesky(S: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Cholesky factors of a stack (C, n, n) and which exist (the others: the identity); all
    at once when all do (the common case), else one by one."""
    try:
        return np.linalg.cholesky(S), np.ones(len(S), bool)
    except np.linalg.LinAlgError:
        pass
    L = np.empty_like(S)
    pd = np.ones(len(S), bool)
    for c in range(len(S)):
        try:
            L[c] = np.linalg.cholesky(S[c])
        except np.linalg.LinAlgError:
            L[c], pd[c] = np.eye(S.shape[1]), False
    return L, pd
