"""``elicit bench --suite`` (``make bench``): the project's speed figures, recorded per commit
(docs/benchmarks.md says what each figure measures and how records are compared)."""

from __future__ import annotations

import datetime
import json
import os
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from elicit.data.files import DATA_ENV, resolve_data_dir
from elicit.elicitation.answers import ask
from elicit.elicitation.settings import RoundSettings
from elicit.elicitation.strategies import get_strategy
from elicit.errors import ElicitError
from elicit.harness.problem import RunProblem, strategy_stream
from elicit.harness.sweep import SweepConfig, sweep_elicitor
from elicit.internal.io import write_json_atomic
from elicit.internal.memory import peak_rss_mb, reset_peak_rss
from elicit.internal.provenance import code_version, machine_info
from elicit.internal.threads import single_blas_thread
from elicit.paper.bench import bench_problem
from elicit.paper.configs import RealDataConfig, SyntheticConfig
from elicit.paper.real_problem import problem_from_run, run_cv_tau2, run_setup
from elicit.paper.steps import MIXED_STEPS, STEPS, StepSettings, run_step, step_after
from elicit.paper.synthetic import synthetic_problem

#: A figure more than this fraction above its earlier value is named as slower.
SLOWER = 0.20
RECORD_VERSION = 1
#: What a reproduction run answers per strategy (``make reproduce``'s default).
REPRODUCE_ROUNDS = 100
#: Runs of every step of ``make reproduce`` (its ``RUNS`` default): the whole call's estimate.
REPRODUCE_RUNS = 50


@dataclass(frozen=True)
class Figure:
    """One figure of the suite; ``target`` is an upper bound (None: no target)."""

    key: str
    label: str
    unit: str
    target: float | None = None


#: The round figures (issue's targets where they were set; docs/benchmarks.md).
ROUND_FIGURES: tuple[Figure, ...] = (
    Figure("synthetic_round", "synthetic query round incl. refit (n 20, p 25)", "s", 0.020),
    Figure("amazon_round", "Amazon pair round (real run 0, defaults)", "s", 0.030),
    Figure("amazon_mixed_round", "Amazon relevance + pairs round (--questions both)", "s",
           0.050),
    Figure("p2000_round", "p = 2000 round (random problem)", "s", 0.5),
    Figure("p10000_round", "p = 10,000 round (review-like problem)", "s", 5.0),
    Figure("p10000_peak_mb", "p = 10,000 peak memory (set-up + rounds)", "MB", 4096.0),
)
ROUND_KEYS = tuple(f.key for f in ROUND_FIGURES if f.unit == "s")


@dataclass
class SuiteSettings:
    """What :func:`run_suite` measures and how long: ``rounds`` maps a round figure to the
    answers of its run; ``step_rounds`` and ``mixed_step_rounds`` are the answers ``R`` of the
    steps' measured runs, ``table1_runs`` Table 1's runs; ``figures`` and ``steps`` choose
    what is measured."""

    seed: int = 0
    refine: int = 10
    rounds: dict[str, int] = field(default_factory=lambda: {
        "synthetic_round": 20, "amazon_round": 10, "amazon_mixed_round": 5,
        "p2000_round": 3, "p10000_round": 3})
    step_rounds: int = 20
    mixed_step_rounds: int = 10
    table1_runs: int = 4
    figures: tuple[str, ...] = ROUND_KEYS
    steps: tuple[str, ...] | None = None   # None: every step
    data_dir: str | os.PathLike | None = None

    def __post_init__(self) -> None:
        # before anything is measured, not when the loop reaches the name
        for what, names, known in (("round figure", self.figures, ROUND_KEYS),
                                   ("step", self.steps or (), STEPS)):
            if bad := [n for n in names if n not in known]:
                raise ElicitError(f"unknown {what} {bad[0]!r}; choose from {', '.join(known)}")
            if twice := [n for i, n in enumerate(names) if n in names[:i]]:
                raise ElicitError(f"{what} {twice[0]!r} is named twice; name it once")
        if not self.figures and self.steps == ():
            raise ElicitError("--figures '' and --steps '' measure nothing; name a round "
                              "figure or a step")
        if self.data_dir is not None or os.environ.get(DATA_ENV):  # a named folder must exist
            resolve_data_dir(self.data_dir)

    def to_json(self) -> dict:
        """The settings as the record stores them."""
        return {"seed": self.seed, "refine": self.refine, "rounds": dict(self.rounds),
                "step_rounds": self.step_rounds, "mixed_step_rounds": self.mixed_step_rounds,
                "table1_runs": self.table1_runs, "engine": "numpy", "utility": "fast",
                "blas_threads": 1}


def elicitation_rounds(problem, cfg, rounds: int) -> dict:
    """Time ``rounds`` answers of the sweeps' sequential loop on ``problem`` under ``cfg``:
    ``setup_cpu_s``, ``round_cpu_s`` (each round), ``peak_rss_mb`` (over ``peak_scope``)."""
    scope = "set-up and rounds" if reset_peak_rss() else "process"
    c = time.process_time()
    el = sweep_elicitor(problem, cfg)
    setup = time.process_time() - c
    rng = np.random.default_rng(strategy_stream(cfg.settings.seed, 0,
                                                get_strategy("sequential").stream_id))
    cpu = []
    for _ in range(rounds):
        c = time.process_time()
        q = el.next_query("sequential", rng)
        el.answer(q.i, q.j, ask(problem.expert, q))
        cpu.append(time.process_time() - c)
    return {"setup_cpu_s": setup, "round_cpu_s": cpu, "peak_rss_mb": peak_rss_mb(),
            "peak_scope": scope}


def _synthetic_run(s: SuiteSettings):
    cfg = SyntheticConfig(runs=1, rounds=s.rounds["synthetic_round"], seed=s.seed,
                          engine="numpy", refine=s.refine)
    return synthetic_problem(s.seed, 0), cfg.sweep_config()


def measure_round(key: str, s: SuiteSettings) -> dict:
    """The round figure ``key``: :func:`elicitation_rounds` on its problem, with its median."""
    if key == "synthetic_round":
        problem, cfg = _synthetic_run(s)
    elif key in ("amazon_round", "amazon_mixed_round"):  # run 0 of the default Amazon set-up
        extra: dict[str, Any] = {"questions": "both", "pool": "open"} if "mixed" in key else {}
        real = RealDataConfig("amazon", seed=s.seed, data_dir=s.data_dir, engine="numpy",
                              refine=s.refine, runs=1, rounds=s.rounds[key], **extra)
        rd, expert, cands = run_setup(real, 0)
        tau2 = run_cv_tau2(real, 0, rd, cands)[0] if real.fixed_tau2 is None else real.fixed_tau2
        problem, cfg = problem_from_run(rd, real, 0, tau2, expert=expert), real.sweep_config()
    elif key in ("p2000_round", "p10000_round"):
        bp = bench_problem(key.removesuffix("_round"), s.seed)
        # candidates None: the same pairs, computed by the question table instead of listed
        problem = RunProblem(bp.X, bp.y, bp.U, bp.X[:0], bp.y[:0], bp.expert, bp.hyper,
                             pool_size=bp.pool_size)
        cfg = SweepConfig(bp.size, 1, s.rounds[key], settings=RoundSettings(
            seed=s.seed, engine="numpy", refine=s.refine))
        del bp  # its kernel and factor (10,000^2 at p = 10,000) are the set-up's memory
    else:
        raise ElicitError(f"unknown figure {key!r}; choose from {', '.join(ROUND_KEYS)}")
    res = elicitation_rounds(problem, cfg, cfg.rounds)
    res["value"] = float(np.median(res["round_cpu_s"]))
    return res


def measure_step(step: str, s: SuiteSettings, out: Path) -> dict:
    """The CPU time per run of reproduction step ``step`` from one-run sweeps under ``out``,
    estimated as docs/benchmarks.md says ("Reproduce steps"); Table 1's is measured."""
    if step == "table1":
        # Table 1's loops stop at a run's lowest level: early in run 0, at the cap in most
        # runs, so the figure is a mean over several. Their sweeps, without answers (the loops
        # start from the no-feedback fit), are set-up, not counted (run 0 may be in "0").
        st = StepSettings(runs=1, real_runs=s.table1_runs, rounds=0, seed=s.seed, jobs=1,
                          data_dir=s.data_dir)
        for sweep in step_after(step):
            run_step(sweep, out / "0", st, progress=False)
        c = time.process_time()
        run_step(step, out / "0", st, progress=False)
        table1 = time.process_time() - c
        return {"value": table1 / s.table1_runs, "measured_cpu_s": {"table1": table1}}
    r = s.mixed_step_rounds if step in MIXED_STEPS else s.step_rounds
    cpu: dict[str, float] = {}
    # the first call only warms up the step's imports, which a reproduction pays once
    for rounds, folder in ((0, "warm-up"), (r, "R"), (0, "0")):
        st = StepSettings(runs=1, real_runs=1, mixed_runs=1, rounds=rounds,
                          mixed_rounds=rounds, seed=s.seed, jobs=1, data_dir=s.data_dir)
        c = time.process_time()
        run_step(step, out / folder, st, progress=False)
        cpu[folder] = time.process_time() - c
    per_answer = (cpu["R"] - cpu["0"]) / r
    return {"value": cpu["0"] + per_answer * REPRODUCE_ROUNDS, "rounds": r, "measured_cpu_s": cpu}


def run_suite(s: SuiteSettings | None = None, progress: Callable[[str], None] | None = None,
              ) -> dict:
    """Measure the suite; return its record. ``progress`` gets a line before each figure."""
    s = s or SuiteSettings()
    # before measuring: the code measured, whatever changes in the checkout meanwhile
    commit = code_version()
    say = progress or (lambda line: None)
    figures: dict[str, dict] = {}
    skipped: dict[str, str] = {}

    def put(fig: Figure, res: dict) -> None:
        figures[fig.key] = {"label": fig.label, "unit": fig.unit, "target": fig.target, **res}

    def figure(fig: Figure, measure: Callable[[], dict]) -> None:
        say(f"bench: {fig.key}")
        try:
            put(fig, single_blas_thread(measure)())
        except (ElicitError, FileNotFoundError) as e:
            skipped[fig.key] = str(e)

    by_key = {f.key: f for f in ROUND_FIGURES}
    for key in s.figures:
        figure(by_key[key], lambda key=key: measure_round(key, s))  # type: ignore[misc]
        if key == "p10000_round" and key in figures:
            res = figures[key]
            put(by_key["p10000_peak_mb"], {"value": res["peak_rss_mb"], "scope": res["peak_scope"]})
    steps = tuple(st for st in STEPS if s.steps is None or st in s.steps)  # table1 last
    with tempfile.TemporaryDirectory(prefix="elicit-bench-") as tmp:
        for step in steps:
            what = f"Table 1, per run (mean of runs 0-{s.table1_runs - 1})" if step == "table1" \
                else f"reproduce step {step}, per run of {REPRODUCE_ROUNDS} answers (estimate)"
            figure(Figure(f"step_{step}", what, "s"),
                   lambda step=step: measure_step(step, s, Path(tmp)))  # type: ignore[misc]
    step_keys = [f"step_{st}" for st in steps]
    if steps == STEPS and all(k in figures for k in step_keys):
        cpu = sum(figures[k]["value"] for k in step_keys) * REPRODUCE_RUNS
        put(Figure("reproduce_estimate", f"make reproduce, all steps x {REPRODUCE_RUNS} runs, CPU "
                   "(estimate; target: 30 min wall on 2 cores)", "s", 2 * 30 * 60.0),
            {"estimate": True, "value": cpu})
    return {"version": RECORD_VERSION, "commit": commit,
            "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "machine": machine_info(), "settings": s.to_json(), "figures": figures,
            "skipped": skipped}


def record_path(folder: str | os.PathLike, record: dict) -> Path:
    """Where ``record`` is written: ``<folder>/<commit>.json`` (``unknown``: it names none)."""
    return Path(folder) / f"{record.get('commit') or 'unknown'}.json"


def write_record(folder: str | os.PathLike, record: dict) -> Path:
    """Write ``record`` beside the earlier ones; return its path."""
    return write_json_atomic(record_path(folder, record), record, indent=1)  # makes the folder


def previous_record(folder: str | os.PathLike, exclude: str | os.PathLike | None = None,
                    machine: dict | None = None, settings: dict | None = None) -> dict | None:
    """The most recent record in ``folder`` by ``date`` but ``exclude``, or None; with
    ``machine``, of the same CPU model and core count only (another CPU's figures would flag
    every figure, or none); with ``settings``, of the same settings only (other work)."""
    best: dict | None = None
    skip = None if exclude is None else Path(exclude).resolve()
    for path in sorted(Path(folder).glob("*.json")):  # none if there is no such folder
        try:  # a damaged or foreign file, or another version's record, is passed over
            rec = json.loads(path.read_text())
            datetime.datetime.fromisoformat(rec["date"])
            if path.resolve() == skip or rec["version"] != RECORD_VERSION or not all(
                    isinstance(f["value"], (int, float)) and isinstance(f["unit"], str)
                    for f in rec["figures"].values()) or machine is not None and any(
                    rec["machine"].get(k) != machine.get(k) for k in ("cpu", "cores")) \
                    or settings is not None and rec.get("settings") != settings:
                continue
        except (OSError, ValueError, TypeError, KeyError, AttributeError):
            continue
        if best is None or rec["date"] > best["date"]:
            best = rec
    return best


@dataclass(frozen=True)
class Change:
    """A figure of two records: its earlier and current value and their ratio."""

    key: str
    before: float
    after: float

    @property
    def ratio(self) -> float:
        return self.after / self.before


def compare(current: dict, previous: dict, tolerance: float = SLOWER) -> list[Change]:
    """The figures of ``current`` more than ``tolerance`` above ``previous``'s (every figure
    is a cost), in ``current``'s order; figures only one record has are not compared
    (:func:`previous_record` passes over a file of another form)."""
    out = []
    for key, fig in current["figures"].items():
        before = previous["figures"].get(key, {}).get("value")
        if before is not None and 0 < before and fig["value"] > before * (1.0 + tolerance):
            out.append(Change(key, float(before), float(fig["value"])))
    return out


def _value(v: float, unit: str) -> str:
    return f"{v:.0f} MB" if unit == "MB" else f"{v:.3g} s" if v < 100 else f"{v / 60:.1f} min"


def format_suite(record: dict, previous: dict | None = None) -> str:
    """The record as a Markdown table, then the skipped figures and the comparison."""
    head = "| figure | value | target | met |" + (" previous |" if previous else "")
    lines = [f"commit {record.get('commit')}, {record['machine'].get('cpu')} "
             f"({record['machine'].get('cores')} cores), {record['date']}; process CPU "
             f"time, one BLAS thread, numpy engine", "", head,
             "|---|---|---|---|" + ("---|" if previous else "")]
    for key, fig in record["figures"].items():
        target = fig.get("target")
        # an estimate (the whole reproduction from one-run calls) is a lower bound: whether
        # the target is met is for the measured call to say (results/REPORT.md)
        met = ("" if target is None else "lower bound, not a measurement" if fig.get("estimate")
               else "met" if fig["value"] <= target else "NOT met")
        row = (f"| {fig['label']} | {_value(fig['value'], fig['unit'])} | "
               f"{'' if target is None else '<= ' + _value(target, fig['unit'])} | {met} |")
        if previous:
            old = previous["figures"].get(key)
            row += f" {_value(old['value'], old['unit']) if old else ''} |"
        lines.append(row)
    for key, why in record.get("skipped", {}).items():
        lines.append(f"\nskipped {key}: {why}")
    if previous is None:
        lines.append("\nno earlier record of this machine and settings to compare with")
        return "\n".join(lines)
    slower = compare(record, previous)
    where = f"{previous.get('commit')} ({previous.get('date')})"
    if slower:
        lines.append(f"\nmore than {SLOWER:.0%} slower than {where}:")
        lines += [f"  {c.key}: {_value(c.before, 'MB' if c.key.endswith('_mb') else 's')} -> "
                  f"{_value(c.after, 'MB' if c.key.endswith('_mb') else 's')} "
                  f"(x{c.ratio:.2f})" for c in slower]
    else:
        lines.append(f"\nno figure more than {SLOWER:.0%} slower than {where}")
    return "\n".join(lines)


def bench_suite(folder: str | os.PathLike | None, s: SuiteSettings | None = None,
                progress: Callable[[str], None] | None = None) -> tuple[dict, dict | None, str]:
    """Run the suite; with ``folder``, write the record there and compare it with the most
    recent earlier one. Returns the record, the earlier record (or None) and the table."""
    if folder is not None and "+" in code_version():
        # named <HEAD>+changes+..., a record would name a commit without the code it measured
        raise ElicitError(f"--record {folder}: the code measured is not a commit (changes to "
                          "elicit/, stan/, experiments/ or pyproject.toml, or no git "
                          "checkout); commit it first, or measure without --record")
    record = run_suite(s, progress)
    previous = None
    if folder is not None:
        previous = previous_record(folder, exclude=record_path(folder, record),
                                   machine=record["machine"], settings=record["settings"])
        write_record(folder, record)
    return record, previous, format_suite(record, previous)
