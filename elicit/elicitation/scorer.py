"""One query round's scoring pieces: the expected KL of the predictive (Afrabandpey et al.
2019, Sec. 3.2) of questions about feature pairs.

The predictive utility of asking about pair (i, j) is

    E_{f ~ p(f | current MAP)} [ sum_{x in training inputs} KL( N_f(x) || N_0(x) ) ]

where ``N_0`` is the Gaussian approximation (paper, appendix A) of the current predictive,
mean ``x' mu*`` and variance ``b*/(a*-1) (1 + x' Sigma* x)``, ``N_f`` the same after adding the
answer f and refitting the MAP, and ``p(f = 1) = link.prob(xi - gamma . w_ij)`` with the
*fitted* threshold xi and the model variant's feedback link (:mod:`elicit.model.link`; the
paper's is logistic).

Two modes:

``exact``
    The paper's procedure: refit the MAP for each candidate and each answer, warm-started
    from the current MAP, with the engine in use.

``fast`` (default)
    Three stages, each on fewer candidates:

    1. *Laplace screen*, all candidates at once. Under a quadratic approximation of the
       current log posterior (its Hessian ``-A`` at the MAP), adding the answer's term
       ``log p(f | xi - w.gamma)`` moves the MAP along ``A^-1 v`` with
       ``v = (-w, 1[, 0])``, by the root t of the scalar equation
       ``t = score(z0 + q t, f)``, ``q = v' A^-1 v`` (for the logistic link
       ``t = f - sigma(z0 + q t)``, whose first Newton iterate is the Sherman-Morrison Newton
       step ``(f - s) A^-1 v / (1 + s(1-s) q)``). Parameters on their bounds stay there and the
       step is clipped back onto gamma >= 0. The predictive mean and variance move to first
       order along the step.
    2. *Batched Newton*: the screen's best candidates, as many as a floating-point budget
       (:attr:`UtilityScorer.batch_flops`) allows, are refitted by projected Newton with the
       log density evaluated for all of them in stacked numpy operations
       (:mod:`elicit.model.batch`). Like the engine's refit, each iteration solves a local
       model with the feedback terms exact, so the batch finds the optimum the engine finds.
       On the paper's synthetic problem this covers every candidate; at Amazon size it
       covers none, and the screen alone ranks.
    3. *Exact refinement*: the screen's best are refitted with the engine in use and scored
       exactly; the query is chosen among those. On small problems, where refits are cheap
       (:attr:`UtilityScorer.refine_flops`), the ``refine`` best are. On larger ones the
       estimates are refined best first, each one level at a time (model step without
       kernel work, first Newton iterates, finished refits), until the best exact utility
       beats what any other candidate could still reach (:meth:`UtilityScorer.refine_best`):
       at Amazon size that is usually one candidate's two refits.

    Stage 1 alone ranks well but misjudges magnitudes, and its top pick can be far from the
    best: on small problems a surprising answer moves gamma far beyond the quadratic
    approximation. ``docs/benchmarks.md`` measures the decisions against ``exact``.

    The first Newton iterates of the refinement come from the engine when it can advance a
    warm refit step by step (the :class:`WarmNewton` capability, which the numpy engine
    offers), else from a numpy engine beside it; the finished refits always come from the
    engine in use.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, cast, runtime_checkable

import numpy as np
from scipy.linalg import cho_solve

from elicit.elicitation.quadrature import bald_gain
from elicit.engines.base import Engine
from elicit.engines.registry import get_engine
from elicit.internal.threads import single_blas_thread
from elicit.model.batch import batched_refit, flops_per_eval, model_step_screen
from elicit.model.density import (
    Marginal,
    feedback_terms,
    hessian_base,
    log_density,
    lower_bounds,
    theta_of,
)
from elicit.model.kernel import pair_weights
from elicit.model.linalg import damped_cho_factor
from elicit.model.link import LOGISTIC, Link
from elicit.model.newton import CONVERGED
from elicit.model.result import MAPResult
from elicit.model.spec import ModelData
from elicit.model.variants import get_model

if TYPE_CHECKING:
    from elicit.elicitation.utility import PairUtility


def kl_gauss(m1: np.ndarray, v1: np.ndarray, m0: np.ndarray, v0: np.ndarray) -> np.ndarray:
    """KL(N(m1, v1) || N(m0, v0)) summed over the first axis (the training inputs)."""
    return 0.5 * np.sum(np.log(v0 / v1) + (v1 + (m1 - m0) ** 2) / v0 - 1.0, axis=0)


def answer_probability(fit: MAPResult, w: np.ndarray, link: Link) -> np.ndarray:
    """p(similar) = ``link.prob(xi - gamma . w)`` at the fitted MAP, for rows of ``w``.

    ``link`` is the model variant's (``get_model(data.hyper.model).link``; the paper's is
    :data:`~elicit.model.link.LOGISTIC`).
    """
    return link.prob(fit.xi - w @ fit.gamma)


@dataclass
class Scores:
    """Expected utilities of candidate questions.

    ``questions`` are the scored rows: pairs ``(i, j)`` and feature questions
    ``(k, NO_FEATURE)`` (:mod:`elicit.elicitation.questions`). ``utility`` holds the exact
    value where ``exact`` is True (refined or exact mode) and the screen's approximation
    elsewhere; ``best`` indexes the chosen candidate. ``p_answer`` is the probability of the
    first answer at the MAP: similar for a pair, relevant for a feature question. ``hessian``
    is the base Hessian at the MAP when this round computed it: hand it to the engine's refit
    after a pair answer (``Engine.fit(..., hessian=)``) so that the refit starts from it.
    """

    questions: np.ndarray
    utility: np.ndarray
    exact: np.ndarray
    p_answer: np.ndarray
    hessian: np.ndarray | None = field(default=None, repr=False)

    @property
    def pairs(self) -> np.ndarray:
        """:attr:`questions`, under its name in rounds of pair questions only."""
        return self.questions

    @property
    def p_similar(self) -> np.ndarray:
        """:attr:`p_answer`, under its name in rounds of pair questions only."""
        return self.p_answer

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


@runtime_checkable
class WarmNewton(Protocol):
    """An engine that can advance a warm refit one Newton iteration at a time.

    The fast utility's refinement asks an engine for this capability, not for its class: it
    scores the refits' first iterates before deciding which to finish. The numpy engine
    offers it (:meth:`~elicit.engines.numpy_engine.NumpyEngine.newton_run`, whose run has
    ``step()``, ``status``, ``predictive``, ``decrement()`` and ``result()``).
    """

    def newton_run(self, data: ModelData, theta: np.ndarray, hess_base: np.ndarray,
                   keep_predictive: bool = False) -> Any:
        """A warm refit from ``theta`` that the caller advances with ``step()``."""
        ...

    def finish(self, run: Any) -> MAPResult:
        """The run advanced to its end, as the engine's ``fit`` returns it."""
        ...


@runtime_checkable
class BatchRefits(Protocol):
    """An engine that refits many candidate answers at once, each row as its own refit
    would go (the numpy engine: :meth:`~elicit.engines.numpy_engine.NumpyEngine.refit_candidates`).

    The fast utility's batched stage then gives exact utilities: on small problems one stack
    of a hundred refits costs a few single ones.
    """

    def refit_candidates(self, data: ModelData, w_new: np.ndarray, f_new: np.ndarray,
                         theta: np.ndarray, hess_base: np.ndarray,
                         marginal: Marginal | None = None) -> Any:
        """A finished stack of refits (``status``, ``extras``: each row's predictive)."""
        ...

    def remember_candidate(self, data: ModelData, run: Any, row: int, theta: np.ndarray,
                           hess_base: np.ndarray) -> None:
        """Let the engine's ``fit`` of ``data`` return row ``row``'s refit."""
        ...


class UtilityScorer:
    """One query round: the MAP the candidates are scored at, and the pieces that score them.

    The registered :class:`~elicit.elicitation.utility.PairUtility` objects compose these
    pieces (:meth:`screen`, :meth:`newton_stage`, :meth:`refine_best`, :meth:`exact`,
    :meth:`param_gain`);
    :meth:`score` runs the utility that the user-facing options name.

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
    #: floating-point budget of the exact re-scores that the fast mode always makes (on small
    #: problems all ``refine`` of them); beyond it, re-scoring stops once the winner is certain
    refine_flops: float = 3e7
    #: iterations of every refit of the batched stage before only those of the candidates
    #: that may win go on (with an engine that refits candidates exactly, BatchRefits)
    stage_iterations: int = 7
    #: how much the screen may underestimate an unscored candidate beyond the worst
    #: underestimate seen among the re-scored ones (and beyond none at all), for stopping early
    certainty_margin: float = 0.3
    #: the same for the model-step utilities (see :meth:`refine_best`)
    screen_margin: float = 0.1
    #: the same for the near-exact utilities of first Newton iterates
    completion_margin: float = 0.05

    def __init__(self, data: ModelData, fit: MAPResult, engine: Engine) -> None:
        self.data, self.fit, self.engine = data, fit, engine
        #: how an answer depends on xi - gamma . w (the model variant's feedback link)
        self.link: Link = get_model(data.hyper.model).link
        self.marginal = Marginal.of_fit(data, fit)
        self.m0, self.v0 = self.marginal.predictive()
        self._hessian: np.ndarray | None = None

    @property
    def hessian(self) -> np.ndarray:
        """The base Hessian (y-likelihood and priors) at the MAP, computed once per scorer.

        The screen needs it, and it warm-starts the engine's refits from this MAP (the exact
        re-scores here, and the refit after the expert's answer: :attr:`Scores.hessian`).
        """
        if self._hessian is None:
            theta = theta_of(self.fit, self.data)
            self._hessian = hessian_base(theta, self.data, self.marginal)
        return self._hessian

    @property
    def computed_hessian(self) -> np.ndarray | None:
        """The base Hessian if this round has computed it (:attr:`Scores.hessian`), else None."""
        return self._hessian

    def prepare(self, pairs: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``pairs`` as a (k x 2) integer array, their meta-feature differences ``w`` and
        p(similar) at the MAP: what every pair utility starts from."""
        pairs = np.asarray(pairs, dtype=int).reshape(-1, 2)
        w = pair_weights(self.data.U, pairs)
        return pairs, w, answer_probability(self.fit, w, self.link)

    @single_blas_thread
    def score(self, pairs: np.ndarray, utility: str | PairUtility = "fast", refine: int = 10,
              target: str = "predictive") -> Scores:
        """Expected utilities of ``pairs`` (k x 2) under a registered utility.

        Parameters
        ----------
        pairs
            The candidate pairs.
        utility
            ``"fast"`` or ``"exact"`` (with ``target``, mapped by :data:`OPTIONS`), the name
            of a registered utility, or a
            :class:`~elicit.elicitation.utility.PairUtility` object.
        refine
            How many of the screen's best the fast mode re-scores exactly (at most): as many
            as :attr:`refine_flops` pays for always, the rest until the winner is certain
            (:meth:`refine_best`). ``Scores.exact`` marks the exact utilities.
        target
            ``"predictive"`` or ``"params"``. With ``"params"`` the utility is the
            information the answer gives about (gamma, xi) (:meth:`param_gain`); it is exact
            under the Laplace approximation, so the mode and ``refine`` do not apply and
            every candidate is marked exact.
        """
        # the registry sits beside this module and builds on it: imported when asked for
        from elicit.elicitation.utility import PairUtility, UtilityArgs

        gain = (utility if isinstance(utility, PairUtility)
                else UtilityArgs(utility, target, refine).validate())
        return gain.score(self, pairs, refine)

    def refine_best(self, pairs: np.ndarray, w: np.ndarray, s: np.ndarray, u: np.ndarray,
                    exact: np.ndarray, refine: int, weight: np.ndarray | None = None) -> None:
        """Replace screen utilities by exact ones, best first, until the winner is certain.

        Where the budget (:attr:`refine_flops`) covers all ``refine`` candidates, the
        screen's ``refine`` best are refitted in screen order. Otherwise each candidate's
        estimate is refined one level at a time, always the candidate whose estimate could
        be highest: the screen's value; the *model-step* value (the first step of the refit
        solved without kernel work, the predictive moved to first order: within a few per
        cent of exact); the utility of the refits' first Newton iterates (one evaluation per
        answer: within ~1e-3); the exact utility (the refits finished). A candidate's
        estimate could be as high as itself times the level's margin (:attr:`certainty_margin`,
        :attr:`screen_margin`, :attr:`completion_margin`) times the worst underestimate
        seen at that level (at least 1); refining stops when the best exact utility reaches
        every other candidate's bound. At most ``refine`` candidates get Newton iterations.

        ``weight``, if given, multiplies each candidate's gain (``u`` holds weighted gains,
        and every re-score is weighted alike): the probability that the pair is answerable at
        all, in the relevance model (:mod:`elicit.elicitation.features`).
        """
        def wt(c, v):
            return v if weight is None else weight[c] * v

        order = np.argsort(-u)[:refine]
        per_rescore = 10 * flops_per_eval(self.data)     # two refits of ~2 evaluations + KL
        always = max(1.0, min(float(len(order)), self.refine_flops / per_rescore))
        if always >= len(order):
            for c in order:
                if not exact[c]:    # the batched stage's converged refits are exact already
                    u[c] = wt(c, self._exact_one(pairs[c], s[c]))
                    exact[c] = True
            return
        level = np.zeros(len(u), int)     # 0 screen, 1 model step, 2 first iterate, 3 exact
        margin = np.array([1.0 + self.certainty_margin, 1.0 + self.screen_margin,
                           1.0 + self.completion_margin, 1.0])
        under = np.ones(4)
        # level 1 at once for the candidates the screen cannot rule out
        top = np.flatnonzero(u * margin[0] ** 2 >= np.max(u))
        top = top[np.argsort(-u[top])][:3 * refine]
        for c, v in zip(top, wt(top, self._model_step_utilities(w[top], s[top]))):
            under[0] = _worst_underestimate(under[0], v, u[c])
            u[c], level[c] = v, 1
        runs: dict = {}
        n_started, capped = 0, False
        while True:
            open_ = np.flatnonzero((level == 2) if capped else (level < 3))
            if len(open_) == 0:
                break
            bound = u[open_] * margin[level[open_]] * under[level[open_]]
            bound[np.isin(open_, [c for c, (_, sure) in runs.items() if not sure])] = np.inf
            j = open_[int(np.argmax(bound))]
            if exact.sum() >= always and np.max(u[exact]) >= np.max(bound):
                break
            if level[j] == 0:
                v = wt(j, self._model_step_utilities(w[[j]], s[[j]])[0])
                under[0] = _worst_underestimate(under[0], v, u[j])
            elif level[j] == 1:
                if n_started >= refine:
                    capped = True
                    continue
                started, v, sure = self._first_iterates(pairs[j], s[j])
                v = wt(j, v)
                runs[j] = (started, sure)
                n_started += 1
                under[1] = _worst_underestimate(under[1], v, u[j])
            else:
                started, sure = runs.pop(j)
                v = wt(j, self._finish(started, s[j]))
                if sure:
                    under[2] = _worst_underestimate(under[2], v, u[j])
                exact[j] = True
            u[j] = v
            level[j] += 1

    def _model_step_utilities(self, w: np.ndarray, s: np.ndarray) -> np.ndarray:
        """Utilities with each answer's first refit step solved exactly on the local model
        (no kernel work) and the predictive moved to first order along it."""
        data, fit = self.data, self.fit
        learned = data.hyper.variant == "learned"
        theta = theta_of(fit, data)
        lb = lower_bounds(data)
        g0 = log_density(theta, data, self.marginal)[1]
        Jm, Jv = self.marginal.predictive_jacobian(learned)
        kern_idx = data.layout.marginal_index
        u = np.zeros(len(w))
        for f in (0, 1):
            step = model_step_screen(data, theta, g0, self.hessian, lb, w, f).T
            dk = step[kern_idx]
            mf = self.m0[:, None] + Jm @ dk
            vf = np.maximum(self.v0[:, None] + Jv @ dk, 1e-3 * self.v0[:, None])
            u += (s if f == 1 else 1.0 - s) * kl_gauss(mf, vf, self.m0[:, None],
                                                         self.v0[:, None])
        return u

    def _start(self, d2: ModelData) -> np.ndarray:
        # exactly the start point the engine's warm refit uses
        return np.maximum(theta_of(self.fit, d2),
                          lower_bounds(d2))

    def _first_iterates(self, pair: np.ndarray, s: float):
        """Both refits of ``pair`` advanced by one Newton iteration: the runs, the utility of
        their first iterates, and whether both iterates were close to converged."""
        # Ask for the capability, not the engine's class: any engine that advances warm
        # refits step by step serves (the numpy engine does).
        stepper = self.engine if isinstance(self.engine, WarmNewton) else self._stepper
        runs, kl, sure = [], np.empty(2), True
        for f in (0, 1):
            d2 = self.data.with_feedback(np.vstack([self.data.pairs, pair]),
                                         np.append(self.data.f, f))
            run = stepper.newton_run(d2, self._start(d2), self.hessian, keep_predictive=True)
            run.step()
            if run.status == "converged":      # the start was the optimum already
                mf, vf = self._predictive_at(d2, run.result())
            elif run.predictive is not None:
                mf, vf = run.predictive
                sure = sure and run.status == "running" and run.decrement() < 1e-6
            else:                              # no step accepted yet
                mf, vf = self.m0, self.v0
                sure = False
            kl[f] = kl_gauss(mf, vf, self.m0, self.v0)
            runs.append((d2, run))
        return runs, float(s * kl[1] + (1.0 - s) * kl[0]), sure

    def _finish(self, runs, s: float) -> float:
        """The exact utility from the started refits (as :meth:`exact` computes it)."""
        kl = np.empty(2)
        for f, (d2, run) in enumerate(runs):
            if isinstance(self.engine, WarmNewton):
                fit_f = self.engine.finish(run)
            else:
                H = self.hessian if self.engine.uses_hessian else None
                fit_f = self.engine.fit(d2, init=self.fit, hessian=H)
            kl[f] = kl_gauss(*self._predictive_at(d2, fit_f), self.m0, self.v0)
        return float(s * kl[1] + (1.0 - s) * kl[0])

    @staticmethod
    def _predictive_at(d2: ModelData, fit_f: MAPResult) -> tuple[np.ndarray, np.ndarray]:
        # the kernel recomputed from gamma, not fit.K: the results stay bit for bit as before
        return Marginal.from_data(d2, fit_f.gamma, fit_f.tau2, zeta=fit_f.zeta).predictive()

    @property
    def _stepper(self) -> WarmNewton:
        # Newton iterations for the near-exact pass when the engine cannot make them
        return cast(WarmNewton, get_engine("numpy", self.data.hyper.variant))

    # -- the parameter target --------------------------------------------------------------
    def param_gain(self, w: np.ndarray) -> np.ndarray:
        """Mutual information between the answer and theta_f = (gamma, xi), for rows of ``w``.

        The answer depends on theta = (gamma, xi[, tau2]) only through
        ``z = xi - gamma . w = a' theta`` with ``a = (-w, 1[, 0])``. Under the Laplace
        approximation at the MAP, ``theta ~ N(theta_hat, Sigma)`` with ``Sigma = (-H)^-1``
        (H the full Hessian of the log density: :attr:`hessian` plus the answers' terms),
        so ``z ~ N(mu, s^2)``, ``mu = xi_hat - gamma_hat . w``, ``s^2 = a' Sigma a``, and
        the gain is :func:`bald_gain` ``(mu, s^2)`` (Houlsby et al. 2011). tau2, when
        learned, enters only through its correlation with gamma in Sigma.

        The approximation is Gaussian and ignores the bounds gamma, xi >= 0. A parameter the
        MAP puts *on* its bound is treated as fixed there (its row and column of H dropped),
        as the fast screen and the engine's projected Newton steps do: the Gaussian centred
        on the bound would put half its mass where the posterior has none, and the answers
        that would push it further out cannot move it. Free parameters near a bound keep
        their untruncated Gaussian, which overstates their spread towards the bound.

        One Cholesky factorisation of ``-H`` serves every candidate; an indefinite ``-H``
        (a MAP an optimiser left early) is damped (:func:`~elicit.model.linalg.damped_cho_factor`).
        """
        data, fit = self.data, self.fit
        theta = theta_of(fit, data)
        H = self.hessian + feedback_terms(theta, data, True)[2]
        free = theta > lower_bounds(data)
        A = np.zeros((len(theta), len(w)))
        A[:data.d] = -w.T
        A[data.d] = 1.0
        A = A[free]
        if A.shape[0] == 0:
            s2 = np.zeros(len(w))
        else:
            s2 = np.einsum("ic,ic->c", A, cho_solve(damped_cho_factor(-H[np.ix_(free, free)]),
                                                    A, check_finite=False))
        return bald_gain(fit.xi - w @ fit.gamma, np.maximum(s2, 0.0), self.link)

    # -- exact ---------------------------------------------------------------------------
    def exact(self, pairs: np.ndarray, s: np.ndarray) -> np.ndarray:
        """Expected KL by refitting the MAP for both answers of each pair."""
        return np.array([self._exact_one(pair, s[c]) for c, pair in enumerate(pairs)])

    def _exact_one(self, pair: np.ndarray, s: float) -> float:
        kl = np.empty(2)
        for f in (0, 1):
            d2 = self.data.with_feedback(np.vstack([self.data.pairs, pair]),
                                         np.append(self.data.f, f))
            kl[f] = kl_gauss(*self._predictive_at(d2, self._refit(d2)), self.m0, self.v0)
        return float(s * kl[1] + (1.0 - s) * kl[0])

    def _refit(self, d2: ModelData) -> MAPResult:
        """The hypothetical refit of ``d2`` (this round's data and one more answer), warm from
        the round's MAP and base Hessian, as the caller's refit after that answer starts. An
        engine that advances refits step by step finishes it without checking it for another
        mode: only the refit after the expert's real answer is checked (``Engine.fit``)."""
        if isinstance(self.engine, WarmNewton):
            return self.engine.finish(self.engine.newton_run(d2, self._start(d2), self.hessian))
        H = self.hessian if self.engine.uses_hessian else None
        return self.engine.fit(d2, init=self.fit, hessian=H)

    # -- fast screen ---------------------------------------------------------------------
    def newton_stage(self, u: np.ndarray, w: np.ndarray, s: np.ndarray,
                     weight: np.ndarray | None = None, exact: np.ndarray | None = None,
                     pairs: np.ndarray | None = None, remember: int = 0) -> None:
        """Re-score the screen's best candidates by batched Newton refits, within a budget
        (``weight``: as for :meth:`refine_best`).

        On small problems (the paper's synthetic one) this covers every candidate and fixes
        the screen's blind spot, the large moves after surprising answers; on Amazon-size
        problems one batched evaluation costs as much as a refit and the stage is skipped.

        With an engine that refits candidates in a stack (:class:`BatchRefits`), the stage
        is the engine's own refits, run to convergence: a candidate whose two refits
        converged is marked in ``exact``, and the engine remembers the refits of the
        ``remember`` best of those (``pairs``: the candidates), so that its refit after the
        expert's answer is one of them. Otherwise the stage is a screen (a few batched
        iterations), and the refinement refits its best.
        """
        per_candidate = 2 * 6 * flops_per_eval(self.data)
        m = min(len(u), int(self.batch_flops // per_candidate))
        if m == 0:
            return
        top = np.argsort(-u)[:m]
        theta = theta_of(self.fit, self.data)
        if isinstance(self.engine, BatchRefits) and exact is not None and pairs is not None:
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

            # Most refits converge in a few iterations; the few that go far (after a
            # surprising answer) are finished only for the candidates that may win.
            run.advance(self.stage_iterations)
            done = rescore()
            if not done.all():
                cut = np.sort(u[top])[::-1][min(m, max(1, remember)) - 1]
                go = np.flatnonzero(~done & (u[top] >= cut / (1.0 + self.certainty_margin)))
                run.hold(np.setdiff1d(np.arange(2 * m), np.r_[go, m + go]))
                run.advance()
                done = rescore()
            exact[top[done]] = True
            for c in top[done][np.argsort(-u[top[done]])][:remember]:
                j = int(np.flatnonzero(top == c)[0])
                for f, row in ((0, j), (1, m + j)):
                    d2 = self.data.with_feedback(np.vstack([self.data.pairs, pairs[c]]),
                                                 np.append(self.data.f, f))
                    self.engine.remember_candidate(d2, run, row, self._start(d2),
                                                   self.hessian)
            return
        lb = lower_bounds(self.data)
        out = np.zeros(m)
        for f in (0, 1):
            _, mf, vf, _ = batched_refit(self.data, theta, self.hessian, lb, w[top], f,
                                         marginal=self.marginal)
            kl = kl_gauss(mf.T, vf.T, self.m0[:, None], self.v0[:, None])
            out += (s[top] if f == 1 else 1.0 - s[top]) * kl
        u[top] = out if weight is None else weight[top] * out

    def screen(self, w: np.ndarray, s: np.ndarray) -> np.ndarray:
        """One Sherman-Morrison Newton step per candidate and answer, first-order predictive."""
        data, fit = self.data, self.fit
        learned = data.hyper.variant == "learned"
        d = data.d
        theta = theta_of(fit, data)
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
        kern_idx = data.layout.marginal_index
        u = np.zeros(len(w))
        for f in (0, 1):
            step = np.zeros((k, len(w)))
            step[free] = Y * _scalar_step(f, z0, q, self.link)
            step = np.maximum(step, (lb - theta)[:, None])
            dk = step[kern_idx]
            mf = self.m0[:, None] + Jm @ dk
            vf = np.maximum(self.v0[:, None] + Jv @ dk, 1e-3 * self.v0[:, None])
            kl = kl_gauss(mf, vf, self.m0[:, None], self.v0[:, None])
            u += (s if f == 1 else 1.0 - s) * kl
        return u


def _worst_underestimate(under: float, value: float, estimate: float) -> float:
    """max(under, value / estimate), infinite when a non-positive estimate was exceeded."""
    if estimate > 0:
        return max(under, value / estimate)
    return np.inf if value > 0 else under


def _scalar_step(f: int, z0: np.ndarray, q: np.ndarray, link: Link = LOGISTIC,
                 iters: int = 60) -> np.ndarray:
    """Solve ``t = link.score(z0 + q t, f)`` for each candidate (logistic:
    ``t = f - sigma(z0 + q t)``).

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
