"""``--questions``, ``--pool`` and ``--irrelevant`` of the sweep commands: parsed into the
configuration the library runs, and one-line errors."""

from __future__ import annotations

import pytest
from conftest import REAL_DATA_DIR, needs_data
from helpers import Captured, capture_sweep

import elicit.cli.main as cli_main
import elicit.cli.realdata as cli_realdata
import elicit.paper.realdata
import elicit.paper.synthetic
from elicit.cli.main import main

# the sweeps here are read by their tables: figures drawn, not saved (conftest)
pytestmark = pytest.mark.usefixtures("unsaved_figures")


@pytest.mark.parametrize("argv,expect", [
    ([], dict(questions="pairs", pool="paper", model="paper", irrelevant=0)),
    (["--questions", "both"], dict(questions="both", pool="open", model="relevance")),
    (["--questions", "relevance", "--pool", "paper", "--irrelevant", "7"],
     dict(questions="relevance", pool="paper", model="relevance", irrelevant=7)),
    (["--questions", "pairs", "--pool", "open", "--model", "tied-threshold"],
     dict(questions="pairs", pool="open", model="tied-threshold")),
    # a list of kinds in any order, or all: recorded as older sweeps wrote it ("both")
    (["--questions", "relevance,pairs"], dict(questions="both", pool="open", model="relevance")),
    (["--questions", "pairs, relevance"], dict(questions="both", model="relevance")),
    (["--questions", "all"], dict(questions="pairs,relevance,direction",
                                  model="relevance-direction")),
])
def test_synthetic_options_become_the_config(argv, expect, monkeypatch, tmp_path):
    seen = capture_sweep(monkeypatch, elicit.paper.synthetic, "run_synthetic")
    with pytest.raises(Captured):
        cli_main.cmd_synthetic(cli_main.build_parser().parse_args(
            ["synthetic", "--runs", "1", "--out", str(tmp_path / "o"), *argv]))
    cfg = seen[0]
    assert {k: cfg.to_json()[k] for k in expect} == expect


@needs_data
@pytest.mark.parametrize("argv,expect", [
    ([], dict(questions="pairs", pool="paper", model="paper")),
    (["--questions", "both", "--meta-features", "ppmi"],
     dict(questions="both", pool="open", model="relevance", meta_features="ppmi")),
    (["--questions", "both", "--pool", "paper"],
     dict(questions="both", pool="paper", model="relevance")),
])
def test_realdata_options_become_the_config(argv, expect, monkeypatch, tmp_path):
    seen = capture_sweep(monkeypatch, elicit.paper.realdata, "run_realdata")
    with pytest.raises(Captured):
        cli_realdata.cmd_realdata(cli_main.build_parser().parse_args(
            ["realdata", "--dataset", "amazon", "--runs", "1", "--data-dir",
             str(REAL_DATA_DIR), "--out", str(tmp_path / "o"), *argv]))
    cfg = seen[0]
    assert {k: cfg.to_json()[k] for k in expect} == expect
    assert cfg.sweep_config().settings.questions == expect["questions"]


@pytest.mark.parametrize("argv,message", [
    (["synthetic", "--questions", "both", "--model", "paper"],
     "elicit: error: questions='both' asks feature questions, which need a model with "
     "relevance classes: use model='relevance' (the model is 'paper')"),
    (["synthetic", "--irrelevant", "30"],
     "elicit: error: irrelevant must be an integer from 0 to 23 (the generator has 25 "
     "features), got 30"),
    (["realdata", "--dataset", "amazon", "--questions", "both", "--recommended"],
     "elicit: error: --recommended asks pair questions only; drop --recommended or "
     "--questions both"),
    (["realdata", "--dataset", "amazon", "--questions", "relevance", "--paper"],
     "elicit: error: --paper asks pair questions only; drop --paper or --questions relevance"),
    (["synthetic", "--questions", "relevance", "--model", "tied-threshold"],
     "elicit: error: questions='relevance' asks feature questions, which need a model with "
     "relevance classes: use model='relevance' (the model is 'tied-threshold')"),
])
def test_mixed_option_mistakes_are_one_line(argv, message, tmp_path, capsys):
    assert main([*argv, "--runs", "1", "--rounds", "1", "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert err == message + "\n"
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("argv,says", [
    (["--pool", "best"], "invalid choice"),
    (["--questions", "features"], "argument --questions: unknown question kind 'features' in "
                                  "questions='features'; name kinds from pairs, relevance, "
                                  "direction (comma-separated), or all, or both "
                                  "(= pairs,relevance)"),
    (["--questions", "pairs,directions"], "unknown question kind 'directions' in "
                                          "questions='pairs,directions'"),
    (["--questions", "pairs,relevance,pairs"], "argument --questions: question kind 'pairs' "
                                               "is named twice in "
                                               "questions='pairs,relevance,pairs'; name each "
                                               "kind once"),
    (["--questions", "both,relevance"], "question kind 'relevance' is named twice"),
    (["--questions", ","], "questions=',' names no kind of question"),
])
def test_unknown_choices_are_usage_errors(argv, says, tmp_path, capsys):
    # --questions reads alike for the sweeps and for a session
    commands = [["synthetic"]] + ([["session", "new", "--from-npz", "x.npz"]]
                                  if argv[0] == "--questions" else [])
    for command in commands:
        with pytest.raises(SystemExit) as exc:
            main([*command, *argv, "--out", str(tmp_path / "o")])
        assert exc.value.code == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and says in err


def test_every_option_a_sweep_command_shares_is_passed_on():
    """``sweep_options`` names the options ``add_sweep_options`` adds a second time (a list of
    keys): an option added to the one and not the other would be parsed and then silently
    dropped. Every option but ``--out`` (the folder, passed on apart) must reach the sweep."""
    import argparse

    from elicit.cli.argtypes import add_sweep_options, sweep_options

    p = argparse.ArgumentParser()
    add_sweep_options(p)
    added = {a.dest for a in p._actions} - {"help", "out"}
    assert set(sweep_options(p.parse_args(["--out", "x"]))) == added
