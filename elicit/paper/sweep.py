"""Simulated-expert sweeps: MSE curves of query strategies over runs.

A sweep runs, for every run r and strategy, ``rounds`` questions answered by a simulated
expert, and records the test MSE after 0..rounds answers. It is

* deterministic: run r's data and each strategy's random stream derive from
  ``SeedSequence([seed, r, ...])``, so results do not depend on ``jobs``;
* resumable: each finished (run, strategy) is written to ``DIR/parts/`` and skipped when the
  sweep is started again.
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from elicit.elicitation.answers import Expert, GroupOracle
from elicit.elicitation.elicitor import Elicitor
from elicit.elicitation.strategies import STRATEGIES
from elicit.errors import ElicitError
from elicit.internal.threads import single_blas_thread
from elicit.model.spec import Hyper
from elicit.paper.synthetic import make_synthetic

MSE_COLUMNS = ["dataset", "strategy", "run", "n_feedback", "mse"]


@dataclass
class RunProblem:
    """One run's data: training and test sets, meta-features and the simulated expert."""

    X: np.ndarray
    y: np.ndarray
    U: np.ndarray
    X_test: np.ndarray
    y_test: np.ndarray
    expert: Expert
    hyper: Hyper
    y_offset: float = 0.0
    candidates: np.ndarray | None = None
    pool_size: int | None = None
    extra: dict = field(default_factory=dict)

    def mse(self, elicitor: Elicitor) -> float:
        pred = elicitor.predict(self.X_test) + self.y_offset
        return float(np.mean((pred - self.y_test) ** 2))


@dataclass(frozen=True)
class SweepConfig:
    dataset: str
    runs: int
    rounds: int
    strategies: tuple[str, ...] = STRATEGIES
    seed: int = 0
    engine: str = "auto"
    utility: str = "fast"
    refine: int = 10
    jobs: int = 1
    snapshots: tuple[int, ...] = ()
    stan_file: str | None = None
    threshold_mean: float | str | None = None  # None: the problem's own setting

    def __post_init__(self) -> None:
        bad = [s for s in self.strategies if s not in STRATEGIES]
        if bad:
            raise ElicitError(f"unknown strategy {bad[0]!r}; choose from {', '.join(STRATEGIES)}")
        if self.runs < 1 or self.rounds < 0:
            raise ElicitError("runs must be >= 1 and rounds >= 0")
        if self.jobs < 1:
            raise ElicitError("jobs must be >= 1")


def synthetic_problem(seed: int, run: int, n_train: int = 20) -> RunProblem:
    """Run ``run`` of the synthetic experiment (learned tau2, group oracle)."""
    sd = make_synthetic(np.random.default_rng(np.random.SeedSequence([seed, run])),
                        n_train=n_train)
    return RunProblem(sd.X, sd.y, sd.U, sd.X_test, sd.y_test, GroupOracle(sd.groups),
                      Hyper(variant="learned"), extra={"K_opt": sd.K_opt})


def _part_path(out: Path, cfg: SweepConfig, strategy: str, run: int) -> Path:
    return out / "parts" / cfg.dataset / strategy / f"run{run:03d}.json"


@single_blas_thread
def run_one(problem: RunProblem, cfg: SweepConfig, run: int, strategies: Sequence[str],
            ) -> dict[str, dict]:
    """All ``strategies`` of one run; they share the no-feedback fit."""
    hyper = problem.hyper
    if cfg.threshold_mean is not None:
        hyper = dataclasses.replace(hyper, threshold_mean=cfg.threshold_mean)
    el = Elicitor(problem.X, problem.y, problem.U, hyper, engine=cfg.engine,
                  stan_file=cfg.stan_file, utility=cfg.utility, refine=cfg.refine,
                  pool_size=problem.pool_size, candidates=problem.candidates)
    mse0 = problem.mse(el)
    results = {}
    for strategy in strategies:
        s_idx = STRATEGIES.index(strategy)
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
                             "threshold_mean": el.hyper.threshold_mean}
    return results


def _task(make_problem, cfg: SweepConfig, run: int, strategies, out: Path) -> int:
    problem = make_problem(cfg.seed, run)
    res = run_one(problem, cfg, run, strategies)
    for strategy, r in res.items():
        path = _part_path(out, cfg, strategy, run)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(r))
        os.replace(tmp, path)  # atomic: a killed sweep never leaves half a result
    return run


def sweep(make_problem: Callable[[int, int], RunProblem], cfg: SweepConfig, out: str | Path,
          progress: bool = True) -> pd.DataFrame:
    """Run (or resume) a sweep and write ``out/mse.csv``; return its rows."""
    from tqdm.auto import tqdm

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    todo = []
    for run in range(cfg.runs):
        missing = [s for s in cfg.strategies if not _part_path(out, cfg, s, run).exists()]
        if missing:
            todo.append((run, missing))
    bar = tqdm(total=len(todo), desc=f"{cfg.dataset}: runs", disable=not progress)
    if cfg.jobs == 1:
        for run, missing in todo:
            _task(make_problem, cfg, run, missing, out)
            bar.update()
    else:
        with ProcessPoolExecutor(max_workers=cfg.jobs) as pool:
            futures = [pool.submit(_task, make_problem, cfg, run, missing, out)
                       for run, missing in todo]
            for fut in as_completed(futures):
                fut.result()
                bar.update()
    bar.close()
    df = collect(out, cfg)
    df.to_csv(out / "mse.csv", index=False)
    return df


def load_part(out: Path, cfg: SweepConfig, strategy: str, run: int) -> dict:
    return json.loads(_part_path(out, cfg, strategy, run).read_text())


def collect(out: Path, cfg: SweepConfig) -> pd.DataFrame:
    rows = []
    for strategy in cfg.strategies:
        for run in range(cfg.runs):
            mse = load_part(out, cfg, strategy, run)["mse"]
            rows += [(cfg.dataset, strategy, run, t, v) for t, v in enumerate(mse)]
    return pd.DataFrame(rows, columns=MSE_COLUMNS)
