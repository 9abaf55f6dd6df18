"""The real-data experiment: Amazon and Yelp review ratings (paper Sec. 4.2, Fig. 5).

:func:`run_realdata` runs the three query strategies on runs of one data set, each answered
by the run's LASSO expert (the setup of one run: :mod:`elicit.paper.problems`), beside the
LASSO, ridge and elastic-net baselines of the same run (:mod:`elicit.paper.baselines`).
Folder layout (what ``make reproduce`` produces under ``results/``)::

    OUT/amazon/            run_realdata("amazon", OUT / "amazon"): elicit realdata
        config.json        the settings of the sweep (a rerun with other settings is refused)
        mse.csv            dataset,strategy,run,n_feedback,mse (+ lasso/ridge/elasticnet rows)
        fig5_amazon.png/.pdf
        tau2_cv.csv        only with tau2="cv": the tau2 chosen per run and the CV errors
        parts/amazon/...   resumable per-run results (sweep parts, runinfo = baselines, tau2)
    OUT/yelp/              the same for Yelp
    OUT/table1.csv         elicit.paper.table1.run_table1(OUT): elicit table1
    OUT/table1/            curves.csv (rnd/act MSE curves) and parts/ (resumable)

Everything is resumable: a rerun with the same settings reuses every finished run.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from elicit.elicitation.strategies import STRATEGIES
from elicit.errors import ElicitError
from elicit.internal.io import write_json_atomic
from elicit.internal.threads import single_blas_thread
from elicit.paper.baselines import fit_baselines
from elicit.paper.labels import BASELINE_LABELS, BASELINES, DATASET_LABELS
from elicit.paper.problems import (
    PAPER_TAU2,
    POOL_SIZE,
    STREAM_BASELINES,
    STREAM_TAU2_CV,
    RealDataMaker,
    check_dataset,
    data_dir_for,
    run_data,
    run_stream,
)
from elicit.paper.runner import run_tasks
from elicit.paper.sweep import MSE_COLUMNS, SweepConfig, sweep
from elicit.paper.tau2 import TAU2_GRID, cv_tau2, write_tau2_cv

# --------------------------------------------------------------------------------------------
# Per-run preparation: the baselines and the CV choice of tau2
# --------------------------------------------------------------------------------------------


def runinfo_path(out: Path, dataset: str, run: int) -> Path:
    """Where :func:`run_realdata` keeps run ``run``'s baselines and tau2 choice."""
    return Path(out) / "parts" / dataset / "runinfo" / f"run{run:03d}.json"


@single_blas_thread
def prepare_runinfo(dataset: str, seed: int, run: int, data_dir: str, tau2: float | str,
                    grid: Sequence[float] = TAU2_GRID) -> dict:
    """Baselines (and the CV choice of tau^2 when ``tau2 == "cv"``) of one run."""
    rd = run_data(dataset, seed, run, data_dir)
    bl_state = int(run_stream(seed, run, STREAM_BASELINES).generate_state(1)[0] % (2**31))
    info: dict = {"run": run, "split_seed": rd.seed,
                  "baselines": fit_baselines(rd.X_train, rd.y_train, rd.X_test, rd.y_test,
                                             rd.y_mean, random_state=bl_state)}
    if tau2 == "cv":
        best, scores = cv_tau2(rd.X_train, rd.y_train, rd.U, grid,
                               rng=np.random.default_rng(run_stream(seed, run, STREAM_TAU2_CV)))
        info["tau2"] = best
        info["tau2_cv"] = {repr(t): v for t, v in scores.items()}
    else:
        info["tau2"] = float(tau2)
    return info


def _runinfo_task(out: str, dataset: str, seed: int, run: int, data_dir: str,
                  tau2: float | str) -> None:
    write_json_atomic(runinfo_path(Path(out), dataset, run),
                      prepare_runinfo(dataset, seed, run, data_dir, tau2))


def ensure_runinfo(out: str | Path, dataset: str, seed: int, runs: int, data_dir: str,
                   tau2: float | str, jobs: int = 1, progress: bool = True) -> list[dict]:
    """Compute (or reuse) the per-run baselines and tau^2 of runs ``0..runs-1``.

    Parameters
    ----------
    out
        The sweep's folder (records in ``out/parts/<dataset>/runinfo/``).
    dataset, seed
        The data set and the sweep seed (runs use :func:`~elicit.paper.problems.split_seed`).
    runs
        Runs ``0..runs-1``.
    data_dir
        The resolved data directory (:func:`~elicit.paper.problems.data_dir_for`).
    tau2
        A fixed tau^2, or ``"cv"`` to choose it per run (:func:`~elicit.paper.tau2.cv_tau2`).
    jobs, progress
        Worker processes; show a progress bar.

    Returns
    -------
    list of dict
        Per run: ``run``, ``split_seed``, ``baselines`` (name -> test MSE), ``tau2`` and,
        with ``"cv"``, ``tau2_cv`` (grid value -> CV error).
    """
    out = Path(out)
    run_tasks(_runinfo_task, [(str(out), dataset, seed, r, data_dir, tau2) for r in range(runs)],
              jobs=jobs, desc=f"{dataset}: baselines" + (" + tau2 CV" if tau2 == "cv" else ""),
              progress=progress,
              left=lambda task: None if runinfo_path(out, dataset, task[3]).exists() else task)
    return [json.loads(runinfo_path(out, dataset, r).read_text()) for r in range(runs)]


def baseline_rows(dataset: str, infos: Sequence[dict]) -> pd.DataFrame:
    """mse.csv rows of the baselines: n_feedback = 0, one per run and baseline."""
    rows = [(dataset, b, int(info["run"]), 0, float(info["baselines"][b]))
            for info in infos for b in BASELINES]
    return pd.DataFrame(rows, columns=MSE_COLUMNS)


# --------------------------------------------------------------------------------------------
# The pipeline
# --------------------------------------------------------------------------------------------

def check_config(out: Path, cfg: dict) -> None:
    """Write ``out/config.json``, or refuse if ``out`` holds results of other settings.

    The parts of a sweep are reused by run and strategy alone, so results of other settings
    would otherwise be mixed in silently. ``data_dir`` may differ (the same files can be
    found elsewhere).
    """
    path = out / "config.json"
    if path.exists():
        old = json.loads(path.read_text())
        diff = {k: (old.get(k), v) for k, v in cfg.items()
                if k != "data_dir" and old.get(k) != v}
        if diff:
            what = "; ".join(f"{k}: {a!r} there, {b!r} now" for k, (a, b) in diff.items())
            raise ElicitError(f"{out} holds results of other settings ({what}); use another "
                              "output folder (--out) or delete this one")
    write_json_atomic(path, cfg, indent=1)


def _check_tau2(tau2: float | str) -> float | str:
    if isinstance(tau2, str):
        if tau2.strip().lower() == "cv":
            return "cv"
        raise ElicitError(f"tau2 must be a positive number or 'cv', got {tau2!r}")
    if not (np.isfinite(tau2) and tau2 > 0):
        raise ElicitError(f"tau2 must be a positive number or 'cv', got {tau2!r}")
    return float(tau2)


@dataclass
class RealDataResult:
    """What :func:`run_realdata` wrote.

    Attributes
    ----------
    dataset
        ``"amazon"`` or ``"yelp"``.
    mse
        The rows of ``mse.csv`` (strategy curves and baselines).
    baselines
        Display label -> mean test MSE over runs of each baseline.
    tau2
        Run -> the tau^2 it used.
    tau2_cv
        Whether tau^2 was chosen by cross-validation.
    """

    dataset: str
    mse: pd.DataFrame
    baselines: dict[str, float]
    tau2: dict[int, float]
    tau2_cv: bool

    def summary(self) -> str:
        """The mean initial and final test MSE, the baselines and the CV choices of tau^2."""
        curves = self.mse[self.mse.strategy.isin(STRATEGIES)]
        init = curves[curves.n_feedback == 0].groupby("run").mse.first().mean()
        last = int(curves.n_feedback.max())
        final = curves[curves.n_feedback == last].groupby("strategy").mse.mean()
        lines = [f"{self.dataset}: mean initial test MSE {init:.3f}; after {last} answers: "
                 + ", ".join(f"{k} {v:.3f}" for k, v in final.items()),
                 "baselines: " + ", ".join(f"{k} {v:.3f}" for k, v in self.baselines.items())]
        if self.tau2_cv:
            vals, counts = np.unique(list(self.tau2.values()), return_counts=True)
            lines.append("tau2 chosen by CV: " + ", ".join(f"{v:g} ({c} runs)" for v, c in
                                                            zip(vals, counts)))
        return "\n".join(lines)


def run_realdata(dataset: str, out: str | Path, runs: int = 50, rounds: int = 100,
                 strategies: Sequence[str] = STRATEGIES, seed: int = 0, jobs: int = 1,
                 data_dir: str | os.PathLike | None = None, tau2: float | str = PAPER_TAU2,
                 pool_size: int = POOL_SIZE, expert_rule: str = "target",
                 expert_nonzero: int = 40, engine: str = "auto", utility: str = "fast",
                 refine: int = 10, progress: bool = True) -> RealDataResult:
    """The paper's real-data experiment on one data set (``elicit realdata``).

    Parameters
    ----------
    dataset
        ``"amazon"`` or ``"yelp"``.
    out
        The output folder (layout in the module docstring).
    runs, rounds
        Runs ``0..runs-1``, each with ``rounds`` questions per strategy.
    strategies
        Query strategies to run.
    seed
        The sweep seed (every run's split and random streams derive from it).
    jobs
        Worker processes.
    data_dir
        Data directory (default: :func:`elicit.data.resolve_data_dir`'s search order).
    tau2
        A fixed prior scale tau^2 (the paper's 0.01), or ``"cv"``: chosen per run by 5-fold
        CV of the no-feedback model over :data:`~elicit.paper.tau2.TAU2_GRID`.
    pool_size
        Random candidate pairs scored per sequential round.
    expert_rule, expert_nonzero
        How the LASSO expert picks its penalty (:mod:`elicit.paper.lasso_expert`).
    engine, utility, refine
        MAP engine and utility computation, as for :class:`~elicit.elicitation.elicitor.Elicitor`.
    progress
        Show progress bars.

    Returns
    -------
    RealDataResult
        Also written: ``mse.csv``, ``fig5_<dataset>.png/.pdf``, ``config.json`` and, with
        ``tau2="cv"``, ``tau2_cv.csv``.
    """
    from elicit.paper.plots import mse_curves

    out = Path(out)
    dataset = check_dataset(dataset)
    tau2 = _check_tau2(tau2)
    data_dir = data_dir_for(dataset, data_dir)
    check_config(out, {"dataset": dataset, "seed": seed, "rounds": rounds, "tau2": tau2,
                       "pool_size": pool_size, "expert_rule": expert_rule,
                       "expert_nonzero": expert_nonzero, "engine": engine, "utility": utility,
                       "refine": refine, "data_dir": data_dir})

    # Per-run baselines (and tau2 by CV): cheap, parallel, resumable; done first so that the
    # sweep knows each run's tau2.
    infos = ensure_runinfo(out, dataset, seed, runs, data_dir, tau2, jobs, progress)
    run_tau2 = {int(i["run"]): float(i["tau2"]) for i in infos}
    if tau2 == "cv":
        write_tau2_cv(out, infos)

    cfg = SweepConfig(dataset, runs, rounds, tuple(strategies), seed, engine, utility, refine,
                      jobs)
    fixed_tau2 = None if tau2 == "cv" else float(tau2)
    maker = RealDataMaker(dataset, data_dir, run_tau2 if fixed_tau2 is None else fixed_tau2,
                          pool_size, expert_rule, expert_nonzero)
    df = sweep(maker, cfg, out, progress=progress)
    df = pd.concat([df, baseline_rows(dataset, infos)], ignore_index=True)
    df.to_csv(out / "mse.csv", index=False)

    bl = {BASELINE_LABELS[b]: float(df[df.strategy == b].mse.mean()) for b in BASELINES}
    mse_curves(df, [out / f"fig5_{dataset}.png", out / f"fig5_{dataset}.pdf"],
               title=f"{DATASET_LABELS[dataset]}: mean ± s.e. over {runs} runs", baselines=bl)
    return RealDataResult(dataset, df, bl, run_tau2, tau2 == "cv")
