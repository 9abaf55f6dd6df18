"""Expected information gain of a pairwise question (Afrabandpey et al. 2019, Sec. 3.2).

The utility of asking about pair (i, j) is

    E_{f ~ p(f | current MAP)} [ sum_{x in training inputs} KL( N_f(x) || N_0(x) ) ]

where ``N_0`` is the Gaussian approximation (paper, appendix A) of the current predictive,
mean ``x' mu*`` and variance ``b*/(a*-1) (1 + x' Sigma* x)``, ``N_f`` the same after adding the
answer f and refitting the MAP, and ``p(f = 1) = logistic(xi - gamma . w_ij)`` with the
*fitted* threshold xi.

Two modes:

``exact``
    The paper's procedure: refit the MAP for each candidate and each answer, warm-started
    from the current MAP, with the engine in use.

``fast`` (default)
    Three stages, each on fewer candidates:

    1. *Laplace screen*, all candidates at once. Under a quadratic approximation of the
       current log posterior (its Hessian ``-A`` at the MAP), adding the answer's term
       ``log sigma(+-(xi - w.gamma))`` moves the MAP along ``A^-1 v`` with
       ``v = (-w, 1[, 0])``, by the root t of the scalar equation ``t = f - sigma(z0 + q t)``,
       ``q = v' A^-1 v`` (its first Newton iterate is the Sherman-Morrison Newton step
       ``(f - s) A^-1 v / (1 + s(1-s) q)``). Parameters on their bounds stay there and the
       step is clipped back onto gamma >= 0. The predictive mean and variance move to first
       order along the step.
    2. *Batched Newton*: the screen's best candidates, as many as a floating-point budget
       (:attr:`UtilityScorer.batch_flops`) allows, are refitted by projected Newton with the
       log density evaluated for all of them in stacked numpy operations
       (:mod:`elicit.batch`). On the paper's synthetic problem this covers every candidate;
       at Amazon size it covers none, and the screen alone ranks.
    3. *Exact refinement*: the ``refine`` best are refitted with the engine in use and
       scored exactly, and the query is chosen among those.

    Stage 1 alone ranks well but misjudges magnitudes, and its top pick can be far from the
    best: on small problems a surprising answer moves gamma far beyond the quadratic
    approximation. ``docs/benchmarks.md`` measures the decisions against ``exact``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

import numpy as np
from scipy.linalg import cho_solve
from scipy.special import expit

from elicit.engines.base import Engine, MAPResult
from elicit.internal.threads import single_blas_thread
from elicit.model.batch import batched_refit, flops_per_eval
from elicit.model.density import (
    Marginal,
    feedback_terms,
    hessian_base,
    join_theta,
    lower_bounds,
)
from elicit.model.kernel import pair_weights
from elicit.model.linalg import damped_cho_factor
from elicit.model.spec import ModelData

Mode = Literal["fast", "exact"]


def kl_gauss(m1: np.ndarray, v1: np.ndarray, m0: np.ndarray, v0: np.ndarray) -> np.ndarray:
    """KL(N(m1, v1) || N(m0, v0)) summed over the first axis (the training inputs)."""
    return 0.5 * np.sum(np.log(v0 / v1) + (v1 + (m1 - m0) ** 2) / v0 - 1.0, axis=0)


def answer_probability(fit: MAPResult, w: np.ndarray) -> np.ndarray:
    """p(similar) = logistic(xi - gamma . w) at the fitted MAP, for rows of ``w``."""
    return expit(fit.xi - w @ fit.gamma)


@dataclass
class Scores:
    """Expected utilities of candidate pairs.

    ``utility`` holds the exact value where ``exact`` is True (refined or exact mode) and the
    screen's approximation elsewhere; ``best`` indexes the chosen candidate. ``hessian`` is the
    base Hessian at the MAP when this round computed it: hand it to the engine's refit after the
    answer (``Engine.fit(..., hessian=)``) so that the refit starts from it.
    """

    pairs: np.ndarray
    utility: np.ndarray
    exact: np.ndarray
    p_similar: np.ndarray
    hessian: np.ndarray | None = field(default=None, repr=False)

    @property
    def best(self) -> int:
        # Choose among exactly scored candidates when there are any: screen values are on a
        # different (approximate) scale and must not outrank exact ones.
        u = np.where(self.exact, self.utility, -np.inf) if self.exact.any() else self.utility
        return int(np.argmax(u))

    def ranking(self) -> np.ndarray:
        """Candidate indices, best first: exact scores first, then the screen's order."""
        key = np.where(self.exact, 1.0, 0.0)
        return np.lexsort((-self.utility, -key))


class UtilityScorer:
    """Scores candidate pairs at one MAP; one object per query round.

    Parameters
    ----------
    data
        The model data with the answers given so far.
    fit
        The current MAP (not changed: what the scorer computes is returned in :class:`Scores`).
    engine
        The engine used for exact refits.
    """

    #: floating-point budget of the batched Newton stage of the fast mode, per round
    batch_flops: float = 7e7

    def __init__(self, data: ModelData, fit: MAPResult, engine: Engine) -> None:
        self.data, self.fit, self.engine = data, fit, engine
        self.marginal = Marginal.from_data(data, fit.gamma, fit.tau2, K=fit.K)
        self.m0, self.v0 = self.marginal.predictive()
        self._hessian: np.ndarray | None = None

    @property
    def hessian(self) -> np.ndarray:
        """The base Hessian (y-likelihood and priors) at the MAP, computed once per scorer.

        The screen needs it, and it warm-starts the engine's refits from this MAP (the exact
        re-scores here, and the refit after the expert's answer: :attr:`Scores.hessian`).
        """
        if self._hessian is None:
            theta = join_theta(self.fit.gamma, self.fit.xi, self.fit.tau2, self.data)
            self._hessian = hessian_base(theta, self.data, self.marginal)
        return self._hessian

    @single_blas_thread
    def score(self, pairs: np.ndarray, mode: Mode = "fast", refine: int = 10) -> Scores:
        pairs = np.asarray(pairs, dtype=int).reshape(-1, 2)
        w = pair_weights(self.data.U, pairs)
        s = answer_probability(self.fit, w)
        if mode == "exact":
            u = self.exact(pairs, s)
            return Scores(pairs, u, np.ones(len(pairs), bool), s, self._hessian)
        if mode != "fast":
            raise ValueError(f"unknown utility mode {mode!r}: use 'fast' or 'exact'")
        u = self.screen(w, s)
        self._newton_stage(u, w, s)
        exact = np.zeros(len(pairs), bool)
        if refine > 0 and len(pairs):
            top = np.argsort(-u)[:refine]
            u[top] = self.exact(pairs[top], s[top])
            exact[top] = True
        return Scores(pairs, u, exact, s, self._hessian)

    # -- exact ---------------------------------------------------------------------------
    def exact(self, pairs: np.ndarray, s: np.ndarray) -> np.ndarray:
        """Expected KL by refitting the MAP for both answers of each pair."""
        H = self.hessian if self.engine.uses_hessian else None
        out = np.empty(len(pairs))
        base_pairs, base_f = self.data.pairs, self.data.f
        for c, pair in enumerate(pairs):
            kl = np.empty(2)
            for f in (0, 1):
                d2 = self.data.with_feedback(np.vstack([base_pairs, pair]), np.append(base_f, f))
                fit_f = self.engine.fit(d2, init=self.fit, hessian=H)
                mf, vf = Marginal.from_data(d2, fit_f.gamma, fit_f.tau2).predictive()
                kl[f] = kl_gauss(mf, vf, self.m0, self.v0)
            out[c] = s[c] * kl[1] + (1.0 - s[c]) * kl[0]
        return out

    # -- fast screen ---------------------------------------------------------------------
    def _newton_stage(self, u: np.ndarray, w: np.ndarray, s: np.ndarray) -> None:
        """Re-score the screen's best candidates by batched Newton refits, within a budget.

        On small problems (the paper's synthetic one) this covers every candidate and fixes
        the screen's blind spot, the large moves after surprising answers; on Amazon-size
        problems one batched evaluation costs as much as a refit and the stage is skipped.
        """
        per_candidate = 2 * 6 * flops_per_eval(self.data)
        m = min(len(u), int(self.batch_flops // per_candidate))
        if m == 0:
            return
        top = np.argsort(-u)[:m]
        theta = join_theta(self.fit.gamma, self.fit.xi, self.fit.tau2, self.data)
        lb = lower_bounds(self.data)
        out = np.zeros(m)
        for f in (0, 1):
            _, mf, vf = batched_refit(self.data, theta, self.hessian, lb, w[top], f)
            kl = kl_gauss(mf.T, vf.T, self.m0[:, None], self.v0[:, None])
            out += (s[top] if f == 1 else 1.0 - s[top]) * kl
        u[top] = out

    def screen(self, w: np.ndarray, s: np.ndarray) -> np.ndarray:
        """One Sherman-Morrison Newton step per candidate and answer, first-order predictive."""
        data, fit = self.data, self.fit
        learned = data.hyper.variant == "learned"
        d = data.d
        theta = join_theta(fit.gamma, fit.xi, fit.tau2, data)
        lb = lower_bounds(data)
        H = self.hessian + feedback_terms(theta, data, True)[2]
        # Parameters sitting on a bound stay there (the projected Newton step of the engine).
        free = theta > lb
        cho = damped_cho_factor(-H[np.ix_(free, free)])
        k = len(theta)
        Vfull = np.zeros((k, len(w)))
        Vfull[:d] = -w.T
        Vfull[d] = 1.0
        V = Vfull[free]
        Y = cho_solve(cho, V, check_finite=False)
        q = np.einsum("ic,ic->c", V, Y)
        z0 = fit.xi - w @ fit.gamma
        Jm, Jv = self.marginal.predictive_jacobian(learned)
        # Only gamma (and tau2) move the predictive; xi does not.
        kern_idx = list(range(d)) + ([d + 1] if learned else [])
        u = np.zeros(len(w))
        for f in (0, 1):
            step = np.zeros((k, len(w)))
            step[free] = Y * _scalar_step(f, z0, q)
            step = np.maximum(step, (lb - theta)[:, None])
            dk = step[kern_idx]
            mf = self.m0[:, None] + Jm @ dk
            vf = np.maximum(self.v0[:, None] + Jv @ dk, 1e-3 * self.v0[:, None])
            kl = kl_gauss(mf, vf, self.m0[:, None], self.v0[:, None])
            u += (s if f == 1 else 1.0 - s) * kl
        return u


def _scalar_step(f: int, z0: np.ndarray, q: np.ndarray, iters: int = 60) -> np.ndarray:
    """Solve ``t = f - sigma(z0 + q t)`` for each candidate.

    Under the quadratic (Laplace) approximation of the current posterior, the MAP after one
    new logistic term moves along ``A^-1 v`` by the root t of this monotone scalar equation.
    Its first Newton iterate from t = 0 is the plain Sherman-Morrison Newton step
    ``(f - s) / (1 + q s (1 - s))``; iterating matters when the answer is surprising and the
    logistic term is far from quadratic. Newton oscillates between the ends of the bracket
    when q is large (a steep residual), so the root is found by bisection: it lies between 0
    and ``f - sigma(z0)`` (length < 1), and 60 halvings reach machine precision for every
    candidate at once.
    """
    t0 = f - expit(z0)
    lo, hi = np.minimum(0.0, t0), np.maximum(0.0, t0)
    for _ in range(iters):
        mid = 0.5 * (lo + hi)
        up = mid - f + expit(z0 + q * mid) > 0      # the residual increases with t
        hi = np.where(up, mid, hi)
        lo = np.where(up, lo, mid)
    return 0.5 * (lo + hi)
