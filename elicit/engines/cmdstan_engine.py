"""The CmdStan engine: Stan's own optimiser through cmdstanpy (needs a CmdStan installation)."""

from __future__ import annotations

import contextlib
import contextvars
import functools
import hashlib
import logging
import os
import shutil
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from elicit.engines.base import StanProgramEngine
from elicit.errors import ElicitError, EngineError, EngineUnavailable
from elicit.internal.locks import file_lock
from elicit.model.density import split_theta, theta_of, zeta_of
from elicit.model.result import MAPResult
from elicit.model.spec import ModelData, Params

#: CmdStan starts from the unconstrained u = log(x), so a start on the boundary x = 0 (which
#: the numpy engine can return) is moved inside (an unbounded zeta is left as it is).
_INIT_FLOOR = 1e-8

_INSTALL_HELP = (
    "the cmdstan engine needs a CmdStan installation, and cmdstanpy found none. Install it "
    "with `python -m cmdstanpy.install_cmdstan` (downloads from GitHub) or point the CMDSTAN "
    "environment variable at an existing installation; the pystan and numpy engines need no "
    "CmdStan")


def cmdstan_available() -> bool:
    """True iff cmdstanpy is importable and finds a CmdStan installation."""
    try:
        import cmdstanpy

        cmdstanpy.cmdstan_path()
    except Exception:  # ImportError, or ValueError from a missing/invalid installation
        return False
    return True


#: True while this thread (or task) runs one of the engine's optimiser calls
_IN_FIT: contextvars.ContextVar[bool] = contextvars.ContextVar("elicit_cmdstan_fit",
                                                              default=False)


class _QuietFits(logging.Filter):
    """Drop cmdstanpy's INFO and DEBUG records while the engine runs a fit.

    cmdstanpy logs "Chain [1] start processing" and "... done processing" at INFO for every
    run, two lines per fit and thousands in a sweep. A filter on cmdstanpy's logger, rather
    than its level: cmdstanpy's own ``get_logger()`` resets the level to DEBUG (and adds its
    INFO handler) the first time it runs, whenever that is, but leaves filters alone. Only
    records of the engine's own fits are dropped, so the one-off "compiling stan file" notice
    and everything a user runs through cmdstanpy directly still show, and warnings and
    errors (a failed run, a rejected start) always pass.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        return record.levelno >= logging.WARNING or not _IN_FIT.get()


@functools.cache
def _install_log_filter() -> None:
    logging.getLogger("cmdstanpy").addFilter(_QuietFits())


@contextlib.contextmanager
def _quiet_fit() -> Iterator[None]:
    """Silence cmdstanpy's per-run INFO lines and FutureWarnings for one optimiser call."""
    _install_log_filter()
    token = _IN_FIT.set(True)
    try:
        with warnings.catch_warnings():
            # cmdstanpy's FutureWarnings about its own API, twice per fit
            warnings.simplefilter("ignore", FutureWarning)
            yield
    finally:
        _IN_FIT.reset(token)


def _cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "elicit" / "stan"


class CmdStanEngine(StanProgramEngine):
    """MAP with CmdStan's ``optimize`` (``jacobian=False``), L-BFGS then Newton on failure.

    Parameters
    ----------
    variant
        ``"fixed"`` or ``"learned"`` tau2; must match the data's ``hyper.variant``.
    stan_file
        A custom Stan program honouring the contract (see ``docs/stan.md``); ``None`` runs
        the shipped program of ``variant``.
    max_iter
        Iteration limit of each optimiser run.
    seed
        Seed passed to CmdStan (the optimiser is deterministic given the start).

    Notes
    -----
    cmdstanpy writes the executable beside the ``.stan`` file, and the shipped programs may
    sit in a read-only site-packages, so the program is copied to ``~/.cache/elicit/stan/``
    under a name that includes a hash of its text; each program is compiled once per machine.
    """

    name = "cmdstan"

    def __init__(self, variant: str = "fixed", stan_file: str | Path | None = None,
                 max_iter: int = 5000, seed: int = 1) -> None:
        if not cmdstan_available():
            raise EngineUnavailable(_INSTALL_HELP)
        super().__init__(variant, stan_file)
        self.max_iter = max_iter
        self.seed = seed
        self._models: dict[str, Any] = {}
        # The paper's (or the custom) program is compiled now, so that a broken installation
        # shows at construction; another model's program when its first fit needs it.
        self._compile(self.stan_file, self.program_code)

    def _compile(self, src: Path, code: str):
        from cmdstanpy import CmdStanModel

        digest = hashlib.sha256(code.encode()).hexdigest()[:12]
        if digest in self._models:
            return self._models[digest]
        target = _cache_dir() / f"{src.stem}_{digest}.stan"
        if not target.exists():
            target.parent.mkdir(parents=True, exist_ok=True)
            tmp = target.with_suffix(f".{os.getpid()}.tmp")
            shutil.copyfile(src, tmp)
            os.replace(tmp, target)  # atomic, so a concurrent process never sees half a file
        try:
            # Compile under a lock: a second process waits, then finds the executable up to
            # date instead of rebuilding it while the first one writes it.
            with file_lock(f"cmdstan-{target.stem}.lock"):
                model = CmdStanModel(stan_file=str(target))
        except (ValueError, RuntimeError) as exc:
            raise ElicitError(f"CmdStan could not compile {src}: {exc}") from exc
        self._models[digest] = model
        return model

    def _fit(self, data: ModelData, start: Params, warm: MAPResult | None,
             hessian: np.ndarray | None) -> MAPResult:
        """MAP of (gamma, xi[, tau2]) from ``start`` (CmdStan needs no Hessian)."""
        lay = data.layout
        inits = lay.to_stan(np.maximum(theta_of(start, data),
                                       np.where(lay.bounded(), _INIT_FLOOR, -np.inf)))
        stan_data = data.to_stan()
        model = self._compile(*self.program(data))

        fit, used, errors = None, "", []
        # As prophet does: L-BFGS first, Newton when L-BFGS fails.
        for algorithm in ("lbfgs", "newton"):
            try:
                with _quiet_fit():
                    attempt = model.optimize(
                        data=stan_data, inits=inits, jacobian=False, algorithm=algorithm,
                        iter=self.max_iter, seed=self.seed, save_iterations=True,
                        require_converged=False, show_console=False)
            except RuntimeError as exc:
                errors.append(f"{algorithm}: {exc}")
                continue
            # An unconverged run (line search failed) is kept only until a better one exists.
            if fit is None or attempt.converged:
                fit, used = attempt, algorithm
            if attempt.converged:
                break
            errors.append(f"{algorithm}: line search failed")
        if fit is None:
            raise EngineError("CmdStan optimisation failed: " + " | ".join(errors))

        # The estimates by column name ("gamma[1]", "threshold", ...): stan_variable() logs a
        # warning for every scalar it returns (its return type is to change).
        est = fit.optimized_params_dict
        theta = lay.from_stan({
            b.stan: [est[f"{b.stan}[{k}]"] for k in range(1, b.size + 1)] if b.vector
            else est[b.stan] for b in lay.blocks})
        gamma, xi, tau2 = split_theta(theta, data)
        iters = fit.optimized_iterations_np
        message = f"CmdStan optimize ({used})"
        if errors:
            message += "; earlier attempts: " + " | ".join(errors)
        return MAPResult(
            gamma=gamma, xi=xi, tau2=tau2, log_density=float(est["lp__"]),
            converged=bool(fit.converged), engine=self.name,
            n_iter=int(iters.shape[0] - 1) if iters is not None else 0,
            message=message, U=data.U, zeta=zeta_of(theta, data))
