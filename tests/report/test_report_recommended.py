"""The recommended configuration in ``make reproduce`` and in ``REPORT.md``.

A results folder with a default Amazon sweep and an ``amazon-recommended`` sweep (one run x
two rounds each, all three strategies, numpy engine): the report must tell them apart by
their ``config.json`` and print the recommended sweep's numbers, which are checked against an
independent computation from the ``mse.csv`` files. ``experiments/reproduce.py`` is checked
by parsing its options and running its new steps with the sweep replaced by a stub.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pandas as pd
import pytest
from conftest import REAL_DATA_DIR, needs_data
from helpers import experiment_script

REPRODUCE = Path(__file__).resolve().parents[2] / "experiments" / "reproduce.py"
RESULTS = Path(__file__).resolve().parents[2] / "results"


def _reproduce():
    return experiment_script("reproduce")


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    from elicit.paper.configs import RealDataConfig
    from elicit.paper.realdata import run_realdata

    out = tmp_path_factory.mktemp("results")
    common = dict(runs=1, rounds=2, seed=0, engine="numpy", data_dir=REAL_DATA_DIR,
                  strategies=("random", "nonsequential", "sequential"))
    run_realdata(RealDataConfig("amazon", **common), out / "amazon", progress=False)
    run_realdata(RealDataConfig("amazon", recommended=True, **common),
                 out / "amazon-recommended", progress=False)
    return out


def _wide(folder: Path, strategy: str) -> pd.DataFrame:
    df = pd.read_csv(folder / "mse.csv")
    return df[df.strategy == strategy].pivot(index="run", columns="n_feedback", values="mse")


@needs_data
@pytest.mark.slow
def test_sweeps_know_their_configuration(results):
    from elicit.paper.configs import RECOMMENDED
    from elicit.report.realdata import default_sweep, find_sweeps, literal_sweep

    sweeps = find_sweeps(results)
    by = {s.folder: s for s in sweeps}
    assert by["amazon"].default and not by["amazon"].recommended
    assert by["amazon"].config_label == "" and by["amazon"].label == "Amazon"
    rec = by["amazon-recommended"]
    assert rec.recommended and not rec.default and not rec.literal
    # the recommended meta-features are the defaults now: only the model is named
    assert rec.config_label == RECOMMENDED["model"]
    # Found either way round: the default sweep is the default one, not the first one.
    for order in (sweeps, sweeps[::-1]):
        assert default_sweep(order, "amazon") is by["amazon"]
    assert literal_sweep(sweeps, "amazon") is None
    # An old folder without the new keys had the paper's counts and model: no longer the
    # default configuration, and labelled as what it is.
    cfg = json.loads((results / "amazon" / "config.json").read_text())
    for k in RECOMMENDED:
        cfg.pop(k, None)
    old = type(rec)("old", cfg, rec.mse, None, None, None, rec.path)
    assert not old.default and old.config_label == "counts"


@needs_data
@pytest.mark.slow
def test_report_has_the_recommended_section(results):
    from elicit.report import write_report

    text = write_report(results).read_text()
    head = "## Beyond the paper: the recommended configuration"
    assert "## Real data: Amazon and Yelp reviews" in text and head in text
    real, beyond = text[:text.index(head)], text[text.index(head):]
    # The default sweep in the paper's sections, the recommended one only in its own.
    assert "folder `amazon`)" in real and "amazon-recommended" not in real
    assert ("### Amazon, known-coupling (model standardisation, tau2 by CV; "
            "folder `amazon-recommended`)") in beyond
    assert "beyond-the-paper.md" in beyond
    # The numbers, computed here from the two mse.csv files (one run: no s.e.).
    rec, dflt = results / "amazon-recommended", results / "amazon"
    r0, d0 = _wide(rec, "random")[0].iloc[0], _wide(dflt, "random")[0].iloc[0]
    assert f"| initial MSE (no answers; uses the expert's judgeable set J) | {r0:.3f} |" \
        in beyond
    for s, name in (("sequential", "Sequential"), ("nonsequential", "Non-sequential")):
        assert f"| MSE after 2 answers, {name} | {_wide(rec, s)[2].iloc[0]:.3f} |" in beyond
    mse = {f: pd.read_csv(f / "mse.csv") for f in (rec, dflt)}
    rc, dc = (mse[f][mse[f].strategy == "ceiling"].mse.iloc[0] for f in (rec, dflt))
    ds = [(_wide(f, "sequential")[2] - _wide(f, "random")[2]).iloc[0] for f in (rec, dflt)]
    line = next(ln for ln in beyond.splitlines() if ln.startswith("Beside the default sweep"))
    assert line == (
        "Beside the default sweep (folder `amazon`, same seed: the same splits and experts), "
        f"this sweep against the default: no-feedback MSE {r0:.3f} against {d0:.3f} "
        f"({r0 - d0:+.3f} per run); all answers given {rc:.3f} against {dc:.3f} "
        f"({rc - dc:+.3f} per run); Sequential − Random per run after 2 answers "
        f"{ds[0]:+.3f} (lower in {int(ds[0] < 0)}/1 runs) against {ds[1]:+.3f} "
        f"({int(ds[1] < 0)}/1).")
    # Its start uses the expert's judgeable set J; the default sweep has the same
    # meta-features and J = all features.
    line = next(ln for ln in beyond.splitlines() if ln.startswith("Its start uses"))
    assert line.startswith(f"Its start uses the expert's judgeable set J: {r0:.3f} with J "
                           f"against {d0:.3f} with J = all features ({r0 - d0:+.3f} per run)")
    # The claims are those of the default sweep.
    claims = text[text.index("## The paper's claims against ours"):text.index(head)]
    assert f"defaults: initial {d0:.3f}" in claims


@needs_data
@pytest.mark.slow
def test_table1_of_the_recommended_sweep_refits_its_model(results):
    """Table 1's sample loops on a recommended sweep refit that sweep's model (PPMI
    meta-features, known coupling with the expert's J): they start at its no-feedback MSE,
    not at the default sweep's."""
    from elicit.paper.table1 import table1_for

    rows, curves = table1_for(results, "amazon-recommended", runs=1, samples=2,
                              progress=False)
    rec0 = _wide(results / "amazon-recommended", "sequential")[0].iloc[0]
    dflt0 = _wide(results / "amazon", "sequential")[0].iloc[0]
    start = curves[(curves.n_samples == 0)].set_index("method").mse
    assert start["rnd"] == pytest.approx(rec0, rel=1e-9)
    assert start["act"] == pytest.approx(rec0, rel=1e-9)
    assert abs(rec0 - dflt0) > 0.05
    assert curves.n_samples.max() == 2 and rows
    # each added sample refits: the curve moves
    rnd = curves[curves.method == "rnd"].sort_values("n_samples").mse.to_numpy()
    assert len(rnd) == 3 and rnd[1] != rnd[0]


@needs_data
def test_reproduce_steps(tmp_path, monkeypatch, capsys):
    mod = _reproduce()
    names = ("amazon-recommended", "yelp-recommended")
    assert all(n in mod.STEPS for n in names)
    order = list(mod.STEPS)
    assert order.index("yelp-paper") < order.index("amazon-recommended") \
        < order.index("yelp-recommended") < order.index("table1")
    # Given in any order, run in the order of STEPS.
    args, steps = mod.parse_args(["--out", str(tmp_path), "--steps",
                                  "table1,yelp,yelp-recommended,amazon-recommended,amazon"])
    assert steps == ["amazon", "yelp", "amazon-recommended", "yelp-recommended", "table1"]
    with pytest.raises(SystemExit):
        mod.parse_args(["--steps", "amazon-recomended"])
    assert "unknown step 'amazon-recomended'" in capsys.readouterr().err

    calls = []

    class Done:
        def summary(self):
            return "done"

    def fake(cfg, out, progress=True):
        calls.append((cfg, Path(out)))
        return Done()

    # the steps (elicit.paper.steps) call the library's run_realdata when they run
    monkeypatch.setattr("elicit.paper.realdata.run_realdata", fake)
    args.data_dir, args.jobs = REAL_DATA_DIR, 1
    mod.steps.run_steps(names, args.out, mod.step_settings(args), progress=False)
    assert [(c.name, o) for c, o in calls] == [("amazon", tmp_path / "amazon-recommended"),
                                               ("yelp", tmp_path / "yelp-recommended")]
    from elicit.paper.configs import RECOMMENDED

    for cfg, _ in calls:
        assert cfg.recommended and not cfg.paper
        assert {k: cfg.to_json()[k] for k in RECOMMENDED} == RECOMMENDED


def test_doc_link_works_from_inside_and_outside_the_checkout(tmp_path):
    """results/ inside the checkout links relatively (the link survives a clone); a report
    written elsewhere links to the file itself (a relative path would leave the checkout)."""
    from pathlib import Path

    from elicit.report.beyond import BEYOND_DOC, _doc_link

    repo = Path(__file__).resolve().parents[2]
    assert _doc_link(repo / "results", BEYOND_DOC) == \
        "[docs/beyond-the-paper.md](../docs/beyond-the-paper.md)"
    outside = _doc_link(tmp_path / "out", BEYOND_DOC)
    target = Path(outside[outside.index("](") + 2:-1])
    assert target.is_absolute() and target == repo / BEYOND_DOC and target.exists()


@needs_data
def test_reproduce_mixed_steps(tmp_path, monkeypatch):
    """The mixed-question steps: Amazon, Yelp and the kitchen corpus with feature and pair
    questions from the open pool, with their own runs and rounds, before Table 1."""
    mod = _reproduce()
    names = ("amazon-mixed", "yelp-mixed", "kitchen-mixed")
    order = list(mod.STEPS)
    assert [order.index(n) for n in names] == sorted(order.index(n) for n in names)
    assert order.index("yelp-recommended") < order.index("amazon-mixed") \
        and order.index("kitchen-mixed") < order.index("table1")
    args, steps = mod.parse_args(["--out", str(tmp_path), "--steps", ",".join(names),
                                  "--real-runs", "9", "--mixed-runs", "3",
                                  "--mixed-rounds", "7"])
    assert steps == list(names)
    calls = []

    class Done:
        def summary(self):
            return "done"

    monkeypatch.setattr("elicit.paper.realdata.run_realdata",
                        lambda cfg, out, progress=True: calls.append((cfg, Path(out))) or Done())
    args.data_dir, args.jobs = REAL_DATA_DIR, 1
    mod.steps.run_steps(steps, args.out, mod.step_settings(args), progress=False)
    assert [(c.name, o.name) for c, o in calls] == [("amazon", "amazon-mixed"),
                                                    ("yelp", "yelp-mixed"),
                                                    ("kitchen", "kitchen-mixed")]
    for cfg, _ in calls:
        assert (cfg.settings.questions, cfg.pool, cfg.runs, cfg.rounds) == ("both", "open", 3, 7)
        assert cfg.settings.model == "relevance" and not cfg.recommended and not cfg.paper
    # the defaults: MIXED_RUNS x MIXED_ROUNDS
    args, _ = mod.parse_args(["--out", str(tmp_path)])
    assert (args.mixed_runs, args.mixed_rounds) == (mod.MIXED_RUNS, mod.MIXED_ROUNDS)


def test_reproduce_runs_the_papers_50_runs_of_every_step_by_default(tmp_path, monkeypatch):
    mod = _reproduce()
    monkeypatch.setattr(mod.steps, "step_config", lambda *a: None)  # no data directory needed
    args, steps = mod.parse_args(["--out", str(tmp_path)])
    assert steps == list(mod.STEPS)
    assert (args.runs, args.real_runs, args.mixed_runs) == (50, 50, 50)
    assert (args.rounds, args.mixed_rounds) == (100, 100)
    # and so does `make reproduce`: its variables default to the same
    make = (Path(mod.__file__).parents[1] / "Makefile").read_text()
    assert re.search(r"^RUNS\s*\?=\s*50$", make, re.M)
    for var in ("REAL_RUNS", "MIXED_RUNS"):
        assert re.search(rf"^{var}\s*\?=\s*\$\(RUNS\)$", make, re.M)
    assert re.search(r"^MIXED_ROUNDS\s*\?=\s*100$", make, re.M)


def test_the_report_names_the_commit_that_made_it(tmp_path):
    from elicit.internal.provenance import code_version
    from elicit.report import write_report

    commit = code_version()
    # "+changes" and the source's hash: the checkout differs from its commit
    assert re.fullmatch(r"[0-9a-f]{10}(\+changes\+[0-9a-f]{10})?", commit)
    text = write_report(tmp_path, wall_s=60.0, step_s={"synthetic": 60.0},
                        cpu_s={"synthetic": 100.0}, jobs=2, step_runs={"synthetic": 50},
                        ).read_text()
    assert f"Made by commit `{commit}`." in text


def test_the_report_gives_the_calls_cpu_time_when_steps_share_a_pool(tmp_path):
    """Steps that ran side by side on one pool: the call's CPU time is the measured total
    (the pool's start and idle time are no step's), and the report says the steps' wall
    times overlap."""
    from elicit.report import write_report

    text = write_report(tmp_path, wall_s=600.0, step_s={"synthetic": 400.0, "amazon": 500.0},
                        cpu_s={"synthetic": 500.0, "amazon": 600.0}, jobs=2,
                        step_runs={"synthetic": 50, "amazon": 50}, cpu_total_s=1200.0,
                        steps_at_once=2).read_text()
    assert "CPU time: 20.0 min (synthetic 8.3, amazon 10.0)" in text
    assert "CPU time / 2 jobs = 10.0 min" in text
    assert "ran 2 at a time" in text and "together 18.3 min: the other 1.7 min" in text
    # when the steps' CPU is the whole call's to the report's precision, no "other" time
    text = write_report(tmp_path, wall_s=600.0, step_s={"synthetic": 400.0, "amazon": 500.0},
                        cpu_s={"synthetic": 500.0, "amazon": 600.0}, jobs=2,
                        step_runs={"synthetic": 50, "amazon": 50}, cpu_total_s=1101.0,
                        steps_at_once=2).read_text()
    assert "(together 18.3 min)." in text and "the other" not in text
    # one step after the other: the steps' sum, and no word of overlap
    text = write_report(tmp_path, wall_s=600.0, step_s={"synthetic": 400.0},
                        cpu_s={"synthetic": 500.0}, jobs=2).read_text()
    assert "CPU time: 8.3 min (synthetic 8.3)" in text and "at a time" not in text


def test_reproduce_refuses_what_it_cannot_do_before_any_step_runs(tmp_path, capsys,
                                                                  monkeypatch):
    """--out naming a file and --steps naming no step ended in tracebacks; table1 without the
    amazon and yelp sweeps failed only after every other step had run."""
    mod = _reproduce()
    (tmp_path / "afile").write_text("")
    for argv, message in [
            (["--out", str(tmp_path / "afile")], f"--out {tmp_path / 'afile'} is a file"),
            (["--steps", ","], "--steps names no step"),
            (["--out", str(tmp_path / "o"), "--steps", "amazon,table1"],
             "table1 reads the finished yelp sweep: add yelp to --steps")]:
        with pytest.raises(SystemExit) as e:
            mod.parse_args(argv)
        assert e.value.code == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and message in err, err
    (tmp_path / "o" / "yelp").mkdir(parents=True)
    (tmp_path / "o" / "yelp" / "mse.csv").write_text("")
    monkeypatch.setattr(mod.steps, "step_config", lambda *a: None)  # no data directory needed
    assert mod.parse_args(["--out", str(tmp_path / "o"), "--steps", "amazon,table1"])[1] == \
        ["amazon", "table1"]


def test_reproduce_refuses_a_missing_data_directory_or_corpus_before_any_step_runs(tmp_path,
                                                                                  capsys):
    """--data-dir or --kitchen naming nothing failed when its step started: after the synthetic
    step, and with two steps at a time the kitchen's after amazon's and yelp's."""
    mod = _reproduce()
    for argv, message in [
            (["--steps", "synthetic,amazon", "--data-dir", str(tmp_path / "none")],
             f"data directory {tmp_path / 'none'} (from --data-dir"),
            (["--steps", "synthetic,kitchen", "--kitchen", str(tmp_path / "k.jsonl")],
             f"review file {tmp_path / 'k.jsonl'} not found")]:
        with pytest.raises(SystemExit) as e:
            mod.parse_args(["--out", str(tmp_path / "o"), *argv])
        assert e.value.code == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and message in err, err


def test_a_sweep_is_read_with_the_runs_its_curves_hold(tmp_path):
    """realdata writes runinfo.csv and tau2_cv.csv before its sweep and mse.csv after it: after
    an interrupted resume with more runs, the report said '2 runs' beside tau2 counts of 4."""
    import shutil

    from elicit.report.realdata import load_sweep

    folder = tmp_path / "amazon"
    folder.mkdir()
    for name in ("config.json", "mse.csv", "runinfo.csv", "tau2_cv.csv"):
        shutil.copy(RESULTS / "amazon" / name, folder / name)
    _cut_runs(folder, folder)
    sweep = load_sweep(folder)
    assert sweep is not None
    assert sorted(sweep.info.run) == [0, 1]
    assert sorted(sweep.tau2cv.run) == [0, 1]


def _copy_results(tmp_path, *names):
    import shutil

    for name in names:
        if (RESULTS / name).is_dir():
            (tmp_path / name).mkdir()
            for f in ("config.json", "mse.csv", "runinfo.csv", "tau2_cv.csv"):
                shutil.copy(RESULTS / name / f, tmp_path / name / f)
        else:
            shutil.copy(RESULTS / name, tmp_path / name)


def _cut_runs(src: Path, folder: Path, keep=lambda mse: mse.run < 2) -> pd.DataFrame:
    """``folder/mse.csv``: the rows ``keep(mse)`` of the sweep table ``src/mse.csv`` (a sweep
    of fewer runs, or rounds); the whole table is returned."""
    mse = pd.read_csv(src / "mse.csv")
    mse[keep(mse)].to_csv(folder / "mse.csv", index=False)
    return mse


@pytest.fixture(scope="module")
def table1_then_cut(tmp_path_factory) -> tuple[str, str]:
    """The report of the Amazon sweep beside its table1.csv of 50 runs, and the report again
    once the sweep holds 2 runs (made once: the two tests below only read both texts)."""
    from elicit.report import write_report

    folder = tmp_path_factory.mktemp("table1")
    _copy_results(folder, "amazon", "table1.csv")
    whole = write_report(folder).read_text()
    _cut_runs(folder / "amazon", folder / "amazon")
    return whole, write_report(folder).read_text()


def test_a_table1_of_other_runs_than_its_sweep_is_not_shown_as_current(table1_then_cut):
    """The report showed Table 1's 'k/50' counts under a sweep that now holds 2 runs."""
    whole, text = table1_then_cut
    assert "## Table 1" in whole
    assert "| Amazon | 2.200 |" not in text
    assert ("table1.csv counts 50 runs of the sweep amazon, which holds 2 now: make Table 1 "
            "again (elicit table1)") in text


def test_the_claims_do_not_use_a_table1_of_other_runs_than_its_sweep(table1_then_cut):
    """The claims still judged ACT against RND, and SeqElc, from a table1.csv of 50 runs
    beside a sweep that now holds 2, which the Table 1 section names as out of date."""
    whole, text = table1_then_cut
    assert "| Active sample addition (ACT)" in whole and "| Sequential elicitation reaches" in whole
    assert "| Sequential elicitation beats Random" in text
    assert "| Active sample addition (ACT)" not in text
    assert "| Sequential elicitation reaches" not in text


def test_the_synthetic_section_of_ones_own_problems_says_so(tmp_path):
    """A --problems sweep in OUT/synthetic was reported as the paper's, on 1000 test points."""
    import json

    from elicit.report import write_report

    (tmp_path / "synthetic").mkdir()
    _cut_runs(RESULTS / "synthetic", tmp_path / "synthetic")
    cfg = json.loads((RESULTS / "synthetic" / "config.json").read_text())
    paper = write_report(tmp_path).read_text()
    assert "paper Sec. 4.1" in paper and "1000 test points" in paper
    cfg.update(problems="/data/mine", problems_sha256="0" * 64, n_train=None)
    (tmp_path / "synthetic" / "config.json").write_text(json.dumps(cfg))
    own = write_report(tmp_path).read_text()
    assert "paper Sec. 4.1" not in own and "1000 test points" not in own
    assert "## Simulated data: the problems of /data/mine" in own
    assert "fig3_K.png" not in own


def test_the_kernel_figure_is_described_and_linked_as_the_sweep_made_it(tmp_path):
    """A synthetic sweep of 30 rounds was reported with 'the learned K after 0, 10, 30 and 100
    sequential answers' (its figure has no 100), and one without the sequential strategy linked
    a fig3_K.png that no call had made. A sweep that ran the sequential strategy but whose
    folder lacks the figure (stopped before drawing it) was left without a word on it."""
    import shutil

    from elicit.report import write_report

    (tmp_path / "synthetic").mkdir()
    src = RESULTS / "synthetic"
    short = lambda mse: (mse.run < 2) & (mse.n_feedback <= 30)  # noqa: E731
    _cut_runs(src, tmp_path / "synthetic", lambda mse: short(mse) & (mse.strategy != "sequential"))
    cfg = json.loads((src / "config.json").read_text())
    (tmp_path / "synthetic" / "config.json").write_text(json.dumps({**cfg, "rounds": 30}))
    text = write_report(tmp_path).read_text()  # never drawn: no sequential strategy
    assert "fig3_K.png" not in text and "Kernel:" not in text
    _cut_runs(src, tmp_path / "synthetic", short)
    text = write_report(tmp_path).read_text()  # meant to be drawn, and missing
    assert ("Fig. 3: `synthetic/fig3_K.png` is missing: run the command of its sweep again, "
            "which resumes it and draws the figure.") in text
    shutil.copy(src / "fig3_K.png", tmp_path / "synthetic" / "fig3_K.png")
    text = write_report(tmp_path).read_text()
    assert "learned K after 0, 10 and 30 sequential answers (run 0)" in text
    assert "![Fig. 3](synthetic/fig3_K.png)" in text


def test_a_synthetic_sweep_of_one_run_has_no_nan_in_its_section(tmp_path):
    """One run: 'MSE, 100 answers | 13.000 ± nan' and 'Predicting the training mean gives
    18.328 ± nan' (a standard error of one value)."""
    from elicit.report import write_report

    (tmp_path / "synthetic").mkdir()
    src = RESULTS / "synthetic"
    mse = _cut_runs(src, tmp_path / "synthetic", lambda mse: mse.run < 1)
    (tmp_path / "synthetic" / "config.json").write_text((src / "config.json").read_text())
    text = write_report(tmp_path).read_text()
    assert "## Synthetic data" in text and "nan" not in text
    one = mse[(mse.run == 0) & (mse.strategy == "mean")].mse.iloc[0]
    assert f"Predicting the training mean gives {one:.3f}." in text


def test_an_mse_csv_cut_short_is_named_not_read_as_fewer_runs(tmp_path, monkeypatch, capsys):
    """An mse.csv cut short (a copy stopped, a full disk) was read without a word: the synthetic
    section said '1 runs' with a last MSE cut inside its digits, and the Amazon table lost its
    reference lines and baselines."""
    import shutil

    from elicit.errors import ElicitError
    from elicit.report import write_report

    _copy_results(tmp_path, "amazon")
    (tmp_path / "synthetic").mkdir()
    src = RESULTS / "synthetic"
    for f in ("config.json", "mse.csv"):
        shutil.copy(src / f, tmp_path / "synthetic" / f)
    write_report(tmp_path)
    for name in ("synthetic", "amazon"):
        path = tmp_path / name / "mse.csv"
        whole = path.read_text()
        for cut in (whole[:3001], whole[:whole.index("\n", 3000) + 1],
                    whole[:whole.index("\n", whole.index(",mean,")) + 1],
                    whole[:whole.rindex("\n", 0, len(whole) - 1) + 1]):
            path.write_text(cut)
            with pytest.raises(ElicitError, match=rf"{name}/mse.csv is cut short; run"):
                write_report(tmp_path)
        path.write_text(whole)
    # make reproduce of other steps ends with that line, not a traceback
    monkeypatch.setattr("sys.argv", ["reproduce.py", "--out", str(tmp_path), "--steps", "yelp",
                                     "--runs", "1", "--quiet"])
    monkeypatch.setattr("elicit.paper.steps.step_config", lambda *a: None)
    monkeypatch.setattr("elicit.paper.steps.run_steps", lambda todo, *a, done, **k: [
        done(step, "", 0.0, 0.0) for step in todo])
    path.write_text(whole[:3001])
    with pytest.raises(SystemExit, match="^2$"):
        _reproduce().main()
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "amazon/mse.csv is cut short" in err, err


def _make(*args: str):
    """``make ARGS`` in the checkout, as a user types it: the tests themselves run under
    `make test`, whose MAKEFLAGS and MAKELEVEL would make this one print "Entering directory"
    lines and take the outer call's flags."""
    import os
    import shutil
    import subprocess

    if shutil.which("make") is None:
        pytest.skip("no make on this machine")
    env = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL")}
    return subprocess.run(["make", "--no-print-directory", "-C", str(REPRODUCE.parents[1]),
                           *args], env=env, capture_output=True, text=True)


@pytest.mark.parametrize("target", ["test", "test-fast", "lint", "bench", "reproduce",
                                    "reproduce-quick"])
def test_a_make_target_without_its_virtual_environment_says_to_make_it(tmp_path, target):
    """Without the virtual environment every target but setup failed with the shell's
    ".venv/bin/python: not found" (Error 127), which did not say that `make setup` makes it."""
    venv = tmp_path / "no-venv"
    res = _make(target, f"VENV={venv}")
    assert res.returncode != 0 and not venv.exists()
    assert f"{venv}/bin/python not found: run 'make setup' first" in res.stderr


@pytest.mark.parametrize("target", ["reproduce", "reproduce-quick"])
def test_make_reproduce_passes_out_as_one_folder(tmp_path, target):
    """OUT="my results" reached reproduce.py as two words ("unrecognized arguments:
    results"), and an empty OUT is refused rather than writing into the current folder."""
    import shlex

    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "python").touch()  # -n: nothing is run

    def make(out: str):
        return _make("-n", target, f"VENV={tmp_path}", f"OUT={out}")

    words = shlex.split(make("my results").stdout.strip().splitlines()[-1])
    assert words[words.index("--out") + 1] == "my results" + ("/quick" if "quick" in target else "")
    res = make(" ")
    assert res.returncode != 0 and "OUT is empty: give the results folder" in res.stderr


def test_a_figure_its_folder_lacks_is_said_missing_not_linked(tmp_path):
    """REPORT.md linked fig4_mse.png and a sweep's fig5 where the folder held none (a sweep
    stopped between writing mse.csv and drawing its figure, or a folder copied without its
    PNGs): a broken image, with no word on how to draw it. Every place that links a figure,
    in one report: the synthetic Fig. 4, a sweep's section (here one beyond the paper; the
    default sweeps' is the same), the paper-literal sweeps and the mixed sweeps."""
    import shutil

    from elicit.report import write_report

    have = ["amazon-paper/fig5_amazon.png", "amazon-mixed/fig5_amazon.png"]
    lack = ["synthetic/fig4_mse.png", "amazon-recommended/fig5_amazon.png"]
    for fig in have + lack:  # two runs of two rounds: the report's cheapest form
        folder = tmp_path / Path(fig).parent
        folder.mkdir()
        shutil.copy(RESULTS / folder.name / "config.json", folder / "config.json")
        _cut_runs(RESULTS / folder.name, folder, lambda m: (m.run < 2) & (m.n_feedback <= 2))
    for fig in have:
        shutil.copy(RESULTS / fig, tmp_path / fig)
    text = write_report(tmp_path).read_text()
    assert sorted(re.findall(r"!\[[^]]*\]\(([^)]*)\)", text)) == sorted(have)
    assert "![Fig. 5 Amazon, paper-literal](amazon-paper/fig5_amazon.png)" in text
    for fig in lack:
        assert (f"`{fig}` is missing: run the command of its sweep again, which resumes it "
                "and draws the figure.") in text
    alone = tmp_path / "alone"  # the synthetic sweep with its figure, by itself
    shutil.copytree(tmp_path / "synthetic", alone / "synthetic")
    shutil.copy(RESULTS / lack[0], alone / lack[0])
    assert "![Fig. 4](synthetic/fig4_mse.png)" in write_report(alone).read_text()
