"""The numpy engine: the analytic density of :mod:`elicit.model.density`, optimised with
bounds (cold fits by L-BFGS-B, warm refits by the projected Newton of
:mod:`elicit.model.newton`)."""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass, replace
from typing import cast

import numpy as np
from scipy.optimize import minimize

from elicit.engines.base import Engine
from elicit.errors import ElicitError
from elicit.internal.cache import LRUCache, arrays_key, checksum
from elicit.internal.threads import single_blas_thread
from elicit.model.batch import candidate_run, uses_local_model
from elicit.model.density import hessian_base, log_density
from elicit.model.marginal import Marginal
from elicit.model.newton import (
    CONVERGED,
    NewtonRun,
    NewtonSettings,
    OneRefit,
)
from elicit.model.refit_checks import DEFAULT_COLD_START, ColdStartPolicy, new_answers_loglik
from elicit.model.result import MAPResult
from elicit.model.spec import ModelData, Params
from elicit.model.theta import lower_bounds, theta_of


class NumpyEngine(Engine):
    """MAP of any model variant (:mod:`elicit.model.variants`) with numpy and scipy: the
    analytic twin of the shipped Stan programs.

    A cold fit runs L-BFGS-B with bounds (gamma, xi >= 0, tau2 > 0). A warm fit from a
    previous MAP runs projected Newton iterations instead (:class:`WarmRefit`), from the base
    Hessian (the Hessian of the y-likelihood and priors) that the caller hands over (the
    utility scorer computes it anyway) or else the one the previous fit used. The base
    Hessian is frozen; each iteration maximises the local model made of the base part's
    quadratic expansion and the feedback terms *exactly* (they are cheap and carry the new
    answer's nonlinearity), so after one new answer the fit converges in one or two
    evaluations of the log density. If
    Newton stalls it falls back to L-BFGS-B, as prophet falls back to Newton when L-BFGS
    fails. A warm refit that may have ended in the wrong one of several local maxima (a
    gamma moved onto its bound, or lower than it started) is repeated from the start of a
    cold fit and the higher density kept (``cold_start``,
    :class:`~elicit.model.refit_checks.ColdStartPolicy`). The last few warm refits are remembered
    (:meth:`finish`): the refit after the expert's answer is usually one the query round has
    already made.

    Parameters
    ----------
    variant
        ``"fixed"`` or ``"learned"`` tau2; must match the data's ``hyper.variant``.
    stan_file
        Only the shipped programs are supported: a custom file is an error that names the
        engines able to run it.
    gtol
        Convergence tolerance on the Newton decrement (log-density units).
    max_newton
        Newton iterations before a warm refit falls back to L-BFGS-B.
    local_model
        Whether warm refits solve the local model with exact feedback terms (True) or take
        plain projected Newton steps (False); None (default) decides by problem size
        (:func:`elicit.model.batch.uses_local_model`). Both converge to the same MAP.
    cold_start
        When a warm refit is checked by a cold fit
        (:class:`~elicit.model.refit_checks.ColdStartPolicy`); None: never.

    score_tol
        The Newton decrement to which a query round's hypothetical refits go (1e-8: their
        predictive within ~1e-4 relative of the converged one's, far inside the fast
        utility's margins); the refit a caller makes goes on from there to ``gtol`` and
        takes the last Newton step.

    Attributes
    ----------
    cold_starts
        Counts of the refits checked (``"warm"``), checked by a cold fit (``"tried"``) and
        replaced by it (``"kept"``), and the CPU time of those cold fits (``"cpu_ms"``).
    """

    name = "numpy"
    uses_hessian = True

    def __init__(self, variant: str = "fixed", stan_file=None, gtol: float = 1e-10,
                 max_newton: int = 30, local_model: bool | None = None,
                 cold_start: ColdStartPolicy | None = DEFAULT_COLD_START,
                 secant: bool = True, score_tol: float = 1e-8) -> None:
        if stan_file is not None:
            raise ElicitError(
                f"the numpy engine only runs the shipped Stan programs, not {stan_file}; "
                "use --engine pystan (PyStan 3, offline) or --engine cmdstan (needs CmdStan) "
                "to fit a custom .stan file")
        super().__init__(variant)
        self.gtol = gtol
        self.score_tol = max(score_tol, gtol)
        self.max_newton = max_newton
        self.local_model = local_model
        self.cold_start = cold_start
        self.secant = secant
        self.cold_starts: Counter[str] = Counter()
        self._memo = LRUCache(self._memo_size)

    @single_blas_thread
    def _fit(self, data: ModelData, start: Params, warm: MAPResult | None,
             hessian: np.ndarray | None) -> MAPResult:
        lb = lower_bounds(data)
        theta0 = np.maximum(theta_of(start, data), lb)
        if warm is not None:
            # A warm start from a previous MAP: Newton from a base Hessian (computing one
            # costs less than the L-BFGS-B iterations it saves, at every problem size). The
            # caller's Hessian at the start is best, then the one the previous fit used.
            H = hessian if hessian is not None else warm.warm_hessian
            if H is None or H.shape != (len(theta0), len(theta0)):
                H = hessian_base(theta0, data)
            # The previous fit's log density, when it is on this engine's scale: the new
            # answers' log likelihood at the start is the difference (ColdStartPolicy).
            prev = warm.log_density if warm.engine == self.name else None
            key = self._memo_key(data, theta0, H)
            if self._memo.get(key) is None:
                self.finish(self.newton_run(data, theta0, H, prev_value=prev))
            entry = cast(_Remembered, self._memo.get(key))
            res, start_value = self._final(entry), entry.start_value
            # Only a refit the caller makes after answers of the same problem is checked for
            # another mode: not the hypothetical refits of a query round (finish), which are
            # many (docs/benchmarks.md, "Refit modes"), nor a warm start for another tau2 or
            # other data (tau2's cross-validation), where no answer came in.
            if warm.problem is None or warm.problem != res.problem:
                return res
            return self._check_cold(data, theta0, lb, res, start_value,
                                    new_answers_loglik(data, theta0, start_value, prev))
        return self._lbfgs(theta0, data, lb)

    def newton_settings(self, data: ModelData, tol: float | None = None) -> NewtonSettings:
        """The settings of a warm refit of ``data``: the tolerance ``tol`` (default this
        engine's, :attr:`gtol`), its iteration limit and local-model choice (by problem size
        unless set), no final step, the other defaults of
        :class:`~elicit.model.newton.NewtonSettings`."""
        # No final step in the run: a query round's hypothetical refit is the last point
        # evaluated, whose marginal (the predictive) is then in the marginal cache; fit()
        # takes the step the run computed there (WarmRefit.result).
        return NewtonSettings(tol=self.gtol if tol is None else tol, max_iter=self.max_newton,
                              final_step=False,
                              local_model=uses_local_model(data, self.local_model),
                              secant=self.secant)

    def newton_run(self, data: ModelData, theta: np.ndarray, hess_base: np.ndarray,
                   prev_value: float | None = None) -> WarmRefit:
        """A hypothetical warm Newton refit from ``theta`` that the caller advances step by
        step (:class:`WarmRefit`), to the scoring tolerance :attr:`score_tol`; :meth:`fit`
        goes on from it to :attr:`gtol`. ``prev_value``: the log density of the previous fit
        at ``theta`` (default: the data's last answer is the new one)."""
        return WarmRefit(self, data, theta, hess_base, prev_value, tol=self.score_tol)

    def refit_candidates(self, data: ModelData, w_new: np.ndarray, f_new: np.ndarray,
                         theta: np.ndarray, hess_base: np.ndarray,
                         marginal: Marginal | None = None) -> NewtonRun:
        """The hypothetical refits of ``data`` with one more answer each (``w_new[c]``, the
        pair's squared meta-feature differences, answered ``f_new[c]``), all warm from
        ``theta`` with the base Hessian ``hess_base``, as one stack with this engine's
        settings and its scoring tolerance (:func:`~elicit.model.batch.candidate_run`), for
        the caller to advance (:meth:`~elicit.model.newton.NewtonRun.advance`).

        Every row takes the iterations its refit alone would take (its own step, line
        search and Hessian), so a converged row is the refit :meth:`finish` makes of that
        data, at stacked numpy's rounding: on small problems one stack of a hundred refits
        costs a few single ones. :meth:`remember_candidate` lets :meth:`fit` return a row's
        refit at once.
        """
        return candidate_run(data, theta, hess_base, w_new, f_new,
                             self.newton_settings(data, self.score_tol), marginal)

    def remember_candidate(self, data: ModelData, run: NewtonRun, row: int,
                           theta: np.ndarray, hess_base: np.ndarray) -> None:
        """Remember row ``row`` of a converged :meth:`refit_candidates` stack (``data`` is
        that row's data: the stack's data with the row's answer appended) as the refit of
        ``data`` from ``theta`` with ``hess_base``, as :meth:`finish` remembers a run."""
        if run.status[row] != CONVERGED:
            raise ValueError(f"row {row} of the stack did not converge")
        t = run.theta[row]
        args = (float(run.value[row]), data, True, int(run.iters[row]), "Newton (warm start)")
        res = self._result(t, *args, warm_hessian=run.hess_base[row])
        final = self._result(t + run.final[row], *args, warm_hessian=run.hess_base[row])
        self._memo.put(self._memo_key(data, theta, hess_base),
                       _Remembered(float(run.start_value[row]), res, final=final),
                       pin=(data.X, data.y, data.U))

    def finish(self, run: WarmRefit) -> MAPResult:
        """The result of a :class:`WarmRefit` advanced to its end (a failed run falls back to
        L-BFGS-B from the run's start): a hypothetical refit of a query round, at the last
        point the run evaluated, not checked for another mode.

        The run is remembered: a query round finishes the refits of its best candidates,
        and the caller's refit after the expert answers one of them (same data, start and
        base Hessian) is then returned at once. :meth:`fit` returns the run's point after
        its last Newton step (which moves the parameters by about the square root of the
        tolerance, the log density by less than it: a hypothetical refit only needs the
        predictive at the point evaluated, whose marginal is cached), checked by a cold fit
        where :attr:`cold_start` asks for one.
        """
        while run.status == "running":
            run.step()
        if run.status == "converged":
            entry = _Remembered(run.start_value, run.result(), run=run)
        else:
            res = self._lbfgs(run.theta_start, run.data, run.lb)
            entry = _Remembered(run.start_value, res, final=res)
        self._memo.put(self._memo_key(run.data, run.theta_start, run.hess_start), entry,
                       pin=(run.data.X, run.data.y, run.data.U))
        return entry.hypothetical

    def _final(self, entry: _Remembered) -> MAPResult:
        """A remembered refit as :meth:`fit` returns it: its run gone on from the scoring
        tolerance to :attr:`gtol`, after the last Newton step (once, then remembered)."""
        if entry.final is None:
            run = cast(WarmRefit, entry.run)
            run.tighten(self.gtol)
            while run.status == "running":
                run.step()
            entry.final = (run.result(final=True) if run.status == "converged"
                           else self._lbfgs(run.theta_start, run.data, run.lb))
            entry.run = None
        return entry.final

    def _check_cold(self, data: ModelData, theta0: np.ndarray, lb: np.ndarray,
                    res: MAPResult, start_value: float, new_loglik: float) -> MAPResult:
        """``res``, the warm refit of ``data`` from ``theta0`` (log density ``start_value``
        there, ``new_loglik`` of it the new answers'), or the cold fit of ``data`` if the
        policy asks for one and it ends higher."""
        self.cold_starts["warm"] += 1
        if self.cold_start is None:
            return res
        theta = theta_of(res, data)
        why = self.cold_start.reason(data, theta, res.log_density, start_value, new_loglik,
                                     theta0)
        if why is None:
            return res
        self.cold_starts["tried"] += 1
        t0 = time.process_time()
        cold = self._lbfgs(np.maximum(theta_of(data.initial_params(), data), lb), data, lb)
        self.cold_starts["cpu_ms"] += round(1e3 * (time.process_time() - t0))
        if not cold.log_density > res.log_density + 1e-9 * max(1.0, abs(res.log_density)):
            return replace(res, message=f"{res.message}; {why}: a cold start ended at "
                                        f"{cold.log_density - res.log_density:+.3g}, not kept")
        self.cold_starts["kept"] += 1
        return replace(cold, message=f"{cold.message}; cold start kept ({why}): "
                                     f"{cold.log_density - res.log_density:+.3g} in log "
                                     f"density over the warm refit")

    # -- memo of warm refits -------------------------------------------------------------
    #: a query round remembers the refits of its best candidates, both answers each
    _memo_size = 32

    def clear_memo(self) -> None:
        """Forget the remembered warm refits (benchmarks time a refit from scratch so)."""
        self._memo.clear()

    def _memo_key(self, data: ModelData, theta0: np.ndarray, H: np.ndarray) -> tuple:
        H = np.ascontiguousarray(H, dtype=float)
        mask = data.kernel_mask
        return (arrays_key(data.X, data.y, data.U), data.hyper,
                b"" if mask is None else np.packbits(mask).tobytes(),
                data.pairs.tobytes(), data.f.tobytes(), theta0.tobytes(), H.shape,
                checksum(H), self.gtol, self.max_newton, self.local_model,
                data.answers_key(), self.cold_start)

    def _result(self, theta, value, data, converged, n_iter, message,
                warm_hessian: np.ndarray | None = None) -> MAPResult:
        return MAPResult.at(theta, data, log_density=float(value), converged=converged,
                            engine=self.name, n_iter=n_iter, message=message,
                            warm_hessian=warm_hessian, problem=problem_key(data))

    def _lbfgs(self, theta0: np.ndarray, data: ModelData, lb: np.ndarray) -> MAPResult:
        # Work in scaled coordinates so that xi (prior mean m, possibly in the thousands) and
        # tau2 (possibly 1e-2) are of order one, like gamma.
        lay = data.layout
        scale = np.maximum(np.abs(theta0), 1.0)
        scale[lay["gamma"]] = 1.0
        if "tau2" in lay:
            t = lay.index("tau2")
            scale[t] = max(theta0[t], 1e-3)
        # an unbounded entry (the relevance model's logit zeta: of order one already, and
        # of any sign) keeps scale 1
        scale[np.isneginf(lb)] = 1.0

        def negf(z):
            v, g = log_density(z * scale, data)
            return -v, -g * scale

        z = theta0 / scale
        bounds = [(b / s, None) for b, s in zip(lb, scale)]
        # L-BFGS-B to a loose tolerance, then Newton from the base Hessian there: its last
        # iterations polish at a few evaluations what L-BFGS-B takes dozens for (synthetic
        # problem: 61 -> 37 evaluations per cold fit; the same optima, within 1e-10 in log
        # density, in 70 fits of the synthetic and Amazon problems). If Newton fails,
        # L-BFGS-B goes on to its own tolerance.
        res = minimize(negf, z, jac=True, method="L-BFGS-B", bounds=bounds,
                       options={"maxiter": 5000, "ftol": 1e-12, "gtol": 1e-2, "maxcor": 20})
        n_iter = int(res.nit)
        z = res.x
        theta = np.maximum(z * scale, lb)
        run = self.newton_run(data, theta, hessian_base(theta, data))
        while run.status == "running":
            run.step()
        if run.status == "converged":
            # after the last Newton step, evaluated: the reported log density is the point's
            out = run.result(final=True)
            out = replace(out, log_density=float(log_density(theta_of(out, data), data)[0]))
            return replace(out, n_iter=n_iter + run.it,
                           message=f"L-BFGS-B ({res.message}), then Newton", warm_hessian=None)
        # L-BFGS-B can stop on "relative reduction of f" far from a maximum (a flat stretch
        # of a multimodal posterior); convergence is judged by the projected gradient alone,
        # restarting from where it stopped while that is large.
        for _restart in range(5):
            res = minimize(negf, z, jac=True, method="L-BFGS-B", bounds=bounds,
                           options={"maxiter": 5000, "ftol": 1e-15, "gtol": 1e-9,
                                    "maxcor": 20})
            n_iter += int(res.nit)
            z = res.x
            theta = np.maximum(z * scale, lb)
            value, g = log_density(theta, data)
            pg = np.where((theta <= lb) & (g < 0), 0.0, g) * scale
            ok = bool(np.max(np.abs(pg)) < 1e-4)
            if ok:
                break
        return self._result(theta, value, data, ok, n_iter, f"L-BFGS-B: {res.message}")


@dataclass
class _Remembered:
    """A refit the engine remembers: the log density at its start, the hypothetical refit (to
    the scoring tolerance, at the last point evaluated), and the refit a caller gets (to the
    engine's tolerance, after the last Newton step), or the run to make it from."""

    start_value: float
    hypothetical: MAPResult
    run: WarmRefit | None = None
    final: MAPResult | None = None


def problem_key(data: ModelData) -> tuple:
    """What a fit of ``data`` is a fit of, but for the answers: the data arrays (identity and
    checksum), the hyperparameters without the threshold's prior mean (set from the data at
    the no-feedback fit) and the kernel's mask."""
    mask = data.kernel_mask
    h = data.hyper
    return (arrays_key(data.X, data.y, data.U), h.variant, h.model, float(h.tau2),
            float(h.a_sigma), float(h.b_sigma), float(h.a_tau), float(h.b_tau),
            b"" if mask is None else np.packbits(mask).tobytes())


class WarmRefit:
    """A warm refit of one :class:`ModelData` that the caller advances step by step: the
    projected Newton of :mod:`elicit.model.newton` on a stack of one, with the engine's
    settings (:meth:`NumpyEngine.newton_settings`).

    The base Hessian starts frozen at the previous MAP. When a step fails, or convergence is
    slow (a far move after a surprising answer), it is recomputed once at the current
    iterate. The marginal at the start comes from the cache of recent marginals when the query
    round computed it (:class:`~elicit.model.marginal_cache.MarginalCache`).

    ``status`` is ``"running"``, ``"converged"`` or ``"failed"`` (then the engine falls back
    to L-BFGS-B). ``start_value`` is the log density at the start, ``new_loglik`` the log
    likelihood there of the answers new since the previous fit (``prev_value``: that fit's
    log density; see :func:`~elicit.model.refit_checks.new_answers_loglik`).
    """

    def __init__(self, engine: NumpyEngine, data: ModelData, theta: np.ndarray,
                 hess_base: np.ndarray, prev_value: float | None = None,
                 tol: float | None = None) -> None:
        self.engine, self.data = engine, data
        self.lb = lower_bounds(data)
        self.theta_start = theta
        self.hess_start = hess_base
        value, g = log_density(theta, data)
        self.start_value = value
        self.new_loglik = new_answers_loglik(data, theta, value, prev_value)
        settings = engine.newton_settings(data, tol)
        self.local_model = settings.local_model
        self._run = NewtonRun(OneRefit(data), theta[None, :].copy(),
                              np.array([value]), g[None, :], hess_base, settings)

    @property
    def status(self) -> str:
        return self._run.status[0]

    @property
    def theta(self) -> np.ndarray:
        return self._run.theta[0]

    @property
    def value(self) -> float:
        return self._run.value[0]

    @property
    def g(self) -> np.ndarray:
        return self._run.grad[0]

    @property
    def it(self) -> int:
        return self._run.it

    @property
    def hess_base(self) -> np.ndarray:
        return self._run.hess_base[0]

    def step(self) -> str:
        """One Newton iteration; returns the new status."""
        self._run.step()
        return self.status

    def tighten(self, tol: float) -> None:
        """Go on to the decrement ``tol`` (from where the run stopped, if it converged to a
        looser one)."""
        self._run.tighten(tol)

    def result(self, final: bool = False) -> MAPResult:
        """The converged run's point (``final``: after the last Newton step, computed at
        convergence but not evaluated; the log density is the point's before it)."""
        theta = self.theta + self._run.final[0] if final else self.theta
        return self.engine._result(theta, self.value, self.data, True, self.it,
                                   "Newton (warm start)", warm_hessian=self.hess_base)
