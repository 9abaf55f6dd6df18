"""The ``elicit`` command line."""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from elicit.cli.argtypes import nonneg_int, positive_int, strategies
from elicit.cli.realdata import REALDATA_COMMANDS, add_realdata_parsers
from elicit.cli.session import add_session_parsers, run_session_command
from elicit.elicitation.strategies import STRATEGIES
from elicit.engines import ENGINES
from elicit.errors import ElicitError, EngineUnavailable


def _threshold(text: str) -> float | str:
    if text == "auto":
        return text
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected 'auto' or a number, got {text!r}") from None
    if not v > 0:
        raise argparse.ArgumentTypeError(f"the threshold mean must be positive, got {v}")
    return v


def _add_model_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--engine", choices=ENGINES, default="auto",
                   help="MAP engine (auto: cmdstan if installed, else numpy)")
    p.add_argument("--utility", choices=("fast", "exact"), default="fast",
                   help="fast: screen + exact refinement (default); exact: the paper's refits")
    p.add_argument("--refine", type=nonneg_int, default=10,
                   help="fast mode: candidates re-scored exactly after the screen (default 10)")
    p.add_argument("--stan-file", type=str, default=None,
                   help="a custom Stan program honouring the contract (engines cmdstan/pystan)")
    p.add_argument("--threshold-mean", type=_threshold, default=None,
                   help="prior mean m of the threshold xi: 'auto' (default: mean of gamma0 . w "
                        "over the candidate pairs at the no-feedback MAP) or a number, e.g. 20")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="elicit", description="Human-in-the-loop active covariance learning.")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("synthetic", help="reproduce the paper's synthetic experiment (Figs. 3-4)")
    p.add_argument("--runs", type=positive_int, default=50)
    p.add_argument("--rounds", type=nonneg_int, default=100)
    p.add_argument("--strategies", type=strategies, default=STRATEGIES,
                   help="comma-separated subset of random,nonsequential,sequential")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", type=Path, required=True, help="output directory")
    p.add_argument("--jobs", type=positive_int, default=1, help="worker processes")
    p.add_argument("--n-train", type=positive_int, default=20,
                   help="training samples (paper: 20; the authors' code: 15)")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    _add_model_options(p)

    p = sub.add_parser("bench", help="time refits and utility rounds; print a JSON summary")
    p.add_argument("--size", choices=("amazon", "synthetic", "amazon-real", "yelp-real"),
                   default="amazon",
                   help="amazon/synthetic: documented random problems; amazon-real/yelp-real: "
                        "run 0 of the real-data setup (needs the data directory)")
    p.add_argument("--rounds", type=positive_int, default=5)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--engine", choices=ENGINES, default="auto")
    p.add_argument("--refine", type=nonneg_int, default=10)
    p.add_argument("--no-exact", action="store_true", help="skip the (slow) exact rounds")
    p.add_argument("--json", type=Path, help="also write the full result to this file")
    add_realdata_parsers(sub)
    add_session_parsers(sub)
    return parser


def cmd_synthetic(args: argparse.Namespace) -> None:
    from elicit.model.kernel import kernel
    from elicit.paper.plots import kernel_panels, mse_curves
    from elicit.paper.sweep import SweepConfig, load_part, sweep

    t0 = time.perf_counter()
    snaps = tuple(t for t in (0, 10, 30, 100) if t <= args.rounds)
    cfg = SweepConfig("synthetic", args.runs, args.rounds, args.strategies, args.seed,
                      args.engine, args.utility, args.refine, args.jobs, snapshots=snaps,
                      stan_file=args.stan_file, threshold_mean=args.threshold_mean)

    maker = _Maker(args.n_train)
    df = sweep(maker, cfg, args.out, progress=not args.quiet)
    mse_curves(df, args.out / "fig4_mse.png",
               title=f"Synthetic data: mean ± s.e. over {args.runs} runs")
    if "sequential" in cfg.strategies:
        prob = maker(args.seed, 0)
        gammas = load_part(args.out, cfg, "sequential", 0)["gammas"]
        panels = {"K_opt": prob.extra["K_opt"]}
        for t in snaps:
            if str(t) in gammas:
                panels[f"{t} answers"] = kernel(prob.U, gammas[str(t)])
        kernel_panels(panels, args.out / "fig3_K.png")
    final = df[df.n_feedback == df.n_feedback.max()].groupby("strategy").mse.mean()
    print("mean test MSE after", int(df.n_feedback.max()), "answers:",
          ", ".join(f"{k} {v:.3f}" for k, v in final.items()))
    print(f"wrote {args.out / 'mse.csv'}; wall time {time.perf_counter() - t0:.1f} s")


class _Maker:
    """A picklable problem factory (worker processes need to rebuild each run's data)."""

    def __init__(self, n_train: int) -> None:
        self.n_train = n_train

    def __call__(self, seed: int, run: int):
        from elicit.paper.sweep import synthetic_problem

        return synthetic_problem(seed, run, n_train=self.n_train)


def cmd_bench(args: argparse.Namespace) -> None:
    from elicit.paper.bench import format_table, run_bench

    if args.size.endswith("-real"):
        from elicit.paper.realdata import run_bench_real

        res = run_bench_real(args.size.removesuffix("-real"), run=0, seed=args.seed,
                             rounds=args.rounds, engine=args.engine, refine=args.refine,
                             exact=not args.no_exact)
    else:
        res = run_bench(args.size, rounds=args.rounds, seed=args.seed, engine=args.engine,
                        refine=args.refine, exact=not args.no_exact)
    if args.json:
        args.json.write_text(json.dumps(res, indent=1))
    print(format_table(res))


COMMANDS = {"synthetic": cmd_synthetic, "bench": cmd_bench, **REALDATA_COMMANDS}


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if hasattr(args, "session_func"):
        # Session commands report their own errors (one line, exit 2).
        try:
            return run_session_command(args)
        except SystemExit as e:
            return int(e.code or 0)
    try:
        COMMANDS[args.command](args)
    except (ElicitError, EngineUnavailable, FileNotFoundError) as e:
        print(f"elicit: error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("elicit: interrupted", file=sys.stderr)
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
