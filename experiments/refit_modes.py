"""How often a refit after an answer ends in a different local mode, with and without the
numpy engine's cold-start check (:class:`elicit.model.refit_checks.ColdStartPolicy`).

Reruns the runs of a sweep folder of pair questions (synthetic or real data: its
``config.json``, and for a real-data sweep its per-run tau2 in ``runinfo.csv``; a finished
sweep or the figures' folder under ``results/``; a sweep that also asks feature questions is
refused, as the audit's likelihood is a pair answer's), every strategy of the sweep, twice:
with the engine's warm refits as they were (no cold-start check) and with the check. The loop
is the sweep's (:func:`elicit.harness.sweep.run_one`: the same problems, strategy streams and
expert), and after every answer that changes the data the engine's refit is compared with two
references from L-BFGS-B (the numpy engine's cold optimiser): a cold fit from the prior means,
and a fit from the previous MAP (the warm start, optimised by L-BFGS-B instead of projected
Newton).

Counted per policy: refits; refits after an unlikely answer (p < 0.05 under the previous
MAP); refits whose point differs from a reference's (each parameter beyond 1e-3 relative:
another stationary point); refits lower than the best reference by more than 1e-6 in log
density (a higher mode was there to find) and by how much; cold starts tried and kept; the
CPU and wall time of the rounds (query + answer + refit, without the references); and,
against the refits as they were, the (run, strategy) pairs whose questions differ and the
largest change of a mean MSE curve (absolute, and relative to the curve). Besides the default
policy (a cold start whenever a gamma moves onto its bound) a narrower one is measured: only
after answers the previous MAP gave a probability below 0.05.

Usage::

    python experiments/refit_modes.py results/synthetic [results/amazon ...] [--runs N]
        [--rounds T] [--data-dir DIR] [--jobs 2] [--json modes.json]
"""

from __future__ import annotations

import dataclasses
import json
import math
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np
import pandas as pd

from elicit.cli.argtypes import OneLineParser, nonneg_int, positive_int
from elicit.elicitation.elicitor import Elicitor
from elicit.elicitation.kinds import PAPER_QUESTIONS, parse_questions
from elicit.elicitation.strategies import get_strategy
from elicit.engines.checked import same_point
from elicit.engines.numpy_engine import NumpyEngine
from elicit.errors import ElicitError
from elicit.harness.problem import strategy_stream
from elicit.internal.threads import single_blas_thread
from elicit.model.refit_checks import ColdStartPolicy, new_answers_loglik
from elicit.model.theta import theta_of
from elicit.paper.configs import RealDataConfig, SyntheticConfig
from elicit.paper.real_problem import RealDataMaker
from elicit.paper.synthetic import SyntheticMaker

#: the refits without checks, the default policy (a cold start whenever a gamma moves onto
#: its bound), and for comparison a narrower one: only after answers the previous MAP found
#: unlikely (p < 0.05)
POLICIES = {"before": None, "after": ColdStartPolicy(),
            "unlikely-only": ColdStartPolicy(unlikely=0.05)}


def maker_of(folder: Path, data_dir: Path | None = None):
    """(cfg, make_problem) of the sweep in ``folder`` (``data_dir``: where the paper's data
    are, if not where the sweep found them)."""
    d = json.loads((folder / "config.json").read_text())
    if d.get("experiment") == "synthetic":
        cfg = SyntheticConfig.from_json(d, runs=1)
        return cfg, SyntheticMaker(cfg.n_train)
    cfg = RealDataConfig.from_json(d, data_dir, runs=1)
    info = pd.read_csv(folder / "runinfo.csv")
    tau2 = {int(r): float(t) for r, t in zip(info.run, info.tau2)}
    return cfg, RealDataMaker(cfg, tau2 if cfg.fixed_tau2 is None else None)


def _theta(fit, data) -> np.ndarray:
    return theta_of(fit, data)


@single_blas_thread
def audit_run(folder: Path, run: int, policy: str, rounds: int | None = None,
              data_dir: Path | None = None) -> dict:
    """One run, every strategy of the sweep, under one policy: the counts, the CPU and wall
    time of the rounds, the questions and the MSE curves (``rounds``: the sweep's if None)."""
    cfg, make = maker_of(folder, data_dir)
    cfg = cfg.sweep_config()
    if rounds is not None:
        # the sweep's MSE snapshots (the synthetic one's reach 100 answers) are not read
        # here, and a snapshot beyond the rounds is refused
        cfg = dataclasses.replace(cfg, rounds=rounds, snapshots=())
    st = cfg.settings
    problem = make(st.seed, run)
    hyper = problem.hyper  # as run_one sets it up
    if cfg.threshold_mean is not None:
        hyper = dataclasses.replace(hyper, threshold_mean=cfg.threshold_mean)
    hyper = dataclasses.replace(hyper, model=st.model)
    engine = NumpyEngine(hyper.variant, cold_start=POLICIES[policy])
    ref = NumpyEngine(hyper.variant, cold_start=None)
    # the sweep's round settings (its questions included), with the problem's pool by default
    el = Elicitor(problem.X, problem.y, problem.U, hyper, engine=engine,
                  settings=dataclasses.replace(st, pool_size=st.pool_size or problem.pool_size),
                  candidates=problem.candidates)
    mse0 = problem.mse(el)
    c = dict(refits=0, unlikely=0, differ_cold=0, differ_warm_lbfgs=0, differ_any=0,
             differ_any_unlikely=0, cold_higher=0, cold_lower=0, lower=0, lower_unlikely=0,
             tried=0, kept=0)
    lost: list[float] = []
    cpu = wall = 0.0
    out: dict = {"asked": {}, "mse": {}}
    for strategy in cfg.strategies:
        rng = np.random.default_rng(strategy_stream(st.seed, run,
                                                    get_strategy(strategy).stream_id))
        el.reset()
        mse, asked = [mse0], []
        for _t in range(cfg.rounds):
            if len(el.unasked()) == 0:
                break
            prev = el.fit
            t0, w0 = time.process_time(), time.perf_counter()
            q = el.next_query(strategy, rng)
            a = problem.expert.answer(q.i, q.j)
            el.answer(q.i, q.j, a)
            cpu += time.process_time() - t0
            wall += time.perf_counter() - w0
            asked.append([int(q.i), int(q.j), a.value])
            mse.append(problem.mse(el))
            if el.fit is prev:  # "don't know": no refit
                continue
            data, res = el.data, el.fit
            c["refits"] += 1
            p = math.exp(new_answers_loglik(data, _theta(prev, data), 0.0, None))
            unlikely = p < 0.05
            c["unlikely"] += unlikely
            c["tried"] += "cold start" in res.message
            c["kept"] += "cold start kept" in res.message
            refs = [ref.fit(data), ref.fit(data, init=prev.params)]
            a_ = _theta(res, data)
            differ = [not same_point(a_, _theta(r, data), data) for r in refs]
            c["differ_cold"] += differ[0]
            c["differ_warm_lbfgs"] += differ[1]
            c["differ_any"] += any(differ)
            c["differ_any_unlikely"] += any(differ) and unlikely
            c["cold_higher"] += differ[0] and refs[0].log_density > res.log_density + 1e-6
            c["cold_lower"] += differ[0] and refs[0].log_density < res.log_density - 1e-6
            best = max(r.log_density for r in refs)
            if best > res.log_density + 1e-6:
                c["lower"] += 1
                c["lower_unlikely"] += unlikely
                lost.append(best - res.log_density)
        out["asked"][strategy] = asked
        out["mse"][strategy] = mse
    # named by the folder, not the data set: two sweeps of one data set stay two summaries
    return {"name": str(folder), "run": run, "policy": policy, "counts": c, "lost": lost,
            "cpu": cpu, "wall": wall, "engine": dict(engine.cold_starts), **out}


def summarize(results: list[dict]) -> dict:
    """Per sweep: the counts of each policy, CPU and wall time per round, and what changed."""
    summary = {}
    for name in dict.fromkeys(r["name"] for r in results):
        mine = [r for r in results if r["name"] == name]
        s: dict = {}
        for policy in POLICIES:
            rs = [r for r in mine if r["policy"] == policy]
            counts = {k: int(sum(r["counts"][k] for r in rs)) for k in rs[0]["counts"]}
            lost = [x for r in rs for x in r["lost"]]
            rounds = sum(len(r["asked"][st]) for r in rs for st in r["asked"])
            s[policy] = {**counts, "max_lost": max(lost, default=0.0),
                         "rounds": rounds,
                         "cpu_per_round_ms": 1e3 * sum(r["cpu"] for r in rs) / max(rounds, 1),
                         "wall_per_round_ms": 1e3 * sum(r["wall"] for r in rs) / max(rounds, 1),
                         # every warm refit of the engine, the query rounds' included
                         "engine_warm_refits": sum(r["engine"].get("warm", 0) for r in rs),
                         "engine_cold_tried": sum(r["engine"].get("tried", 0) for r in rs),
                         "engine_cold_kept": sum(r["engine"].get("kept", 0) for r in rs),
                         # the CPU of those cold fits, per round and as a share of the rounds'
                         "cold_cpu_per_round_ms": sum(r["engine"].get("cpu_ms", 0)
                                                      for r in rs) / max(rounds, 1),
                         "cold_cpu_share": sum(r["engine"].get("cpu_ms", 0) for r in rs)
                         / max(1e3 * sum(r["cpu"] for r in rs), 1e-9),
                         # the mean MSE over runs after the last round, per strategy
                         "last_mse": {st: float(np.mean([r["mse"][st][-1] for r in rs]))
                                      for st in rs[0]["mse"]}}
        before = {r["run"]: r for r in mine if r["policy"] == "before"}
        strategies = list(next(iter(before.values()))["asked"])
        for policy in list(POLICIES)[1:]:
            other = {r["run"]: r for r in mine if r["policy"] == policy}
            changed, curve, rel = 0, 0.0, 0.0
            for st in strategies:
                changed += sum(before[k]["asked"][st] != other[k]["asked"][st] for k in before)
                mb = np.mean([before[k]["mse"][st] for k in before], axis=0)
                mo = np.mean([other[k]["mse"][st] for k in before], axis=0)
                curve = max(curve, float(np.max(np.abs(mo - mb))))
                rel = max(rel, float(np.max(np.abs(mo - mb) / mb)))
            # against the refits as they were: the (run, strategy) pairs asked other
            # questions, the largest change of a strategy's mean MSE curve
            s[policy].update(runs_strategies_with_other_questions=int(changed),
                             runs_strategies=len(before) * len(strategies),
                             max_mean_mse_change=curve, max_mean_mse_change_relative=rel)
        summary[name] = s
    return summary


def check_sweep(ap: OneLineParser, folder: Path, data_dir: Path | None) -> None:
    """The parser's one line, before any worker starts, if ``folder`` is no sweep this script
    can audit: no or a damaged ``config.json``, a real-data sweep whose data or
    ``runinfo.csv`` are not found, or a sweep of other questions than pairs (the audit's
    p < 0.05 is the likelihood of a pair answer)."""
    if not (folder / "config.json").is_file():
        ap.error(f"{folder} holds no sweep (config.json)")
    try:
        cfg, _ = maker_of(folder, data_dir)
    except json.JSONDecodeError as e:
        ap.error(f"{folder / 'config.json'} is damaged (not JSON: {e.msg}, line {e.lineno})")
    except (OSError, ElicitError) as e:
        ap.error(f"{folder}: {e}")
    questions = parse_questions(cfg.settings.questions)
    if questions != PAPER_QUESTIONS:
        ap.error(f"{folder} asks {' and '.join(questions)} questions: refit_modes audits "
                 f"sweeps of pair questions")


def main() -> None:
    ap = OneLineParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("sweeps", type=Path, nargs="+",
                    help="sweep folders (a config.json; a real-data sweep's runinfo.csv)")
    ap.add_argument("--runs", type=positive_int, default=None,
                    help="runs 0..N-1 (default: the runs of the sweep's stored parts)")
    ap.add_argument("--rounds", type=nonneg_int, default=None, help="rounds (default: the sweep's)")
    ap.add_argument("--data-dir", type=Path, default=None,
                    help="the paper's data (default: where the real-data sweep found them)")
    ap.add_argument("--jobs", type=positive_int, default=2)
    ap.add_argument("--json", type=Path, default=None, help="write the summary here")
    args = ap.parse_args()
    named = [f.resolve() for f in args.sweeps]
    for i, folder in enumerate(args.sweeps):
        if named[i] in named[:i]:  # its results would be summed into one summary
            ap.error(f"{folder} is named twice: name each sweep folder once")
    tasks = []
    for folder in args.sweeps:
        check_sweep(ap, folder, args.data_dir)
        n = args.runs or len(list((folder / "parts").glob("*/random/run*.json")))
        if n == 0:
            ap.error(f"{folder} has no stored runs: give --runs")
        tasks += [(folder, run, policy, args.rounds, args.data_dir)
                  for run in range(n) for policy in POLICIES]
    t0 = time.perf_counter()
    with ProcessPoolExecutor(args.jobs) as pool:
        results = list(pool.map(audit_run, *zip(*tasks)))
    summary = summarize(results)
    print(json.dumps(summary, indent=1))
    print(f"wall time {time.perf_counter() - t0:.0f} s, CPU time of the workers "
          f"{sum(r['cpu'] for r in results):.0f} s in the rounds (references excluded)")
    if args.json is not None:
        args.json.write_text(json.dumps(summary, indent=1))


if __name__ == "__main__":
    main()
