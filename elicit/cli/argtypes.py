"""argparse value types shared by the ``elicit`` sub-commands (one message per mistake)."""

from __future__ import annotations

import argparse
import math
from pathlib import Path


def _int(text: str, what: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected {what}, got {text!r}") from None


def positive_int(text: str) -> int:
    v = _int(text, "a positive integer")
    if v < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {v}")
    return v


def nonneg_int(text: str) -> int:
    v = _int(text, "an integer >= 0")
    if v < 0:
        raise argparse.ArgumentTypeError(f"expected an integer >= 0, got {v}")
    return v


def port(text: str) -> int:
    v = _int(text, "a port number")
    if not 0 <= v <= 65535:
        raise argparse.ArgumentTypeError(f"port must be between 0 and 65535, got {v}")
    return v


def strategies(text: str) -> tuple[str, ...]:
    from elicit.elicitation.strategies import STRATEGIES

    out = tuple(s.strip() for s in text.split(",") if s.strip())
    bad = [s for s in out if s not in STRATEGIES]
    if bad or not out:
        raise argparse.ArgumentTypeError(
            f"unknown strategy {bad[0] if bad else text!r}; choose from {', '.join(STRATEGIES)}")
    return out


def threshold_mean(text: str) -> float | str:
    """``--threshold-mean``: ``auto`` or a positive number."""
    if text == "auto":
        return text
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected 'auto' or a number, got {text!r}") from None
    if not v > 0:
        raise argparse.ArgumentTypeError(f"the threshold mean must be positive, got {v}")
    return v


def tau2(text: str) -> float | str:
    """``--tau2``: a positive number or ``cv``."""
    if text.strip().lower() == "cv":
        return "cv"
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"--tau2 must be a positive number or 'cv', got {text!r}") from None
    if not (math.isfinite(v) and v > 0):
        raise argparse.ArgumentTypeError(f"--tau2 must be a positive number or 'cv', got {v}")
    return v


def names(text: str) -> tuple[str, ...]:
    """A comma-separated list of names (sweep folders, say); at least one."""
    out = tuple(s.strip() for s in text.split(",") if s.strip())
    if not out:
        raise argparse.ArgumentTypeError(f"expected comma-separated names, got {text!r}")
    return out


#: The ``--engine`` help, one text for every command.
ENGINE_HELP = ("MAP engine: auto (default: numpy for the shipped Stan programs; a --stan-file "
               "on CmdStan if installed, else PyStan), numpy, cmdstan or pystan")


def add_cluster_option(p: argparse.ArgumentParser) -> None:
    """``--cluster``: run the tasks on a Dask cluster instead of ``--jobs`` local processes."""
    p.add_argument("--cluster", default=None, metavar="ADDRESS",
                   help="run the tasks on a Dask cluster: a scheduler address such as "
                        "tcp://host:8786, or local:N to start N local workers (default: "
                        "--jobs local processes; see docs/scaling.md)")


def add_check_engine_option(p: argparse.ArgumentParser) -> None:
    """``--check-engine``: compare every fit with the numpy twin."""
    p.add_argument("--check-engine", action="store_true",
                   help="check every fit of a cmdstan/pystan engine against the numpy engine "
                        "and stop with both log densities if their MAPs disagree")


def add_sweep_options(p: argparse.ArgumentParser) -> None:
    """The options every sweep command shares: rounds, strategies, seed, output, jobs."""
    from elicit.elicitation.strategies import STRATEGIES

    p.add_argument("--rounds", type=nonneg_int, default=100,
                   help="questions per run and strategy (default 100)")
    p.add_argument("--strategies", type=strategies, default=STRATEGIES,
                   help="comma-separated subset of random,nonsequential,sequential")
    p.add_argument("--seed", type=int, default=0,
                   help="sweep seed: every run's data and random streams derive from it")
    p.add_argument("--out", type=Path, required=True, help="output directory")
    p.add_argument("--jobs", type=positive_int, default=1, help="worker processes")
    add_utility_target_option(p)


def add_utility_target_option(p: argparse.ArgumentParser) -> None:
    """``--utility-target``: what a question's expected gain is about."""
    from elicit.elicitation.utility import TARGETS

    p.add_argument("--utility-target", choices=TARGETS, default="predictive",
                   help="predictive: the answer's expected change of the predictive "
                        "distribution (the paper's, default); params: its information about "
                        "gamma and xi under the Laplace approximation (BALD; --utility and "
                        "--refine then do not apply; docs/utility-targets.md)")
