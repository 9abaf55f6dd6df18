"""Reproduce the paper's experiments into one results folder (``make reproduce``).

A thin script over the library's experiment functions. The steps, each resumable (a rerun
after an interruption continues where it stopped):

1. ``synthetic``: Figs. 3-4 into ``OUT/synthetic`` (:func:`elicit.paper.synthetic.run_synthetic`
   of a :class:`~elicit.paper.configs.SyntheticConfig`);
2. ``amazon``, ``yelp``: Fig. 5 into ``OUT/amazon``, ``OUT/yelp`` with the defaults (inputs
   standardised with all 1000 model reviews' statistics, tau2 by CV, PPMI-10 meta-features;
   :func:`elicit.paper.realdata.run_realdata` of a :class:`~elicit.paper.configs.RealDataConfig`);
3. ``kitchen``: the same pipeline on the shipped raw Amazon kitchen reviews, a review corpus
   rather than the paper's matrix, into ``OUT/kitchen``
   (:func:`elicit.data.sources.corpus_source`);
4. ``amazon-paper``, ``yelp-paper``: the paper-literal configuration (``--paper``: training
   statistics, tau2 = 0.01, the paper's counts as meta-features) into ``OUT/amazon-paper``,
   ``OUT/yelp-paper``;
5. ``amazon-recommended``, ``yelp-recommended``: beyond the paper, the recommended
   configuration (``--recommended``: :data:`elicit.paper.configs.RECOMMENDED`, PPMI keyword
   embeddings, the known-coupling model; ``docs/beyond-the-paper.md``) into
   ``OUT/amazon-recommended``, ``OUT/yelp-recommended``;
6. ``amazon-mixed``, ``yelp-mixed``, ``kitchen-mixed``: relevance and pair questions
   (``--questions both``: feature questions beside pair questions, one utility, the relevance
   model; pair questions among the keywords not called irrelevant, the open pool, so the start
   uses no expert input) into ``OUT/<data set>-mixed``, with ``--mixed-runs`` runs x
   ``--mixed-rounds`` answers (default the paper's 50 x 100, :data:`MIXED_RUNS`);
7. ``table1``: Table 1 into ``OUT/table1.csv``, reading the default Amazon and Yelp sweeps
   (:func:`elicit.paper.table1.run_table1`).

The real-data steps share what they compute alike for the same run in ``OUT/.memo``
(:data:`MEMO`; :func:`elicit.paper.runinfo.memoised_pieces`). With ``--jobs`` 2 or more (or
``--cluster``) the steps share one pool of workers and run two at a time, each after the steps
it reads or shares that memo with (:func:`elicit.paper.steps.run_steps`): while one step ends
its last runs, the next one's first runs keep the workers busy. The results are those of the
steps run one after the other.

It ends by writing ``OUT/REPORT.md`` and prints the wall time of every step and of the whole,
and the CPU time (of the call: this process and its workers; of a step: its tasks in the
workers and its own thread): on a machine shared with other jobs the wall
time grows, while CPU time / jobs stays an estimate of the wall time on an idle machine. The
report gives both for the whole call and each step's CPU time per run, to choose ``--runs``,
``--real-runs`` and ``--mixed-runs``. Its first line names the commit that wrote it and, if
a resumed folder holds runs of other code, every version its runs came from
(:func:`elicit.harness.store.made_by`).
"""

from __future__ import annotations

import argparse
import resource
import sys
import time
from pathlib import Path

from elicit.cli.argtypes import OneLineParser, nonneg_int, positive_int
from elicit.errors import ElicitError, EngineError, EngineUnavailable
from elicit.paper import steps
from elicit.paper.steps import MIXED_ROUNDS, MIXED_RUNS, STEPS, StepSettings
from elicit.paper.table1 import DEFAULT_SAMPLES
from elicit.report import write_report

#: The folder under OUT where the steps share what they compute alike for the same runs (the
#: baselines of a data set's runs, :func:`elicit.paper.runinfo.memoised_pieces`, and its LASSO
#: experts, :func:`elicit.paper.real_problem.make_expert`). In OUT,
#: not a user-wide cache: it lives and goes with the results it made (deleting OUT starts
#: afresh, as for the sweeps' own resumable parts), and two reproductions into two folders
#: never meet. Not part of the results (``.gitignore``).
MEMO = ".memo"


def cpu_seconds() -> float:
    """User + system CPU time of this process and of its finished worker processes."""
    total = 0.0
    for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN):
        ru = resource.getrusage(who)
        total += ru.ru_utime + ru.ru_stime
    return total


def step_settings(args: argparse.Namespace) -> StepSettings:
    """The steps' settings from the options."""
    return StepSettings(runs=args.runs, real_runs=args.real_runs, rounds=args.rounds,
                        mixed_runs=args.mixed_runs, mixed_rounds=args.mixed_rounds,
                        seed=args.seed, jobs=args.jobs, refine=args.refine,
                        data_dir=args.data_dir, kitchen=args.kitchen,
                        memo=(args.out / MEMO).absolute())


def parse_args(argv: list[str] | None = None) -> tuple[argparse.Namespace, list[str]]:
    """The options, and the steps to run in the order of :data:`STEPS` (an unknown step is
    an argparse error)."""
    ap = OneLineParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, default=Path("results"), help="the results folder")
    ap.add_argument("--runs", type=positive_int, default=50,
                    help="runs of the synthetic step, and of the real-data steps and Table 1 "
                         "unless --real-runs (the mixed steps: --mixed-runs; default 50)")
    ap.add_argument("--real-runs", type=positive_int, default=None,
                    help="runs of the real-data steps and Table 1 (default: --runs)")
    ap.add_argument("--rounds", type=nonneg_int, default=100,
                    help="answers per run of every step but the mixed ones (--mixed-rounds; "
                         "default 100)")
    ap.add_argument("--jobs", type=positive_int, default=2, help="worker processes (default 2)")
    ap.add_argument("--seed", type=int, default=0, help="the seed of every step")
    ap.add_argument("--data-dir", type=Path, default=None,
                    help="data directory (default: $ELICIT_DATA, <repo>/data, ../shared/data)")
    ap.add_argument("--kitchen", type=Path, default=None,
                    help="the review corpus of the kitchen step (default: the shipped "
                         "amazon_kitchen_reviews.jsonl.gz of the data directory)")
    ap.add_argument("--mixed-runs", type=positive_int, default=MIXED_RUNS,
                    help=f"runs of the mixed-question steps (default {MIXED_RUNS})")
    ap.add_argument("--mixed-rounds", type=nonneg_int, default=MIXED_ROUNDS,
                    help=f"answers per run of the mixed-question steps (default "
                         f"{MIXED_ROUNDS})")
    ap.add_argument("--samples", type=positive_int, default=DEFAULT_SAMPLES,
                    help=f"Table 1: cap on the samples rnd/act add (default {DEFAULT_SAMPLES})")
    ap.add_argument("--steps", default=",".join(STEPS),
                    help=f"comma-separated subset of {','.join(STEPS)} (default: all)")
    ap.add_argument("--refine", type=nonneg_int, default=5,
                    help="fast utilities: candidates re-scored exactly per round (default 5: "
                         "the exact best was within the screen's top 4 in every round "
                         "measured in docs/benchmarks.md)")
    ap.add_argument("--quiet", action="store_true", help="no progress bars")
    ap.add_argument("--cluster", default=None, metavar="ADDRESS",
                    help="run every step's tasks on a Dask cluster: a scheduler address or "
                         "local:N (default: --jobs local processes; docs/scaling.md)")
    args = ap.parse_args(argv)
    args.real_runs = args.real_runs or args.runs
    chosen = [s.strip() for s in args.steps.split(",") if s.strip()]
    bad = [s for s in chosen if s not in STEPS]
    if bad:
        ap.error(f"unknown step {bad[0]!r}; choose from {', '.join(STEPS)}")
    if not chosen:
        ap.error(f"--steps names no step; choose from {', '.join(STEPS)}")
    if args.out.exists() and not args.out.is_dir():
        ap.error(f"--out {args.out} is a file; give a folder for the results")
    # known now, not after every other step has run (the sweeps Table 1 reads: its step_after)
    for d in (d for d in steps.step_after("table1") if "table1" in chosen and d not in chosen):
        if not (args.out / d / "mse.csv").exists():
            ap.error(f"table1 reads the finished {d} sweep: add {d} to --steps (there is none "
                     f"in {args.out})")
    try:  # a missing data directory or corpus: known now, not when its step starts
        for s in chosen:
            steps.step_config(s, step_settings(args))
    except ElicitError as e:
        ap.error(str(e))
    return args, [s for s in STEPS if s in chosen]


def main() -> None:
    args, todo = parse_args()
    t0, c0 = time.perf_counter(), cpu_seconds()
    walls: dict[str, float] = {}
    cpus: dict[str, float] = {}

    def done(step: str, summary: str, wall: float, cpu: float) -> None:
        walls[step], cpus[step] = wall, cpu
        print(summary)
        print(f"reproduce: step {step} took {wall / 60:.1f} min (CPU {cpu / 60:.1f} min)",
              flush=True)

    settings = step_settings(args)
    print(f"reproduce: steps {', '.join(todo)}", flush=True)
    try:
        steps.run_steps(todo, args.out, settings, progress=not args.quiet,
                        samples=args.samples, cluster=args.cluster, done=done)
        # after the steps' worker processes ended: their CPU time is this process's children's
        wall, cpu = time.perf_counter() - t0, cpu_seconds() - c0
        walls = {s: walls[s] for s in todo}
        cpus = {s: cpus[s] for s in todo}
        # it reads every sweep in OUT, those of other calls too (one may be damaged)
        write_report(args.out, wall_s=wall, step_s=walls, cpu_s=cpus, jobs=args.jobs,
                     step_runs={s: settings.runs_of(s) for s in todo},
                     cpu_total_s=cpu, steps_at_once=steps.steps_at_once(args.jobs, args.cluster))
    except KeyboardInterrupt:
        left = [s for s in todo if s not in walls]
        print(f"reproduce: interrupted before {', '.join(left)} ended; rerun to continue",
              file=sys.stderr)
        sys.exit(130)
    except (ElicitError, EngineUnavailable, EngineError, FileNotFoundError) as e:
        print(f"reproduce: error: {e}", file=sys.stderr)
        sys.exit(2)
    print("reproduce: " + ", ".join(f"{k} {v / 60:.1f} min" for k, v in walls.items()))
    print(f"reproduce: wall time {wall / 60:.1f} min, CPU time {cpu / 60:.1f} min "
          f"(CPU / {args.jobs} jobs = {cpu / args.jobs / 60:.1f} min); "
          f"report in {args.out / 'REPORT.md'}")


if __name__ == "__main__":
    main()
