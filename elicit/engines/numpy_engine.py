"""The numpy engine: the analytic density of :mod:`elicit.density`, optimised with bounds."""

from __future__ import annotations

import numpy as np
from scipy.optimize import minimize

from elicit.engines.base import Engine, MAPResult
from elicit.errors import ElicitError
from elicit.internal.threads import single_blas_thread
from elicit.model.density import (
    feedback_terms,
    hessian_base,
    join_theta,
    log_density,
    lower_bounds,
    split_theta,
)
from elicit.model.linalg import damped_solve
from elicit.model.spec import ModelData, Params


class NumpyEngine(Engine):
    """MAP of the shipped Stan variants with numpy and scipy.

    A cold fit runs L-BFGS-B with bounds (gamma, xi >= 0, tau2 > 0). A warm fit from a
    previous MAP runs projected Newton iterations instead, from the base Hessian (the Hessian
    of the y-likelihood and priors) that the caller hands over (the utility scorer computes
    it anyway) or else the one the previous fit used: the base
    Hessian is frozen and the feedback curvature is exact at every iterate, so after one new
    answer the fit converges in a few gradient evaluations. If Newton stalls it falls back to
    L-BFGS-B, as prophet falls back to Newton when L-BFGS fails.

    Parameters
    ----------
    variant
        ``"fixed"`` or ``"learned"`` tau2; must match the data's ``hyper.variant``.
    stan_file
        Only the shipped programs are supported: a custom file is an error that names the
        engines able to run it.
    gtol
        Convergence tolerance on the Newton decrement (log-density units).
    """

    name = "numpy"
    uses_hessian = True

    def __init__(self, variant: str = "fixed", stan_file=None, gtol: float = 1e-10,
                 max_newton: int = 30) -> None:
        if stan_file is not None:
            raise ElicitError(
                f"the numpy engine only runs the shipped Stan programs, not {stan_file}; "
                "use --engine pystan (PyStan 3, offline) or --engine cmdstan (needs CmdStan) "
                "to fit a custom .stan file")
        super().__init__(variant)
        self.gtol = gtol
        self.max_newton = max_newton

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
            res = self._newton(theta0, data, H, lb)
            if res is not None:
                return res
        return self._lbfgs(theta0, data, lb)

    def _result(self, theta, value, data, converged, n_iter, message,
                warm_hessian: np.ndarray | None = None) -> MAPResult:
        gamma, xi, tau2 = split_theta(theta, data)
        return MAPResult(gamma=gamma.copy(), xi=xi, tau2=tau2, log_density=float(value),
                         converged=converged, engine=self.name, n_iter=n_iter,
                         message=message, warm_hessian=warm_hessian, U=data.U)

    def _lbfgs(self, theta0: np.ndarray, data: ModelData, lb: np.ndarray) -> MAPResult:
        # Work in scaled coordinates so that xi (prior mean m, possibly in the thousands) and
        # tau2 (possibly 1e-2) are of order one, like gamma.
        scale = np.maximum(np.abs(theta0), 1.0)
        scale[: data.d] = 1.0
        if data.hyper.variant == "learned":
            scale[-1] = max(theta0[-1], 1e-3)

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

    def _newton(self, theta: np.ndarray, data: ModelData, hess_base: np.ndarray,
                lb: np.ndarray) -> MAPResult | None:
        """Projected Newton from a warm start; None when it cannot make progress.

        The base Hessian starts frozen at the previous MAP. When a step fails, or convergence
        is slow (a far move after a surprising answer), it is recomputed once at the current
        iterate.
        """
        value, g = log_density(theta, data)
        refreshed = False

        def done(it: int) -> MAPResult:
            return self._result(theta, value, data, True, it, "Newton (warm start)",
                                warm_hessian=hess_base)

        for it in range(1, self.max_newton + 1):
            if not refreshed and it == 8:
                hess_base, refreshed = hessian_base(theta, data), True
            A = -(hess_base + feedback_terms(theta, data, True)[2])
            free = ~((theta <= lb) & (g < 0))
            step = np.zeros_like(theta)
            step[free] = damped_solve(A[np.ix_(free, free)], g[free])
            decrement = float(g @ step)
            if decrement < self.gtol:
                # Take the last (tiny) step too: it moves the parameters by ~sqrt(decrement),
                # the log density by only ~decrement / 2.
                theta = np.maximum(theta + step, lb)
                return done(it)
            t = 1.0
            while True:
                cand = np.maximum(theta + t * step, lb)
                cval, cg = log_density(cand, data)
                if cval >= value + 1e-4 * t * decrement:
                    break
                t *= 0.5
                if t < 1e-4:
                    break
            if t < 1e-4:
                # No ascent along this direction: the optimum up to rounding when the
                # decrement is tiny; otherwise a stale Hessian, so refresh it once.
                if decrement < 1e-8:
                    return done(it)
                if refreshed:
                    return None
                hess_base, refreshed = hessian_base(theta, data), True
                continue
            theta, value, g = cand, cval, cg
        return None
