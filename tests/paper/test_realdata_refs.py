"""Reference lines, ``--paper``, the settings guard, Table 1's paper columns and the report.

The first tests run the real pipeline on one Amazon run (they need the data directory); the
report tests build small fake sweep folders, so that every number the report prints can be
checked against an independent computation from the CSV files.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from conftest import REAL_DATA_DIR, needs_data
from helpers import mean_se_text

from elicit.cli.main import main
from elicit.errors import ElicitError

# the sweeps here are read by their tables: figures drawn, not saved (conftest)
pytestmark = pytest.mark.usefixtures("unsaved_figures")

REAL = REAL_DATA_DIR
ARGS = ["--runs", "1", "--rounds", "2", "--seed", "0", "--engine", "numpy", "--quiet"]


@pytest.fixture(scope="module")
def sweep(tmp_path_factory):
    """One Amazon run x 2 rounds with the defaults, via the command line."""
    out = tmp_path_factory.mktemp("refs") / "amazon"
    assert main(["realdata", "--dataset", "amazon", "--out", str(out), "--data-dir", str(REAL),
                 *ARGS]) == 0
    return out


@needs_data
@pytest.mark.slow
def test_mean_row_is_the_training_mean_predictor(sweep, paper_dataset):
    from elicit.data import prepare_run
    from elicit.data.sources import split_seed

    df = pd.read_csv(sweep / "mse.csv")
    row = df[(df.strategy == "mean") & (df.run == 0)]
    assert len(row) == 1 and int(row.n_feedback.iloc[0]) == 0
    # Independently: the split, the training ratings' mean, the test ratings.
    ds = paper_dataset("amazon")
    train, test = prepare_run(ds, split_seed(0, 0)).train_idx, \
        prepare_run(ds, split_seed(0, 0)).test_idx
    y = ds.ratings.astype(float)
    assert row.mse.iloc[0] == pytest.approx(np.mean((y[test] - y[train].mean()) ** 2), rel=1e-12)


@needs_data
@pytest.mark.slow
def test_ceiling_row_is_the_fit_with_every_answer(sweep):
    from elicit.elicitation.elicitor import Elicitor
    from elicit.paper.configs import RealDataConfig
    from elicit.paper.real_problem import realdata_problem

    df = pd.read_csv(sweep / "mse.csv")
    info = pd.read_csv(sweep / "runinfo.csv").iloc[0]
    prob = realdata_problem(RealDataConfig("amazon", data_dir=REAL), 0, tau2=float(info.tau2))
    el = Elicitor(prob.X, prob.y, prob.U, prob.hyper, engine="numpy",
                  candidates=prob.candidates, pool_size=prob.pool_size)
    # The sweep's start is this fit without answers.
    start = df[(df.strategy == "sequential") & (df.n_feedback == 0)].mse.iloc[0]
    assert prob.mse(el) == pytest.approx(start, rel=1e-9)
    answers = [(int(i), int(j), prob.expert.answer(int(i), int(j))) for i, j in prob.candidates]
    el.set_answers(answers)
    ceiling = df[df.strategy == "ceiling"].mse.iloc[0]
    assert prob.mse(el) == pytest.approx(ceiling, rel=1e-6)
    assert int(info.n_answerable) == len(answers) == prob.expert.n_answerable
    assert info.ceiling == pytest.approx(ceiling) and info.initial == pytest.approx(start)


@needs_data
@pytest.mark.slow
def test_paper_flag_is_train_standardisation_with_tau2_001(sweep, tmp_path, capsys):
    a, b = tmp_path / "a", tmp_path / "b"
    assert main(["realdata", "--dataset", "amazon", "--paper", "--out", str(a), *ARGS]) == 0
    assert main(["realdata", "--dataset", "amazon", "--standardize", "train", "--tau2", "0.01",
                 "--meta-features", "counts", "--out", str(b), *ARGS]) == 0
    ca, cb = (json.loads((d / "config.json").read_text()) for d in (a, b))
    assert ca == cb and ca["standardize"] == "train" and ca["tau2"] == 0.01
    assert (a / "mse.csv").read_text() == (b / "mse.csv").read_text()
    # ... and differs from the defaults (other standardisation, tau2 by CV).
    default = pd.read_csv(sweep / "mse.csv")
    literal = pd.read_csv(a / "mse.csv")
    assert not np.allclose(default[default.strategy == "random"].mse,
                           literal[literal.strategy == "random"].mse)
    # The same settings spelled out with --paper are fine; other ones conflict.
    assert main(["realdata", "--dataset", "amazon", "--paper", "--standardize", "train",
                 "--out", str(a), *ARGS]) == 0
    capsys.readouterr()
    assert main(["realdata", "--dataset", "amazon", "--paper", "--tau2", "0.003",
                 "--out", str(a), *ARGS]) == 2
    err = capsys.readouterr().err
    assert err.strip() == ("elicit: error: --paper sets --tau2 0.01; drop --tau2 0.003 or "
                           "--paper")


def test_resolve_settings():
    from elicit.paper.configs import resolve_settings

    assert resolve_settings() == ("model", "cv")
    assert resolve_settings(paper=True) == ("train", 0.01)
    assert resolve_settings(paper=True, standardize="train", tau2=0.01) == ("train", 0.01)
    assert resolve_settings(standardize="train") == ("train", "cv")
    assert resolve_settings(tau2=0.003) == ("model", 0.003)
    with pytest.raises(ElicitError, match="--paper sets --standardize train; drop "
                                          "--standardize model or --paper"):
        resolve_settings(paper=True, standardize="model")
    with pytest.raises(ElicitError, match="standardize must be 'model'"):
        resolve_settings(standardize="both")


def test_options_are_checked_before_the_data_are_looked_for(tmp_path, capsys):
    """A wrong option is reported as itself, not as a missing data directory (the source is
    made last), on the command line and in Python."""
    from elicit.paper.configs import RealDataConfig

    for extra, message in ((["--model", "bogus"], "unknown model 'bogus'"),
                           (["--recommended", "--model", "tied-threshold"],
                            "--recommended sets --model known-coupling"),
                           (["--paper", "--model", "known-coupling"],
                            "--paper runs the paper's model")):
        assert main(["realdata", "--dataset", "amazon", "--data-dir", str(tmp_path / "none"),
                     "--out", str(tmp_path / "o"), *extra, "--quiet"]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and message in err, err
    assert not (tmp_path / "o").exists()

    def no_data():
        raise AssertionError("the source was made before the options were checked")

    with pytest.raises(ElicitError, match="unknown LASSO expert rule 'cv'"):
        RealDataConfig(no_data, expert_rule="cv")
    with pytest.raises(ElicitError, match="pool_size must be a positive integer, got 0"):
        RealDataConfig(no_data, pool_size=0)
    # and with every option right, the missing data are the error
    assert main(["realdata", "--dataset", "amazon", "--data-dir", str(tmp_path / "none"),
                 "--out", str(tmp_path / "o"), "--quiet"]) == 2
    assert "data" in capsys.readouterr().err


def test_realdata_config_json_round_trip(tmp_path):
    from elicit.data.sources import DataSource, corpus_source
    from elicit.paper.configs import RealDataConfig

    corpus = tmp_path / "c.csv"
    corpus.write_text("text,rating\ngood,5\n")
    meta = tmp_path / "m.csv"
    meta.write_text("keyword,a\ngood,1\n")
    cfg = RealDataConfig(corpus_source(corpus), runs=3, paper=True, pool_size=50,
                         expert_rule="cv-1se", meta_features=meta, seed=7)
    assert (cfg.standardize, cfg.tau2, cfg.fixed_tau2) == ("train", 0.01, 0.01)
    d = cfg.to_json()
    assert d["meta_features"] == "file" and d["corpus_sha256"] and d["pool_size"] == 50
    back = RealDataConfig.from_json(json.loads(json.dumps(d)), runs=3)
    assert back.to_json() == d and back.sweep_config() == cfg.sweep_config()
    meta.write_text("keyword,a\ngood,2\n")
    with pytest.raises(ElicitError, match="meta-features file .* is gone or changed"):
        RealDataConfig.from_json(d)
    # a recommended configuration records the recommended settings, not the flag
    rec = RealDataConfig(DataSource("amazon", data_dir="/nowhere"), recommended=True)
    assert (rec.settings.model, rec.meta_features, rec.meta_dim) == ("known-coupling", "ppmi", 10)
    assert "recommended" not in rec.to_json() and rec.fixed_tau2 is None


def test_tau2_is_chosen_again_by_default_only_with_cv_and_relevance_classes():
    from elicit.data.sources import DataSource
    from elicit.paper.configs import RealDataConfig
    from elicit.prior.tau2 import TAU2_AGAIN

    src = DataSource("amazon", data_dir="/nowhere")
    assert RealDataConfig(src, questions="both").tau2_again == TAU2_AGAIN
    assert RealDataConfig(src).tau2_again == ()
    assert RealDataConfig(src, questions="both", tau2=0.01).tau2_again == ()
    assert RealDataConfig(src, questions="both", tau2_again=[]).tau2_again == ()
    cfg = RealDataConfig(src, questions="both", tau2_again=[5, 15])
    assert cfg.tau2_again == (5, 15) and cfg.to_json()["tau2_again"] == [5, 15]
    # Bug (2026-11-30): --tau2-again 15,5 or 5,15,5 chooses at the same answers as 5,15, but
    # was recorded as given, so a rerun with 5,15 was refused as another sweep's settings
    for counts in ([15, 5], [5, 15, 5]):
        assert RealDataConfig(src, questions="both", tau2_again=counts).to_json() == cfg.to_json()
    # a folder written before the setting chose tau2 once, at the start
    d = {k: v for k, v in cfg.to_json().items() if k != "tau2_again"}
    assert RealDataConfig.recorded(d)["tau2_again"] == []
    with pytest.raises(ElicitError, match=r"^tau2_again needs tau2 'cv' and a model with "
                                          r"relevance classes .* tau2 0.01, model 'relevance'$"):
        RealDataConfig(src, questions="both", tau2=0.01, tau2_again=(10,))
    with pytest.raises(ElicitError, match=r"^tau2_again must hold positive answer counts, "
                                          r"got \[0, 5\]$"):
        RealDataConfig(src, questions="both", tau2_again=[0, 5])


RESULTS = Path(__file__).resolve().parents[2] / "results"


@needs_data
@pytest.mark.parametrize("folder", sorted(
    p.parent.name for p in RESULTS.glob("*/config.json")
    if "expert_rule" in json.loads(p.read_text())))
def test_committed_results_keep_their_settings(folder):
    """Every real-data folder of results/ (config.json of the layout before the typed
    configuration) is read back as a configuration that records exactly the same settings,
    so that a rerun of those settings resumes it."""
    from elicit.harness.store import LEGACY_CONFIG, settings_difference
    from elicit.paper.configs import RealDataConfig

    # "code" names the code that wrote the folder (the store's, no setting)
    recorded = {k: v for k, v in json.loads((RESULTS / folder / "config.json").read_text()).items()
                if k != "code"}
    if recorded.get("corpus") and not Path(recorded["corpus"]).exists():
        pytest.skip(f"the corpus {recorded['corpus']} is not on this machine")
    cfg = RealDataConfig.from_json(recorded, None if recorded.get("corpus") else REAL)
    again = cfg.to_json()
    # the same keys in the same order, and settings added since, which these folders lack
    # and which count as the values those sweeps used (the store's LEGACY_CONFIG)
    assert [k for k in again if k in recorded] == list(recorded)
    assert {k: v for k, v in again.items() if k not in recorded} == \
        {k: LEGACY_CONFIG[k] for k in again if k not in recorded}
    assert settings_difference(recorded, again) == ""


@needs_data
@pytest.mark.slow
def test_other_settings_are_refused(sweep, tmp_path, capsys):
    capsys.readouterr()
    assert main(["realdata", "--dataset", "amazon", "--standardize", "train",
                 "--out", str(sweep), *ARGS]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert "standardize: 'model' there, 'train' now" in err
    # A folder of an older version (no standardisation recorded) is refused too.
    old = tmp_path / "old"
    old.mkdir()
    cfg = json.loads((sweep / "config.json").read_text())
    del cfg["standardize"]
    (old / "config.json").write_text(json.dumps(cfg))
    shutil.copytree(sweep / "parts", old / "parts")  # with its results (else a failed start's)
    assert main(["realdata", "--dataset", "amazon", "--out", str(old), *ARGS]) == 2
    assert "standardize: 'not recorded' there, 'model' now" in capsys.readouterr().err
    # Parts without their config.json are refused as well: their settings are unknown.
    (old / "config.json").unlink()
    assert main(["realdata", "--dataset", "amazon", "--out", str(old), *ARGS]) == 2
    assert "holds sweep parts but no config.json" in capsys.readouterr().err


@needs_data
@pytest.mark.slow
def test_table1_has_the_papers_counts_and_the_reference_columns(sweep):
    from elicit.paper.table1 import run_table1

    res = run_table1(sweep.parent, runs=1, datasets=("amazon",), samples=2, progress=False)
    t = pd.read_csv(sweep.parent / "table1.csv", dtype=str, keep_default_na=False)
    assert list(t.paper_rnd) == ["20", "20", "27", "27"]
    assert list(t.paper_act) == ["14", "14", "17", "17"]
    assert list(t.paper_seqelc) == ["55", "55", "90", "90"]
    info = pd.read_csv(sweep / "runinfo.csv").iloc[0]
    for row, (_, r) in zip(res.rows, t.iterrows()):
        # Reached: the run's reference line is at or below the row's level.
        assert r.mean_reached == f"{int(info['mean'] <= row['mse_level'])}/1"
        assert r.ceiling_reached == f"{int(info['ceiling'] <= row['mse_level'])}/1"
        assert r.sweep == "amazon"


# --------------------------------------------------------------------------------------------
# The report, on fake sweeps whose numbers are known
# --------------------------------------------------------------------------------------------

def _fake_sweep(folder, dataset, standardize, tau2, runs=6, rounds=20, seed=1, shift=0.0,
                extra=None):
    """A sweep folder with made-up but internally consistent CSV files (``extra``: more
    config.json settings)."""
    rng = np.random.default_rng(seed)
    folder.mkdir(parents=True)
    literal = standardize == "train" and tau2 == 0.01
    # the meta-features of each configuration's defaults: the paper's counts with --paper
    meta = {"meta_features": "counts", "meta_dim": None} if literal else \
        {"meta_features": "ppmi", "meta_dim": 10}
    cfg = {"dataset": dataset, "data_dir": "/nowhere", "seed": 0, "rounds": rounds,
           "standardize": standardize, "tau2": tau2, "pool_size": 400, "expert_rule": "target",
           "expert_nonzero": 40, "engine": "numpy", "utility": "fast", "refine": 5,
           **meta, **(extra or {})}
    (folder / "config.json").write_text(json.dumps(cfg))
    rows, infos = [], []
    for r in range(runs):
        init = 2.2 + shift + 0.1 * rng.standard_normal()
        slopes = {"random": -0.004, "nonsequential": -0.001, "sequential": -0.002}
        for s, k in slopes.items():
            noise = 0.005 * rng.standard_normal(rounds + 1)
            noise[0] = 0.0
            rows += [(dataset, s, r, t, init + k * t + noise[t]) for t in range(rounds + 1)]
        mean, ceil = 2.5 + 0.01 * r, init - 0.05 - 0.01 * r
        rows += [(dataset, "lasso", r, 0, 2.3), (dataset, "ridge", r, 0, 2.35),
                 (dataset, "elasticnet", r, 0, 2.32), (dataset, "mean", r, 0, mean),
                 (dataset, "ceiling", r, 0, ceil)]
        infos.append({"dataset": dataset, "run": r, "split_seed": r, "standardize": standardize,
                      "n_features": 337, "n_expert": 4149,
                      "tau2": 0.003 if tau2 == "cv" else tau2, "tau2_cv": 0.003,
                      "initial": init, "mean": mean, "ceiling": ceil, "n_answerable": 780,
                      "n_similar": 400, "lasso": 2.3, "ridge": 2.35, "elasticnet": 2.32,
                      "nofb_0.003": init - 0.1, "nofb_0.01": init,
                      "max_test_z": 90.0 + r if standardize == "train" else 25.0 + r})
    pd.DataFrame(rows, columns=["dataset", "strategy", "run", "n_feedback", "mse"]).to_csv(
        folder / "mse.csv", index=False)
    pd.DataFrame(infos).to_csv(folder / "runinfo.csv", index=False)
    pd.DataFrame({"run": range(runs), "tau2": [i["tau2"] for i in infos],
                  "tau2_cv": [0.003] * (runs - 1) + [0.005]}).to_csv(folder / "tau2_cv.csv",
                                                                      index=False)


@pytest.fixture
def fake(tmp_path):
    _fake_sweep(tmp_path / "amazon", "amazon", "model", "cv")
    _fake_sweep(tmp_path / "amazon-paper", "amazon", "train", 0.01, seed=2, shift=0.3)
    return tmp_path


def test_report_sections_and_their_numbers(fake):
    from elicit.report import write_report

    text = write_report(fake).read_text()
    for heading in ("## Real data: Amazon and Yelp reviews", "### Amazon (model "
                    "standardisation, tau2 by CV; folder `amazon`)",
                    "## The paper-literal configuration beside the defaults",
                    "## Standardisation: why the defaults differ from the paper",
                    "## The paper's claims against ours"):
        assert heading in text
    df = pd.read_csv(fake / "amazon" / "mse.csv")
    wide = {s: g.pivot(index="run", columns="n_feedback", values="mse")
            for s, g in df.groupby("strategy")}
    mean = df[df.strategy == "mean"].mse
    ceil = df[df.strategy == "ceiling"].mse.to_numpy()
    init = wide["random"][0].to_numpy()
    assert f"| **predict the mean** (reference) | {mean_se_text(mean)} |" in text
    assert f"| **all ~780 answers given** (reference) | {mean_se_text(ceil)} |" in text
    assert f"initial − all answers given, per run | {mean_se_text(init - ceil, sign=True)} |" \
        in text
    # Paired differences at 20 answers (the last round here), with the count of lower runs.
    d = (wide["sequential"][20] - wide["random"][20]).to_numpy()
    assert (f"| Sequential − Random | 20 | {mean_se_text(d, sign=True)} | "
            f"{int(np.sum(d < 0))}/6 |") in text
    d = (wide["nonsequential"][20] - wide["random"][20]).to_numpy()
    assert f"| Non-sequential − Random | 20 | {mean_se_text(d, sign=True)} |" in text
    # Standardisation: the no-feedback MSEs of both sweeps' runinfo, and the largest |z|.
    it = pd.read_csv(fake / "amazon-paper" / "runinfo.csv")
    im = pd.read_csv(fake / "amazon" / "runinfo.csv")
    assert (f"| Amazon | 6 | {mean_se_text(im['mean'])} | {mean_se_text(it['nofb_0.01'])} | "
            f"{mean_se_text(it['nofb_0.003'])} | {mean_se_text(im['nofb_0.01'])} | "
            f"{mean_se_text(im['nofb_0.003'])} |") in text
    assert "| Amazon | 90.0 | 25.0 | 90-95 | 25-30 |" in text
    assert "0.003 in 5 runs, 0.005 in 1 runs" in text
    # The paper-literal row sits beside the default one.
    assert "| Amazon | paper-literal (`--paper`) | train standardisation, tau2 0.01 | 6 |" in text


def test_report_follows_the_csv_files(fake):
    from elicit.report import write_report

    before = write_report(fake).read_text()
    df = pd.read_csv(fake / "amazon" / "mse.csv")
    df.loc[df.strategy == "mean", "mse"] += 1.0
    df.to_csv(fake / "amazon" / "mse.csv", index=False)
    after = write_report(fake).read_text()
    assert f"| **predict the mean** (reference) | {mean_se_text(df[df.strategy == 'mean'].mse)}" \
        in after
    assert before != after


def test_claims_verdicts(fake):
    from elicit.report import write_report

    text = write_report(fake).read_text()
    claims = text[text.index("## The paper's claims against ours"):]
    # Random falls fastest in the fake sweep: sequential does not beat it.
    assert "| Sequential elicitation beats Random (Fig. 5) |" in claims
    assert "does not reproduce: Random is lower" in claims
    # The levels 2.20 / 2.18 against an initial MSE near 2.2.
    init = pd.read_csv(fake / "amazon" / "runinfo.csv").initial
    assert f"2.20: {int(np.sum(init <= 2.20))}/6 runs" in claims
    # Without a paper-literal sweep the report still has the claims of the defaults.
    shutil.rmtree(fake / "amazon-paper")
    text = write_report(fake).read_text()
    assert "## The paper's claims against ours" in text
    assert "## Standardisation" not in text


def test_a_recommended_sweep_leaves_the_paper_sections_alone(fake):
    """A recommended sweep beside the default one (named so that it sorts first) changes
    nothing above its own section, whose comparison line is paired per run."""
    from elicit.paper.configs import RECOMMENDED
    from elicit.report import write_report

    before = write_report(fake).read_text()
    _fake_sweep(fake / "a-recommended", "amazon", "model", "cv", seed=3, shift=-0.1,
                extra=RECOMMENDED)
    after = write_report(fake).read_text()
    head = "## Beyond the paper: the recommended configuration"
    assert head not in before and after.index(head) > 0
    assert after[:after.index(head)].rstrip() == before.rstrip()
    rec, dflt = (pd.read_csv(fake / f / "mse.csv") for f in ("a-recommended", "amazon"))
    r0, d0 = (df[(df.strategy == "random") & (df.n_feedback == 0)].mse.to_numpy()
              for df in (rec, dflt))
    w = {s: rec[rec.strategy == s].pivot(index="run", columns="n_feedback", values="mse")
         for s in ("sequential", "random")}
    d = (w["sequential"][20] - w["random"][20]).to_numpy()
    assert (f"no-feedback MSE {mean_se_text(r0)} against {mean_se_text(d0)} "
            f"({mean_se_text(r0 - d0, sign=True)} per run)") in after
    assert (f"Sequential − Random per run after 20 answers {mean_se_text(d, sign=True)} "
            f"(lower in {int(np.sum(d < 0))}/6 runs)") in after


@needs_data
def test_a_sweep_recorded_where_its_data_directory_is_gone_reads_elicit_data(tmp_path,
                                                                             monkeypatch):
    """results/ records data_dir /work/shared/data: on another machine `elicit table1 --out
    results` (and make reproduce's Table 1) failed with 'data directory /work/shared/data (from
    --data-dir / data_dir option) does not exist' though $ELICIT_DATA named the data."""
    from elicit.data.sources import source_from_config

    monkeypatch.setenv("ELICIT_DATA", str(REAL))
    gone = {"dataset": "amazon", "data_dir": str(tmp_path / "gone")}
    assert source_from_config(gone).data_dir == str(Path(REAL).resolve())
    # a recorded directory that is there is still the default, and --data-dir overrides both
    here = {"dataset": "amazon", "data_dir": str(shutil.copytree(REAL, tmp_path / "copy"))}
    assert source_from_config(here).data_dir == str(tmp_path / "copy")
    with pytest.raises(ElicitError, match="gone .*from --data-dir"):
        source_from_config(here, tmp_path / "gone")


def test_a_known_coupling_figure_says_its_start_uses_the_experts_set_j():
    # the figure's start is no start without expert input there: its title must say so (a
    # source that is not read: the test needs no data directory, so it runs everywhere)
    from elicit.data.sources import DataSource
    from elicit.paper.configs import RealDataConfig
    from elicit.paper.realdata import questions_note

    src = DataSource("amazon", data_dir="/nowhere")
    assert questions_note(RealDataConfig(src, recommended=True)) == (
        "; known-coupling: the start uses the expert's judgeable set J")
    assert questions_note(RealDataConfig(src)) == ""
