"""The damped factorisation of :mod:`elicit.model.linalg` against its definition."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.linalg import LinAlgError, cho_factor, cho_solve

from elicit.model.linalg import damped_cho_factor, damped_solve


def _schedule(scale: float):
    lam = 0.0
    while lam <= 1e12 * scale:
        yield lam
        lam = 1e-8 * scale if lam == 0.0 else lam * 10.0


@pytest.mark.parametrize("shift", [0.5, -1e-9, -0.3, -40.0])
def test_damped_factor_is_the_first_positive_definite_shift_of_the_schedule(shift):
    """A + lam I for the first lam of 0, 1e-8 s, 1e-7 s, ... (s = max(1, max |diag A|)) that
    scipy's cho_factor accepts, bit for bit that factor; its solve solves that system."""
    rng = np.random.default_rng(3)
    k = 9
    Q = np.linalg.qr(rng.normal(size=(k, k)))[0]
    ev = np.linspace(1.0, 5.0, k)
    ev[0] = shift                                     # one eigenvalue: PD or not
    A = (Q * ev) @ Q.T
    A = 0.5 * (A + A.T)
    scale = max(1.0, float(np.max(np.abs(np.diag(A)))))
    for lam in _schedule(scale):
        try:
            ref = cho_factor(A + lam * np.eye(k), check_finite=False)
            break
        except LinAlgError:
            continue
    c, lower = damped_cho_factor(A)
    assert lower is ref[1]
    np.testing.assert_array_equal(np.triu(c), np.triu(ref[0]))
    g = rng.normal(size=k)
    x = cho_solve((c, lower), g)
    # a backward-stable solve: the residual is rounding of the system's size (x is large
    # where the shift leaves A nearly singular)
    resid = (A + lam * np.eye(k)) @ x - g
    assert np.max(np.abs(resid)) < 1e-12 * np.linalg.norm(A) * np.linalg.norm(x)
    if shift > 0:
        # positive definite: no damping, numpy's own solve
        np.testing.assert_array_equal(damped_solve(A, g), np.linalg.solve(A, g))


def test_damped_factor_of_a_hopeless_matrix_raises():
    """Off-diagonal entries far beyond the diagonal's scale: no shift of the schedule (up to
    1e12 s) makes it positive definite."""
    with pytest.raises(LinAlgError, match="not positive definite"):
        damped_cho_factor(np.array([[0.0, 1e30], [1e30, 0.0]]))
