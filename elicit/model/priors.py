"""The priors of (gamma, xi, tau2, zeta, delta): each one's log density and its first two
derivatives, constants dropped (gamma, xi and tau2 are bounded below by 0 anyway). Every
method works on one value and on a stack with the same formula, so that the scalar and the
batched log density share it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.special import logit

#: gamma ~ N+(GAMMA_MEAN, GAMMA_SD), as in the paper's Stan code.
GAMMA_MEAN = 1.0
GAMMA_SD = 0.5


@dataclass(frozen=True)
class Normal:
    """``N(mean, sd)``, up to a constant; also the half-normal ``N+(mean, sd)`` of a block that
    theta bounds below by 0 (the same terms there)."""

    mean: float
    sd: float

    def terms(self, x, summed: bool = False):
        """(log density, gradient, second derivative) at ``x``. With ``summed`` the last axis
        of ``x`` is one vector block (gamma), summed over; else every entry is one value."""
        r = x - self.mean
        sq = (r ** 2).sum(axis=-1) if summed else r ** 2
        return -0.5 * sq / self.sd**2, -r / self.sd**2, -1.0 / self.sd**2


@dataclass(frozen=True)
class ThresholdPrior:
    """``xi ~ N+(m, sd m)``: m is data (``threshold_mean``), ``sd`` the variant's assumption of how
    far answers move xi."""

    sd: float

    def at(self, m: float) -> Normal:
        """The prior ``N+(m, sd m)`` of xi (a normal cut at 0) for the prior mean ``m``."""
        return Normal(m, m * self.sd)


@dataclass(frozen=True)
class InvGamma:
    """``InvGamma(a, b)`` (shape a, scale b), up to a constant."""

    a: float
    b: float

    def terms(self, x, summed: bool = False):
        """As :meth:`Normal.terms`; tau2, its one block, is never ``summed``."""
        a, b = self.a, self.b
        return (-(a + 1.0) * np.log(x) - b / x, -(a + 1.0) / x + b / x**2,
                (a + 1.0) / x**2 - 2.0 * b / x**3)


GAMMA_PRIOR = Normal(GAMMA_MEAN, GAMMA_SD)  # half-normal: gamma >= 0
#: the paper's threshold prior, xi ~ N+(m, m/2)
PAPER_THRESHOLD = ThresholdPrior(0.5)

#: pi0, the prior share of relevant features among those the expert has not judged (the
#: prior median of s(zeta)): the LASSO experts keep about 40 of 340 Amazon keywords (12 %).
RELEVANT_SHARE = 0.1
#: prior sd of zeta: one unit of logit lets the share range over about 0.015 .. 0.45 (two sd)
#: before the data speak, so the marginal likelihood of y decides where it lies within that.
ZETA_SD = 1.0
ZETA_PRIOR = Normal(float(logit(RELEVANT_SHARE)), ZETA_SD)
