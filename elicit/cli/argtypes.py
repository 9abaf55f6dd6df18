"""argparse value types shared by the ``elicit`` sub-commands (one message per mistake)."""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable, Collection
from pathlib import Path
from typing import Any, NoReturn

from elicit.errors import ElicitError


class OneLineParser(argparse.ArgumentParser):
    """An :class:`argparse.ArgumentParser` whose usage errors are one line (``elicit CMD:
    error: MESSAGE (see elicit CMD --help)``, exit status 2); sub-command parsers inherit it."""

    def __init__(self, *args: Any, **kw: Any) -> None:
        # a prefix of an option is not that option: `realdata --run 7` is not --runs 7
        super().__init__(*args, **{"allow_abbrev": False, **kw})

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")

    def parse_args(self, args: Any = None, namespace: Any = None) -> Any:
        ns, extra = self.parse_known_args(args, namespace)
        if extra:
            # said by the command's own parser, which points to the help that lists its options
            p: argparse.ArgumentParser = self
            while subs := [a for a in p._actions if isinstance(a, argparse._SubParsersAction)]:
                p = subs[0].choices[getattr(ns, subs[0].dest)]
            p.error(f"unrecognized arguments: {' '.join(extra)}")
        return ns


def add_command(subparsers: argparse._SubParsersAction, command: str,
                commands: Collection[str] | None,
                options: Callable[[argparse.ArgumentParser], None], **kw: Any) -> None:
    """Add the sub-command ``command`` (``kw``: its ``help``, ``description``), with its
    ``options`` when ``commands`` is None or names it: building every command's options
    (which load scipy, pandas and the model) would cost ``elicit --help`` about a second."""
    p = subparsers.add_parser(command, **kw)
    if commands is None or command in commands:
        options(p)


def _int(text: str, what: str, low: int, high: float = math.inf, bad: str = "") -> int:
    """``text`` as an integer in [low, high]; ``bad``: the start of the out-of-range message."""
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected {what}, got {text!r}") from None
    if not low <= v <= high:
        raise argparse.ArgumentTypeError(f"{bad or 'expected ' + what}, got {v}")
    return v


def positive_int(text: str) -> int:
    return _int(text, "a positive integer", 1)


def nonneg_int(text: str) -> int:
    return _int(text, "an integer >= 0", 0)


def port(text: str) -> int:
    return _int(text, "a port number", 0, 65535, "port must be between 0 and 65535")


def answer_counts(text: str) -> tuple[int, ...]:
    """``--tau2-again``: positive integers, comma-separated, or ``none``."""
    return () if text.strip().lower() == "none" else tuple(map(positive_int, comma_list(text)))


def comma_list(text: str) -> tuple[str, ...]:
    """The stripped, non-empty items of a comma-separated ``text``."""
    return tuple(t.strip() for t in text.split(",") if t.strip())


def strategies(text: str) -> tuple[str, ...]:
    """``--strategies``: registered strategies, comma-separated."""
    from elicit.elicitation.strategies import STRATEGY_REGISTRY

    out = comma_list(text)
    if (bad := [s for s in out if s not in STRATEGY_REGISTRY]) or not out:
        raise argparse.ArgumentTypeError(
            f"unknown strategy {bad[0] if bad else text!r}; choose from "
            f"{', '.join(STRATEGY_REGISTRY)}")
    return out


def strategy(text: str) -> str:
    """``--strategy``: one registered strategy."""
    out = strategies(text)
    if len(out) != 1:
        raise argparse.ArgumentTypeError(f"give one strategy, got {text!r}")
    return out[0]


def questions(text: str) -> tuple[str, ...]:
    """``--questions``: kinds of question, comma-separated, ``all`` or ``both``."""
    from elicit.elicitation.kinds import parse_questions

    try:
        return parse_questions(text)
    except ElicitError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def questions_help() -> str:
    """What ``--questions`` takes: the registered kinds, ``all`` and the groups' names."""
    from elicit.elicitation.kinds import KINDS, groups

    kinds = ", ".join(f"{k.name} ({k.meaning})" for k in KINDS.values())
    return kinds + "; all" + "".join(f"; {g} = {','.join(m)}" for g, m in groups().items())


def threshold_mean(text: str) -> float | str:
    """``--threshold-mean``: ``auto`` or a number (the sweep's configuration checks it)."""
    if text == "auto":
        return text
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected 'auto' or a number, got {text!r}") from None


def tau2(text: str) -> float | str:
    """``--tau2``: a positive number or ``cv``."""
    if text.strip().lower() == "cv":
        return "cv"
    try:
        v = float(text)
    except ValueError:
        v = math.nan  # refused below, as an out-of-range number is
    if not (math.isfinite(v) and v > 0):
        raise argparse.ArgumentTypeError(f"--tau2 must be a positive number or 'cv', got {text!r}")
    return v


def names(text: str) -> tuple[str, ...]:
    """A comma-separated list of names (sweep folders, say); at least one."""
    if not (out := comma_list(text)):
        raise argparse.ArgumentTypeError(f"expected comma-separated names, got {text!r}")
    return out


def add_engine_options(p: argparse.ArgumentParser, utility: bool = True) -> None:
    """``--engine``, ``--utility`` (if ``utility``) and ``--refine``: how fits and utilities
    are computed."""
    from elicit.engines import ENGINES

    p.add_argument("--engine", choices=ENGINES, default="auto",
                   help="MAP engine: auto (default: numpy for the shipped Stan programs; "
                        "elicit synthetic --stan-file on CmdStan if installed, else PyStan), "
                        "numpy, cmdstan or pystan")
    if utility:
        p.add_argument("--utility", choices=("fast", "exact"), default="fast",
                       help="expected information gain: fast (screen every candidate, "
                            "re-score the best --refine exactly; default) or exact (a refit "
                            "per candidate, the paper's procedure)")
    p.add_argument("--refine", type=nonneg_int, default=10,
                   help="fast utility: how many screened candidates are re-scored exactly "
                        "(default 10)")


def add_cluster_option(p: argparse.ArgumentParser) -> None:
    """``--cluster``: run the tasks on a Dask cluster instead of ``--jobs`` local processes."""
    p.add_argument("--cluster", default=None, metavar="ADDRESS",
                   help="run the tasks on a Dask cluster: a scheduler address such as "
                        "tcp://host:8786, or local:N to start N local workers (default: "
                        "--jobs local processes; see docs/scaling.md)")


def add_model_option(p: argparse.ArgumentParser) -> None:
    """``--model NAME`` (checked by the library; default None: what the --questions need)."""
    from elicit.elicitation.kinds import KINDS, model_for
    from elicit.model.variants import MODELS, PAPER

    need = "".join(f"{k.model} with {k.label}, " for k in KINDS.values() if k.model)
    p.add_argument("--model", default=None, metavar="NAME",
                   help=f"the model: {', '.join(MODELS)} (default {PAPER}, or the model the "
                        f"--questions need: {need}{model_for('all')} with all; `elicit "
                        "models` says what each assumes)")


def add_sweep_options(p: argparse.ArgumentParser) -> None:
    """The options every sweep command shares: all that :func:`sweep_options` passes on."""
    from elicit.elicitation.kinds import PAPER_QUESTIONS
    from elicit.elicitation.strategies import STRATEGIES
    from elicit.paper.configs import POOLS

    add_model_option(p)
    p.add_argument("--questions", type=questions, default=PAPER_QUESTIONS,
                   metavar="KIND[,KIND...]",
                   help="the kinds of question the simulated expert is asked, comma-separated: "
                        f"{questions_help()}; default {','.join(PAPER_QUESTIONS)} (the "
                        "paper's); several are chosen among by one utility")
    p.add_argument("--pool", choices=POOLS, default=None,
                   help="where pair questions come from: paper (the expert's answerable "
                        "pairs; with feature questions the best case, as it leaks the "
                        "expert's relevance knowledge) or open (every pair, those among the "
                        "features not called irrelevant so far offered); default paper with "
                        "--questions pairs, open otherwise")
    p.add_argument("--rounds", type=nonneg_int, default=100,
                   help="questions per run and strategy (default 100)")
    p.add_argument("--strategies", type=strategies, default=STRATEGIES,
                   help=f"comma-separated registered strategies (default "
                        f"{','.join(STRATEGIES)})")
    p.add_argument("--seed", type=int, default=0,
                   help="sweep seed: every run's data and random streams derive from it")
    p.add_argument("--out", type=Path, required=True, help="output directory")
    p.add_argument("--jobs", type=positive_int, default=1, help="worker processes")
    add_utility_target_option(p)
    add_engine_options(p)
    add_cluster_option(p)
    p.add_argument("--check-engine", nargs="?", const="higher", default=False,
                   choices=("higher", "stop"),
                   help="check every cmdstan/pystan fit against the numpy engine; at two "
                        "stationary points go on from the higher (default) or stop "
                        "(docs/stan.md)")


def sweep_options(args: argparse.Namespace) -> dict[str, Any]:
    """The options every sweep passes on to its configuration as given (all that
    :func:`add_sweep_options` adds)."""
    return {k: getattr(args, k) for k in (
        "rounds", "strategies", "seed", "jobs", "model", "questions", "pool", "utility_target",
        "engine", "utility", "refine", "cluster", "check_engine")}


def add_meta_options(p: argparse.ArgumentParser, where: str, file_help: str = "",
                     default: str = "counts") -> None:
    """``--meta-features counts|ppmi|lsa|FILE`` and ``--meta-dim K``, parsed as text and
    checked by :func:`meta_options` (``default``: the kind it gives without them)."""
    from elicit.data.metafeatures import DEFAULT_META_DIM

    p.add_argument("--meta-features", default=None, metavar="counts|ppmi|lsa|FILE",
                   help=f"{where}: the keywords' meta-features: counts (the paper's: "
                        "each keyword's training counts), ppmi or lsa (an embedding of the "
                        "keywords learned from the reviews outside the model, no ratings), or "
                        "a CSV/Parquet file with the keyword in the first column"
                        + file_help + f"; default {default} (see docs/metafeatures.md)")
    p.add_argument("--meta-dim", default=None, metavar="K",
                   help=f"dimensions of the ppmi/lsa embedding (default {DEFAULT_META_DIM})")


def meta_options(kind: str | None, dim: str | None) -> tuple[str, int]:
    """The checked ``--meta-features`` and ``--meta-dim``: ``(kind or path, dimensions)``;
    ``counts`` when ``kind`` is None."""
    from elicit.data.metafeatures import DEFAULT_META_DIM, EMBEDDINGS, META_FEATURES

    kind = "counts" if kind is None else kind
    if kind not in META_FEATURES and not Path(kind).is_file():
        raise ElicitError(f"--meta-features {kind!r} is neither one of "
                          f"{', '.join(META_FEATURES)} nor an existing file")
    if dim is None:
        return kind, DEFAULT_META_DIM
    if kind not in EMBEDDINGS:
        raise ElicitError(f"--meta-dim goes with --meta-features ppmi or lsa only (the "
                          f"dimensions of the embedding), not with {kind!r}")
    return kind, _positive_dim(dim)


def sweep_meta_options(kind: str | None, dim: str | None) -> tuple[str | None, int | None]:
    """:func:`meta_options` for ``elicit realdata``, where what was not given stays None (the
    configuration resolves it)."""
    if kind is None:
        return None, None if dim is None else _positive_dim(dim)
    return meta_options(kind, dim)


def _positive_dim(dim: str) -> int:
    try:
        return positive_int(dim)
    except argparse.ArgumentTypeError:
        raise ElicitError(f"--meta-dim must be a positive integer, got {dim!r}") from None


def add_utility_target_option(p: argparse.ArgumentParser) -> None:
    """``--utility-target``: what a question's expected gain is about."""
    from elicit.elicitation.utility import TARGETS

    p.add_argument("--utility-target", choices=TARGETS, default="predictive",
                   help="predictive: the answer's expected change of the predictive "
                        "distribution (the paper's, default); params: its information about "
                        "gamma and xi under the Laplace approximation (BALD; --utility and "
                        "--refine then do not apply; docs/utility-targets.md)")
