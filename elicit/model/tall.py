"""Tall data, more rows than features: the marginal of y in p x p form.

With the thin QR factorisation ``X = Q R`` (Q n x p with orthonormal columns, R p x p),
``S = I_n + tau2 X K X'`` is ``I_n + Q (S_p - I_p) Q'`` with ``S_p = I_p + tau2 R K R'``, so

    log|S| = log|S_p|,   S^-1 = I_n - Q Q' + Q S_p^-1 Q',   y' S^-1 y = |y - Q z|^2 + z' S_p^-1 z

with ``z = Q' y``. Every trace the derivatives take, ``tr(G dB)`` with ``dB = Q dB_p Q'``, is
``tr(G_p dB_p)`` with ``G_p = Q' G Q = (omega alpha_p alpha_p' - S_p^-1) / 2`` and
``alpha_p = S_p^-1 z = Q' alpha``; the Hessian's ``alpha' B_a S^-1 B_b alpha`` and
``tr(S^-1 B_a S^-1 B_b)`` likewise. So the marginal of (X, y) is the marginal of (R, z), a
problem with p rows, except that ``a*`` counts the n rows and ``b*`` adds the residual
``|y - Q z|^2 / 2`` (:class:`~elicit.model.marginal.Marginal` with a :class:`TallBasis`). The
posterior of beta only ever reads ``X' S^-1 X = R' S_p^-1 R`` and ``X' alpha = R' alpha_p``:
it is the same from (R, z). What lives at the n training inputs comes back through Q:
``S^-1 Q w = Q S_p^-1 w``, the predictive mean ``y - alpha = Q (z - alpha_p)`` and
``diag(S^-1) = diag(I - Q Q') + diag(Q S_p^-1 Q')``.

The QR costs O(n p^2) once per X; each marginal then costs O(p^3), plus O(n p^2) for the
variances of a predictive at the n inputs. Nothing is inverted but S_p (eigenvalues >= 1):
K may be singular (gamma = 0) and so may R (collinear columns).
"""

from __future__ import annotations

import numpy as np

from elicit.internal.cache import LRUCache, arrays_key


class TallBasis:
    """The thin QR factorisation ``X = Q R`` and the maps from the p x p form back to the n
    rows (module docstring)."""

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
        """``diag(S^-1) = diag(I - Q Q') + diag(Q S_p^-1 Q')`` at the n rows, or of each of a
        stack one at a time (a stack of n x p products at a million rows would be gigabytes)."""
        if Sinv.ndim == 2:
            return self.outside + np.einsum("ij,ij->i", self.Q @ Sinv, self.Q)
        flat = Sinv.reshape(-1, *Sinv.shape[-2:])
        out = np.empty((len(flat), self.n))
        for c, Mc in enumerate(flat):
            out[c] = np.einsum("ij,ij->i", self.Q @ Mc, self.Q)
        return self.outside + out.reshape(*Sinv.shape[:-2], self.n)


_bases = LRUCache(4)


def tall_basis(X: np.ndarray) -> TallBasis:
    """The :class:`TallBasis` of X, computed once per array (keyed by identity and checksum)."""
    key = arrays_key(X)
    basis = _bases.get(key)
    if basis is None:
        basis = TallBasis(X)
        _bases.put(key, basis, pin=X)
    return basis


def is_tall(n: int, p: int) -> bool:
    """Whether a marginal with n rows and p features takes the p x p form (the one place)."""
    return n > p
