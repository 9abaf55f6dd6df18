"""Simulated-expert sweeps: MSE curves of query strategies over runs.

A sweep runs, for every run r and strategy, ``rounds`` questions answered by a simulated
expert, and records the test MSE after 0..rounds answers. It is

* deterministic: run r's data and each strategy's random stream derive from
  ``SeedSequence([seed, r, ...])``, so results do not depend on ``jobs``;
* resumable: each finished (run, strategy) is written to ``DIR/parts/`` and skipped when the
  sweep is started again; ``DIR/config.json`` (:func:`check_config`, written by the synthetic
  and real-data experiments) keeps a rerun with other settings from reusing those parts.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import numpy as np
import pandas as pd

from elicit.elicitation.elicitor import Elicitor
from elicit.elicitation.strategies import STRATEGIES, STRATEGY_REGISTRY, get_strategy
from elicit.elicitation.utility import UtilityArgs
from elicit.engines import get_engine
from elicit.errors import ElicitError
from elicit.harness.cluster import parse_cluster
from elicit.harness.runner import run_tasks
from elicit.internal.io import write_json_atomic
from elicit.internal.threads import single_blas_thread
from elicit.model.variants import PAPER, get_model
from elicit.paper.problems import RunProblem

MSE_COLUMNS = ["dataset", "strategy", "run", "n_feedback", "mse"]


@dataclass(frozen=True)
class SweepConfig:
    """The settings of a sweep; ``snapshots`` are the rounds whose gamma is stored."""

    dataset: str
    runs: int
    rounds: int
    strategies: tuple[str, ...] = STRATEGIES
    seed: int = 0
    engine: str = "auto"
    utility: str = "fast"
    refine: int = 10
    jobs: int = 1
    #: run the tasks on a Dask cluster (``local:N`` or a scheduler address) instead
    cluster: str | None = None
    #: check every fit against the numpy twin (``--check-engine``)
    check_engine: bool = False
    snapshots: tuple[int, ...] = ()
    stan_file: str | None = None
    threshold_mean: float | Literal["auto"] | None = None  # None: the problem's own setting
    #: the named model (:mod:`elicit.model.variants`) every run is fitted with
    model: str = PAPER
    #: what the utility is about: "predictive" or "params" (:mod:`elicit.elicitation.utility`)
    utility_target: str = "predictive"

    def __post_init__(self) -> None:
        bad = [s for s in self.strategies if s not in STRATEGY_REGISTRY]
        if bad:
            raise ElicitError(f"unknown strategy {bad[0]!r}; choose from "
                              f"{', '.join(STRATEGY_REGISTRY)}")
        if self.runs < 1 or self.rounds < 0:
            raise ElicitError("runs must be >= 1 and rounds >= 0")
        if self.jobs < 1:
            raise ElicitError("jobs must be >= 1")
        # Checked here, in the parent, before any worker starts or any Stan program is built.
        UtilityArgs(self.utility, self.utility_target, self.refine, self.stan_file).validate()
        parse_cluster(self.cluster)
        get_model(self.model)
        if self.check_engine and self.stan_file is not None:
            raise ElicitError("--check-engine compares every fit with the numpy engine, which "
                              "runs only the shipped Stan programs, not a custom --stan-file")


#: Settings that config.json files written before they existed lack, and the value those
#: sweeps used: an old folder stays valid for a rerun with these values.
LEGACY_CONFIG: dict[str, object] = {"meta_features": "counts", "meta_dim": None,
                                     "model": PAPER, "utility_target": "predictive"}
#: Paths that may differ between reruns (the same files can be found elsewhere; a corpus or
#: a meta-features file is compared by its content hash).
PATH_KEYS = ("data_dir", "corpus", "meta_features_file", "problems", "stan_file")


def check_config(out: Path, cfg: dict) -> None:
    """Write ``out/config.json``, or refuse if ``out`` holds results of other settings.

    The parts of a sweep are reused by run and strategy alone, so results of other settings
    would otherwise be mixed in silently. The paths of :data:`PATH_KEYS` may differ: the
    same files can be found elsewhere (a corpus is compared by its content hash). A key an
    old config lacks counts as its :data:`LEGACY_CONFIG` value (what those sweeps used).
    """
    path = out / "config.json"
    if not path.exists() and any((out / "parts").rglob("*.json")):
        # Parts are reused by run and strategy alone: without the config that made them they
        # could silently enter a sweep of other settings.
        raise ElicitError(f"{out} holds sweep parts but no config.json, so their settings are "
                          f"unknown; delete {out / 'parts'} or use another output folder (--out)")
    if path.exists():
        old = json.loads(path.read_text())
        def was(k: str) -> object:
            return old.get(k, LEGACY_CONFIG.get(k, "not recorded"))

        diff = {k: (was(k), v) for k, v in cfg.items() if k not in PATH_KEYS and was(k) != v}
        if diff:
            what = "; ".join(f"{k}: {a!r} there, {b!r} now" for k, (a, b) in diff.items())
            raise ElicitError(f"{out} holds results of other settings ({what}); use another "
                              "output folder (--out) or delete this one")
    write_json_atomic(path, cfg, indent=1)


def _part_path(out: Path, cfg: SweepConfig, strategy: str, run: int) -> Path:
    return out / "parts" / cfg.dataset / strategy / f"run{run:03d}.json"


@single_blas_thread
def run_one(problem: RunProblem, cfg: SweepConfig, run: int, strategies: Sequence[str],
            ) -> dict[str, dict]:
    """All ``strategies`` of one run; they share the no-feedback fit."""
    hyper = problem.hyper
    if cfg.threshold_mean is not None:
        hyper = dataclasses.replace(hyper, threshold_mean=cfg.threshold_mean)
    hyper = dataclasses.replace(hyper, model=cfg.model)
    engine = get_engine(cfg.engine, hyper.variant, cfg.stan_file, check=cfg.check_engine)
    el = Elicitor(problem.X, problem.y, problem.U, hyper, engine=engine,
                  stan_file=cfg.stan_file, utility=cfg.utility, refine=cfg.refine,
                  pool_size=problem.pool_size, candidates=problem.candidates,
                  target=cfg.utility_target)
    mse0 = problem.mse(el)
    results = {}
    for strategy in strategies:
        s_idx = get_strategy(strategy).stream_id
        rng = np.random.default_rng(np.random.SeedSequence([cfg.seed, run, s_idx, 7]))
        el.reset()
        mse, gammas, asked = [mse0], {}, []
        if 0 in cfg.snapshots:
            gammas[0] = el.fit.gamma.tolist()
        for t in range(1, cfg.rounds + 1):
            if len(el.unasked()) == 0:
                break
            q = el.next_query(strategy, rng)
            a = problem.expert.answer(q.i, q.j)
            el.answer(q.i, q.j, a)
            asked.append([q.i, q.j, a.value])
            mse.append(problem.mse(el))
            if t in cfg.snapshots:
                gammas[t] = el.fit.gamma.tolist()
        results[strategy] = {"mse": mse, "gammas": gammas, "asked": asked,
                             "threshold_mean": el.hyper.threshold_mean, "model": cfg.model}
    return results


def _task(make_problem: Callable[[int, int], RunProblem], cfg: SweepConfig, run: int,
          strategies: Sequence[str], out: Path) -> None:
    for strategy, r in run_one(make_problem(cfg.seed, run), cfg, run, strategies).items():
        # Atomic: a killed sweep never leaves half a result for the next pass to reuse.
        write_json_atomic(_part_path(out, cfg, strategy, run), r)


def sweep(make_problem: Callable[[int, int], RunProblem], cfg: SweepConfig, out: str | Path,
          progress: bool = True) -> pd.DataFrame:
    """Run (or resume) a sweep and write ``out/mse.csv``; return its rows.

    Parameters
    ----------
    make_problem
        A picklable ``make_problem(seed, run)`` (:mod:`elicit.paper.problems`); worker
        processes call it to rebuild each run.
    cfg
        The settings; ``cfg.jobs`` worker processes (or ``cfg.cluster``) share the runs.
    out
        The output folder: ``out/parts/<dataset>/<strategy>/runNNN.json`` per finished run
        and strategy, ``out/mse.csv`` with every curve (:data:`MSE_COLUMNS`).
    progress
        Show a progress bar.
    """
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    _check_parts_model(out, cfg)

    def left(task: tuple) -> tuple | None:
        make, cfg_, run, strategies, out_ = task
        missing = [s for s in strategies if not _part_path(out_, cfg_, s, run).exists()]
        return (make, cfg_, run, missing, out_) if missing else None

    run_tasks(_task, [(make_problem, cfg, run, cfg.strategies, out) for run in range(cfg.runs)],
              jobs=cfg.jobs, desc=f"{cfg.dataset}: runs", progress=progress, left=left,
              cluster=cfg.cluster)
    df = collect(out, cfg)
    df.to_csv(out / "mse.csv", index=False)
    return df


#: the folder of the per-run records (:mod:`elicit.paper.runinfo`) beside the strategies' parts
RUNINFO_DIR = "runinfo"


def _check_parts_model(out: Path, cfg: SweepConfig) -> None:
    """Refuse to resume parts of another model: parts are reused by run and strategy alone.
    Parts written before models had names carry no ``model`` and are the paper's."""
    for path in sorted((out / "parts" / cfg.dataset).glob("*/run*.json")):
        if path.parent.name == RUNINFO_DIR:
            continue    # the per-run reference records (checked through config.json)
        had = json.loads(path.read_text()).get("model", PAPER)
        if had != cfg.model:
            raise ElicitError(f"{out} holds results of model {had!r} ({path.name} of "
                              f"{path.parent.name}), not {cfg.model!r}; use another output "
                              "folder (--out) or delete this one")


def load_part(out: Path, cfg: SweepConfig, strategy: str, run: int) -> dict:
    """The stored result of one run and strategy: ``mse``, ``gammas``, ``asked``, ...."""
    return json.loads(_part_path(out, cfg, strategy, run).read_text())


def collect(out: Path, cfg: SweepConfig) -> pd.DataFrame:
    """The ``mse.csv`` rows of a finished sweep, from its parts."""
    rows = []
    for strategy in cfg.strategies:
        for run in range(cfg.runs):
            mse = load_part(out, cfg, strategy, run)["mse"]
            rows += [(cfg.dataset, strategy, run, t, v) for t, v in enumerate(mse)]
    return pd.DataFrame(rows, columns=MSE_COLUMNS)
