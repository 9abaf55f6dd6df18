"""The ``elicit realdata`` and ``elicit table1`` commands (paper Sec. 4.2, Fig. 5, Table 1).

Folder layout (what ``make reproduce`` produces under ``results/``)::

    OUT/amazon/            elicit realdata --dataset amazon --out OUT/amazon
        config.json        the settings of the sweep (a rerun with other settings is refused)
        mse.csv            dataset,strategy,run,n_feedback,mse (+ lasso/ridge/elasticnet rows)
        fig5_amazon.png/.pdf
        tau2_cv.csv        only with --tau2 cv: the tau2 chosen per run and the CV errors
        parts/amazon/...   resumable per-run results (sweep parts, runinfo = baselines, tau2)
    OUT/yelp/              the same for Yelp
    OUT/table1.csv         elicit table1 --out OUT
    OUT/table1/            curves.csv (rnd/act MSE curves) and parts/ (resumable)

``elicit table1 --out OUT`` reads the realdata sweeps in ``OUT/<dataset>/``: their
``config.json`` gives the seed, tau2 setting and data directory (so the sample-addition
loops use exactly the same splits and model), their ``mse.csv`` the sequential-elicitation
curves (the SeqElc column) and the initial MSE of each run, from which that run's relative
levels are set (the paper's relative reduction from the run's own start; the ``mse_level``
of a relative row is the mean over runs).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
import pandas as pd

from elicit.cli.argtypes import nonneg_int, positive_int, strategies
from elicit.elicitation.strategies import STRATEGIES
from elicit.engines import ENGINES
from elicit.errors import ElicitError
from elicit.paper.realdata import DATASETS, PAPER_TAU2, POOL_SIZE, TAU2_GRID

BASELINES: tuple[str, ...] = ("lasso", "ridge", "elasticnet")
BASELINE_LABELS = {"lasso": "LASSO", "ridge": "Ridge", "elasticnet": "Elastic net"}
DATASET_LABELS = {"amazon": "Amazon", "yelp": "Yelp"}
#: Default cap of the rnd/act sample-addition loops (they also stop at the lowest level).
DEFAULT_SAMPLES = 150


def _tau2(text: str) -> float | str:
    if text.strip().lower() == "cv":
        return "cv"
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"--tau2 must be a positive number or 'cv', got {text!r}") from None
    if not (np.isfinite(v) and v > 0):
        raise argparse.ArgumentTypeError(f"--tau2 must be a positive number or 'cv', got {v}")
    return v


def _datasets(text: str) -> tuple[str, ...]:
    out = tuple(s.strip() for s in text.split(",") if s.strip())
    bad = [s for s in out if s not in DATASETS]
    if bad or not out:
        raise argparse.ArgumentTypeError(
            f"unknown data set {bad[0] if bad else text!r}; choose from {', '.join(DATASETS)}")
    return out


def add_realdata_parsers(subparsers) -> None:
    """Register the ``realdata`` and ``table1`` sub-commands."""
    p = subparsers.add_parser(
        "realdata", help="the paper's Amazon/Yelp experiment (Fig. 5) with a LASSO expert")
    p.add_argument("--dataset", choices=DATASETS, required=True)
    p.add_argument("--runs", type=positive_int, default=50)
    p.add_argument("--rounds", type=nonneg_int, default=100)
    p.add_argument("--strategies", type=strategies, default=STRATEGIES,
                   help="comma-separated subset of random,nonsequential,sequential")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", type=Path, required=True, help="output directory")
    p.add_argument("--jobs", type=positive_int, default=1, help="worker processes")
    p.add_argument("--data-dir", type=Path, default=None,
                   help="data directory (default: $ELICIT_DATA, <repo>/data, ../shared/data)")
    p.add_argument("--tau2", type=_tau2, default=PAPER_TAU2,
                   help=f"fixed prior scale tau2 (default {PAPER_TAU2}, the paper's) or 'cv': "
                        "5-fold CV of the no-feedback model per run over "
                        + ", ".join(f"{t:g}" for t in TAU2_GRID))
    p.add_argument("--pool-size", type=positive_int, default=POOL_SIZE,
                   help=f"random pairs scored per sequential round (default {POOL_SIZE})")
    p.add_argument("--expert-rule", choices=("target", "cv-min", "cv-1se"), default="target",
                   help="how the LASSO expert picks its penalty (see docs/data.md)")
    p.add_argument("--expert-nonzero", type=positive_int, default=40,
                   help="target number of expert keywords for --expert-rule target")
    p.add_argument("--quiet", action="store_true", help="no progress bars")
    p.add_argument("--engine", choices=ENGINES, default="auto",
                   help="MAP engine (auto: cmdstan if installed, else numpy)")
    p.add_argument("--utility", choices=("fast", "exact"), default="fast",
                   help="fast: screen + exact refinement (default); exact: the paper's refits")
    p.add_argument("--refine", type=nonneg_int, default=10,
                   help="fast mode: candidates re-scored exactly after the screen (default 10)")

    p = subparsers.add_parser(
        "table1", help="Table 1: samples (random/active) vs answers to reach MSE levels")
    p.add_argument("--runs", type=positive_int, default=50)
    p.add_argument("--out", type=Path, required=True,
                   help="results folder holding the realdata sweeps in OUT/<dataset>/")
    p.add_argument("--datasets", type=_datasets, default=DATASETS,
                   help="comma-separated data sets (default amazon,yelp)")
    p.add_argument("--data-dir", type=Path, default=None,
                   help="data directory (default: the one the realdata sweep used)")
    p.add_argument("--jobs", type=positive_int, default=1, help="worker processes")
    p.add_argument("--samples", type=positive_int, default=DEFAULT_SAMPLES,
                   help="cap on samples added by rnd/act (they also stop once the MSE reaches "
                        f"the lowest level; default {DEFAULT_SAMPLES})")
    p.add_argument("--quiet", action="store_true", help="no progress bars")


# --------------------------------------------------------------------------------------------
# realdata
# --------------------------------------------------------------------------------------------

def _config(args: argparse.Namespace) -> dict:
    return {"dataset": args.dataset, "seed": args.seed, "rounds": args.rounds,
            "tau2": args.tau2, "pool_size": args.pool_size, "expert_rule": args.expert_rule,
            "expert_nonzero": args.expert_nonzero, "engine": args.engine,
            "utility": args.utility, "refine": args.refine}


def _check_config(out: Path, cfg: dict) -> None:
    """Refuse to mix results of different settings in one folder (the parts would be
    silently reused otherwise)."""
    path = out / "config.json"
    if path.exists():
        old = json.loads(path.read_text())
        diff = {k: (old.get(k), v) for k, v in cfg.items()
                if k != "data_dir" and old.get(k) != v}
        if diff:
            what = "; ".join(f"{k}: {a!r} there, {b!r} now" for k, (a, b) in diff.items())
            raise ElicitError(f"{out} holds results of other settings ({what}); use another "
                              "--out or delete the folder")
    out.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(cfg, indent=1))


def baseline_rows(dataset: str, infos: list[dict]) -> pd.DataFrame:
    """mse.csv rows of the baselines: n_feedback = 0, one per run and baseline."""
    rows = [(dataset, b, int(info["run"]), 0, float(info["baselines"][b]))
            for info in infos for b in BASELINES]
    return pd.DataFrame(rows, columns=["dataset", "strategy", "run", "n_feedback", "mse"])


def cmd_realdata(args: argparse.Namespace) -> None:
    from elicit.paper.plots import mse_curves
    from elicit.paper.realdata import RealDataMaker, data_dir_for, ensure_runinfo
    from elicit.paper.sweep import SweepConfig, sweep

    t0 = time.perf_counter()
    out: Path = args.out
    data_dir = data_dir_for(args.dataset, args.data_dir)
    cfg_dict = _config(args)
    _check_config(out, {**cfg_dict, "data_dir": data_dir})
    progress = not args.quiet

    # Per-run baselines (and tau2 by CV): cheap, parallel, resumable; done first so that the
    # sweep knows each run's tau2.
    infos = ensure_runinfo(out, args.dataset, args.seed, args.runs, data_dir, args.tau2,
                           args.jobs, progress)
    tau2 = {int(i["run"]): float(i["tau2"]) for i in infos}
    if args.tau2 == "cv":
        _write_tau2_cv(out, infos)

    cfg = SweepConfig(args.dataset, args.runs, args.rounds, args.strategies, args.seed,
                      args.engine, args.utility, args.refine, args.jobs)
    maker = RealDataMaker(args.dataset, data_dir, tau2 if args.tau2 == "cv" else args.tau2,
                          args.pool_size, args.expert_rule, args.expert_nonzero)
    df = sweep(maker, cfg, out, progress=progress)
    df = pd.concat([df, baseline_rows(args.dataset, infos)], ignore_index=True)
    df.to_csv(out / "mse.csv", index=False)

    label = DATASET_LABELS[args.dataset]
    bl = {BASELINE_LABELS[b]: float(df[df.strategy == b].mse.mean()) for b in BASELINES}
    mse_curves(df, [out / f"fig5_{args.dataset}.png", out / f"fig5_{args.dataset}.pdf"],
               title=f"{label}: mean ± s.e. over {args.runs} runs", baselines=bl)
    curves = df[df.strategy.isin(STRATEGIES)]
    init = curves[curves.n_feedback == 0].groupby("run").mse.first().mean()
    last = int(curves.n_feedback.max())
    final = curves[curves.n_feedback == last].groupby("strategy").mse.mean()
    print(f"{args.dataset}: mean initial test MSE {init:.3f}; after {last} answers: "
          + ", ".join(f"{k} {v:.3f}" for k, v in final.items()))
    print("baselines: " + ", ".join(f"{k} {v:.3f}" for k, v in bl.items()))
    if args.tau2 == "cv":
        vals, counts = np.unique(list(tau2.values()), return_counts=True)
        print("tau2 chosen by CV: " + ", ".join(f"{v:g} ({c} runs)" for v, c in
                                                 zip(vals, counts)))
    print(f"wrote {out / 'mse.csv'}; wall time {time.perf_counter() - t0:.1f} s")


def _write_tau2_cv(out: Path, infos: list[dict]) -> None:
    rows = []
    for info in infos:
        row = {"run": info["run"], "tau2": info["tau2"]}
        row.update({f"cv_mse_{float(k):g}": v for k, v in info["tau2_cv"].items()})
        rows.append(row)
    pd.DataFrame(rows).to_csv(out / "tau2_cv.csv", index=False)


# --------------------------------------------------------------------------------------------
# table1
# --------------------------------------------------------------------------------------------

def _sequential_curves(folder: Path, dataset: str, runs: int) -> list[np.ndarray]:
    path = folder / "mse.csv"
    hint = (f"run `elicit realdata --dataset {dataset} --runs {runs} --out {folder}` first "
            "(table1 takes the SeqElc column from that sweep)")
    if not path.exists() or not (folder / "config.json").exists():
        raise ElicitError(f"no realdata sweep in {folder}: {hint}")
    df = pd.read_csv(path)
    seq = df[(df.dataset == dataset) & (df.strategy == "sequential")]
    have = set(seq.run.unique())
    missing = [r for r in range(runs) if r not in have]
    if missing:
        raise ElicitError(f"{path} has no sequential curve for run(s) "
                          f"{', '.join(map(str, missing[:5]))}{'...' if len(missing) > 5 else ''}"
                          f"; {hint}")
    return [seq[seq.run == r].sort_values("n_feedback").mse.to_numpy() for r in range(runs)]


def table1_for(out: Path, dataset: str, runs: int, samples: int, jobs: int = 1,
               data_dir: Path | None = None, progress: bool = True,
               ) -> tuple[list[dict], pd.DataFrame]:
    """Table 1 rows of one data set and the rnd/act curves (long format)."""
    from elicit.paper.baselines import PAPER_LEVELS, table1_rows
    from elicit.paper.realdata import data_dir_for, ensure_runinfo, ensure_sample_curves

    folder = out / dataset
    seq = _sequential_curves(folder, dataset, runs)
    cfg = json.loads((folder / "config.json").read_text())
    ddir = data_dir_for(dataset, data_dir if data_dir is not None else cfg.get("data_dir"))
    # The same tau2 per run as the sweep (fixed, or its CV choice; runinfo exists already).
    infos = ensure_runinfo(folder, dataset, cfg["seed"], runs, ddir, cfg["tau2"], jobs, progress)
    tau2 = {int(i["run"]): float(i["tau2"]) for i in infos}

    # Relative levels are per run: the paper's relative reduction from each run's own
    # initial MSE (splits vary a lot, so one mean level would count low-starting runs as
    # "reached at 0" and high-starting ones as never reaching it).
    initial = [float(c[0]) for c in seq]
    paper = PAPER_LEVELS[dataset]
    # The loops may stop once a run reaches its lowest level: Table 1 needs no more.
    stop = {r: min(min(paper["levels"]), initial[r] * min(paper["levels"]) / paper["initial"])
            for r in range(runs)}
    curves = ensure_sample_curves(out / "table1", dataset, cfg["seed"], runs, ddir, tau2,
                                  samples, stop, jobs, progress)
    for m, cs in curves.items():
        for r, c in enumerate(cs):
            # Both loops start from the sweep's no-feedback model: a mismatch means the
            # folders come from different settings or data.
            if not np.isclose(c.mse[0], seq[r][0], rtol=1e-5, atol=1e-8):
                raise ElicitError(
                    f"{dataset} run {r}: the {m} loop starts at MSE {c.mse[0]:.6f} but the "
                    f"sweep in {folder} at {seq[r][0]:.6f}; the table1 parts in "
                    f"{out / 'table1'} come from other settings: delete them and rerun")
    rows = table1_rows(dataset, {"rnd": [c.mse for c in curves["rnd"]],
                                 "act": [c.mse for c in curves["act"]], "seqelc": seq},
                       initial_mse=initial)
    long = [(dataset, m, r, t, v) for m, cs in curves.items() for r, c in enumerate(cs)
            for t, v in enumerate(c.mse)]
    return rows, pd.DataFrame(long, columns=["dataset", "method", "run", "n_samples", "mse"])


def cmd_table1(args: argparse.Namespace) -> None:
    from elicit.paper.baselines import format_table1

    t0 = time.perf_counter()
    out: Path = args.out
    rows, longs = [], []
    for dataset in args.datasets:
        r, long = table1_for(out, dataset, args.runs, args.samples, args.jobs, args.data_dir,
                             not args.quiet)
        rows += r
        longs.append(long)
    text = format_table1(rows)
    (out / "table1.csv").write_text(text)
    (out / "table1").mkdir(parents=True, exist_ok=True)
    pd.concat(longs, ignore_index=True).to_csv(out / "table1" / "curves.csv", index=False)
    print(text, end="")
    print(f"wrote {out / 'table1.csv'}; wall time {time.perf_counter() - t0:.1f} s")


REALDATA_COMMANDS = {"realdata": cmd_realdata, "table1": cmd_table1}
