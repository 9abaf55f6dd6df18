"""Feedback links: how an answer f depends on the logit-like score z = xi - gamma . w.

The paper's answers are ``f ~ Bernoulli(logistic(z))`` (:data:`LOGISTIC`). A link states the
answer's log likelihood, its derivatives in z and what the utilities need (the answer's
entropy, dp/dz, the screen's step residual); everything reads it from the model variant
(:attr:`elicit.model.variants.ModelVariant.link`), so a new link is one object here and one
Stan program that states the same likelihood.
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
        """d p(f = 1 | z) / dz (the density of the latent variable whose CDF :meth:`prob` is)."""

    def entropy(self, z: np.ndarray) -> np.ndarray:
        """Entropy (nats) of the answer given z: ``-p log p - (1 - p) log(1 - p)``,
        ``p = prob(z)``, finite where p saturates."""

    def step_residual(self, t: np.ndarray, z: np.ndarray, f: np.ndarray | float) -> np.ndarray:
        """``t - score(z, f)``, the residual of the screen's Laplace step
        ``t = score(z0 + q t, f)``; its own method so that each link fixes the rounding order
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


#: the paper's link
LOGISTIC = Logistic()


def scalar_step(f: int | np.ndarray, z0: np.ndarray, q: np.ndarray, link: Link = LOGISTIC,
                iters: int = 60) -> np.ndarray:
    """Solve ``t = link.score(z0 + q t, f)`` for each candidate (logistic:
    ``t = f - sigma(z0 + q t)``; ``f`` one answer for all or one per candidate).

    Under the quadratic (Laplace) approximation of the current posterior, the MAP after one
    new answer term ``log p(f | z)`` moves along ``A^-1 v`` by the root t of this scalar
    equation, monotone for a log-concave link. For the logistic link its first Newton
    iterate from t = 0 is the plain Sherman-Morrison Newton step
    ``(f - s) / (1 + q s (1 - s))``; iterating matters when the answer is surprising and the
    answer's term is far from quadratic. Newton oscillates between the ends of the bracket
    when q is large (a steep residual), so the root is found by bisection: it lies between 0
    and ``score(z0, f)`` (logistic: ``f - sigma(z0)``, length < 1), and 60 halvings reach
    machine precision for every candidate at once.
    """
    t0 = link.score(z0, f)
    lo, hi = np.minimum(0.0, t0), np.maximum(0.0, t0)
    for _ in range(iters):
        mid = 0.5 * (lo + hi)
        up = link.step_residual(mid, z0 + q * mid, f) > 0      # it increases with t
        hi = np.where(up, mid, hi)
        lo = np.where(up, lo, mid)
    return 0.5 * (lo + hi)
