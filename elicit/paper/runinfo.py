"""What a real-data run is measured against: before a sweep asks any question, each run gets
one resumable *runinfo* record (:func:`prepare_runinfo`; what it holds: ``docs/realdata.md``,
the reference lines and "Outputs"), which ``runinfo.csv`` and ``tau2_cv.csv`` flatten.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from elicit.data import RunData
from elicit.data.metafeatures import polarity_auc
from elicit.elicitation.kinds import PAPER_QUESTIONS, kinds_of, parse_questions
from elicit.elicitation.questions import Query
from elicit.engines import get_engine
from elicit.engines.base import Engine
from elicit.errors import ElicitError
from elicit.harness.labels import BASELINES, REFERENCES
from elicit.harness.problem import STREAM_BASELINES, STREAM_TAU2_CV, RunProblem, run_stream
from elicit.harness.runner import run_tasks
from elicit.harness.store import SweepStore
from elicit.harness.sweep import MSE_COLUMNS
from elicit.internal.memo import Memo
from elicit.internal.threads import single_blas_thread
from elicit.model.covariance import IRRELEVANT_SCALE
from elicit.model.posterior import NIGPosterior, mean_squared_error
from elicit.paper.baselines import SIGN_COUPLING, expert_yardstick, fit_baselines
from elicit.paper.configs import RealDataConfig
from elicit.paper.lasso_expert import LassoExpert
from elicit.paper.real_problem import (
    initial_fit,
    problem_from_run,
    run_cv_tau2,
    run_setup,
)
from elicit.prior.setup import fit_no_feedback
from elicit.prior.tau2 import SWEEP_TAU2_GRID

#: The runinfo records' layout; an older record is recomputed.
RUNINFO_VERSION = 2
#: tau^2 values of every run's recorded no-feedback test MSE (compared across
#: standardisations by the report): the paper's 0.01 and 0.003, near the CV choices.
NO_FEEDBACK_TAU2: tuple[float, ...] = (0.003, 0.01)


@dataclass(frozen=True)
class Ceiling:
    """The test MSE of the no-feedback model and after every answer the expert can give;
    ``counts`` per kind of question: the answers used and how many have outcome 1 (totals:
    ``n_answers`` and ``n_similar`` of pairs, ``n_feature_answers`` and ``n_relevant`` of
    the other kinds)."""

    initial: float
    ceiling: float
    counts: dict[str, tuple[int, int]] = dataclasses.field(default_factory=dict)

    def _total(self, pairs: bool, k: int) -> int:
        return sum(c[k] for kind, c in self.counts.items() if (kind in PAPER_QUESTIONS) == pairs)

    n_answers = property(lambda self: self._total(True, 0))
    n_similar = property(lambda self: self._total(True, 1))
    n_feature_answers = property(lambda self: self._total(False, 0))
    n_relevant = property(lambda self: self._total(False, 1))


@single_blas_thread
def ceiling(problem: RunProblem, engine: str | Engine = "auto",
            questions: object = PAPER_QUESTIONS) -> Ceiling:
    """Give every answer the expert can give at once and refit; return both test MSEs.

    The no-feedback model is set up as in a sweep, then one fit with all answers ("don't
    know" left out), warm from its MAP. The kinds are asked in their scoring order, skipping
    the questions an earlier kind's answers closed, as in an elicitation.
    """
    eng = get_engine(engine, problem.hyper.variant)
    kinds = sorted(kinds_of(questions), key=lambda k: k.order)
    if problem.candidates is None and parse_questions(questions) == PAPER_QUESTIONS:
        raise ElicitError("the ceiling needs the problem's candidate pairs")
    p = problem.X.shape[1]
    data0, fit0 = fit_no_feedback(eng, problem.X, problem.y, problem.U, problem.hyper,
                                  problem.candidates)
    mse0 = NIGPosterior.from_map(data0, fit0).mse(problem.X_test, problem.y_test, problem.y_offset)
    data, closed, counts = data0, np.zeros(p, bool), {}
    for kind in kinds:
        segment = kind.segment(p, problem.candidates)
        rows = segment.rows(np.arange(len(segment)))
        rows = rows[~closed[segment.features(rows)].any(axis=1)]
        said = [((int(r[0]), int(r[1])),
                 kind.ask(problem.expert, Query.of_row(r, kind=kind.name))) for r in rows]
        said = [(r, a) for r, a in said if a.outcome is not None]
        data = kind.enter(data, [r for r, _ in said], [a for _, a in said])
        counts[kind.name] = (len(said), sum(a.outcome == 1 for _, a in said))
        if (shut := kind.closes(data)) is not None:
            closed |= shut
    if not any(n for n, _ in counts.values()):
        return Ceiling(mse0, mse0, counts)
    # the base Hessian of the start belongs to its likelihood of y, which some answers change
    resets = any(k.resets(data.hyper.model) and counts[k.name][0] for k in kinds)
    fit = eng.fit(data, init=dataclasses.replace(fit0, warm_hessian=None) if resets else fit0)
    again, classes = problem.tau2_again, data.relevance
    if again is not None and classes is not None and data.model.relevance:
        # as a sweep chooses tau2 again after answers, here once after every answer
        data = dataclasses.replace(data, hyper=dataclasses.replace(
            data.hyper, tau2=again.choose(classes, fit.gamma)))
        fit = eng.fit(data, init=dataclasses.replace(fit, warm_hessian=None))
    mse = NIGPosterior.from_map(data, fit).mse(problem.X_test, problem.y_test, problem.y_offset)
    return Ceiling(mse0, mse, counts)


@single_blas_thread
def prepare_runinfo(cfg: RealDataConfig, run: int) -> dict:
    """The record of one run: baselines, the tau^2 CV (also where tau^2 is fixed), reference
    lines, no-feedback test MSEs, the largest test |z| and the meta-features' polarity AUC."""
    # the CV fits the sweep's model, whose known-coupling variants need the candidate pairs
    rd, expert, cands = run_setup(cfg, run)
    piece = memoised_pieces(cfg, run, rd, expert, cands)
    best, scores = piece["tau2_cv"]
    tau2 = best if cfg.fixed_tau2 is None else cfg.fixed_tau2
    problem = problem_from_run(rd, cfg, run, tau2, expert=expert)
    ceil = ceiling(problem, cfg.settings.engine, cfg.settings.questions)
    yard = piece["yardstick"]
    mixed = {} if parse_questions(cfg.settings.questions) == PAPER_QUESTIONS else {
        "questions": cfg.settings.questions, "pool": cfg.pool,
        "n_feature_answers": ceil.n_feature_answers, "n_relevant": ceil.n_relevant}
    return {
        "version": RUNINFO_VERSION, "run": run, "split_seed": rd.seed,
        "standardize": rd.standardize, "n_features": rd.p, "n_train": len(rd.train_idx),
        "n_test": len(rd.test_idx), "n_expert": len(rd.expert_idx),
        "baselines": piece["baselines"],
        "tau2": tau2, "tau2_cv_choice": best, "tau2_cv": {repr(t): v for t, v in scores.items()},
        "initial": ceil.initial,
        "references": {"mean": mean_squared_error(rd.y_mean, rd.y_test),
                       "ceiling": ceil.ceiling, "yardstick": yard["mse"]},
        "yardstick_tau2": yard["tau2"],
        "n_answerable": ceil.n_answers, "n_similar": ceil.n_similar,
        "no_feedback": piece["no_feedback"],
        "max_test_z": float(np.max(np.abs(rd.X_test))),
        "meta_features": rd.meta_features, "meta_dim": rd.meta_dim,
        "auc": polarity_auc(rd.U, expert.groups),
        **mixed,
    }


def memoised_pieces(cfg: RealDataConfig, run: int, rd: RunData, expert: LassoExpert,
                    cands: np.ndarray | None) -> dict:
    """The pieces of run ``run``'s record that depend on less than the sweep's settings:
    ``baselines``, ``tau2_cv`` (choice, tau^2 -> CV error), ``no_feedback`` and
    ``yardstick``, each through the memo in ``cfg.memo`` (None: computed here) keyed by
    exactly what it is computed from, so that sweeps share it where those agree."""
    memo = Memo(cfg.memo)
    data = {"X_train": rd.X_train, "y_train": rd.y_train, "X_test": rd.X_test,
            "y_test": rd.y_test, "y_mean": float(rd.y_mean)}
    seed = cfg.settings.seed
    stream = {"seed": int(seed), "run": int(run)}
    bl_state = int(run_stream(seed, run, STREAM_BASELINES).generate_state(1)[0] % (2**31))
    # (the memo's key holds scikit-learn's version with the code's)
    baselines = memo("baselines", {**data, "random_state": bl_state},
                     lambda: fit_baselines(rd.X_train, rd.y_train, rd.X_test, rd.y_test,
                                           rd.y_mean, random_state=bl_state))

    def cv() -> dict:
        best, scores = run_cv_tau2(cfg, run, rd, cands)
        return {"best": best, "scores": [[t, v] for t, v in scores.items()]}

    # the candidates as run_cv_tau2 passes them on (none and no pairs are the same CV)
    pairs = cands if cands is not None and len(cands) else None
    got = memo("tau2_cv",
               {"X": rd.X_train, "y": rd.y_train, "U": rd.U, "grid": SWEEP_TAU2_GRID, **stream,
                "stream": STREAM_TAU2_CV, "model": cfg.settings.model, "candidates": pairs}, cv)
    eng = get_engine("numpy", "fixed")
    no_fb = memo("no_feedback", {**data, "U": rd.U, "tau2": NO_FEEDBACK_TAU2, "engine": "numpy"},
                 lambda: {repr(t): initial_fit(rd, t, eng)[2] for t in NO_FEEDBACK_TAU2})

    def yardstick() -> dict:
        # the CV's folds are the sweep's: the same stream as the run's tau2 CV
        rng = np.random.default_rng(run_stream(seed, run, STREAM_TAU2_CV))
        yard = expert_yardstick(rd.X_train, rd.y_train, rd.X_test, rd.y_test, rd.y_mean,
                                expert.coef_, rng=rng)
        return {"mse": yard.mse, "tau2": yard.tau2}

    yard = memo("yardstick", {**data, "coef": np.asarray(expert.coef_, dtype=float),
                 "grid": SWEEP_TAU2_GRID, **stream, "stream": STREAM_TAU2_CV,
                 "irrelevant_scale": IRRELEVANT_SCALE, "coupling": SIGN_COUPLING}, yardstick)
    return {"baselines": baselines, "no_feedback": no_fb, "yardstick": yard,
            "tau2_cv": (got["best"], {float(t): v for t, v in got["scores"]})}


def _runinfo_task(store: SweepStore, cfg: RealDataConfig, run: int) -> None:
    store.save(store.runinfo_path(cfg.name, run), prepare_runinfo(cfg, run))


def ensure_runinfo(store: SweepStore, cfg: RealDataConfig, progress: bool = True) -> list[dict]:
    """Compute (or reuse) the records of runs ``0..cfg.runs-1`` in ``cfg.jobs`` processes;
    a record of an older layout, or from before the AUC or the yardstick, is computed again
    (whole, so that it names the one version of the code that made it)."""
    name = cfg.name
    run_tasks(_runinfo_task, [(store, cfg, r) for r in range(cfg.runs)], jobs=cfg.jobs,
              desc=f"{name}: baselines, references, tau2 CV", progress=progress,
              left=lambda t: t if store.missing(
                  {"": store.runinfo_path(name, t[2])},
                  lambda rec: int(rec.get("version", 1)) >= RUNINFO_VERSION and "auc" in rec
                  and "yardstick" in rec["references"]) else None)
    return [store.need(store.runinfo_path(name, r), f"runinfo record of run {r}")
            for r in range(cfg.runs)]


def reference_rows(dataset: str, infos: Sequence[dict]) -> pd.DataFrame:
    """``mse.csv`` rows of the baselines and reference lines: ``n_feedback`` 0, one per run."""
    rows = [(dataset, b, int(i["run"]), 0, float(i["baselines"][b]))
            for i in infos for b in BASELINES]
    rows += [(dataset, r, int(i["run"]), 0, float(i["references"][r]))
             for i in infos for r in REFERENCES]
    return pd.DataFrame(rows, columns=MSE_COLUMNS)


def runinfo_frame(dataset: str, infos: Sequence[dict]) -> pd.DataFrame:
    """One flat row per run (``OUT/runinfo.csv``)."""
    keys = ("run", "split_seed", "standardize", "n_features", "n_expert", "tau2")
    return pd.DataFrame([  # a pair-only sweep's record has no feature answers
        {"dataset": dataset, **{k: i[k] for k in keys}, "tau2_cv": i["tau2_cv_choice"],
         "initial": i["initial"], **i["references"], "n_answerable": i["n_answerable"],
         "n_similar": i["n_similar"], "n_feature_answers": i.get("n_feature_answers", 0),
         **i["baselines"], **{f"nofb_{float(t):g}": v for t, v in i["no_feedback"].items()},
         "max_test_z": i["max_test_z"], "auc": i["auc"]} for i in infos])


def tau2_cv_frame(infos: Sequence[dict]) -> pd.DataFrame:
    """``OUT/tau2_cv.csv``: per run the tau^2 used, the CV choice and every CV error."""
    return pd.DataFrame([{"run": i["run"], "tau2": i["tau2"], "tau2_cv": i["tau2_cv_choice"],
                          **{f"cv_mse_{float(k):g}": v for k, v in i["tau2_cv"].items()}}
                         for i in infos])
