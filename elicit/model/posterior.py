"""The Normal-Inverse-Gamma posterior of (beta, sigma^2) and its Student-t predictive.

Given the MAP kernel K and tau^2 (Afrabandpey et al. 2019, Sec. 3.1)::

    beta | sigma2, y ~ N(mu*, sigma2 Sigma*),   sigma2 | y ~ InvGamma(a*, b*)
    Sigma* = (X'X + (tau2 K)^-1)^-1,  mu* = Sigma* X' y,
    a* = a_sigma + n/2,  b* = b_sigma + (y'y - mu*' Sigma*^-1 mu*) / 2

and the predictive at x is Student-t with 2 a* degrees of freedom, mean x' mu* and squared
scale (b*/a*)(1 + x' Sigma* x). No p x p inverse is formed: with ``S = I + tau2 X K X'``,
Woodbury gives ``Sigma* = tau2 K - tau2^2 K X' S^-1 X K`` and ``mu* = tau2 K X' S^-1 y``.
Per-feature scales h map back from ``beta / h`` (``mu* = h o mu~*``); a prior mean
``delta s`` is added back to mu*."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import cast

import numpy as np

from elicit.errors import ElicitError
from elicit.model.kernel import kernel_apply
from elicit.model.marginal import Marginal
from elicit.model.result import MAPResult
from elicit.model.spec import ModelData


def squared_errors(pred: np.ndarray | float, y: np.ndarray) -> np.ndarray:
    """``(pred - y)^2`` elementwise, behind every test MSE elicit reports (``pred`` may be a
    constant)."""
    return (np.asarray(pred, dtype=float) - np.asarray(y, dtype=float)) ** 2


def mean_squared_error(pred: np.ndarray | float, y: np.ndarray) -> float:
    return float(np.mean(squared_errors(pred, y)))


@dataclass
class StudentT:
    """A Student-t predictive: ``df`` degrees of freedom, ``mean`` and squared ``scale2``."""

    df: float
    mean: np.ndarray
    scale2: np.ndarray

    @property
    def var(self) -> np.ndarray:
        """Predictive variance (finite for df > 2)."""
        return self.scale2 * self.df / (self.df - 2.0)


class NIGPosterior:
    """The posterior of (beta, sigma^2) at a fitted (gamma, tau2), in the n x n form."""

    def __init__(self, marginal: Marginal) -> None:
        self._m = marginal
        self.a_star = marginal.a_star
        self.b_star = marginal.b_star
        self.tau2 = marginal.tau2
        #: the per-feature prior scales h (``None``: all 1)
        self.scales = marginal.h

    @property
    def K(self) -> np.ndarray:
        """The kernel K, the prior correlation of beta (p x p)."""
        return self._m.K

    @classmethod
    def from_map(cls, data: ModelData, fit: MAPResult) -> NIGPosterior:
        """The posterior at an engine's MAP ``fit`` of ``data``."""
        return cls(Marginal.of_fit(data, fit))

    @cached_property
    def mu(self) -> np.ndarray:
        """Posterior mean mu* of beta (p,)."""
        m = self._m
        if m.structure is not None:
            mu = m.tau2 * (m.XK.T @ m.alpha)          # K X' alpha = (X K)' alpha, K symmetric
        else:
            mu = m.tau2 * (m.K @ (m.X.T @ m.alpha))
        if m.h is not None:
            mu = m.h * mu
        return mu if m.s is None else mu + cast(float, m.delta) * m.s

    @cached_property
    def Sigma(self) -> np.ndarray:
        """Sigma* (p x p); beta's covariance is sigma^2 Sigma*."""
        m = self._m
        KXt = m.XK.T
        Sigma = m.tau2 * m.K - m.tau2**2 * KXt @ m.Sinv @ KXt.T
        return Sigma if m.h is None else m.h[:, None] * Sigma * m.h[None, :]

    def _check_rows(self, X_new: np.ndarray) -> np.ndarray:
        X_new = np.asarray(X_new, dtype=float)
        p = self._m.U.shape[0]
        if X_new.ndim != 2 or X_new.shape[1] != p:
            raise ElicitError(f"X_new must have shape (m, {p}), got {X_new.shape}")
        if not np.all(np.isfinite(X_new)):
            raise ElicitError("X_new contains NaN or infinite values")
        return X_new

    def predict_mean(self, X_new: np.ndarray) -> np.ndarray:
        """The predictive mean ``X_new mu*`` alone, without :meth:`predict`'s variances."""
        return self._check_rows(X_new) @ self.mu

    def mse(self, X_test: np.ndarray, y_test: np.ndarray, offset: float = 0.0) -> float:
        """Test MSE of the predictive mean, ``offset`` added back (shapes checked only)."""
        if np.ndim(y_test) != 1 or np.shape(X_test) != (len(y_test), len(self.mu)):
            raise ElicitError(f"X_test is {np.shape(X_test)} and y_test {np.shape(y_test)}; "
                              f"they need m x {len(self.mu)} and m")
        return mean_squared_error(X_test @ self.mu + offset, y_test)

    def predict(self, X_new: np.ndarray) -> StudentT:
        """Student-t predictive at the rows of ``X_new``."""
        X_new = self._check_rows(X_new)
        m = self._m
        mean = X_new @ self.mu
        if m.h is not None:
            X_new = X_new * m.h      # x' Sigma* x = (x o h)' Sigma~* (x o h)
        # x' Sigma* x = tau2 x'Kx - tau2^2 (XKx)' S^-1 (XKx)
        if m.structure is not None:
            XnK = kernel_apply(m.U, m.gamma, X_new.T).T        # K never formed
        else:
            XnK = X_new @ m.K
        quad = m.tau2 * np.einsum("ij,ij->i", XnK, X_new)
        V = m.X @ XnK.T
        quad -= m.tau2**2 * np.einsum("ji,ji->i", V, m.Sinv @ V)
        return StudentT(2 * self.a_star, mean, (self.b_star / self.a_star) * (1.0 + quad))
