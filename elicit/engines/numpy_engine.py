"""The numpy engine: the analytic density of :mod:`elicit.density`, optimised with bounds."""

from __future__ import annotations

import zlib

import numpy as np
from scipy.optimize import minimize

from elicit.engines.base import Engine
from elicit.errors import ElicitError
from elicit.internal.cache import LRUCache, arrays_key
from elicit.internal.threads import single_blas_thread
from elicit.model.batch import uses_local_model
from elicit.model.density import (
    Marginal,
    feedback_terms,
    hessian_base,
    join_theta,
    log_density,
    lower_bounds,
    split_theta,
)
from elicit.model.linalg import damped_solve
from elicit.model.result import MAPResult
from elicit.model.spec import ModelData, Params


class NumpyEngine(Engine):
    """MAP of the shipped Stan variants with numpy and scipy.

    A cold fit runs L-BFGS-B with bounds (gamma, xi >= 0, tau2 > 0). A warm fit from a
    previous MAP runs projected Newton iterations instead, from the base Hessian (the Hessian
    of the y-likelihood and priors) that the caller hands over (the utility scorer computes
    it anyway) or else the one the previous fit used. The base Hessian is frozen; each
    iteration maximises the local model made of the base part's quadratic expansion and the
    feedback terms *exactly* (they are cheap and carry the new answer's nonlinearity), so
    after one new answer the fit converges in one or two evaluations of the log density. If
    Newton stalls it falls back to L-BFGS-B, as prophet falls back to Newton when L-BFGS
    fails. The last few warm refits are remembered (:meth:`finish`): the refit after the
    expert's answer is usually one the query round has already made.

    Parameters
    ----------
    variant
        ``"fixed"`` or ``"learned"`` tau2; must match the data's ``hyper.variant``.
    stan_file
        Only the shipped programs are supported: a custom file is an error that names the
        engines able to run it.
    gtol
        Convergence tolerance on the Newton decrement (log-density units).
    local_model
        Whether warm refits solve the local model with exact feedback terms (True) or take
        plain projected Newton steps (False); None (default) decides by problem size
        (:func:`elicit.model.batch.uses_local_model`). Both converge to the same MAP.
    """

    name = "numpy"
    uses_hessian = True

    def __init__(self, variant: str = "fixed", stan_file=None, gtol: float = 1e-10,
                 max_newton: int = 30, local_model: bool | None = None) -> None:
        if stan_file is not None:
            raise ElicitError(
                f"the numpy engine only runs the shipped Stan programs, not {stan_file}; "
                "use --engine pystan (PyStan 3, offline) or --engine cmdstan (needs CmdStan) "
                "to fit a custom .stan file")
        super().__init__(variant)
        self.gtol = gtol
        self.max_newton = max_newton
        self.local_model = local_model
        self._memo = LRUCache(self._memo_size)

    @single_blas_thread
    def _fit(self, data: ModelData, start: Params, warm: MAPResult | None,
             hessian: np.ndarray | None) -> MAPResult:
        lb = lower_bounds(data)
        theta0 = np.maximum(join_theta(start.gamma, start.xi, start.tau2, data), lb)
        if warm is not None:
            # A warm start from a previous MAP: Newton from a base Hessian (computing one
            # costs less than the L-BFGS-B iterations it saves, at every problem size). The
            # caller's Hessian at the start is best, then the one the previous fit used.
            H = hessian if hessian is not None else warm.warm_hessian
            if H is None or H.shape != (len(theta0), len(theta0)):
                H = hessian_base(theta0, data)
            hit = self._memo.get(self._memo_key(data, theta0, H))
            if hit is not None:
                return hit
            return self.finish(self.newton_run(data, theta0, H))
        return self._lbfgs(theta0, data, lb)

    def newton_run(self, data: ModelData, theta: np.ndarray, hess_base: np.ndarray,
                   keep_predictive: bool = False) -> NewtonRun:
        """A warm Newton refit from ``theta`` that the caller advances step by step
        (:class:`NewtonRun`); :meth:`fit` runs one to the end."""
        return NewtonRun(self, data, theta, hess_base, keep_predictive)

    def finish(self, run: NewtonRun) -> MAPResult:
        """The result of a :class:`NewtonRun` advanced to its end, as :meth:`fit` returns it
        (a failed run falls back to L-BFGS-B from the run's start).

        The result is remembered: a query round finishes the refits of its best candidates,
        and the caller's refit after the expert answers one of them (same data, start and
        base Hessian) is then returned at once.
        """
        while run.status == "running":
            run.step()
        if run.status == "converged":
            res = run.result()
        else:
            res = self._lbfgs(run.theta_start, run.data, run.lb)
        self._memo.put(self._memo_key(run.data, run.theta_start, run.hess_start), res,
                       pin=(run.data.X, run.data.y, run.data.U))
        return res

    # -- memo of warm refits -------------------------------------------------------------
    _memo_size = 8

    def clear_memo(self) -> None:
        """Forget the remembered warm refits (benchmarks time a refit from scratch so)."""
        self._memo.clear()

    def _memo_key(self, data: ModelData, theta0: np.ndarray, H: np.ndarray) -> tuple:
        H = np.ascontiguousarray(H, dtype=float)
        mask = data.kernel_mask
        return (arrays_key(data.X, data.y, data.U), data.hyper,
                b"" if mask is None else np.packbits(mask).tobytes(),
                data.pairs.tobytes(), data.f.tobytes(), theta0.tobytes(), H.shape,
                zlib.crc32(H.data), self.gtol, self.max_newton, self.local_model)

    def _result(self, theta, value, data, converged, n_iter, message,
                warm_hessian: np.ndarray | None = None) -> MAPResult:
        gamma, xi, tau2 = split_theta(theta, data)
        return MAPResult(gamma=gamma.copy(), xi=xi, tau2=tau2, log_density=float(value),
                         converged=converged, engine=self.name, n_iter=n_iter,
                         message=message, warm_hessian=warm_hessian, U=data.U)

    def _lbfgs(self, theta0: np.ndarray, data: ModelData, lb: np.ndarray) -> MAPResult:
        # Work in scaled coordinates so that xi (prior mean m, possibly in the thousands) and
        # tau2 (possibly 1e-2) are of order one, like gamma.
        lay = data.layout
        scale = np.maximum(np.abs(theta0), 1.0)
        scale[lay["gamma"]] = 1.0
        if "tau2" in lay:
            t = lay.index("tau2")
            scale[t] = max(theta0[t], 1e-3)

        def negf(z):
            v, g = log_density(z * scale, data)
            return -v, -g * scale

        z = theta0 / scale
        bounds = [(b / s, None) for b, s in zip(lb, scale)]
        # L-BFGS-B can stop on "relative reduction of f" far from a maximum (a flat stretch
        # of a multimodal posterior); convergence is judged by the projected gradient alone,
        # restarting from where it stopped while that is large.
        n_iter = 0
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



class NewtonRun:
    """Projected Newton from a warm start, one iteration per :meth:`step`.

    Each iteration maximises a local model of the log density: the base part (the
    y-likelihood and the priors) by its gradient and the frozen base Hessian, the feedback
    terms exactly. The feedback terms cost O(N_f d) against the base part's kernel products,
    and they carry what makes a refit after a new answer non-quadratic: the logistic term of
    that answer. Solving the model (projected Newton on d + 1 parameters, no kernel work)
    therefore takes the step plain Newton would take in several iterations, and a refit after
    one answer converges in one or two evaluations of the log density (plain Newton needed
    four to seven). On small problems, where a density evaluation costs less than the
    Python overhead of solving the model, plain projected Newton steps are taken instead
    (``NumpyEngine(local_model=...)``, :data:`elicit.model.batch.LOCAL_MODEL_MIN_FLOPS`).

    The base Hessian starts frozen at the previous MAP. When a step fails, or convergence is
    slow (a far move after a surprising answer), it is recomputed once at the current
    iterate. The log density at the start comes from the y-part cache when the query round
    has stored it there (:class:`~elicit.model.density.YPartCache`).

    ``status`` is ``"running"``, ``"converged"`` or ``"failed"`` (then the engine falls back
    to L-BFGS-B). With ``keep_predictive``, ``predictive`` holds the Gaussian predictive at
    the training inputs of the last evaluated iterate (the query round's near-exact screen).
    """

    def __init__(self, engine: NumpyEngine, data: ModelData, theta: np.ndarray,
                 hess_base: np.ndarray, keep_predictive: bool = False) -> None:
        self.engine, self.data = engine, data
        self.lb = lower_bounds(data)
        self.theta_start = theta
        self.theta = theta
        self.hess_base = hess_base
        self.hess_start = hess_base
        self.keep_predictive = keep_predictive
        self.value, self.g = log_density(theta, data, cached=True)
        self.predictive: tuple[np.ndarray, np.ndarray] | None = None
        self.it = 0
        self.refreshed = False
        self.status = "running"
        self._next: tuple | None = None
        # Small problems take plain Newton steps (batch.LOCAL_MODEL_MIN_FLOPS says why).
        self.local_model = uses_local_model(data, engine.local_model)

    def decrement(self) -> float:
        """Newton decrement at the current iterate (the convergence measure)."""
        return self._direction()[1]

    def _direction(self) -> tuple:
        if self._next is None:
            if not self.refreshed and self.it + 1 == 8:
                self.hess_base, self.refreshed = hessian_base(self.theta, self.data), True
            _, fg, fH = feedback_terms(self.theta, self.data, True)
            step, decrement = _projected_newton_step(self.hess_base + fH, self.g, self.theta,
                                                     self.lb)
            self._next = (step, decrement, fg)
        return self._next

    def step(self) -> str:
        """One Newton iteration; returns the new status."""
        if self.status != "running":
            return self.status
        step, decrement, fg = self._direction()
        self._next = None
        self.it += 1
        if decrement < self.engine.gtol:
            # Take the last (tiny) step too: it moves the parameters by ~sqrt(decrement),
            # the log density by only ~decrement / 2.
            self.theta = np.maximum(self.theta + step, self.lb)
            self.status = "converged"
            return self.status
        theta, data, lb = self.theta, self.data, self.lb
        direction = (_model_step(theta, self.g - fg, self.hess_base, data, lb, step, decrement,
                                 tol=1e-3 * self.engine.gtol)
                     if self.local_model else step)
        slope = float(self.g @ direction)
        if not (np.isfinite(slope) and slope > 0):
            direction, slope = step, decrement
        t = 1.0
        while True:
            cand = np.maximum(theta + t * direction, lb)
            gamma, _, tau2 = split_theta(cand, data)
            try:
                mg = Marginal.from_data(data, gamma, tau2)
            except np.linalg.LinAlgError:
                # S numerically indefinite (an extreme tau2 or gamma): no density there
                cval = -np.inf
            else:
                cval, cg = log_density(cand, data, mg)
            if cval >= self.value + 1e-4 * t * slope:
                break
            t *= 0.5
            if t < 1e-4:
                break
        if t < 1e-4:
            # No ascent along this direction: the optimum up to rounding when the
            # decrement is tiny; otherwise a stale Hessian, so refresh it once.
            if decrement < 1e-8:
                self.status = "converged"
            elif self.refreshed:
                self.status = "failed"
            else:
                self.hess_base = hessian_base(theta, data)
                self.refreshed = True
        else:
            self.theta, self.value, self.g = cand, cval, cg
            if self.keep_predictive:
                self.predictive = mg.predictive()
        if self.status == "running" and self.it >= self.engine.max_newton:
            self.status = "failed"
        return self.status

    def result(self) -> MAPResult:
        return self.engine._result(self.theta, self.value, self.data, True, self.it,
                                   "Newton (warm start)", warm_hessian=self.hess_base)


def _projected_newton_step(H: np.ndarray, g: np.ndarray, theta: np.ndarray,
                           lb: np.ndarray) -> tuple[np.ndarray, float]:
    """Newton step of a concave quadratic model (Hessian H, gradient g) with the parameters
    on their lower bounds held there when the gradient pushes them out; and its decrement."""
    free = ~((theta <= lb) & (g < 0))
    step = np.zeros_like(theta)
    step[free] = damped_solve(-H[np.ix_(free, free)], g[free])
    return step, float(g @ step)


def _model_step(theta: np.ndarray, g_base: np.ndarray, H_base: np.ndarray, data: ModelData,
                lb: np.ndarray, step0: np.ndarray, dec0: float, tol: float,
                max_iter: int = 50) -> np.ndarray:
    """Maximiser s of the local model over theta + s >= lb,

        m(s) = g_base' s + s' H_base s / 2 + F(theta + s) - F(theta),

    with F the feedback log likelihood (exact), by projected Newton with backtracking from
    s = 0, whose first step ``step0`` (decrement ``dec0``) the caller has computed. The model
    is concave when -H_base is positive definite; where it is not, the damped solves still
    give ascent steps and the outer line search guards the result.
    """
    F0 = feedback_terms(theta, data, False)[0]

    def model(s: np.ndarray) -> float:
        return float(g_base @ s + 0.5 * s @ (H_base @ s)
                     + feedback_terms(theta + s, data, False)[0] - F0)

    s = np.zeros_like(theta)
    m = 0.0
    st, dec = step0, dec0
    for _ in range(max_iter):
        t = 1.0
        while True:
            s_new = np.maximum(theta + s + t * st, lb) - theta
            m_new = model(s_new)
            if m_new >= m + 1e-4 * t * dec:
                break
            t *= 0.5
            if t < 1e-8:
                return s
        s, m = s_new, m_new
        _, fg, fH = feedback_terms(theta + s, data, True)
        st, dec = _projected_newton_step(H_base + fH, g_base + H_base @ s + fg, theta + s, lb)
        if not dec >= tol:
            if np.isfinite(dec):
                s = np.maximum(theta + s + st, lb) - theta
            break
    return s
