"""The ``elicit`` command line: parses arguments and calls the library (``realdata`` and
``table1``: :mod:`elicit.cli.realdata`; the session commands: :mod:`elicit.cli.session`)."""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Collection
from pathlib import Path

from elicit import __version__
from elicit.cli.argtypes import (
    OneLineParser,
    add_command,
    add_engine_options,
    add_sweep_options,
    comma_list,
    nonneg_int,
    positive_int,
    sweep_options,
    threshold_mean,
)
from elicit.cli.data import DATA_COMMANDS, add_data_parsers
from elicit.cli.oneline import run_command
from elicit.cli.realdata import REALDATA_COMMANDS, add_realdata_parsers
from elicit.cli.session import add_session_parsers
from elicit.errors import ElicitError
from elicit.internal.paths import check_output_file, check_output_folder

# The library is imported where a command needs it: every start loads only what it uses.


class _Version(argparse.Action):
    """``--version``, whose text (the code's version asks git) is made only when it is given."""

    def __call__(self, parser: argparse.ArgumentParser, *_: object) -> None:
        from elicit.internal.provenance import code_version
        print(f"elicit {__version__} (code {code_version()})")
        parser.exit()


def build_parser(commands: Collection[str] | None = None) -> argparse.ArgumentParser:
    """The ``elicit`` parser; with ``commands``, only those sub-commands get their options
    (:func:`~elicit.cli.argtypes.add_command`)."""
    parser = OneLineParser(
        prog="elicit", description="Human-in-the-loop active covariance learning.")
    parser.add_argument("--version", action=_Version, nargs=0,
                        help="show the release and the code (a commit, or a hash) and exit")
    sub = parser.add_subparsers(dest="command", required=True)

    add_command(sub, "synthetic", commands, _synthetic_options,
                help="reproduce the paper's synthetic experiment (Figs. 3-4)")
    add_command(sub, "bench", commands, _bench_options,
                help="time refits and utility rounds; print a JSON summary")
    sub.add_parser("models", help="list the named models (--model), what each assumes and its "
                                  "Stan program")
    add_realdata_parsers(sub, commands)
    add_data_parsers(sub, commands)
    add_session_parsers(sub, commands)
    return parser


def _synthetic_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--runs", type=positive_int, default=None,
                   help="runs (default 50, or one per file with --problems)")
    p.add_argument("--problems", type=Path, default=None, metavar="DIR",
                   help="your own simulated problems instead of the built-in generator: one "
                        ".npz per run with X, y, U, X_test, y_test and groups or beta "
                        "(docs/simulations.md)")
    add_sweep_options(p)
    p.add_argument("--n-train", type=positive_int, default=20,
                   help="training samples (paper: 20; the authors' code: 15)")
    p.add_argument("--irrelevant", type=nonneg_int, default=0, metavar="N",
                   help="N of the 25 features get the true weight 0, and the oracle calls "
                        "them irrelevant (default 0: the paper's data)")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.add_argument("--stan-file", type=str, default=None,
                   help="a custom Stan program honouring the contract (--utility exact)")
    p.add_argument("--threshold-mean", type=threshold_mean, default=None,
                   help="prior mean m of the threshold xi: 'auto' (default: mean of gamma0 . w "
                        "over the candidate pairs at the no-feedback MAP) or a number, e.g. 20")


def _bench_options(p: argparse.ArgumentParser) -> None:
    from elicit.data import STANDARDIZE_CHOICES
    from elicit.paper.bench import SIZES

    p.add_argument("--size", choices=SIZES,
                   help="amazon (default), p1000-p10000, synthetic: documented random problems; "
                        "amazon-real/yelp-real: run 0 of the real-data setup (needs the data)")
    p.add_argument("--rounds", type=positive_int,
                   help="query rounds to time, each scored, answered and refitted; the "
                        "figures are medians over them (default 5)")
    p.add_argument("--seed", type=nonneg_int, default=0,
                   help="seed of the problem and of its rounds' question pools (default 0)")
    add_engine_options(p, utility=False)
    p.add_argument("--no-exact", action="store_true", help="skip the (slow) exact rounds")
    p.add_argument("--json", type=Path, help="also write the full result to this file")
    p.add_argument("--data-dir", type=Path, default=None,
                   help="data directory of the -real sizes (default: $ELICIT_DATA, <repo>/data, "
                        "../shared/data)")
    p.add_argument("--standardize", choices=STANDARDIZE_CHOICES,
                   help="the -real sizes: inputs standardised with all 1000 model reviews' "
                        "statistics (model, default) or the 100 training reviews' (train)")
    p.add_argument("--suite", action="store_true",
                   help="measure every recorded figure instead, on the numpy engine at its "
                        "own sizes (make bench; docs/benchmarks.md)")
    p.add_argument("--record", type=Path, default=None, metavar="DIR",
                   help="--suite, all of it, on committed code: write DIR/<commit>.json; name "
                        "figures more than 20%% slower than DIR's last record of this machine")
    for option, what in (("--figures", "round figures to measure"),
                         ("--steps", "reproduce steps to time")):
        p.add_argument(option, type=comma_list, default=None, metavar="LIST",
                       help=f"--suite: comma-separated {what} (default all; '' none)")


def cmd_synthetic(args: argparse.Namespace) -> None:
    from elicit.harness.store import made_by
    from elicit.paper.configs import SyntheticConfig
    from elicit.paper.synthetic import run_synthetic

    check_output_folder(args.out)
    t0 = time.perf_counter()
    cfg = SyntheticConfig(runs=args.runs, n_train=args.n_train, stan_file=args.stan_file,
                          threshold_mean=args.threshold_mean, problems=args.problems,
                          irrelevant=args.irrelevant, **sweep_options(args))
    print(run_synthetic(cfg, args.out, progress=not args.quiet).summary())
    print(f"wrote {args.out / 'mse.csv'}; wall time {time.perf_counter() - t0:.1f} s")
    print(made_by(args.out))  # a resumed folder may hold runs of other code


def cmd_bench(args: argparse.Namespace) -> None:
    # an option of the other mode is refused, not ignored
    other = {"--json": args.json, "--size": args.size, "--rounds": args.rounds,
             "--standardize": args.standardize, "--no-exact": args.no_exact or None,
             "--engine": None if args.engine in ("auto", "numpy") else args.engine} \
        if args.suite else {"--record": args.record, "--figures": args.figures,
                            "--steps": args.steps}
    if given := [o for o, v in other.items() if v is not None]:
        raise ElicitError(f"{given[0]} does not go with --suite: it measures its own "
                          "figures on the numpy engine, and --record DIR writes them"
                          if args.suite else f"{given[0]} goes with --suite")
    args.size = args.size or "amazon"
    if not args.suite and not args.size.endswith("-real") and (given := [o for o, v in (
            ("--data-dir", args.data_dir), ("--standardize", args.standardize)) if v is not None]):
        raise ElicitError(f"{given[0]} goes with the -real sizes, not --size {args.size}")
    if args.suite:
        from elicit.paper.bench_suite import ROUND_KEYS, SuiteSettings, bench_suite

        settings = SuiteSettings(seed=args.seed, refine=args.refine, data_dir=args.data_dir,
                                 figures=ROUND_KEYS if args.figures is None else args.figures,
                                 steps=args.steps)
        if args.record is not None:
            # a subset's record would replace the commit's and be the next call's baseline
            if args.figures is not None or args.steps is not None:
                raise ElicitError("--record writes the whole suite's record: measure a subset "
                                  "(--figures, --steps) without it")
            check_output_folder(args.record, "--record", "the folder of earlier records")
        _, _, table = bench_suite(args.record, settings,
                                  progress=lambda line: print(line, file=sys.stderr, flush=True))
        print(table)
        return
    from elicit.paper.bench import format_table, run_bench

    if args.json is not None:
        check_output_file(args.json, "--json")
    res = run_bench(args.size, rounds=args.rounds or 5, seed=args.seed, engine=args.engine,
                    refine=args.refine, exact=not args.no_exact, data_dir=args.data_dir,
                    json_path=args.json, standardize=args.standardize or "model")
    print(format_table(res))


def cmd_models(args: argparse.Namespace) -> None:
    from elicit.engines.contract import stan_folder  # site-packages' in an installed copy
    from elicit.model.variants import MODELS

    for m in MODELS.values():
        print(m.describe(stan_folder()))


COMMANDS = {"synthetic": cmd_synthetic, "bench": cmd_bench, "models": cmd_models,
            **REALDATA_COMMANDS, **DATA_COMMANDS}


def main(argv: list[str] | None = None) -> int:
    """Run the ``elicit`` command ``argv`` (default ``sys.argv[1:]``); return the exit code."""
    argv = sys.argv[1:] if argv is None else argv
    # the sub-command: the first word that is not an option (none for --help)
    first = next((a for a in argv if not a.startswith("-")), None)
    args = build_parser(set() if first is None else {first}).parse_args(argv)
    return run_command(getattr(args, "session_func", None) or COMMANDS[args.command], args)
