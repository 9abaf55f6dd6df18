"""Whether a refit's end is to be trusted: when a warm refit is checked by a cold fit
(:class:`ColdStartPolicy`), the new answers' log likelihood that decides it
(:func:`new_answers_loglik`), and how far from stationary a point is (:func:`local_gain`).

The refits themselves are :mod:`elicit.model.newton`'s; the numpy engine
(:mod:`elicit.engines.numpy_engine`) runs the checks, the checked engine
(:mod:`elicit.engines.checked`) compares two engines' ends with :func:`local_gain`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from elicit.model import terms
from elicit.model.density import feedback_terms, hessian_base, log_density
from elicit.model.linalg import damped_solve
from elicit.model.spec import ModelData
from elicit.model.theta import lower_bounds

# -- when a warm refit is repeated from a cold start --------------------------------------------

@dataclass(frozen=True)
class ColdStartPolicy:
    """When a warm refit is checked by a cold fit, so that the MAP does not depend on luck.

    The posterior of gamma can have several local maxima: a gamma switched off on its lower
    bound 0, or not. After an answer the old MAP did not expect, a warm refit moves far, and
    where it lands depends on the path (projected Newton steps onto the boundary where
    L-BFGS-B from the same start stays inside, or the other way round). So a warm refit is
    repeated from the start of a cold fit (the prior means; tau2's prior mode), and the
    higher of the two kept, when

    * a gamma moves onto (or within ``near`` of) its bound: it was above it at the start and
      is on it at the end (answers whose probability under the previous fit was at least
      ``unlikely`` are trusted; by default none is). The boundary mode need not be on the
      bound itself: a refit after an answer of p = 0.0005 ended at gamma = 0.00048 (an
      interior maximum, 1.37 below the cold fit's). A gamma already on its bound at the
      start is not a switch: with word-count meta-features many gammas stay at 0 all along;
      or
    * it ends lower than it started: below the previous fit's log density plus the new
      answers' log likelihood there (the log density of the start under the new answers).
      A refit that ascends from the previous MAP cannot lose more than that; one that does
      (a fallback that ended elsewhere, an engine working on other tolerances) is suspect.

    Measured on the synthetic problem (4 runs x 30 answers x 3 strategies, 360 refits;
    ``experiments/refit_modes.py``, ``docs/benchmarks.md`` "Refit modes"): refits that end
    below a reference (a cold fit, or L-BFGS-B from the previous MAP) 91 without checks, 38
    when only switches after unlikely answers (p < 0.05) are checked, 25 with every switch
    checked (the default), the cold fits 5.8% of the rounds' CPU; on the paper-literal Amazon
    configuration (600 refits) 55, 30 and 21, for 29% of the rounds' CPU.

    Attributes
    ----------
    unlikely
        A switch after answers of at least this probability is trusted (1: none is, the
        default).
    near
        How close to its lower bound 0 a gamma counts as on it (0.01; gamma's prior mean is
        1).
    slack
        Log density a refit may lose to rounding before the second test applies.
    """

    unlikely: float = 1.0
    near: float = 1e-2
    slack: float = 1e-6

    def reason(self, data: ModelData, theta: np.ndarray, value: float, start_value: float,
               new_loglik: float, theta_start: np.ndarray | None = None) -> str | None:
        """Why the warm refit ending at ``theta`` (log density ``value``), which started at
        ``theta_start`` with log density ``start_value`` after new answers of log likelihood
        ``new_loglik`` (at the start), is to be checked by a cold fit; None if it is not.

        A gamma that was on its bound at the start already (``theta_start``; None: none
        was) is no switch of mode: with word-count meta-features many gammas stay at 0
        throughout, and a check of every unlikely answer there cost a quarter of the rounds'
        CPU and found no other mode (Amazon, 120 refits)."""
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


#: the numpy engine's default policy
DEFAULT_COLD_START = ColdStartPolicy()


def new_answers_loglik(data: ModelData, theta: np.ndarray, start_value: float,
                       prev_value: float | None) -> float:
    """Log likelihood at ``theta`` (the previous MAP) of the answers new since the previous
    fit: the log density of the start under ``data`` minus the previous fit's log density
    ``prev_value`` (the same formula, the answers it saw; after a feature answer of the
    relevance model, the change its new classes make), or, when that is unknown (a refit the
    caller advances itself, a start from another engine's fit), the last pair answer's term:
    the query round's refits add one pair answer at a time."""
    if prev_value is not None:
        return float(start_value - prev_value)
    if len(data.f) == 0:
        return 0.0
    return float(terms.feedback_terms(data.link, data.W_f[-1:], data.f[-1:], theta,
                                      data.layout, hess=False)[0])


# -- how far from stationary ------------------------------------------------------------------

def local_gain(theta: np.ndarray, data: ModelData) -> tuple[float, np.ndarray, float]:
    """How much the log density can still rise near ``theta``: (log density, gradient, gain).

    ``gain`` is what the projected Newton model at ``theta`` (exact gradient and Hessian)
    promises: ``g' s / 2`` for the Newton step ``s`` of the free parameters, plus, for each
    parameter held at its lower bound because the gradient pushes it out, the first-order
    gain ``(theta_i - lb_i) |g_i|`` of moving it there. A parameter is held when it is on
    the bound or when the Newton step would take it across (an active set, grown until the
    step stays feasible), so a point a hair above the boundary (an optimiser working in
    log(x), which cannot reach x = 0) counts as on it. Near 0 at a stationary point of the
    bounded problem, in log-density units at any point; independent of the parameters'
    scales.
    """
    theta = np.asarray(theta, dtype=float)
    lb = lower_bounds(data)
    value, g = log_density(theta, data)
    H = hessian_base(theta, data) + feedback_terms(theta, data, True)[2]
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
