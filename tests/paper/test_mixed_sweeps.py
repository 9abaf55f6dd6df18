"""The paper's sweeps with feature questions: settings, pools, irrelevant synthetic features,
the no-expert start and the ceiling of every answer."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest
from conftest import REAL_DATA_DIR, needs_data

from elicit.elicitation.elicitor import Elicitor
from elicit.errors import ElicitError
from elicit.harness.store import SweepStore
from elicit.harness.sweep import load_part, part_kinds
from elicit.model.simulate import N_FEATURES, make_synthetic
from elicit.model.spec import Hyper, all_pairs
from elicit.paper.configs import POOLS, SyntheticConfig, default_pool
from elicit.paper.runinfo import ceiling
from elicit.paper.synthetic import run_synthetic, synthetic_problem

# the sweeps here are read by their tables: figures drawn, not saved (conftest)
pytestmark = pytest.mark.usefixtures("one_blas_thread", "unsaved_figures")

SMALL = dict(runs=1, rounds=2, seed=1, engine="numpy", strategies=("random",))


# -- the settings ----------------------------------------------------------------------------

def test_questions_pick_the_model_and_pool_and_are_recorded():
    paper = SyntheticConfig()
    assert (paper.settings.questions, paper.pool, paper.settings.model, paper.irrelevant) == \
        ("pairs", "paper", "paper", 0)
    mixed = SyntheticConfig(questions="both")
    assert (mixed.pool, mixed.settings.model) == ("open", "relevance")
    assert mixed.sweep_config().settings.questions == "both"
    rec = mixed.to_json()
    assert (rec["questions"], rec["pool"], rec["model"], rec["irrelevant"]) == \
        ("both", "open", "relevance", 0)
    assert SyntheticConfig.from_json(rec, runs=50) == mixed
    # the paper's pool with feature questions, when asked for by name
    assert SyntheticConfig(questions="relevance", pool="paper").pool == "paper"
    assert [default_pool(q) for q in ("pairs", "relevance", "both")] == \
        ["paper", "open", "open"]
    assert POOLS == ("paper", "open")


@pytest.mark.parametrize("kw,match", [
    (dict(questions="both", model="paper"),
     r"^questions='both' asks feature questions, which need a model with relevance classes"),
    (dict(pool="best"), r"^pool must be one of paper, open, got 'best'$"),
    (dict(questions="everything"), r"^unknown question kind 'everything' in "
                                   r"questions='everything'; name kinds from "),
    (dict(questions="relevance,relevance"), r"^question kind 'relevance' is named twice"),
    (dict(irrelevant=-1), r"^irrelevant must be an integer from 0 to 23 \(the generator has "
                          r"25 features\), got -1$"),
    (dict(irrelevant=24), r"^irrelevant must be an integer from 0 to 23"),
])
def test_bad_mixed_settings_are_one_line_errors(kw, match):
    with pytest.raises(ElicitError, match=match):
        SyntheticConfig(**kw)


def test_irrelevant_features_need_the_built_in_generator(tmp_path):
    np.savez(tmp_path / "a.npz", X=np.ones((3, 2)), y=np.ones(3), U=np.ones((2, 1)),
             X_test=np.ones((3, 2)), y_test=np.ones(3), groups=np.array([0, -1]))
    with pytest.raises(ElicitError, match=r"^--irrelevant sets up the built-in generator"):
        SyntheticConfig(problems=tmp_path, irrelevant=3)


def test_the_store_refuses_a_rerun_with_other_questions_pool_or_irrelevant(tmp_path):
    out = tmp_path / "syn"
    run_synthetic(SyntheticConfig(questions="both", irrelevant=5, **SMALL), out,
                  progress=False)
    before = (out / "mse.csv").read_bytes()
    for other, what in ((dict(questions="relevance"), "questions: 'both' there, 'relevance' now"),
                        (dict(pool="paper"), "pool: 'open' there, 'paper' now"),
                        (dict(irrelevant=4), "irrelevant: 5 there, 4 now"),
                        (dict(questions="pairs", model="relevance"),
                         "questions: 'both' there, 'pairs' now")):
        with pytest.raises(ElicitError, match=what):
            run_synthetic(SyntheticConfig(**{**dict(questions="both", irrelevant=5, **SMALL),
                                             **other}), out, progress=False)
    assert (out / "mse.csv").read_bytes() == before


def test_a_folder_made_before_the_mixed_settings_is_a_pair_sweep(tmp_path):
    """config.json files written before ``questions``, ``pool`` and ``irrelevant`` existed
    count as the paper's pairs (rerun: nothing refused), and not as a mixed sweep."""
    out = tmp_path / "old"
    run_synthetic(SyntheticConfig(**SMALL), out, progress=False)
    old = json.loads((out / "config.json").read_text())
    for key in ("questions", "pool", "irrelevant"):
        del old[key]
    (out / "config.json").write_text(json.dumps(old))
    run_synthetic(SyntheticConfig(**SMALL), out, progress=False)
    (out / "config.json").write_text(json.dumps(old))
    with pytest.raises(ElicitError, match="questions: 'pairs' there, 'both' now"):
        run_synthetic(SyntheticConfig(questions="both", **SMALL), out, progress=False)


# -- the generator ---------------------------------------------------------------------------

def test_irrelevant_features_have_weight_zero_and_leave_the_other_draws_alone():
    base = make_synthetic(np.random.default_rng(7))
    off = make_synthetic(np.random.default_rng(7), irrelevant=6)
    zero = np.flatnonzero(off.beta == 0)
    assert len(zero) == 6 and np.array_equal(np.flatnonzero(off.groups < 0), zero)
    # U, K_opt and the other weights are drawn before the irrelevant features are chosen
    assert np.array_equal(off.U, base.U) and np.array_equal(off.K_opt, base.K_opt)
    keep = np.setdiff1d(np.arange(N_FEATURES), zero)
    assert np.array_equal(off.beta[keep], base.beta[keep])
    assert np.array_equal(off.groups[keep], base.groups[keep])
    # the paper's data: no draw for irrelevant=0
    again = make_synthetic(np.random.default_rng(7), irrelevant=0)
    assert np.array_equal(again.X, base.X) and np.array_equal(again.y_test, base.y_test)
    # the targets follow the weights with the irrelevant ones at 0: the residual is noise
    resid = off.y_test - off.X_test @ off.beta
    assert abs(resid.var() - 5.0) < 1.0          # sigma2 = 5, 1000 test samples


def test_the_oracle_and_the_pools_of_a_problem_with_irrelevant_features():
    paper = synthetic_problem(3, 0, irrelevant=5, pool="paper")
    open_ = synthetic_problem(3, 0, irrelevant=5, pool="open")
    groups = paper.expert.groups
    relevant = np.flatnonzero(groups >= 0)
    assert len(relevant) == N_FEATURES - 5
    # the paper's pool: the oracle's answerable pairs; the open one: all pairs
    assert np.array_equal(paper.candidates, relevant[all_pairs(len(relevant))])
    assert open_.candidates is None
    assert all(paper.expert.answer(i, j).value != "dont_know" for i, j in paper.candidates)
    assert [paper.expert.relevance(k).value for k in range(N_FEATURES)] == \
        ["relevant" if g >= 0 else "irrelevant" for g in groups]
    # without irrelevant features the paper's pool is every pair, as in the paper
    assert synthetic_problem(3, 0).candidates is None


# -- end to end ------------------------------------------------------------------------------

def test_a_mixed_synthetic_sweep_asks_both_kinds_and_pairs_among_not_irrelevant(tmp_path):
    # 6 rounds (they were 12): random and nonsequential already ask 7 pairs after an
    # "irrelevant" answer, sequential only feature questions
    cfg = SyntheticConfig(runs=1, rounds=6, seed=1, engine="numpy", questions="both",
                          irrelevant=8, refine=3)
    res = run_synthetic(cfg, tmp_path / "syn", progress=False)
    store = SweepStore.find(tmp_path / "syn")
    groups = synthetic_problem(1, 0, irrelevant=8).expert.groups
    seen = set()
    for s in cfg.strategies:
        part = load_part(store, cfg.sweep_config(), s, 0)
        kinds = part_kinds(part)
        seen |= set(kinds)
        irrelevant: set[int] = set()
        for i, j, a in part["asked"]:
            if j is None:
                assert a == ("relevant" if groups[i] >= 0 else "irrelevant")
                irrelevant |= {i} if a == "irrelevant" else set()
            else:
                assert not {i, j} & irrelevant
        assert len(part["mse"]) == cfg.rounds + 1
    assert seen == {"pairs", "relevance"}
    df = res.mse
    assert set(df.strategy) == {*cfg.strategies, "mean"}


def test_the_ceiling_of_every_answer_equals_an_elicitor_given_them_all():
    """With feature questions the ceiling answers every feature and every pair of relevant
    features; an Elicitor given the same answers through its own path fits the same model."""
    prob = synthetic_problem(2, 0, irrelevant=6, pool="open")
    prob = dataclasses.replace(prob, hyper=Hyper(variant="fixed", tau2=1.0, model="relevance"))
    ceil = ceiling(prob, "numpy", "both")
    groups = prob.expert.groups
    relevant = np.flatnonzero(groups >= 0)
    assert (ceil.n_feature_answers, ceil.n_relevant) == (N_FEATURES, N_FEATURES - 6)
    assert ceil.n_answers == len(relevant) * (len(relevant) - 1) // 2
    el = Elicitor(prob.X, prob.y, prob.U, prob.hyper, engine="numpy", questions="both")
    assert prob.mse(el) == pytest.approx(ceil.initial, rel=1e-12)
    answers = [(k, None, prob.expert.relevance(k)) for k in range(N_FEATURES)]
    answers += [(int(i), int(j), prob.expert.answer(int(i), int(j)))
                for i, j in relevant[all_pairs(len(relevant))]]
    el.set_answers(answers)
    assert prob.mse(el) == pytest.approx(ceil.ceiling, rel=1e-5)
    assert ceil.ceiling < ceil.initial
    # feature answers only
    only = ceiling(prob, "numpy", "relevance")
    assert (only.n_answers, only.n_feature_answers) == (0, N_FEATURES)


# -- real data: the start uses no expert input -----------------------------------------------

@needs_data
@pytest.mark.slow
def test_the_open_pool_start_does_not_depend_on_the_expert():
    """With the open pool the start (tau2 by CV, the no-feedback fit, its test MSE) is the
    same whatever the expert knows; the paper's pool is the expert's answerable pairs."""
    from elicit.paper.configs import RealDataConfig
    from elicit.paper.real_problem import problem_from_run
    from elicit.paper.runinfo import prepare_runinfo

    kw = dict(runs=1, rounds=0, engine="numpy", questions="both", data_dir=REAL_DATA_DIR,
              meta_features="ppmi")
    wide = RealDataConfig("amazon", expert_nonzero=60, **kw)
    narrow = RealDataConfig("amazon", expert_nonzero=20, **kw)
    a, b = prepare_runinfo(wide, 0), prepare_runinfo(narrow, 0)
    assert a["tau2"] == b["tau2"] and a["initial"] == b["initial"]
    assert a["n_relevant"] > b["n_relevant"]
    assert problem_from_run(wide.run_data(0), wide, 0, a["tau2"]).candidates is None
    # the best case: the pairs of the keywords the expert calls relevant
    best = RealDataConfig("amazon", pool="paper", expert_nonzero=60, **kw)
    prob = problem_from_run(best.run_data(0), best, 0, a["tau2"])
    assert len(np.unique(prob.candidates)) == a["n_relevant"]


@needs_data
@pytest.mark.slow
def test_a_mixed_realdata_sweep_from_the_command_line(tmp_path, capsys):
    from elicit.cli.main import main

    out = tmp_path / "amazon"
    assert main(["realdata", "--dataset", "amazon", "--questions", "both", "--meta-features",
                 "ppmi", "--runs", "1", "--rounds", "3", "--engine", "numpy", "--out",
                 str(out), "--data-dir", str(REAL_DATA_DIR), "--quiet"]) == 0
    text = capsys.readouterr().out
    assert "questions both, pool: pairs among the features not called irrelevant" in text
    assert "averaged over answers 1..3: " in text and "feature questions asked" in text
    cfg = json.loads((out / "config.json").read_text())
    assert (cfg["questions"], cfg["pool"], cfg["model"]) == ("both", "open", "relevance")
    info = json.loads((out / "parts" / "amazon" / "runinfo" / "run000.json").read_text())
    assert info["n_feature_answers"] == info["n_features"] and info["pool"] == "open"
    assert info["n_answerable"] == info["n_relevant"] * (info["n_relevant"] - 1) // 2
    seq = json.loads((out / "parts" / "amazon" / "sequential" / "run000.json").read_text())
    assert len(seq["kinds"]) == 3 and len(seq["zeta"]) == 4
    assert seq["mse"][0] == pytest.approx(info["initial"], rel=1e-9)
