"""Small cases that pin what the sweep runner, the figures and the paper's steps promise where
no other test looked: the progress count, a reference line's place on the axis, the runs a
legend entry counts, the keywords a configuration passes on, and the LASSO expert's penalty
rules on cases whose answer is known by hand."""

from __future__ import annotations

import json
import threading

import numpy as np
import pandas as pd
import pytest
from helpers import tiny_problem

from elicit.harness.figures import mse_curves
from elicit.harness.runner import run_pipeline, run_tasks

_SEEN: list[int] = []


def _note(k: int) -> None:
    _SEEN.append(k)


def test_the_progress_bar_counts_every_task_that_ran_inline(capsys):
    """One at a time in this process, as in parallel: the bar ends at the tasks that ran."""
    _SEEN.clear()
    n = run_tasks(_note, [(0,), (1,), (2,)], jobs=1, desc="runs",
                  left=lambda t: None if t[0] == 1 else t)
    assert n == 2 and _SEEN == [0, 2]
    assert "2/2" in capsys.readouterr().err


def _two_answers(values=(1.0, 2.0)) -> pd.DataFrame:
    """One run of one strategy: the curve spans exactly [1, 2], no error band."""
    return pd.DataFrame([("d", "random", 0, t, v) for t, v in enumerate(values)],
                        columns=["dataset", "strategy", "run", "n_feedback", "mse"])


def test_a_line_within_twice_the_curves_span_stays_on_the_axis(tmp_path):
    """The curves span 1 (from 1 to 2, more than a quarter of their level), so a line up to
    2 spans away (from -1 to 4) is drawn on the axis, one further is not."""
    drawn = mse_curves(_two_answers(), tmp_path / "f.png",
                       references={"near": 3.5, "far": 4.5})
    assert drawn["lines"] == {"near 3.500": 3.5, "far 4.500 (off the axis)": 4.5}


def test_a_not_finite_run_is_counted_among_its_own_strategys_runs(tmp_path):
    """Two runs of random, three of sequential: random's entry counts its own two."""
    rows = [("d", s, r, t, 1.0 + 0.1 * t + 0.01 * r)
            for s, runs in (("random", 2), ("sequential", 3)) for r in range(runs)
            for t in range(3)]
    df = pd.DataFrame(rows, columns=["dataset", "strategy", "run", "n_feedback", "mse"])
    df.loc[(df.strategy == "random") & (df.run == 1), "mse"] = np.nan
    drawn = mse_curves(df, tmp_path / "f.png")
    assert set(drawn["curves"]) == {"Random (1 of 2 runs not finite, left out)", "Sequential"}


def test_every_step_gets_the_reproductions_refine_and_seed():
    """The real-data, preset and mixed steps take ``refine`` and ``seed`` from the step
    settings as the synthetic one does (not the round settings' defaults)."""
    from elicit.elicitation.settings import RoundSettings
    from elicit.paper import steps

    d = RoundSettings()
    s = steps.StepSettings(refine=d.refine + 3, seed=d.seed + 7)
    for step in ("synthetic", *steps.LITERAL, *steps.RECOMMENDED_STEPS,
                 *(m for m in steps.MIXED_STEPS if not m.startswith(steps.KITCHEN))):
        st = steps.step_config(step, s).settings
        assert (step, st.refine, st.seed) == (step, d.refine + 3, d.seed + 7)


class _FoldErrors:
    """Stands in for sklearn's LassoCV with cross-validation errors chosen by hand (2 folds;
    alphas decreasing): the rule under test is what is made of them."""

    alphas_ = np.array([8.0, 4.0, 2.0, 1.0])
    mse_path_ = np.array([[2.5, 2.5], [1.9, 1.9], [0.0, 2.0], [1.5, 1.5]])
    alpha_ = 2.0

    def __init__(self, **kw) -> None:
        pass

    def fit(self, X, y) -> _FoldErrors:
        return self


def test_the_one_standard_error_rule_by_hand(monkeypatch):
    """The least error, 1 at alpha 2 (folds 0 and 2), has standard error
    sqrt(((0 - 1)^2 + (2 - 1)^2) / (2 - 1)) / sqrt(2) = 1: the largest alpha whose error is at
    most 2 is 4 (error 1.9; 2.5 at alpha 8 is too much)."""
    import sklearn.linear_model

    from elicit.paper.lasso_expert import _cv_alpha

    monkeypatch.setattr(sklearn.linear_model, "LassoCV", _FoldErrors)
    X, y = np.zeros((10, 2)), np.zeros(10)
    assert _cv_alpha(X, y, "cv-1se", 0) == 4.0


#: How long (wall time, asleep) an item waits for a start that must not come before it ends;
#: a broken pipeline starts it at once, a correct one makes the wait run out.
WAIT_S = 0.3
#: Longer than anything here waits unless the pipeline is broken (not a time limit).
NEVER = 120.0


def test_an_item_waits_for_every_item_it_names():
    """c waits for a and b: it starts only once both ended, although a ends at once."""
    b_ended, c_started = threading.Event(), threading.Event()
    seen: dict[str, bool] = {}

    def work(item: str) -> str:
        if item == "b":
            c_started.wait(WAIT_S)
            b_ended.set()
        if item == "c":
            seen["b ended before c started"] = b_ended.is_set()
            c_started.set()
        return item

    run_pipeline(["a", "b", "c"], work, width=3, after={"c": ["a", "b"]})
    assert seen == {"b ended before c started": True}


def test_no_more_than_width_items_start_so_none_starts_after_a_failure():
    """Width 2: when a ends, b still runs, so only c of the ready c and d starts; c fails,
    and d never starts (an item handed to the threads early would start once c's ends)."""
    from elicit.harness import runner

    started: list[str] = []

    def work(item: str) -> str:
        started.append(item)
        if item == "b":  # runs until the pipeline stops
            assert runner._STOP.get().wait(NEVER)
        if item == "c":
            raise ValueError("c failed")
        return item

    with pytest.raises(ValueError, match="c failed"):
        run_pipeline(["a", "b", "c", "d"], work, width=2, after={"c": ["a"], "d": ["a"]})
    assert sorted(started) == ["a", "b", "c"]


def test_an_item_does_not_wait_for_an_item_not_run():
    """``--steps amazon-paper`` alone: the default sweep it shares a memo with is not run, so
    it is not waited for."""
    assert run_pipeline(["c"], str.upper, width=2, after={"c": ["a"]}) == {"c": "C"}


def test_steps_run_side_by_side_with_workers_or_a_cluster():
    """A cluster is workers too: the next step's first runs keep it busy (steps_at_once)."""
    from elicit.paper.steps import STEPS_AT_ONCE, steps_at_once

    assert STEPS_AT_ONCE > 1
    assert steps_at_once(1) == 1
    assert steps_at_once(2) == steps_at_once(1, "local:2") == STEPS_AT_ONCE


def test_a_sweeps_threshold_mean_reaches_its_elicitor():
    from elicit.elicitation.settings import RoundSettings
    from elicit.harness.sweep import SweepConfig, sweep_elicitor

    problem = tiny_problem(0, 0)
    assert problem.hyper.threshold_mean != 2.5
    cfg = SweepConfig("x", 1, 0, strategies=("random",), threshold_mean=2.5,
                      settings=RoundSettings(engine="numpy"))
    assert sweep_elicitor(problem, cfg).hyper.threshold_mean == 2.5


def test_the_mean_line_of_a_sweeps_figure_is_the_mean_over_its_runs(tmp_path, monkeypatch):
    from elicit.elicitation.settings import RoundSettings
    from elicit.harness import sweep as sweep_module
    from elicit.harness.labels import REFERENCE_LABELS

    drawn: list[dict] = []
    monkeypatch.setattr(sweep_module, "mse_curves",
                        lambda df, path, title="", references=None: drawn.append(references))
    cfg = sweep_module.SweepConfig("mine", runs=2, rounds=0, strategies=("random",),
                                   settings=RoundSettings(engine="numpy", seed=0))
    sweep_module.sweep(tiny_problem, cfg, tmp_path / "o", progress=False)
    a, b = (tiny_problem(0, r).mean_mse() for r in range(2))
    assert a != b
    [refs] = drawn
    np.testing.assert_allclose(refs[REFERENCE_LABELS["mean"]], (a + b) / 2, rtol=1e-12)


def test_the_mean_predictor_adds_the_problems_offset():
    """Centred training targets (mean 0) and an offset of 10: the prediction is 10, so the
    test targets 10 and 12 score (0 + 4) / 2."""
    from elicit import GroupOracle
    from elicit.harness.problem import RunProblem
    from elicit.model.spec import Hyper

    X = np.eye(4)[:, :2]
    p = RunProblem(X, np.array([-1.0, 1.0, -1.0, 1.0]), np.ones((2, 1)), X[:2],
                   np.array([10.0, 12.0]), GroupOracle([0, 1]), Hyper(), y_offset=10.0)
    assert p.mean_mse() == 2.0


def test_a_strategys_stream_is_the_one_every_stored_result_was_drawn_from():
    """``SeedSequence([seed, run, stream_id, 7])`` (elicit.harness.problem): stored sweeps
    hold its draws, so another order of the same numbers would change every rerun."""
    from elicit.harness.problem import strategy_stream

    for seed, run, sid in ((0, 1, 2), (5, 0, 3)):
        got = np.random.default_rng(strategy_stream(seed, run, sid)).integers(2**62, size=3)
        want = np.random.default_rng([seed, run, sid, 7]).integers(2**62, size=3)
        assert got.tolist() == want.tolist()


def test_a_run_past_the_last_problem_file_is_one_line(tmp_path):
    from elicit.errors import ElicitError
    from elicit.harness.problem import ProblemsDir

    np.savez(tmp_path / "only.npz", X=np.zeros((2, 2)))
    with pytest.raises(ElicitError, match="holds 1 problems; run 1 has none"):
        ProblemsDir(tmp_path)(0, 1)


def test_feature_questions_on_the_papers_pool_say_so_in_the_title():
    """Feature questions beside the pairs of the paper's pool are not the paper's sweep: the
    figure's title and the summary name the questions and the pool."""
    from elicit.paper.configs import POOL_LABELS, RealDataConfig
    from elicit.paper.realdata import questions_note

    assert questions_note(RealDataConfig("amazon")) == ""
    note = questions_note(RealDataConfig("amazon", questions="both", pool="paper"))
    assert "questions both" in note and POOL_LABELS["paper"] in note


@pytest.mark.slow
def test_a_real_data_figure_draws_each_reference_line_at_its_own_rows(tmp_path, monkeypatch):
    """The figure's ceiling line is the mean of mse.csv's ceiling rows (not the yardstick's)
    and names the answers it used (pairs and feature answers, from runinfo.csv); with a fixed
    tau2 every run's record holds it, not the CV's choice."""
    from helpers import write_corpus

    from elicit.cli.main import main
    from elicit.harness.labels import REFERENCE_LABELS
    from elicit.paper import realdata

    drawn: list[dict] = []
    monkeypatch.setattr(realdata, "mse_curves",
                        lambda df, path, title="", baselines=None, references=None:
                        drawn.append(references))
    corpus = write_corpus(tmp_path / "shop.jsonl.gz")
    out = tmp_path / "s"
    assert main(["realdata", "--corpus", str(corpus), "--text-field", "review",
                 "--rating-field", "stars", "--out", str(out), "--runs", "1", "--rounds", "1",
                 "--expert-nonzero", "8", "--engine", "numpy", "--quiet",
                 "--questions", "both", "--strategies", "random", "--tau2", "0.01"]) == 0
    df = pd.read_csv(out / "mse.csv")
    info = pd.read_csv(out / "runinfo.csv")
    n = (info.n_answerable + info.get("n_feature_answers", 0)).mean()
    [refs] = drawn
    want = {REFERENCE_LABELS["mean"]: "mean", f"all ~{n:.0f} answers given": "ceiling",
            REFERENCE_LABELS["yardstick"]: "yardstick"}
    assert set(refs) == set(want)
    for label, strategy in want.items():
        assert refs[label] == df[df.strategy == strategy].mse.mean()
    assert df[df.strategy == "ceiling"].mse.mean() != df[df.strategy == "yardstick"].mse.mean()
    part = json.loads((out / "parts" / "shop" / "random" / "run000.json").read_text())
    assert part["tau2"][0] == 0.01
