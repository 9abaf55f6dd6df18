"""One query round's scoring pieces: the expected KL of the predictive (Afrabandpey et al.
2019, Sec. 3.2) of pair questions,

    E_{f ~ p(f | current MAP)} [ sum_{x in training inputs} KL( N_f(x) || N_0(x) ) ],

``N_0`` the Gaussian approximation (paper, appendix A) of the current predictive, ``N_f`` the
same after answer f and a refit, ``p(f = 1) = link.prob(xi - gamma . w_ij)``.

``exact`` refits the MAP for each candidate and answer (the paper's procedure). ``fast`` has
three stages, each on fewer candidates: the *Laplace screen* (:meth:`UtilityScorer.screen`:
the answer moves the MAP along ``A^-1 v``, ``v = (-w, 1[, 0])``, by the root t of ``t =
score(z0 + q t, f)``, ``q = v' A^-1 v``, whose first Newton iterate is the Sherman-Morrison
step), *batched Newton* refits of the screen's best (:meth:`UtilityScorer.newton_stage`) and
*exact refinement* of the best (:meth:`UtilityScorer.refine_best`); why three, and why refits
begin at the MAP, not at the screen's move: ``docs/benchmarks.md``.
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

import numpy as np

from elicit.elicitation.gains import PairUtility, Scores, kl_gauss
from elicit.elicitation.quadrature import bald_gain
from elicit.elicitation.utility import UtilityArgs
from elicit.engines.base import Engine
from elicit.internal.threads import single_blas_thread
from elicit.model.batch import batched_refit, flops_per_eval
from elicit.model.density import LaplaceMoves, hessian_base
from elicit.model.kernel import pair_weights
from elicit.model.link import Link
from elicit.model.marginal import Marginal
from elicit.model.newton import CONVERGED
from elicit.model.result import MAPResult
from elicit.model.spec import ModelData
from elicit.model.theta import theta_of


def answer_probability(fit: MAPResult, w: np.ndarray, link: Link) -> np.ndarray:
    """p(similar) = ``link.prob(xi - gamma . w)`` at the fitted MAP, for rows of ``w``."""
    return link.prob(fit.xi - w @ fit.gamma)


@runtime_checkable
class WarmNewton(Protocol):
    """An engine whose warm refits the caller can start and finish itself, unchecked (numpy)."""

    def newton_run(self, data: ModelData, theta: np.ndarray, hess_base: np.ndarray,
                   K: np.ndarray | None = None) -> Any: ...

    def finish(self, run: Any) -> MAPResult: ...


@runtime_checkable
class BatchRefits(Protocol):
    """An engine that refits many candidate answers at once, each as it would alone (numpy)."""

    def refit_candidates(self, data: ModelData, w_new: np.ndarray, f_new: np.ndarray,
                         theta: np.ndarray, hess_base: np.ndarray,
                         marginal: Marginal | None = None) -> Any: ...

    def remember_candidate(self, data: ModelData, run: Any, row: int, theta: np.ndarray,
                           hess_base: np.ndarray) -> None: ...


class UtilityScorer:
    """One query round: the MAP the candidates are scored at, and the pieces the registered
    :class:`~elicit.elicitation.gains.PairUtility` objects compose.

    Parameters
    ----------
    data, fit
        The model data with the answers given so far, and its MAP.
    engine
        The engine used for exact refits.
    hessian
        The base Hessian at (or near) the MAP if the caller has one; else computed when needed.
    """

    #: floating-point budget of the batched Newton stage of the fast mode, per round
    batch_flops: float = 7e7
    #: budget of the exact re-scores the fast mode always makes (then: until the winner is clear)
    refine_flops: float = 3e7
    #: re-scoring stops once the best exact utility exceeds the next candidate's estimate by
    #: this share (:meth:`refine_best`)
    refine_margin: float = 0.1
    #: iterations of every refit of the batched stage before only those of the candidates
    #: that may win go on (BatchRefits)
    stage_iterations: int = 7
    #: the Newton decrement below which a refit of the batched stage waits to be finished
    stage_tol: float = 1e-7
    #: how far (relative) below the best estimate a candidate of the batched stage may be
    #: and still have its refits finished
    certainty_margin: float = 0.3

    def __init__(self, data: ModelData, fit: MAPResult, engine: Engine,
                 hessian: np.ndarray | None = None) -> None:
        self.data, self.fit, self.engine = data, fit, engine
        #: how an answer depends on xi - gamma . w (the model variant's feedback link)
        self.link: Link = data.link
        self.marginal = Marginal.of_fit(data, fit)
        self.m0, self.v0 = self.marginal.predictive()
        k = data.layout.size
        #: the base Hessian if this round has one (given or computed), else None
        self.computed_hessian: np.ndarray | None = (
            hessian if hessian is not None and hessian.shape == (k, k) else None)

    @property
    def hessian(self) -> np.ndarray:
        """The base Hessian (y-likelihood and priors) at the MAP: the one given, else computed."""
        if self.computed_hessian is None:
            theta = theta_of(self.fit, self.data)
            self.computed_hessian = hessian_base(theta, self.data, self.marginal)
        return self.computed_hessian

    def prepare(self, pairs: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``pairs`` as a (k x 2) int array, their ``w`` and p(similar) at the MAP."""
        pairs = np.asarray(pairs, dtype=int).reshape(-1, 2)
        w = pair_weights(self.data.U, pairs)
        return pairs, w, answer_probability(self.fit, w, self.link)

    @single_blas_thread
    def score(self, pairs: np.ndarray, utility: str | PairUtility = "fast", refine: int = 10,
              target: str = "predictive") -> Scores:
        """Expected utilities of ``pairs`` (k x 2) under a registered utility.

        Parameters
        ----------
        utility
            ``"fast"``, ``"exact"``, a registered utility's name, or a ``PairUtility``.
        refine
            How many of the screen's best the fast mode re-scores exactly (at most).
        target
            ``"predictive"`` or ``"params"`` (:meth:`param_gain`).
        """
        gain = (utility if isinstance(utility, PairUtility)
                else UtilityArgs(utility, target, refine).validate().only)
        assert isinstance(gain, PairUtility)
        return gain.score(self, pairs, refine)

    def refine_best(self, pairs: np.ndarray, s: np.ndarray, u: np.ndarray, exact: np.ndarray,
                    refine: int, weight: np.ndarray | None) -> None:
        """Replace estimated utilities by exact ones, best first, at most ``refine``: all of them
        where :attr:`refine_flops` covers them, else until the best exact utility exceeds the
        next estimate by :attr:`refine_margin` (on Amazon and Yelp a margin of 0.1 picked
        exact's best in 82 of 90 rounds). ``weight`` multiplies each re-score.
        """
        order = np.argsort(-u, kind="stable")[:refine]
        always = self.always_rescored(len(order))
        best, done = -np.inf, 0
        for c in order:
            if done >= always and best >= (1.0 + self.refine_margin) * u[c]:
                break
            if not exact[c]:    # the batched stage's converged refits are exact already
                v = self._exact_one(pairs[c], s[c])
                u[c] = v if weight is None else weight[c] * v
                exact[c] = True
            best, done = max(best, u[c]), done + 1

    def always_rescored(self, n: int) -> float:
        """How many of ``n`` exact re-scores :attr:`refine_flops` pays for (at least one)."""
        per_rescore = 10 * flops_per_eval(self.data)     # two refits of ~2 evaluations + KL
        return max(1.0, min(float(n), self.refine_flops / per_rescore))

    def _start(self, d2: ModelData) -> np.ndarray:
        # exactly the start point the engine's warm refit uses
        return np.maximum(theta_of(self.fit, d2), d2.layout.lower_bounds())

    def param_gain(self, w: np.ndarray) -> np.ndarray:
        """Mutual information between the answer and theta_f = (gamma, xi), for rows of ``w``:
        :func:`bald_gain` of ``z = xi - gamma . w ~ N(mu, s^2)`` under the Laplace
        approximation at the MAP (Houlsby et al. 2011; docs/utility-targets.md). A parameter
        the MAP puts *on* its bound is held fixed there, as in the fast screen: the Gaussian
        centred on the bound would put half its mass where the posterior has none.
        """
        # s^2 is the q of the screen's moves: a' Sigma a on the free parameters
        moves = LaplaceMoves(self.data, theta_of(self.fit, self.data), self.hessian, w)
        return bald_gain(moves.z0, np.maximum(moves.q, 0.0), self.link)

    def exact(self, pairs: np.ndarray, s: np.ndarray) -> np.ndarray:
        """Expected KL by refitting the MAP for both answers of each pair."""
        return np.array([self._exact_one(pair, s[c]) for c, pair in enumerate(pairs)])

    def _exact_one(self, pair: np.ndarray, s: float) -> float:
        # an answer of probability 0 (it underflows on meta-features in raw units) weighs
        # nothing: its refit, there often a failing one, is not run (0 * KL is 0 all the same)
        kl = np.zeros(2)
        for f in np.flatnonzero([1.0 - s, s]):
            d2 = self.data.with_feedback(np.vstack([self.data.pairs, pair]),
                                         np.append(self.data.f, f))
            fit_f = self.refit(d2)
            # the kernel recomputed from gamma, not fit.K: the results stay bit for bit as before
            kl[f] = kl_gauss(*Marginal.from_data(d2, fit_f.gamma, fit_f.tau2, zeta=fit_f.zeta,
                                                 delta=fit_f.delta).predictive(),
                             self.m0, self.v0)
        return float(s * kl[1] + (1.0 - s) * kl[0])

    def refit(self, d2: ModelData, K: np.ndarray | None = None) -> MAPResult:
        """The hypothetical refit of ``d2``, started as the real refit after that answer starts
        (``K``: the kernel at the start, if the caller has it)."""
        if isinstance(self.engine, WarmNewton):
            return self.engine.finish(self.engine.newton_run(d2, self._start(d2), self.hessian, K))
        H = self.hessian if self.engine.uses_hessian else None
        return self.engine.fit(d2, init=self.fit, hessian=H)

    def refit_kl(self, d2: ModelData, K: np.ndarray | None = None) -> np.ndarray:
        """KL(N_after || N_0) of the predictive after the hypothetical :meth:`refit` of ``d2``."""
        return kl_gauss(*Marginal.of_fit(d2, self.refit(d2, K)).predictive(), self.m0, self.v0)

    def newton_stage(self, u: np.ndarray, w: np.ndarray, s: np.ndarray, weight: np.ndarray | None,
                     exact: np.ndarray, pairs: np.ndarray, remember: int) -> None:
        """Re-score the screen's best candidates by batched Newton refits, within
        :attr:`batch_flops`. With a :class:`BatchRefits` engine these are the engine's own
        refits: a candidate whose two refits converged is marked in ``exact``, and the engine
        remembers the refits of the ``remember`` best of those.
        """
        per_candidate = 2 * 6 * flops_per_eval(self.data)
        m = min(len(u), int(self.batch_flops // per_candidate))
        if m == 0:
            return
        top = np.argsort(-u)[:m]
        theta = theta_of(self.fit, self.data)
        if isinstance(self.engine, BatchRefits):
            # both answers of every candidate in one stack: rows 0..m-1 f = 0, m..2m-1 f = 1
            run = self.engine.refit_candidates(
                self.data, np.concatenate([w[top], w[top]]), np.repeat([0.0, 1.0], m),
                theta, self.hessian, self.marginal)

            def rescore() -> np.ndarray:
                mf, vf = run.extras
                kl = kl_gauss(mf.T, vf.T, self.m0[:, None], self.v0[:, None])
                out = (1.0 - s[top]) * kl[:m] + s[top] * kl[m:]
                u[top] = out if weight is None else weight[top] * out
                return (run.status[:m] == CONVERGED) & (run.status[m:] == CONVERGED)

            # every refit goes a few iterations; those of the candidates that may win then go on
            # to convergence (each row on the path it would have taken alone)
            run.hold_below = self.stage_tol
            run.advance(self.stage_iterations)
            done = rescore()
            if not done.all():
                cut = np.sort(u[top])[::-1][min(m, max(1, remember)) - 1]
                go = np.flatnonzero(~done & (u[top] >= cut / (1.0 + self.certainty_margin)))
                rows = np.r_[go, m + go]
                run.hold(np.setdiff1d(np.arange(2 * m), rows))
                run.hold_below = None
                run.resume(rows)
                run.advance()
                done = rescore()
            exact[top[done]] = True
            for c in top[done][np.argsort(-u[top[done]])][:remember]:
                j = int(np.flatnonzero(top == c)[0])
                for f, row in ((0, j), (1, m + j)):
                    d2 = self.data.with_feedback(np.vstack([self.data.pairs, pairs[c]]),
                                                 np.append(self.data.f, f))
                    self.engine.remember_candidate(d2, run, row, self._start(d2), self.hessian)
            return
        out = np.zeros(m)
        for f in (0, 1):
            _, mf, vf, _ = batched_refit(self.data, theta, self.hessian, w[top], f,
                                         marginal=self.marginal)
            kl = kl_gauss(mf.T, vf.T, self.m0[:, None], self.v0[:, None])
            out += (s[top] if f == 1 else 1.0 - s[top]) * kl
        u[top] = out if weight is None else weight[top] * out

    def screen(self, w: np.ndarray, s: np.ndarray) -> np.ndarray:
        """One Sherman-Morrison Newton step per candidate and answer, to first order in the mean."""
        data = self.data
        moves = LaplaceMoves(data, theta_of(self.fit, data), self.hessian, w)
        # the variance is held: its Jacobian costs as much as the Hessian (the refinement picked
        # exact's best in 61 of 72 rounds on Amazon and Yelp with it held, 63 with it moved)
        Jm = self.marginal.mean_jacobian(data.hyper.variant == "learned")
        # only gamma (and tau2) move the predictive; the KL of a mean moved by Jm s is
        # s' M s / 2, M = Jm' diag(1/v0) Jm, formed once so that no n x pool array is held
        kern_idx = data.layout.marginal_index
        M = Jm.T @ (Jm / self.v0[:, None])
        u = np.zeros(len(w))
        for f, move in enumerate(moves.steps()):
            st = move[kern_idx]
            kl = 0.5 * np.einsum("ac,ac->c", st, M @ st)
            u += (s if f == 1 else 1.0 - s) * kl
        return u
