"""The numpy engine: the analytic density of :mod:`elicit.model.density`, optimised with bounds."""

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
from elicit.model.newton import CONVERGED, NewtonRun, NewtonSettings, OneRefit
from elicit.model.refit_checks import DEFAULT_COLD_START, ColdStartPolicy, new_answers_loglik
from elicit.model.result import MAPResult
from elicit.model.spec import ModelData, Params
from elicit.model.theta import params_of, theta_of


class NumpyEngine(Engine):
    """MAP of any model variant with numpy and scipy: the analytic twin of the Stan programs.

    A cold fit runs L-BFGS-B with bounds. A warm fit runs projected Newton iterations
    (:class:`WarmRefit`) from a frozen base Hessian (the caller's, else the previous fit's),
    falling back to L-BFGS-B if Newton stalls. The last few warm refits are remembered
    (:meth:`finish`): the refit after an answer is usually one the query round already made.

    Parameters
    ----------
    variant, stan_file
        As for :class:`~elicit.engines.base.Engine`; ``stan_file`` must be None (the shipped
        programs only).
    local_model
        Whether warm refits solve the local model with exact feedback terms (True) or take
        plain projected Newton steps (False); None: by problem size (the same MAP either way).
    cold_start
        When a warm refit is checked by a cold fit (``ColdStartPolicy``); None: never.
    score_tol
        The Newton decrement of a query round's hypothetical refits (1e-8: their predictive
        within ~1e-4 relative of the converged one's).

    Attributes
    ----------
    cold_starts
        Counts of the refits checked (``"warm"``), checked by a cold fit (``"tried"``) and
        replaced by it (``"kept"``), and the CPU time of those cold fits (``"cpu_ms"``).
    """

    name = "numpy"
    uses_hessian = True
    #: convergence tolerance on the Newton decrement (log-density units)
    gtol = 1e-10
    #: Newton iterations before a warm refit falls back to L-BFGS-B
    max_newton = 30

    def __init__(self, variant: str = "fixed", stan_file=None, local_model: bool | None = None,
                 cold_start: ColdStartPolicy | None = DEFAULT_COLD_START,
                 score_tol: float = 1e-8) -> None:
        if stan_file is not None:
            raise ElicitError(
                f"the numpy engine only runs the shipped Stan programs, not {stan_file}; "
                "use --engine pystan (PyStan 3, offline) or --engine cmdstan (needs CmdStan) "
                "to fit a custom .stan file")
        super().__init__(variant)
        self.score_tol = max(score_tol, self.gtol)
        self.local_model = local_model
        self.cold_start = cold_start
        self.cold_starts: Counter[str] = Counter()
        self._memo = LRUCache(self._memo_size)

    @single_blas_thread
    def _fit(self, data: ModelData, start: Params, warm: MAPResult | None,
             hessian: np.ndarray | None) -> MAPResult:
        lb = data.layout.lower_bounds()
        theta0 = np.maximum(theta_of(start, data), lb)
        if warm is not None:
            # Newton from a base Hessian (cheaper than the L-BFGS-B iterations it saves): the
            # caller's at the start, else the previous fit's.
            H = hessian if hessian is not None else warm.warm_hessian
            # the warm fit's kernel if it was built at this gamma (the tau2 CV's next value,
            # Table 1's next sample): the same K, one kernel fewer
            K = (warm.__dict__.get("K") if warm.U is data.U and warm.coupled is data.kernel_mask
                 and np.array_equal(warm.gamma, params_of(theta0, data).gamma) else None)
            if H is None or H.shape != (len(theta0), len(theta0)):
                H = hessian_base(theta0, data, Marginal.at(theta0, data, K))
            # on this engine's scale, it gives the new answers' log likelihood (ColdStartPolicy)
            prev = warm.log_density if warm.engine == self.name else None
            key = self._memo_key(data, theta0, H)
            if self._memo.get(key) is None:
                self.finish(self.newton_run(data, theta0, H, K))
            entry = cast(_Remembered, self._memo.get(key))
            res, start_value = self._final(entry), entry.start_value
            # Only a caller's refit after answers to the same problem is checked for another
            # mode: not a query round's many hypothetical refits (finish), nor a warm start for
            # another tau2 or data (docs/benchmarks.md, "Refit modes").
            if warm.problem is None or warm.problem != res.problem:
                return res
            return self._check_cold(data, theta0, lb, res, start_value,
                                    new_answers_loglik(data, theta0, start_value, prev))
        return self._lbfgs(theta0, data, lb)

    def newton_settings(self, data: ModelData, tol: float) -> NewtonSettings:
        """The settings of a warm refit of ``data`` to ``tol``; no final step: fit() takes the
        step the run computed at its last point (WarmRefit.result)."""
        return NewtonSettings(tol=tol, max_iter=self.max_newton, final_step=False,
                              local_model=uses_local_model(data, self.local_model), secant=True)

    def newton_run(self, data: ModelData, theta: np.ndarray, hess_base: np.ndarray,
                   K: np.ndarray | None = None) -> WarmRefit:
        """The caller's warm refit from ``theta`` (kernel ``K``, if known) to :attr:`score_tol`."""
        return WarmRefit(self, data, theta, hess_base, tol=self.score_tol, K=K)

    def refit_candidates(self, data: ModelData, w_new: np.ndarray, f_new: np.ndarray,
                         theta: np.ndarray, hess_base: np.ndarray,
                         marginal: Marginal | None = None) -> NewtonRun:
        """The hypothetical refits of ``data`` with one more answer each (``w_new[c]``
        answered ``f_new[c]``) as one stack (:func:`~elicit.model.batch.candidate_run`); each
        row takes the iterations its refit alone would take."""
        return candidate_run(data, theta, hess_base, w_new, f_new,
                             self.newton_settings(data, self.score_tol), marginal)

    def remember_candidate(self, data: ModelData, run: NewtonRun, row: int,
                           theta: np.ndarray, hess_base: np.ndarray) -> None:
        """Remember converged row ``row`` of a stack as the refit of ``data`` from ``theta``."""
        if run.status[row] != CONVERGED:
            raise ValueError(f"row {row} of the stack did not converge")
        t = run.theta[row]
        args = (float(run.value[row]), data, True, int(run.iters[row]), "Newton (warm start)")
        final = self._result(t + run.final[row], *args, warm_hessian=run.hess_base[row])
        self._memo.put(self._memo_key(data, theta, hess_base),
                       _Remembered(float(run.start_value[row]), final=final),
                       pin=(data.X, data.y, data.U))

    def finish(self, run: WarmRefit) -> MAPResult:
        """A hypothetical refit: the run to its end (L-BFGS-B if it fails), unchecked; remembered
        for :meth:`fit`, which adds the last Newton step and the :attr:`cold_start` check."""
        run.advance()
        if run.status == "converged":
            res, entry = run.result(), _Remembered(run.start_value, run=run)
        else:
            res = self._lbfgs(run.theta_start, run.data, run.lb)
            entry = _Remembered(run.start_value, final=res)
        self._memo.put(self._memo_key(run.data, run.theta_start, run.hess_start), entry,
                       pin=(run.data.X, run.data.y, run.data.U))
        return res

    def _final(self, entry: _Remembered) -> MAPResult:
        """A remembered refit gone on to :attr:`gtol`, after the last Newton step (once)."""
        if entry.final is None:
            run = cast(WarmRefit, entry.run)
            run.tighten(self.gtol)
            run.advance()
            entry.final = (run.result(final=True) if run.status == "converged"
                           else self._lbfgs(run.theta_start, run.data, run.lb))
            entry.run = None
        return entry.final

    def _check_cold(self, data: ModelData, theta0: np.ndarray, lb: np.ndarray,
                    res: MAPResult, start_value: float, new_loglik: float) -> MAPResult:
        """``res`` (the warm refit), or a cold fit if the policy asks for one and it is higher."""
        self.cold_starts["warm"] += 1
        if self.cold_start is None:
            return res
        theta = theta_of(res, data)
        why = self.cold_start.reason(data, theta, res.log_density, start_value, new_loglik, theta0)
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

    #: a query round remembers the refits of its best candidates, both answers each
    _memo_size = 32

    def clear_memo(self) -> None:
        """Forget the remembered warm refits (benchmarks time a refit from scratch so)."""
        self._memo.clear()

    def _memo_key(self, data: ModelData, theta0: np.ndarray, H: np.ndarray) -> tuple:
        H = np.ascontiguousarray(H, dtype=float)
        return (problem_key(data), data.hyper, data.pairs.tobytes(), data.f.tobytes(),
                theta0.tobytes(), H.shape, checksum(H), self.gtol, self.max_newton,
                self.local_model, data.answers_key(), self.cold_start)

    def _result(self, theta, value, data, converged, n_iter, message,
                warm_hessian: np.ndarray | None = None) -> MAPResult:
        return MAPResult.at(theta, data, log_density=float(value), converged=converged,
                            engine=self.name, n_iter=n_iter, message=message,
                            warm_hessian=warm_hessian, problem=problem_key(data))

    def _lbfgs(self, theta0: np.ndarray, data: ModelData, lb: np.ndarray) -> MAPResult:
        # scaled so that xi (thousands) and tau2 (1e-2) are of order one, like gamma
        lay = data.layout
        scale = np.maximum(np.abs(theta0), 1.0)
        scale[lay["gamma"]] = 1.0
        if "tau2" in lay:
            t = lay.index("tau2")
            scale[t] = max(theta0[t], 1e-3)
        # an unbounded entry (zeta: of order one, any sign) keeps scale 1
        scale[np.isneginf(lb)] = 1.0

        def negf(z):
            v, g = log_density(z * scale, data)
            return -v, -g * scale

        z = theta0 / scale
        bounds = [(b / s, None) for b, s in zip(lb, scale)]
        # L-BFGS-B to a loose tolerance, then Newton from the base Hessian there (synthetic
        # problem: 61 -> 37 evaluations per cold fit, the same optima); if Newton fails,
        # L-BFGS-B goes on to its own tolerance.
        res = minimize(negf, z, jac=True, method="L-BFGS-B", bounds=bounds,
                       options={"maxiter": 5000, "ftol": 1e-12, "gtol": 1e-2, "maxcor": 20})
        n_iter = int(res.nit)
        z = res.x
        theta = np.maximum(z * scale, lb)
        run = self.newton_run(data, theta, hessian_base(theta, data))
        run.advance()
        if run.status == "converged":
            # after the last Newton step, evaluated: the reported log density is the point's
            out = run.result(final=True)
            out = replace(out, log_density=float(log_density(theta_of(out, data), data)[0]))
            return replace(out, n_iter=n_iter + run.it,
                           message=f"L-BFGS-B ({res.message}), then Newton", warm_hessian=None)
        # L-BFGS-B can stop on "relative reduction of f" far from a maximum: judged by the
        # projected gradient alone, restarting from where it stopped.
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
    """A remembered refit: start value, and the final one or its run."""

    start_value: float
    run: WarmRefit | None = None
    final: MAPResult | None = None


def problem_key(data: ModelData) -> tuple:
    """What a fit of ``data`` is of, but for the answers and the threshold's prior mean."""
    mask = data.kernel_mask
    h = data.hyper
    return (arrays_key(data.X, data.y, data.U), h.variant, h.model, float(h.tau2),
            float(h.a_sigma), float(h.b_sigma), float(h.a_tau), float(h.b_tau),
            b"" if mask is None else np.packbits(mask).tobytes())


class WarmRefit:
    """A warm refit the caller advances step by step: :mod:`elicit.model.newton` on a stack of
    one. ``status`` is ``"running"``, ``"converged"`` or ``"failed"``."""

    def __init__(self, engine: NumpyEngine, data: ModelData, theta: np.ndarray,
                 hess_base: np.ndarray, tol: float, K: np.ndarray | None = None) -> None:
        self.engine, self.data = engine, data
        self.lb = data.layout.lower_bounds()
        self.theta_start = theta
        self.hess_start = hess_base
        value, g = log_density(theta, data, Marginal.at(theta, data, K=K))
        self.start_value = value
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
    def it(self) -> int:
        return self._run.it

    def advance(self, until: int | None = None) -> None:
        """Newton iterations up to iteration ``until`` (default: until the run stops)."""
        self._run.advance(until)

    def tighten(self, tol: float) -> None:
        """Go on to the decrement ``tol`` from where the run stopped."""
        self._run.tighten(tol)

    def result(self, final: bool = False) -> MAPResult:
        """The converged run's point (``final``: after the last Newton step, not evaluated)."""
        run = self._run
        theta = self.theta + run.final[0] if final else self.theta
        return self.engine._result(theta, run.value[0], self.data, True, run.it,
                                   "Newton (warm start)", warm_hessian=run.hess_base[0])
