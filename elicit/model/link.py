"""Feedback links: how an answer f depends on the logit-like score z = xi - gamma . w (the
paper's: ``f ~ Bernoulli(logistic(z))``, :data:`LOGISTIC`). Everything reads the link from
the model variant, so a new link is one object here and a Stan program stating it.
"""

from __future__ import annotations

from typing import Protocol

import numpy as np
from scipy.special import expit, log_expit


class Link(Protocol):
    """The likelihood of a binary answer ``f`` (1 = similar) given ``z``; every method is
    elementwise and broadcasts ``z`` against ``f``."""

    #: short name (shown by ``elicit models``)
    name: str

    def prob(self, z: np.ndarray) -> np.ndarray:
        """p(f = 1 | z)."""

    def log_lik(self, z: np.ndarray, f: np.ndarray | float) -> np.ndarray:
        """log p(f | z)."""

    def score(self, z: np.ndarray, f: np.ndarray | float) -> np.ndarray:
        """d log p(f | z) / dz."""

    def curvature(self, z: np.ndarray, f: np.ndarray | float) -> np.ndarray:
        """-d^2 log p(f | z) / dz^2 (non-negative for a log-concave link)."""

    def density(self, z: np.ndarray) -> np.ndarray:
        """d p(f = 1 | z) / dz."""

    def entropy(self, z: np.ndarray) -> np.ndarray:
        """Entropy (nats) of the answer given z, finite where p saturates."""

    def step_residual(self, t: np.ndarray, z: np.ndarray, f: np.ndarray | float) -> np.ndarray:
        """``t - score(z, f)``, a method of its own so that each link fixes the rounding order
        (the screen bisects on its sign)."""


class Logistic:
    """The paper's link: ``p(f = 1 | z) = 1 / (1 + exp(-z))``."""

    name = "logistic"

    def prob(self, z: np.ndarray) -> np.ndarray:
        return expit(z)

    def log_lik(self, z: np.ndarray, f: np.ndarray | float) -> np.ndarray:
        # log_expit of both signs: no log(0) at saturated z
        return f * log_expit(z) + (1 - f) * log_expit(-z)

    def score(self, z: np.ndarray, f: np.ndarray | float) -> np.ndarray:
        return f - expit(z)

    def curvature(self, z: np.ndarray, f: np.ndarray | float) -> np.ndarray:
        s = expit(z)
        return s * (1.0 - s)

    def density(self, z: np.ndarray) -> np.ndarray:
        return expit(z) * expit(-z)

    def entropy(self, z: np.ndarray) -> np.ndarray:
        # from the logit, both signs: no log(0) at saturated z
        return -(expit(z) * log_expit(z) + expit(-z) * log_expit(-z))

    def step_residual(self, t: np.ndarray, z: np.ndarray, f: np.ndarray | float) -> np.ndarray:
        return t - f + expit(z)

    def __repr__(self) -> str:
        return "Logistic()"


LOGISTIC = Logistic()


def scalar_step(f: int | np.ndarray, z0: np.ndarray, q: np.ndarray, link: Link = LOGISTIC,
                iters: int = 60) -> np.ndarray:
    """Solve ``t = link.score(z0 + q t, f)`` for each candidate (``f`` one answer for all or one
    per candidate).

    Under the Laplace approximation of the current posterior, the MAP after one new answer term
    moves along ``A^-1 v`` by this root t, monotone for a log-concave link (for the logistic
    link the first Newton iterate from 0 is the Sherman-Morrison step). Newton oscillates when q
    is large, so the root is bisected between 0 and ``score(z0, f)``: 60 halvings reach machine
    precision for every candidate at once."""
    t0 = link.score(z0, f)
    lo, hi = np.minimum(0.0, t0), np.maximum(0.0, t0)
    for _ in range(iters):
        mid = 0.5 * (lo + hi)
        up = link.step_residual(mid, z0 + q * mid, f) > 0      # it increases with t
        hi = np.where(up, mid, hi)
        lo = np.where(up, lo, mid)
    return 0.5 * (lo + hi)
