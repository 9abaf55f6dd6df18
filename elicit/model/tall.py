"""Tall data, more rows than features: the marginal of y in p x p form.

With the thin QR ``X = Q R`` and ``z = Q' y``, ``S = I_n + tau2 X K X'`` is
``I_n + Q (S_p - I_p) Q'``, ``S_p = I_p + tau2 R K R'``, so

    log|S| = log|S_p|,   S^-1 = I_n - Q Q' + Q S_p^-1 Q',   y' S^-1 y = |y - Q z|^2 + z' S_p^-1 z

and every trace the derivatives take is the same on (R, z) with ``alpha_p = Q' alpha``: the
marginal of (X, y) is that of (R, z), except that ``a*`` counts the n rows and ``b*`` adds
``|y - Q z|^2 / 2``. What lives at the n inputs comes back through Q (the predictive mean
``Q (z - alpha_p)``, ``diag(S^-1)``). The QR costs O(n p^2) once per X, each marginal O(p^3);
only S_p (eigenvalues >= 1) is inverted, so K and R may be singular.
"""

from __future__ import annotations

import numpy as np


class TallBasis:
    """The thin QR ``X = Q R`` and the maps from the p x p form back to the n rows."""

    def __init__(self, X: np.ndarray) -> None:
        self.Q, self.R = np.linalg.qr(X)
        self.n = X.shape[0]
        #: diag(I - Q Q'): each row's part of diag(S^-1) outside the columns of X
        self.outside = 1.0 - np.einsum("ij,ij->i", self.Q, self.Q)

    def reduce(self, y: np.ndarray) -> tuple[np.ndarray, float]:
        """``z = Q' y`` and the residual ``|y - Q z|^2``."""
        z = self.Q.T @ y
        r = y - self.Q @ z
        return z, float(r @ r)

    def sinv_diag(self, Sinv: np.ndarray) -> np.ndarray:
        """``diag(S^-1)`` at the n rows, or of each of a stack one at a time (a stack of n x p
        products at a million rows would be gigabytes)."""
        if Sinv.ndim == 2:
            return self.outside + np.einsum("ij,ij->i", self.Q @ Sinv, self.Q)
        flat = Sinv.reshape(-1, *Sinv.shape[-2:])
        out = np.empty((len(flat), self.n))
        for c, Mc in enumerate(flat):
            out[c] = np.einsum("ij,ij->i", self.Q @ Mc, self.Q)
        return self.outside + out.reshape(*Sinv.shape[:-2], self.n)


def is_tall(n: int, p: int) -> bool:
    """Whether a marginal with n rows and p features takes the p x p form (the one place)."""
    return n > p
