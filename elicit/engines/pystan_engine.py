"""The PyStan engine: scipy's L-BFGS-B on Stan's ``log_prob`` and ``grad_log_prob`` (PyStan 3
has no optimiser), over the *constrained* parameters with box bounds: the mode of CmdStan's
``optimize(jacobian=False)`` and of the numpy engine, which may sit on the boundary gamma = 0.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import io
import os
import tempfile
from collections import OrderedDict
from pathlib import Path
from typing import Any

import numpy as np
from scipy.optimize import minimize

from elicit.engines import pystan_cache
from elicit.engines.base import StanProgramEngine
from elicit.engines.contract import StanProgramFile
from elicit.errors import ElicitError, EngineError, EngineUnavailable
from elicit.internal.locks import file_lock
from elicit.model.result import MAPResult
from elicit.model.spec import ModelData, Params
from elicit.model.theta import theta_of

#: Lower bounds of the optimiser: Stan's lower=0 transform is x = exp(u), so the boundary
#: itself is unreachable; 1e-10 is far below any scale that changes the density.
_FLOOR = 1e-10


def _require_pystan():
    try:
        import stan
    except ImportError as exc:
        raise EngineUnavailable(
            "the pystan engine needs PyStan 3 (Linux/macOS): pip install 'elicit[pystan]'"
        ) from exc
    if not hasattr(stan, "build"):
        raise EngineUnavailable(
            f"`import stan` found {getattr(stan, '__file__', None) or stan}, which is not "
            "PyStan 3; install it with pip install 'elicit[pystan]'")
    return stan


def _sync(fn, *args, **kwargs):
    """Call a PyStan function (each runs ``asyncio.run``) from any context.

    ``asyncio.run`` refuses to start inside a running loop (Jupyter), and a worker thread
    crashes httpstan's models (Stan never initialised its autodiff stack), so the running
    loop, blocked here anyway, is detached for the call and then restored.
    """
    outer = asyncio._get_running_loop()
    if outer is None:
        return fn(*args, **kwargs)
    asyncio._set_running_loop(None)
    try:
        return fn(*args, **kwargs)
    finally:
        asyncio._set_running_loop(outer)
        asyncio.set_event_loop(outer)  # asyncio.run cleared the thread's current loop


@contextlib.contextmanager
def _without_client_timeout():
    """Let PyStan's HTTP client (to its in-process server) wait for a compile as long as it
    takes: aiohttp's default 5-minute timeout fails a first compile on a loaded machine."""
    import stan.common

    real = stan.common.aiohttp

    class _Aiohttp:
        def __getattr__(self, name: str) -> Any:
            return getattr(real, name)

        @staticmethod
        def ClientSession(*args: Any, **kwargs: Any) -> Any:  # noqa: N802  (aiohttp's name)
            kwargs.setdefault("timeout", real.ClientTimeout(total=None))
            return real.ClientSession(*args, **kwargs)

    stan.common.aiohttp = _Aiohttp()
    try:
        yield
    finally:
        stan.common.aiohttp = real


def build_pystan_model(program_code: str, data: dict, quiet: bool = False) -> Any:
    """Compile (or fetch from the cache) a program and bind ``data``, in a temporary working
    directory (``stan.build`` leaves a ``build/`` folder); ``quiet``: no progress messages."""
    stan = _require_pystan()
    cwd = os.getcwd()
    with tempfile.TemporaryDirectory(prefix="elicit-pystan-") as tmp, \
            contextlib.ExitStack() as stack:
        stack.enter_context(_without_client_timeout())
        if quiet:  # PyStan reports progress on both streams
            stack.enter_context(contextlib.redirect_stdout(io.StringIO()))
            stack.enter_context(contextlib.redirect_stderr(io.StringIO()))
        os.chdir(tmp)
        try:
            return _sync(stan.build, program_code, data=data)
        finally:
            os.chdir(cwd)


class PyStanEngine(StanProgramEngine):
    """MAP through PyStan 3: L-BFGS-B (scipy) on Stan's Jacobian-free log density.

    Parameters
    ----------
    variant, stan_file
        As for :class:`~elicit.engines.base.StanProgramEngine`; a custom program's parameters
        must be exactly ``gamma``, ``threshold`` (and ``tau``, ``delta`` where a fit has them),
        all ``<lower=0>``, and the relevance model's ``zeta``, unbounded, besides ones of size 0.
    max_iter
        Iteration limit of L-BFGS-B.
    """

    name = "pystan"
    #: number of (program, data) models kept bound (each query round binds a new one)
    cache_size = 8

    def __init__(self, variant: str = "fixed", stan_file: str | Path | None = None,
                 max_iter: int = 5000) -> None:
        _require_pystan()
        super().__init__(variant, stan_file)
        self.max_iter = max_iter
        self._models: OrderedDict[str, tuple[Any, np.ndarray]] = OrderedDict()
        self._compiled: set[str] = set()

    def model(self, data: ModelData) -> tuple[Any, np.ndarray]:
        """The model bound to ``data``, and ``order``: Stan's vector is ``log(theta[order])``."""
        program = self.program(data)
        path, code = program.path, program.code
        stan_data = program.stan_data(data.to_stan())
        h = hashlib.sha256(code.encode())
        for k in sorted(stan_data):
            v = np.asarray(stan_data[k])
            h.update(f"{k}{v.dtype}{v.shape}".encode())
            h.update(np.ascontiguousarray(v).tobytes())
        key = h.hexdigest()
        if key in self._models:
            self._models.move_to_end(key)
            return self._models[key]
        digest = hashlib.sha256(code.encode()).hexdigest()[:16]
        try:
            if digest in self._compiled:
                model = build_pystan_model(code, stan_data, quiet=True)
            else:
                # under a lock, so a second process waits and reuses the build; pystan_cache
                # shares builds across virtual environments
                with file_lock(f"pystan-{digest}.lock"):
                    pystan_cache.restore(code)
                    model = build_pystan_model(code, stan_data)
                    pystan_cache.store(code)
        except (ValueError, RuntimeError) as exc:
            raise ElicitError(f"PyStan could not build {path}: {exc}") from exc
        self._compiled.add(digest)
        order = self._parameter_order(model, data, program)
        self._models[key] = (model, order)
        while len(self._models) > self.cache_size:
            self._models.popitem(last=False)
        return model, order

    def _parameter_order(self, model: Any, data: ModelData, program: StanProgramFile) -> np.ndarray:
        # Unconstrain a point with distinct coordinates: finds where each parameter sits in
        # Stan's vector and checks that every transform is lower=0's u = log(x) (an unbounded
        # zeta: u = x, probed at negative values, which no log of the others reaches).
        lay = data.layout
        bounded = lay.bounded()
        probe = np.where(bounded, 1.0, -1.0) * (1.0 + 0.37 * np.arange(lay.size))
        want = np.where(bounded, np.log(np.abs(probe)), probe)
        pars = program.params_to_stan(lay, probe)
        names = ", ".join(b.stan for b in lay.blocks)
        try:
            u = np.asarray(_sync(model.unconstrain_pars, pars), dtype=float)
        except (RuntimeError, KeyError, ValueError) as exc:
            raise ElicitError(f"{program.path}: the pystan engine needs the parameters to be "
                              f"exactly {names}: {exc}") from exc
        order = np.array([int(np.argmin(np.abs(want - ui))) for ui in u], dtype=int)
        if (len(u) != len(probe) or sorted(order) != list(range(len(probe)))
                or not np.allclose(u, want[order], rtol=0, atol=1e-12)):
            kinds = "each declared <lower=0>" + (" (zeta unbounded)" if not bounded.all() else "")
            raise ElicitError(f"{program.path}: the pystan engine needs exactly the "
                              f"parameters {names}, {kinds} and nothing else")
        return order

    @staticmethod
    def _log_prob(model: Any, order: np.ndarray, bounded: np.ndarray,
                  x: np.ndarray) -> tuple[float, np.ndarray]:
        """Stan's Jacobian-free log density at x and its gradient (RuntimeError: rejected)."""
        xo, b_ord = x[order], bounded[order]
        u = np.where(b_ord, np.log(np.where(b_ord, xo, 1.0)), xo).tolist()
        lp = float(_sync(model.log_prob, u, adjust_transform=False))
        gu = np.asarray(_sync(model.grad_log_prob, u), dtype=float)
        # grad_log_prob includes the Jacobian sum(u) of x = exp(u) (d/du = 1 each): removed,
        # then d/dx = (d/du) / x (an unbounded entry: u = x, no Jacobian).
        gx = np.empty_like(x)
        gx[order] = np.where(b_ord, (gu - 1.0) / xo, gu)
        return lp, gx

    def log_prob(self, data: ModelData, theta: np.ndarray) -> tuple[float, np.ndarray]:
        """The program's Jacobian-free log density and gradient at ``theta`` (--check-engine)."""
        model, order = self.model(data)
        try:
            return self._log_prob(model, order, data.layout.bounded(),
                                  np.asarray(theta, dtype=float))
        except RuntimeError as exc:
            raise EngineError(f"PyStan's log_prob failed after {len(data.f)} answers: "
                              f"{exc}") from exc

    def _fit(self, data: ModelData, start: Params, warm: MAPResult | None,
             hessian: np.ndarray | None) -> MAPResult:
        model, order = self.model(data)
        theta0 = theta_of(start, data)
        # optimise xi / m: all coordinates of order one
        scale = np.ones_like(theta0)
        scale[data.layout.index("xi")] = data.m
        bounded = data.layout.bounded()
        lb = np.where(bounded, _FLOOR, -np.inf)
        z0 = np.maximum(theta0, lb) / scale

        def negf(z: np.ndarray) -> tuple[float, np.ndarray]:
            try:
                lp, gx = self._log_prob(model, order, bounded, np.maximum(z * scale, lb))
            except RuntimeError:
                # Stan rejected the point: make the line search back off
                return np.inf, np.zeros_like(z)
            return -lp, -gx * scale

        res = minimize(negf, z0, jac=True, method="L-BFGS-B",
                       bounds=[(b if np.isfinite(b) else None, None) for b in lb / scale],
                       options={"maxiter": self.max_iter, "ftol": 1e-15, "gtol": 1e-9,
                                "maxcor": 20})
        x = np.maximum(res.x * scale, lb)
        fval, g = float(res.fun), np.asarray(res.jac)
        # L-BFGS-B often ends with an "abnormal" line search at the optimum, where rounding
        # stops progress: accept it when the projected gradient vanishes.
        pg = np.where((x <= lb * (1 + 1e-9)) & (g > 0), 0.0, g)
        converged = bool(np.isfinite(fval) and (res.success or np.max(np.abs(pg)) < 1e-5))
        return MAPResult.at(
            x, data, log_density=-float(fval), converged=converged, engine=self.name,
            n_iter=int(res.nit), message=f"L-BFGS-B on PyStan log_prob: {res.message}")
