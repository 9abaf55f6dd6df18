"""End-to-end tests of the real-data experiment (elicit realdata / table1) on the paper's data.

They need the data directory (see docs/data.md) and are skipped without it. Kept small: one
run, a few rounds, Amazon only, about half a minute in all. The reference lines, ``--paper``
and the report: ``test_realdata_refs.py``; review corpora: ``test_realdata_corpus.py``.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest
from conftest import REAL_DATA_DIR, needs_data
from helpers import assert_png

from elicit.cli.main import main
from elicit.data import PAPER_FILES
from elicit.errors import ElicitError

REAL = REAL_DATA_DIR
pytestmark = needs_data


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    """A tiny realdata sweep (1 run x 3 rounds) and Table 1 on it, via the command line."""
    out = tmp_path_factory.mktemp("results")
    code = main(["realdata", "--dataset", "amazon", "--runs", "1", "--rounds", "3",
                 "--seed", "0", "--out", str(out / "amazon"), "--data-dir", str(REAL),
                 "--engine", "numpy", "--quiet"])
    assert code == 0
    code = main(["table1", "--runs", "1", "--out", str(out), "--datasets", "amazon",
                 "--samples", "5", "--quiet"])
    assert code == 0
    return out


@pytest.fixture(scope="module")
def run0():
    from elicit.data.sources import paper_source

    src = paper_source("amazon", REAL)
    return src.load(), src.run(0, 0)


@pytest.fixture(scope="module")
def problem0():
    """Run 0 as a sweep's problem (tau2 fixed), with the run's LASSO expert (fitting it costs
    a third of a second); the tests only read it."""
    from elicit.paper.configs import RealDataConfig
    from elicit.paper.real_problem import realdata_problem

    return realdata_problem(RealDataConfig("amazon", data_dir=REAL, tau2=0.01), 0)


@pytest.mark.slow
def test_realdata_mse_csv(results):
    df = pd.read_csv(results / "amazon" / "mse.csv")
    assert list(df.columns) == ["dataset", "strategy", "run", "n_feedback", "mse"]
    assert set(df.strategy) == {"random", "nonsequential", "sequential", "lasso", "ridge",
                                "elasticnet", "mean", "ceiling", "yardstick"}
    for s in ("random", "nonsequential", "sequential"):
        g = df[df.strategy == s]
        assert sorted(g.n_feedback) == [0, 1, 2, 3]
    base = df[df.strategy.isin(["lasso", "ridge", "elasticnet", "mean", "ceiling", "yardstick"])]
    assert len(base) == 6 and (base.n_feedback == 0).all() and (base.run == 0).all()
    assert np.isfinite(df.mse).all() and (df.mse > 0).all()
    # All strategies start from the same no-feedback model.
    assert df[df.n_feedback == 0].query("strategy in ['random','sequential']").mse.nunique() == 1
    assert_png(results / "amazon" / "fig5_amazon.png")
    assert (results / "amazon" / "fig5_amazon.pdf").read_bytes().startswith(b"%PDF")


@pytest.mark.slow
def test_realdata_resume_and_settings_guard(results, capsys):
    # A rerun with the same settings reuses every part; other settings are refused.
    before = (results / "amazon" / "mse.csv").read_text()
    assert main(["realdata", "--dataset", "amazon", "--runs", "1", "--rounds", "3",
                 "--out", str(results / "amazon"), "--engine", "numpy", "--quiet"]) == 0
    assert (results / "amazon" / "mse.csv").read_text() == before
    assert main(["realdata", "--dataset", "amazon", "--runs", "1", "--rounds", "3",
                 "--out", str(results / "amazon"), "--engine", "numpy", "--tau2", "0.001",
                 "--quiet"]) == 2
    assert "other settings" in capsys.readouterr().err


def test_problem_matches_setup(run0, problem0):
    prob = problem0
    _, rd = run0
    assert rd.standardize == "model" and prob.extra["standardize"] == "model"
    assert prob.X == pytest.approx(rd.X_train)
    # the default meta-features of elicit realdata: a 10-dimensional PPMI embedding
    assert prob.X.shape == (100, 337) and prob.U.shape == (337, 10)
    assert prob.hyper.variant == "fixed" and prob.hyper.tau2 == 0.01
    assert prob.pool_size == 400 and prob.y_offset == pytest.approx(rd.y_mean)
    # Candidates are exactly the expert's answerable pairs: never a don't-know pair.
    answers = {prob.expert.answer(int(i), int(j)).value for i, j in prob.candidates}
    assert answers <= {"similar", "dissimilar"}
    assert len(prob.candidates) == prob.expert.n_answerable


@pytest.mark.slow
def test_table1_on_tiny_results(results):
    lines = (results / "table1.csv").read_text().strip().splitlines()
    assert lines[0] == ("dataset,mse_level,level_kind,rnd,act,seqelc,rnd_reached,act_reached,"
                        "seqelc_reached,paper_rnd,paper_act,paper_seqelc,mean_reached,"
                        "ceiling_reached,yardstick_reached,sweep")
    rows = [ln.split(",") for ln in lines[1:]]
    assert [r[2] for r in rows] == ["paper", "relative", "paper", "relative"]
    for r in rows:
        for cell in r[3:6]:
            assert cell == "not reached" or float(cell) >= 0
    curves = pd.read_csv(results / "table1" / "curves.csv")
    assert set(curves.method) == {"rnd", "act"}
    seq0 = pd.read_csv(results / "amazon" / "mse.csv").query(
        "strategy == 'sequential' and n_feedback == 0").mse.iloc[0]
    assert curves[curves.n_samples == 0].mse.to_numpy() == pytest.approx(seq0, rel=1e-6)
    assert curves.n_samples.max() <= 5


def test_act_first_pick_maximises_gain(run0):
    from elicit.paper import samples as S
    from elicit.paper.real_problem import initial_fit

    ds, rd = run0
    X_pool, y_pool = S.expert_pool(rd, ds)
    X_pool, y_pool = X_pool[:300], y_pool[:300]          # a subset keeps this quick
    data, fit, mse0 = initial_fit(rd)
    curve = S.more_samples_curve(rd, X_pool, y_pool, "act", 2, start=(data, fit))
    assert curve.mse[0] == pytest.approx(mse0) and len(curve.mse) == 3
    from elicit.elicitation.utility import SAMPLE_GAIN
    from elicit.model.posterior import NIGPosterior

    gain = SAMPLE_GAIN.score(NIGPosterior.from_map(data, fit), X_pool)
    assert curve.added[0] == int(np.argmax(gain))
    assert curve.gain[0] == pytest.approx(gain.max())
    # The gain is 0.5 log(1 + x' Sigma* x) with Sigma* the posterior covariance factor.
    post = NIGPosterior.from_map(data, fit)
    x = X_pool[7]
    assert gain[7] == pytest.approx(0.5 * math.log1p(x @ post.Sigma @ x))
    # rnd follows its random stream; both never add a sample twice.
    rnd = S.more_samples_curve(rd, X_pool, y_pool, "rnd", 3, np.random.default_rng(0),
                               start=(data, fit))
    assert rnd.added == list(np.random.default_rng(0).permutation(300)[:3])
    assert len(set(curve.added)) == len(curve.added)
    # Early stop: a level above the initial MSE stops at once.
    assert len(S.more_samples_curve(rd, X_pool, y_pool, "act", 5, stop_level=mse0 + 1,
                                    start=(data, fit)).mse) == 1


@pytest.mark.parametrize("standardize", ["model", "train"])
def test_added_samples_use_the_runs_statistics(standardize):
    from elicit.data.sources import paper_source
    from elicit.paper import samples as S

    src = paper_source("amazon", REAL)
    ds, rd = src.load(), src.run(0, 0, standardize=standardize)
    X_pool, y_pool = S.expert_pool(rd, ds)
    k = 11
    raw = ds.counts[rd.expert_idx[k]].astype(float)
    rows = rd.train_idx if standardize == "train" else np.concatenate([rd.train_idx,
                                                                       rd.test_idx])
    mu = ds.counts[rows].mean(axis=0)
    sd = ds.counts[rows].std(axis=0)
    sd[sd == 0] = 1.0
    assert X_pool[k] == pytest.approx((raw - mu) / sd)
    assert y_pool[k] == pytest.approx(ds.ratings[rd.expert_idx[k]] - rd.y_mean)


def test_tau2_cv_picks_from_grid(run0):
    from elicit.prior.tau2 import cv_tau2

    _, rd = run0
    grid = (1e-3, 1e-2, 1e-1)
    best, scores = cv_tau2(rd.X_train, rd.y_train, rd.U, grid, folds=3,
                           rng=np.random.default_rng(0))
    # the grid policy extends a grid whose best value is on its edge (elicit.prior.tau2)
    assert set(scores) >= set(grid) and min(scores) < best < max(scores)
    assert scores[best] == min(scores.values())
    assert all(np.isfinite(v) and v > 0 for v in scores.values())
    with pytest.raises(ElicitError,
                       match=r"tau2 grid must be a list of positive numbers, got \(0.01, -1"):
        cv_tau2(rd.X_train, rd.y_train, rd.U, (0.01, -1.0))
    with pytest.raises(ElicitError, match=r"folds must lie in 2\.\.\d+ .*got 1"):
        cv_tau2(rd.X_train, rd.y_train, rd.U, grid, folds=1)


@pytest.mark.slow
def test_tau2_cv_runinfo(tmp_path):
    from elicit.harness.store import SweepStore
    from elicit.paper.configs import RealDataConfig
    from elicit.paper.runinfo import ensure_runinfo
    from elicit.prior.tau2 import SWEEP_TAU2_GRID as TAU2_GRID

    assert 0.003 in TAU2_GRID
    cfg = RealDataConfig("amazon", runs=1, data_dir=REAL, engine="numpy")
    infos = ensure_runinfo(SweepStore.open(tmp_path, cfg.to_json()), cfg, progress=False)
    info = infos[0]
    assert set(info["baselines"]) == {"lasso", "ridge", "elasticnet"}
    tried = {float(k): v for k, v in info["tau2_cv"].items()}
    assert set(tried) >= set(TAU2_GRID)
    assert info["tau2"] == info["tau2_cv_choice"] == min(tried, key=lambda t: (tried[t], t))
    stored = json.loads((tmp_path / "parts" / "amazon" / "runinfo" / "run000.json").read_text())
    assert stored == info


def test_bad_input_errors(tmp_path, capsys):
    # table1 without a realdata sweep names the command to run.
    assert main(["table1", "--runs", "1", "--out", str(tmp_path), "--datasets", "amazon",
                 "--quiet"]) == 2
    assert "elicit realdata --dataset amazon" in capsys.readouterr().err
    # A data directory without the files names the file it expected.
    assert main(["realdata", "--dataset", "yelp", "--runs", "1", "--rounds", "1", "--out",
                 str(tmp_path / "y"), "--data-dir", str(tmp_path), "--quiet"]) == 2
    assert PAPER_FILES["yelp"][0] in capsys.readouterr().err
    with pytest.raises(SystemExit, match="^2$"):  # argparse's usage error
        main(["realdata", "--dataset", "amazon", "--out", str(tmp_path), "--tau2", "-1"])
    assert "--tau2 must be a positive number or 'cv', got '-1'" in capsys.readouterr().err


@pytest.mark.slow
def test_report_on_tiny_results(results):
    from elicit.report import write_report

    text = write_report(results, wall_s=60.0, step_s={"amazon": 40.0, "table1": 20.0},
                        cpu_s={"amazon": 70.0, "table1": 30.0}, jobs=2).read_text()
    assert "![Fig. 5 Amazon, model standardisation, tau2 by CV](amazon/fig5_amazon.png)" in text
    assert "| initial MSE (no feedback) |" in text and "| 2.26 |" in text
    assert "## Table 1" in text and "| Amazon |" in text
    # The paper's Table 1 counts sit beside ours.
    assert "| 20 | 14 | 55 |" in text and "| 27 | 17 | 90 |" in text
    assert "CPU time / 2 jobs" in text


@pytest.mark.slow
def test_table1_library_call_matches_the_command(results):
    from elicit.paper.table1 import run_table1

    before = (results / "table1.csv").read_text()
    # Every loop is finished: a rerun with the same settings only reads the parts.
    res = run_table1(results, runs=1, datasets=("amazon",), samples=5, progress=False)
    assert res.text == before == (results / "table1.csv").read_text()
    assert res.curves.equals(pd.read_csv(results / "table1" / "curves.csv"))
    assert [r["level_kind"] for r in res.rows] == ["paper", "relative", "paper", "relative"]


@pytest.mark.slow
def test_realdata_library_refuses_other_settings(results):
    from elicit.paper.configs import RealDataConfig
    from elicit.paper.realdata import run_realdata

    with pytest.raises(ElicitError, match="pool_size: 400 there, 50 now"):
        run_realdata(RealDataConfig("amazon", runs=1, rounds=3, engine="numpy", pool_size=50),
                     results / "amazon", progress=False)
    with pytest.raises(ElicitError, match="tau2 must be a positive number or 'cv'"):
        RealDataConfig("amazon", runs=1, rounds=3, tau2=-1.0)


def test_bench_on_the_real_problem(tmp_path):
    from elicit.paper.bench import run_bench

    res = run_bench("amazon-real", rounds=1, engine="numpy", exact=False, progress=False,
                    data_dir=REAL, json_path=tmp_path / "bench.json")
    assert res["size"] == "amazon-real" and (res["p"], res["n"], res["d"]) == (337, 100, 100)
    assert res["n_candidates"] > 400
    for step in ("map_cold", "map_warm", "round_fast"):
        assert res[f"{step}_s"] > 0 and res[f"{step}_cpu_s"] >= 0
    assert json.loads((tmp_path / "bench.json").read_text()) == res
    # The real sizes follow the standardisation (same split and expert either way).
    from elicit.paper.bench import bench_problem

    model, train = (bench_problem("amazon-real", 0, REAL, standardize=s)
                    for s in ("model", "train"))
    assert np.array_equal(model.y, train.y) and np.array_equal(model.pairs, train.pairs)
    # Training statistics centre the training columns exactly; the model reviews' do not.
    assert np.abs(train.X.mean(axis=0)).max() < 1e-9 < 0.01 < np.abs(model.X.mean(axis=0)).max()


def test_tau2_cv_fits_the_sweeps_model(run0, problem0):
    """The CV of tau2 fits the model the sweep uses. Known coupling with every feature in
    the coupled set is the paper's model, so it chooses the same to the last digit; with the
    expert's ~40 features coupled (the sweep's expert of the run), K differs and so do the
    CV errors."""
    from elicit.prior.tau2 import cv_tau2

    _, rd = run0
    # two values and two folds: what is compared is the model each fold fits, not the choice
    grid = (1e-3, 1e-2)
    args = (rd.X_train, rd.y_train, rd.U, grid)
    paper = cv_tau2(*args, folds=2, rng=np.random.default_rng(0))
    p = rd.X_train.shape[1]
    everything = np.array([[i, i + 1] for i in range(p - 1)])
    same = cv_tau2(*args, folds=2, rng=np.random.default_rng(0), model="known-coupling",
                   candidates=everything)
    assert same == paper
    cands = problem0.expert.answerable_pairs()
    known = cv_tau2(*args, folds=2, rng=np.random.default_rng(0), model="known-coupling",
                    candidates=cands)
    assert len(np.unique(cands)) < p
    assert all(abs(known[1][t] - paper[1][t]) > 1e-6 for t in grid)


@pytest.mark.slow
def test_recommended_configuration(tmp_path, capsys):
    from elicit.paper.configs import RECOMMENDED, resolve_recommended

    # not given: None (the configuration's own meta-features)
    given = dict(meta_features=None, meta_dim=None, model=None,
                 utility_target="predictive")
    assert resolve_recommended(False, False, **given) == given
    assert resolve_recommended(True, False, **given) == RECOMMENDED
    # the recommended value itself may be repeated; another one is refused
    assert resolve_recommended(True, False, **{**given, "model": RECOMMENDED["model"]}) \
        == RECOMMENDED
    with pytest.raises(ElicitError, match="--recommended sets --model known-coupling; "
                                          "drop --model tied-threshold or --recommended"):
        resolve_recommended(True, False, **{**given, "model": "tied-threshold"})
    with pytest.raises(ElicitError, match="--recommended and --paper"):
        resolve_recommended(True, True, **given)
    # on the command line: one line, before anything is written
    out = tmp_path / "rec"
    assert main(["realdata", "--dataset", "amazon", "--recommended", "--paper", "--runs", "1",
                 "--rounds", "1", "--out", str(out), "--data-dir", str(REAL), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--recommended and --paper" in err
    assert not out.exists()
    # and a sweep records the recommended settings
    assert main(["realdata", "--dataset", "amazon", "--recommended", "--runs", "1",
                 "--rounds", "2", "--strategies", "sequential", "--out", str(out),
                 "--data-dir", str(REAL), "--quiet"]) == 0
    cfg = json.loads((out / "config.json").read_text())
    assert {k: cfg[k] for k in RECOMMENDED} == RECOMMENDED


def test_table1_of_a_folder_that_is_no_realdata_sweep_or_named_twice_is_one_line(tmp_path,
                                                                                 capsys):
    """table1 on the synthetic sweep's folder ended in a KeyError traceback ('dataset'), and
    --datasets amazon,amazon wrote every row of Table 1 twice."""
    from elicit.harness.store import SweepStore

    SweepStore.open(tmp_path / "synthetic", {"experiment": "synthetic", "seed": 0})
    (tmp_path / "synthetic" / "mse.csv").write_text("dataset,strategy,run,n_feedback,mse\n")
    assert main(["table1", "--runs", "1", "--out", str(tmp_path), "--datasets", "synthetic",
                 "--quiet"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "synthetic is no realdata sweep" in err, err
    assert main(["table1", "--runs", "1", "--out", str(tmp_path), "--datasets",
                 "amazon, amazon", "--quiet"]) == 2
    assert "sweep 'amazon' is named twice; name each once" in capsys.readouterr().err
