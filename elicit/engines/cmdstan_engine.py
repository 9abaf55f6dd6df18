"""The CmdStan engine: Stan's own optimiser through cmdstanpy (needs a CmdStan installation)."""

from __future__ import annotations

import contextlib
import contextvars
import hashlib
import logging
import os
import re
import time
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from elicit.engines.base import StanProgramEngine
from elicit.engines.contract import StanProgramFile
from elicit.errors import ElicitError, EngineError, EngineUnavailable
from elicit.internal.io import write_text_atomic
from elicit.internal.locks import file_lock, user_cache
from elicit.model.result import MAPResult
from elicit.model.spec import ModelData, Params
from elicit.model.theta import theta_of
from elicit.model.variants import PAPER

#: CmdStan optimises u = log(x), so a start on the boundary x = 0 is moved inside, far enough
#: that the gradient in u is not already below ``tol_grad`` (a start at 1e-8 stayed there and
#: reported convergence); relative to each parameter's scale (xi's: m).
_INIT_FLOOR = 1e-3

logger = logging.getLogger(__name__)

_INSTALL_HELP = (
    "the cmdstan engine needs a CmdStan installation, and cmdstanpy found none. Install it "
    "with `python -m cmdstanpy.install_cmdstan` (downloads from GitHub) or point the CMDSTAN "
    "environment variable at an existing installation; the pystan and numpy engines need no "
    "CmdStan")


def cmdstan_missing() -> str | None:
    """Why the cmdstan engine cannot run here, in one line; None if it can."""
    try:
        import cmdstanpy

        path = Path(cmdstanpy.cmdstan_path())
    except Exception:  # ImportError, or ValueError from a missing/invalid installation
        if not (env := os.environ.get("CMDSTAN")):
            return _INSTALL_HELP
        return (f"CMDSTAN is set to {env}, which is not a CmdStan installation "
                f"({'no makefile in it' if os.path.isdir(env) else 'no such folder'})")
    if not (path / "bin" / "stanc").is_file():
        return f"the CmdStan installation at {path} is not built (no bin/stanc): `make build` it"
    return None


#: True while this thread (or task) runs one of the engine's optimiser calls
_IN_FIT: contextvars.ContextVar[bool] = contextvars.ContextVar("elicit_cmdstan_fit", default=False)
# cmdstanpy's records are dropped during a fit (its ERROR lines say "Operation not permitted"
# for exit code 1; the EngineError says what went wrong); a filter, not a level:
# cmdstanpy's ``get_logger()`` resets the level the first time it runs
logging.getLogger("cmdstanpy").addFilter(
    lambda record: not _IN_FIT.get())


@contextlib.contextmanager
def _quiet_fit() -> Iterator[None]:
    """Silence cmdstanpy's log records and FutureWarnings for one optimiser call."""
    token = _IN_FIT.set(True)
    try:
        with warnings.catch_warnings():
            # cmdstanpy's FutureWarnings about its own API, twice per fit
            warnings.simplefilter("ignore", FutureWarning)
            yield
    finally:
        _IN_FIT.reset(token)


def cached_program(src: Path, code: str) -> Path:
    """The copy of ``code`` in ``~/.cache/elicit/stan/`` for this installation: its path and
    version (a program links to its TBB by absolute path)."""
    import cmdstanpy

    path = os.path.realpath(cmdstanpy.cmdstan_path())
    version = cmdstanpy.utils.cmdstan_version()
    installation = f"{path} {'.'.join(map(str, version)) if version else 'unknown'}"
    digest = hashlib.sha256(f"{code}\0{installation}".encode()).hexdigest()[:12]
    target = user_cache("stan") / f"{src.stem}_{digest}.stan"
    if not target.exists():  # atomic, so a concurrent process never sees half a file
        write_text_atomic(target, code)
    return target


@contextlib.contextmanager
def compile_lock() -> Iterator[None]:
    """Hold the machine-wide CmdStan compile lock (compiles into a fresh installation share
    its precompiled header); a process that has to wait says so. cmdstanpy's up-to-date
    check runs under it too: a second process waits, then finds the executable built instead
    of rebuilding it."""
    with file_lock("cmdstan-compile.lock", on_wait=lambda path: logger.warning(
            "waiting for a CmdStan compile in another process to finish (lock %s)", path)):
        yield


#: lines of CmdStan's console output that carry no information of their own
_NOISE = re.compile(r"Stan can't start|Initialization (between|failed)|Try specifying|"
                    r"^Optimization terminated|^\s*$")


def console_summary(error: Exception, program: StanProgramFile) -> str:
    """The informative line of a failed run's output: the program's exception (located in the
    file the user wrote, not in the inlined copy compiled), else the first lines after
    CmdStan's argument listing."""
    text = program.in_source(str(error), cached_program(program.path, program.code))
    _, _, out = text.partition("console log output:")
    lines = [ln.strip() for ln in (out or text).splitlines()]
    # the argument listing ends with "num_threads = ..." (CmdStan >= 2.28)
    last = max((k for k, ln in enumerate(lines) if ln.startswith("num_threads")), default=-1)
    tail = [ln for ln in lines[last + 1:] if not _NOISE.search(ln)]
    exc = [ln for ln in tail if ln.startswith("Exception:")]
    words = " ".join(exc[:1] or tail[:2]) or (out or text).strip().splitlines()[0]
    return words if len(words) <= 300 else words[:297] + "..."


def _write_log(stem: str, text: str) -> Path | None:
    """Save a failed run's full output in the cache's ``logs`` folder; its path, or None if it
    cannot be written."""
    name = f"{stem}-{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}.log"
    try:  # the folder is made if missing
        return write_text_atomic(user_cache("stan") / "logs" / name, text)
    except OSError:
        return None


class CmdStanEngine(StanProgramEngine):
    """MAP with CmdStan's ``optimize`` (``jacobian=False``), L-BFGS then Newton on failure.

    Programs are compiled from a copy (:func:`cached_program`): cmdstanpy writes the
    executable beside the ``.stan`` file, which may sit in a read-only site-packages.
    """

    name = "cmdstan"
    #: iteration limit of each optimiser run
    max_iter = 5000
    #: seed passed to CmdStan (the optimiser is deterministic given the start)
    seed = 1

    def __init__(self, variant: str = "fixed", stan_file: str | Path | None = None) -> None:
        if why := cmdstan_missing():
            raise EngineUnavailable(why)
        super().__init__(variant, stan_file)
        self._models: dict[Path, Any] = {}
        # the paper model's program now, so that a broken installation shows at construction
        self._compile(self._programs[PAPER])

    def _compile(self, program: StanProgramFile):
        from cmdstanpy import CmdStanModel

        src = program.path
        target = cached_program(src, program.code)
        if target in self._models:
            return self._models[target]
        try:
            with compile_lock():
                model = CmdStanModel(stan_file=str(target))
        except (ValueError, RuntimeError) as exc:
            raise ElicitError(f"CmdStan could not compile {src}: {exc}") from exc
        self._models[target] = model
        return model

    def log_prob(self, data: ModelData, theta: np.ndarray) -> tuple[float, np.ndarray]:
        """The program's Jacobian-free log density and gradient at ``theta`` (--check-engine)."""
        lay = data.layout
        program = self.program(data)
        model = self._compile(program)
        theta = np.asarray(theta, dtype=float)
        try:
            with _quiet_fit():
                row = model.log_prob(program.params_to_stan(lay, theta),
                                     program.stan_data(data.to_stan()), jacobian=False,
                                     sig_figs=18).iloc[0]
        except RuntimeError as exc:
            raise EngineError(f"CmdStan's log_prob failed after {len(data.f)} answers: "
                              f"{console_summary(exc, program)}") from exc
        # gradient columns g_<name>[.k] of the unconstrained u: u = log(x) for a bounded
        # entry, d/dx = (d/du) / x; u = x for an unbounded one (zeta)
        gu = np.array([row[f"g_{n}.{k}" if k else f"g_{n}"] for n, k in program.entries(lay)])
        return float(row["lp__"]), gu / np.where(lay.bounded(), theta, 1.0)

    def _fit(self, data: ModelData, start: Params, warm: MAPResult | None,
             hessian: np.ndarray | None) -> MAPResult:
        lay = data.layout
        program = self.program(data)
        floor = np.where(lay.bounded(), _INIT_FLOOR, -np.inf)
        floor[lay.index("xi")] *= data.m
        inits = program.params_to_stan(lay, np.maximum(theta_of(start, data), floor))
        stan_data = program.stan_data(data.to_stan())
        model = self._compile(program)

        fit, used, details = None, "", []
        errors: dict[str, list[str]] = {}  # what went wrong -> the algorithms it happened to
        # As prophet does: L-BFGS first, Newton when L-BFGS fails.
        for algorithm in ("lbfgs", "newton"):
            try:
                with _quiet_fit():
                    # sig_figs=18: CmdStan writes 6 significant digits by default, which
                    # rounds the MAP and lp__ (by up to 5e-5 in log density).
                    attempt = model.optimize(
                        data=stan_data, inits=inits, jacobian=False, algorithm=algorithm,
                        iter=self.max_iter, seed=self.seed, save_iterations=True,
                        require_converged=False, show_console=False, sig_figs=18)
            except RuntimeError as exc:
                errors.setdefault(console_summary(exc, program), []).append(algorithm)
                details.append(f"--- {algorithm}\n{exc}")
                continue
            # An unconverged run (line search failed) is kept only until a better one exists.
            if fit is None or attempt.converged:
                fit, used = attempt, algorithm
            if attempt.converged:
                break
            errors.setdefault("line search failed", []).append(algorithm)
        if fit is None:
            log = _write_log(program.path.stem, "\n\n".join(details))
            where = (f"CmdStan's output: {log}" if log is not None
                     else "CmdStan's output could not be saved")
            err = EngineError(f"CmdStan optimisation failed: {_attempts(errors)} ({where})")
            err.log_file = log  # type: ignore[attr-defined]
            raise err

        # by column name ("gamma[1]", ...): stan_variable() warns for every scalar
        est = fit.optimized_params_dict
        theta = np.array([est[f"{n}[{k}]" if k else n] for n, k in program.entries(lay)])
        iters = fit.optimized_iterations_np
        n_iter = int(iters.shape[0] - 1) if iters is not None else 0
        message = f"CmdStan optimize ({used})"
        if errors:
            message += "; earlier attempts: " + _attempts(errors)
        if n_iter >= self.max_iter:  # cmdstanpy calls a run the limit stopped converged
            message += f"; stopped at the iteration limit ({self.max_iter})"
        return MAPResult.at(
            theta, data, log_density=float(est["lp__"]),
            converged=bool(fit.converged) and n_iter < self.max_iter, engine=self.name,
            n_iter=n_iter, message=message)


def _attempts(errors: dict[str, list[str]]) -> str:
    """"lbfgs, newton: what went wrong | ...", one entry per distinct failure."""
    return " | ".join(f"{', '.join(algs)}: {what}" for what, algs in errors.items())
