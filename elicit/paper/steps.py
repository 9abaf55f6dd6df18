"""The steps of the paper's reproduction (``make reproduce``; ``elicit bench --suite`` times
one run of each), each one experiment into its own folder under ``OUT``, in :data:`STEPS`."""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from elicit.data.sources import DATASETS, corpus_source, shipped_corpus
from elicit.errors import ElicitError
from elicit.harness.cluster import cluster_scope
from elicit.harness.runner import run_pipeline
from elicit.internal.threads import one_blas_thread
from elicit.paper.configs import RealDataConfig, SyntheticConfig

#: The paper-literal sweeps: folder -> data set.
LITERAL = {f"{d}-paper": d for d in DATASETS}
#: The sweeps of the recommended configuration: folder -> data set.
RECOMMENDED_STEPS = {f"{d}-recommended": d for d in DATASETS}
KITCHEN = "kitchen"
#: The sweeps with relevance and pair questions: folder -> data set.
MIXED_STEPS = {f"{d}-mixed": d for d in (*DATASETS, KITCHEN)}
#: Every step, in the order a reproduction runs them.
STEPS = ("synthetic", *DATASETS, KITCHEN, *LITERAL, *RECOMMENDED_STEPS, *MIXED_STEPS, "table1")
#: Steps run at a time with several workers: the next one's first runs keep them busy.
STEPS_AT_ONCE = 2
#: Runs and answers of the mixed sweeps (the paper's 50 x 100, as every other step).
MIXED_RUNS = 50
MIXED_ROUNDS = 100


@dataclass(frozen=True)
class StepSettings:
    """What a reproduction chooses for its steps (the options of ``reproduce.py``):
    ``runs`` is the synthetic step's, ``real_runs`` the real-data steps' and Table 1's,
    ``mixed_*`` the mixed steps'; ``kitchen`` the corpus (default the shipped one)."""

    runs: int = 50
    real_runs: int = 50
    rounds: int = 100
    mixed_runs: int = MIXED_RUNS
    mixed_rounds: int = MIXED_ROUNDS
    seed: int = 0
    jobs: int = 2
    refine: int = 5
    data_dir: str | os.PathLike | None = None
    kitchen: str | os.PathLike | None = None
    memo: str | os.PathLike | None = None

    def runs_of(self, step: str) -> int:
        return (self.runs if step == "synthetic" else self.mixed_runs if step in MIXED_STEPS
                else self.real_runs)


def step_config(step: str, s: StepSettings) -> SyntheticConfig | RealDataConfig | None:
    """The experiment of ``step`` under ``s`` (None for ``table1``)."""
    if step not in STEPS:
        raise ElicitError(f"unknown step {step!r}; choose from {', '.join(STEPS)}")
    if step == "synthetic":
        return SyntheticConfig(runs=s.runs, rounds=s.rounds, seed=s.seed, jobs=s.jobs,
                               refine=s.refine)
    if step == "table1":
        return None
    real: dict[str, Any] = dict(runs=s.real_runs, rounds=s.rounds, seed=s.seed, jobs=s.jobs,
                                refine=s.refine, memo=s.memo)
    if step in DATASETS:
        return RealDataConfig(step, data_dir=s.data_dir, **real)
    for table, preset in ((LITERAL, "paper"), (RECOMMENDED_STEPS, "recommended")):
        if step in table:
            return RealDataConfig(table[step], data_dir=s.data_dir, **{**real, preset: True})
    if step == KITCHEN:
        return RealDataConfig(_kitchen(s), **real)
    data = MIXED_STEPS[step]
    mixed = {**real, "runs": s.mixed_runs, "rounds": s.mixed_rounds}
    return RealDataConfig(_kitchen(s) if data == KITCHEN else data, questions="both", pool="open",
                          data_dir=None if data == KITCHEN else s.data_dir, **mixed)


def _kitchen(s: StepSettings):  # -> elicit.data.sources.DataSource
    return corpus_source(s.kitchen or shipped_corpus("amazon", s.data_dir), name=KITCHEN)


def run_step(step: str, out: str | os.PathLike, s: StepSettings, progress: bool = True,
             samples: int | None = None) -> str:
    """Run ``step`` of the settings ``s`` into ``out/<step>`` (Table 1: ``out/table1.csv``, at
    most ``samples`` added samples, default ``table1.DEFAULT_SAMPLES``); return its summary."""
    from elicit.paper.realdata import run_realdata
    from elicit.paper.synthetic import run_synthetic
    from elicit.paper.table1 import DEFAULT_SAMPLES, run_table1

    out = Path(out)
    cfg = step_config(step, s)
    if isinstance(cfg, SyntheticConfig):
        return run_synthetic(cfg, out / step, progress).summary()
    if isinstance(cfg, RealDataConfig):
        return run_realdata(cfg, out / step, progress).summary()
    table = run_table1(out, runs=s.real_runs, datasets=DATASETS, jobs=s.jobs,
                       samples=DEFAULT_SAMPLES if samples is None else samples,
                       data_dir=None if s.data_dir is None else Path(s.data_dir),
                       progress=progress, memo=s.memo)
    return table.text.rstrip("\n")


def step_after(step: str) -> tuple[str, ...]:
    """The steps ``step`` waits for in :func:`run_steps`: Table 1 reads the default sweeps,
    and a data set's other sweeps share its memo with its default sweep."""
    if step not in STEPS:
        raise ElicitError(f"unknown step {step!r}; choose from {', '.join(STEPS)}")
    if step == "table1":
        return DATASETS
    return next(((table[step],) for table in (LITERAL, RECOMMENDED_STEPS, MIXED_STEPS)
                 if step in table), ())


def steps_at_once(jobs: int, cluster: str | None = None) -> int:
    """Steps :func:`run_steps` runs at a time: :data:`STEPS_AT_ONCE` with workers, else 1."""
    return STEPS_AT_ONCE if jobs > 1 or cluster is not None else 1


def run_steps(steps: Sequence[str], out: str | os.PathLike, s: StepSettings, *,
              progress: bool = True, samples: int | None = None, cluster: str | None = None,
              done: Callable[[str, str, float, float], None] | None = None) -> dict[str, str]:
    """Run ``steps`` into ``out``; return their summaries. :func:`steps_at_once` of them run
    at a time on one executor, each after :func:`step_after`'s; the results are those of the
    steps one after the other. ``done(step, summary, wall_s, cpu_s)`` is called as each ends.
    """
    with one_blas_thread(), cluster_scope(cluster, s.jobs):
        return run_pipeline(steps, lambda step: run_step(step, out, s, progress, samples),
                            width=steps_at_once(s.jobs, cluster),
                            after={k: step_after(k) for k in steps}, done=done)
