"""Whether a refit's end is to be trusted: when a warm refit is checked by a cold fit, and how
far from stationary a point is (:func:`local_gain`, also used by the checked engine).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from elicit.model import terms
from elicit.model.density import hessian, log_density
from elicit.model.linalg import damped_solve
from elicit.model.spec import ModelData


@dataclass(frozen=True)
class ColdStartPolicy:
    """When a warm refit is checked by a cold fit, so that the MAP does not depend on luck.

    The posterior of gamma can have several local maxima (a gamma on its bound 0, or not), and
    where a warm refit lands after a surprising answer depends on its path. So it is repeated
    from a cold start and the higher of the two kept, when a gamma moves onto (within ``near``
    of) its bound after answers less likely than ``unlikely`` under the previous fit (the mode
    need not be on the bound itself: a refit after an answer of p = 0.0005 ended at gamma =
    0.00048, 1.37 below the cold fit), or when it ends more than ``slack`` below its start,
    which a refit that ascends cannot do (measured: docs/benchmarks.md, "Refit modes").

    Attributes
    ----------
    unlikely
        A switch after answers of at least this probability is trusted (1: none is).
    near
        How close to its lower bound 0 a gamma counts as on it (gamma's prior mean is 1).
    slack
        Log density a refit may lose to rounding before the second test applies.
    """

    unlikely: float = 1.0
    near: float = 1e-2
    slack: float = 1e-6

    def reason(self, data: ModelData, theta: np.ndarray, value: float, start_value: float,
               new_loglik: float, theta_start: np.ndarray | None = None) -> str | None:
        """Why the warm refit from ``theta_start`` to ``theta`` is to be checked, or None. A gamma
        already on its bound at the start is no switch (word-count meta-features keep many at 0;
        checking those cost a quarter of the rounds' CPU on Amazon and found no other mode)."""
        lay = data.layout
        lb = lay.lower_bounds()[lay["gamma"]]
        on_bound = theta[lay["gamma"]] <= lb + self.near
        if theta_start is not None:
            on_bound &= ~(theta_start[lay["gamma"]] <= lb + self.near)
        if on_bound.any() and new_loglik < math.log(self.unlikely):
            return (f"gamma moved onto its bound (new answers' p = "
                    f"{math.exp(new_loglik):.2g})")
        if value < start_value - self.slack:
            return f"the refit lost {start_value - value:.3g} in log density"
        return None


DEFAULT_COLD_START = ColdStartPolicy()


def new_answers_loglik(data: ModelData, theta: np.ndarray, start_value: float,
                       prev_value: float | None) -> float:
    """Log likelihood at the previous MAP ``theta`` of the answers new since the previous fit:
    ``start_value - prev_value``, or, when that is unknown (a start from another engine's fit),
    the last pair answer's term (a query round adds one at a time)."""
    if prev_value is not None:
        return float(start_value - prev_value)
    if len(data.f) == 0:
        return 0.0
    return float(terms.feedback_terms(data.link, data.W_f[-1:], data.f[-1:], theta,
                                      data.layout, hess=False)[0])


def local_gain(theta: np.ndarray, data: ModelData) -> tuple[float, np.ndarray, float]:
    """How much the log density can still rise near ``theta``: (log density, gradient, gain).

    ``gain`` is what the projected Newton model promises: ``g' s / 2`` for the Newton step s of
    the free parameters plus ``(theta_i - lb_i) |g_i|`` for each parameter held at its bound (on
    it, or crossed by the step: a point a hair above the bound counts as on it). Near 0 at a
    stationary point."""
    theta = np.asarray(theta, dtype=float)
    lb = data.layout.lower_bounds()
    value, g = log_density(theta, data)
    H = hessian(theta, data)
    room = theta - lb
    held = (room <= 0) & (g < 0)
    for _ in range(len(theta)):
        free = ~held
        if not free.any():
            s = np.zeros(0)
            break
        s = damped_solve(-H[np.ix_(free, free)], g[free])
        across = np.zeros_like(held)
        across[free] = (theta[free] + s < lb[free]) & (g[free] < 0)
        if not across.any():
            break
        held |= across
    gain = 0.5 * float(g[free] @ s) + float(np.sum(room[held] * np.maximum(-g[held], 0.0)))
    return float(value), g, max(gain, 0.0)
