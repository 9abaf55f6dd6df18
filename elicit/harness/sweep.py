"""Simulated-expert sweeps: the test MSE after 0..rounds answers of each query strategy in
every run, deterministic (:mod:`elicit.harness.problem`) and resumable (each finished run and
strategy is a record of the sweep's :class:`~elicit.harness.store.SweepStore`).

:func:`sweep` is the whole of it for a maker of one's own (``docs/simulations.md``); the
paper's experiments open the store with their own configuration and call :func:`run_sweep`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import MISSING, dataclass
from pathlib import Path
from typing import Literal

import numpy as np
import pandas as pd

from elicit.elicitation.answers import check_expert
from elicit.elicitation.elicitor import Elicitor
from elicit.elicitation.kinds import PAPER_QUESTIONS, get_kind, kind_for, parse_questions
from elicit.elicitation.settings import RoundSettings
from elicit.elicitation.strategies import STRATEGIES, STRATEGY_REGISTRY, get_strategy
from elicit.engines import get_engine
from elicit.errors import ElicitError
from elicit.harness.cluster import parse_cluster
from elicit.harness.config import Recorded, option, round_settings, setting
from elicit.harness.figures import mse_curves
from elicit.harness.labels import LABELS, REFERENCE_LABELS
from elicit.harness.problem import ProblemMaker, RunProblem, maker_settings, strategy_stream
from elicit.harness.runner import run_tasks
from elicit.harness.store import SweepStore
from elicit.internal.checks import check_int
from elicit.internal.io import write_text_atomic
from elicit.internal.locks import hold_folder
from elicit.internal.threads import single_blas_thread

MSE_COLUMNS = ["dataset", "strategy", "run", "n_feedback", "mse"]


@dataclass(frozen=True)
class SweepConfig(Recorded):
    """The settings of a sweep, checked when it is made: ``settings`` are the question
    rounds' (its ``strategy`` None, as a sweep runs each of ``strategies``; ``pool_size`` None:
    each problem's own), ``snapshots`` the rounds whose gamma the records keep."""

    dataset: str = setting(MISSING)
    runs: int = option(MISSING)
    rounds: int = setting(MISSING)
    strategies: tuple[str, ...] = option(STRATEGIES)
    settings: RoundSettings = round_settings()
    jobs: int = option(1)
    #: a Dask cluster (``local:N`` or a scheduler address) to run the tasks on
    cluster: str | None = option(None)
    #: check every fit against the numpy twin (``--check-engine``: True or "higher", "stop")
    check_engine: bool | str = option(False)
    snapshots: tuple[int, ...] = setting((), record=lambda c: {"snapshots": list(c.snapshots)})
    #: None: the problem's own setting
    threshold_mean: float | Literal["auto"] | None = setting(None)

    def __post_init__(self) -> None:
        if isinstance(self.strategies, str):    # else read letter by letter: strategy 'r'
            raise ElicitError(f"strategies must be a list of strategy names such as "
                              f"('random',), got {self.strategies!r}")
        object.__setattr__(self, "strategies", tuple(self.strategies))
        check_int(self.runs, f"runs must be a positive integer, got {self.runs!r}", 1)
        check_int(self.rounds, f"rounds must be a non-negative integer, got {self.rounds!r}", 0)
        check_int(self.jobs, f"jobs must be a positive integer, got {self.jobs!r}", 1)
        if not all(isinstance(t, (int, np.integer)) and 0 <= t <= self.rounds
                   for t in self.snapshots):
            raise ElicitError(f"snapshots must be answer counts from 0 to rounds "
                              f"({self.rounds}), got {self.snapshots!r}")
        object.__setattr__(self, "snapshots", tuple(int(t) for t in self.snapshots))
        if not self.strategies:
            raise ElicitError("strategies must name at least one strategy")
        if bad := [s for s in self.strategies if s not in STRATEGY_REGISTRY]:
            raise ElicitError(f"unknown strategy {bad[0]!r}; choose from "
                              f"{', '.join(STRATEGY_REGISTRY)}")
        if twice := [s for i, s in enumerate(self.strategies) if s in self.strategies[:i]]:
            # each would write every run's curve again: 2 runs counted as 4
            raise ElicitError(f"strategy {twice[0]!r} is named twice; name each once")
        if not isinstance(self.settings, RoundSettings):
            raise ElicitError(f"settings must be an elicit RoundSettings, got "
                              f"{type(self.settings).__name__}")
        if self.settings.strategy is not None:
            raise ElicitError(f"a sweep runs each of its strategies= "
                              f"({', '.join(self.strategies)}); leave settings.strategy None, "
                              f"not {self.settings.strategy!r}")
        tm = self.threshold_mean
        if tm is not None and tm != "auto" and (isinstance(tm, (bool, str))
                                                 or not np.isfinite(tm) or not tm > 0):
            raise ElicitError(f"the threshold mean must be 'auto' or a positive number, "
                              f"got {tm!r}")
        # checked here, before any worker starts or any Stan program is built
        object.__setattr__(self, "settings", self.settings.validate())
        parse_cluster(self.cluster)
        if self.check_engine and (self.settings.stan_file is not None
                                  or self.settings.engine not in ("cmdstan", "pystan")):
            raise ElicitError("--check-engine compares the fits of --engine cmdstan or pystan "
                              "with the numpy engine's (the shipped Stan programs only): give "
                              "one of those engines, and no custom --stan-file")


def sweep_elicitor(problem: RunProblem, cfg: SweepConfig) -> Elicitor:
    """The elicitation of one run of a sweep, fitted without feedback: ``problem``'s data
    under ``cfg``'s round settings (the problem's pool size where they name none)."""
    st = cfg.settings
    tm = problem.hyper.threshold_mean if cfg.threshold_mean is None else cfg.threshold_mean
    hyper = dataclasses.replace(problem.hyper, model=str(st.model), threshold_mean=tm)
    check_expert(problem.expert, st.questions)
    if st.pool_size is None:
        st = dataclasses.replace(st, pool_size=problem.pool_size)
    engine = get_engine(st.engine, hyper.variant, st.stan_file, check=cfg.check_engine)
    return Elicitor(problem.X, problem.y, problem.U, hyper, settings=st, engine=engine,
                    candidates=problem.candidates)


@single_blas_thread
def run_one(problem: RunProblem, cfg: SweepConfig, run: int, strategies: Sequence[str],
            ) -> dict[str, dict]:
    """All ``strategies`` of one run, sharing the no-feedback fit: each one's record (``mse``
    after 0..rounds answers; ``asked`` rows ``[i, j, answer]``, ``j`` None for a feature one)."""
    el = sweep_elicitor(problem, cfg)
    st = el.settings
    mse0 = problem.mse(el)
    mixed = parse_questions(st.questions) != PAPER_QUESTIONS
    results = {}
    for strategy in strategies:
        rng = np.random.default_rng(strategy_stream(st.seed, run, get_strategy(strategy).stream_id))
        el.reset()
        mse, gammas, asked, kinds = [mse0], {}, [], []
        zeta, tau2 = [el.fit.zeta], [el.hyper.tau2]
        if 0 in cfg.snapshots:
            gammas[0] = el.fit.gamma.tolist()
        for t in range(1, cfg.rounds + 1):
            if _nothing_left(el, strategy):
                break
            q = el.next_query(strategy, rng)
            a = get_kind(q.kind).ask(problem.expert, q)
            el.answer(q.i, q.j, a, kind=q.kind)
            if problem.tau2_again is not None:
                problem.tau2_again.after(el, t)
            asked.append([q.i, q.j, a.value])
            kinds.append(q.kind)
            mse.append(problem.mse(el))
            zeta.append(el.fit.zeta)
            tau2.append(el.hyper.tau2)
            if t in cfg.snapshots:
                gammas[t] = el.fit.gamma.tolist()
        record: dict[str, object] = {"mse": mse, "gammas": gammas, "asked": asked,
                                     "threshold_mean": el.hyper.threshold_mean,
                                     "model": st.model, "mean_mse": problem.mean_mse()}
        if mixed:
            # zeta is None throughout for a model without relevance classes
            record.update(questions=st.questions, kinds=kinds,
                          zeta=[float(z) for z in zeta if z is not None] or None, tau2=tau2)
        results[strategy] = record
    return results


def _nothing_left(el: Elicitor, strategy: str) -> bool:
    """Whether ``strategy`` has no question left (of the no-feedback ranking, if it walks it)."""
    # counted, not listed: the table holds every pair (50 million at p = 10,000)
    open_ = el.open_questions()
    if len(open_) == 0:
        return True
    if len(el.kinds) == 1 or not el.n_answers or not get_strategy(strategy).needs_ranking:
        return False
    return not open_.contains(el.nonsequential_ranking().index).any()


def part_kinds(part: dict) -> list[str]:
    """The kind of each question of a stored run, in answer order, by name (``"pairs"``,
    ``"relevance"``, ...). Older records wrote ``"pair"`` and ``"feature"``; records of
    pair-only sweeps store no kinds and are read from their ``asked`` rows."""
    if "kinds" in part:
        return [get_kind(k).name for k in part["kinds"]]
    return [kind_for(i, j, a).name for i, j, a, *_ in part["asked"]]


def _task(make_problem: ProblemMaker, cfg: SweepConfig, run: int, strategies: Sequence[str],
          store: SweepStore) -> None:
    for strategy, r in run_one(make_problem(cfg.settings.seed, run), cfg, run,
                               strategies).items():
        store.save(store.part_path(cfg.dataset, strategy, run), r)


def run_sweep(make_problem: ProblemMaker, cfg: SweepConfig, store: SweepStore,
              progress: bool = True) -> pd.DataFrame:
    """Run (or resume) the curves of a sweep into an open ``store`` (whose settings include
    ``cfg``'s: a finished run and strategy is read, not recomputed); return their rows
    (:data:`MSE_COLUMNS`). Worker processes call ``make_problem`` to rebuild each run."""
    def left(task: tuple) -> tuple | None:
        make, cfg_, run, strategies, store_ = task
        todo = store_.missing({s: store_.part_path(cfg_.dataset, s, run) for s in strategies})
        return (make, cfg_, run, todo, store_) if todo else None

    tasks = [(make_problem, cfg, run, cfg.strategies, store) for run in range(cfg.runs)]
    try:
        run_tasks(_task, tasks, jobs=cfg.jobs, desc=f"{cfg.dataset}: runs", progress=progress,
                  left=left, cluster=cfg.cluster)
    finally:  # its parts now refuse a call of other settings; a failed call lets go too
        hold_folder(store.folder, hold=False)
    rows = [(cfg.dataset, strategy, run, t, v) for strategy in cfg.strategies
            for run in range(cfg.runs)
            for t, v in enumerate(load_part(store, cfg, strategy, run)["mse"])]
    return pd.DataFrame(rows, columns=MSE_COLUMNS)


def questions_frame(store: SweepStore, cfg: SweepConfig) -> pd.DataFrame:
    """``questions.csv``: per strategy, run and answer, the kind of its question and tau2 after
    it (row 0: the start, no kind); the report counts them without the uncommitted parts."""
    parts = {(s, r): load_part(store, cfg, s, r) for s in cfg.strategies for r in range(cfg.runs)}
    rows = [(s, r, t, k, p.get("tau2", [np.nan] * len(p["mse"]))[t])  # older: no tau2 kept
            for (s, r), p in parts.items() for t, k in enumerate(["", *part_kinds(p)])]
    return pd.DataFrame(rows, columns=["strategy", "run", "n_feedback", "kind", "tau2"])


def load_part(store: SweepStore, cfg: SweepConfig, strategy: str, run: int) -> dict:
    """The stored result of one run and strategy: ``mse``, ``gammas``, ``asked``, ...."""
    return store.need(store.part_path(cfg.dataset, strategy, run),
                      f"result of {strategy} run {run}")


def sweep(make_problem: ProblemMaker, cfg: SweepConfig, out: str | Path | SweepStore,
          progress: bool = True) -> pd.DataFrame:
    """Run (or resume) a sweep of the picklable ``make_problem(seed, run)`` under ``cfg``
    into the folder ``out`` (or a store an experiment opened with its own settings; the files:
    ``docs/simulations.md``); return the rows of ``mse.csv``."""
    store = out if isinstance(out, SweepStore) else SweepStore.open(
        out, {**cfg.to_json(), **maker_settings(make_problem)})
    curves = run_sweep(make_problem, cfg, store, progress)

    def mean(run: int) -> float:  # as the run's curves were made with (older records: anew)
        kept = load_part(store, cfg, cfg.strategies[0], run).get("mean_mse")
        return make_problem(cfg.settings.seed, run).mean_mse() if kept is None else kept

    means = [(cfg.dataset, "mean", run, 0, mean(run)) for run in range(cfg.runs)]
    df = pd.concat([curves, pd.DataFrame(means, columns=MSE_COLUMNS)], ignore_index=True)
    write_text_atomic(store.folder / "mse.csv", df.to_csv(index=False))
    mean_mse = float(df[df.strategy == "mean"].mse.mean())
    mse_curves(df, store.folder / "fig4_mse.png",
               title=LABELS.get(cfg.dataset, cfg.dataset),
               references={REFERENCE_LABELS["mean"]: mean_mse})
    return df
