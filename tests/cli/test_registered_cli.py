"""The command line and sessions take whatever is registered, by name: a strategy, a kind of
question and a model registered from outside the package (as a user's module that is
imported before the command runs would), checked against the registries, not fixed lists."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest
import toykind
from conftest import SESSION_NAMES as NAMES
from conftest import make_session_data
from helpers import create_session

from elicit.cli.main import main
from elicit.elicitation.strategies import RandomStrategy, register_strategy
from elicit.model.priors import ThresholdPrior
from elicit.model.variants import SHIPPED_PROGRAM, ModelVariant, register_model
from elicit.session.session import Session

# the sweeps here are read by their tables: figures drawn, not saved (conftest)
pytestmark = pytest.mark.usefixtures("registries_restored", "one_blas_thread", "unsaved_figures")


@dataclasses.dataclass(frozen=True)
class Coin(RandomStrategy):
    """The random strategy under another name and stream."""


def _npz(tmp_path):
    X, y, U = make_session_data()
    path = tmp_path / "d.npz"
    np.savez(path, X=X, y=y, U=U, feature_names=np.array(NAMES))
    return path


def test_a_registered_strategy_runs_in_a_sweep_and_a_session(tmp_path, capsys):
    register_strategy(Coin("test-coin", "Coin", stream_id=77))
    out = tmp_path / "syn"
    assert main(["synthetic", "--runs", "1", "--rounds", "2", "--strategies",
                 "random,test-coin", "--engine", "numpy", "--out", str(out)]) == 0
    parts = out / "parts" / "synthetic" / "test-coin" / "run000.json"
    assert len(json.loads(parts.read_text())["asked"]) == 2
    session = tmp_path / "s.session"
    assert main(["session", "new", "--from-npz", str(_npz(tmp_path)), "--out", str(session),
                 "--strategy", "test-coin", "--engine", "numpy"]) == 0
    with Session.open(session) as s:
        assert s.settings["strategy"] == "test-coin"
        q = s.next_query()
        assert q.expected_gain is None          # drawn at random, not scored
    with create_session(tmp_path / "p.session", strategy="test-coin") as s:
        assert s.next_query().kind == "pairs"
    capsys.readouterr()
    # an unknown one is refused in one line that lists the registered ones
    with pytest.raises(SystemExit) as exc:
        main(["session", "new", "--from-npz", str(_npz(tmp_path)), "--out",
              str(tmp_path / "x.session"), "--strategy", "coin"])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "unknown strategy 'coin'; choose from random, " \
        "nonsequential, sequential, test-coin" in err


def test_a_registered_kind_is_a_question_of_the_command_line(tmp_path, capsys):
    with toykind.registered():
        session = tmp_path / "k.session"
        assert main(["session", "new", "--from-npz", str(_npz(tmp_path)), "--out",
                     str(session), "--questions", f"pairs,{toykind.NAME}", "--engine",
                     "numpy"]) == 0
        out = capsys.readouterr().out
        assert "36 questions (28 pairs, 8 sign questions)" in out
        with Session.open(session) as s:
            assert s.questions == ("pairs", toykind.NAME)
        # the synthetic experiment's oracle has no sign(k): one line, before any question
        assert main(["synthetic", "--runs", "1", "--rounds", "1", "--questions", "all",
                     "--engine", "numpy", "--out", str(tmp_path / "o")]) == 2
        err = capsys.readouterr().err.strip().splitlines()[-1]
        assert err == (f"elicit: error: questions='pairs,relevance,direction,{toykind.NAME}' "
                       "asks sign "
                       "questions, and the expert (GroupOracle) has no sign(k) method to "
                       "answer them; ask other questions or use an expert with sign(k)")
        assert not list((tmp_path / "o").rglob("run000.json"))


def test_a_registered_model_runs_from_the_command_line(tmp_path):
    register_model(ModelVariant("test-toy-cli", "xi ~ N+(m, 0.3 m)",
                                xi_prior=ThresholdPrior(0.3), program=SHIPPED_PROGRAM))
    out = tmp_path / "syn"
    assert main(["synthetic", "--runs", "1", "--rounds", "1", "--model", "test-toy-cli",
                 "--engine", "numpy", "--strategies", "random", "--out", str(out)]) == 0
    assert json.loads((out / "config.json").read_text())["model"] == "test-toy-cli"
    session = tmp_path / "m.session"
    assert main(["session", "new", "--from-npz", str(_npz(tmp_path)), "--out", str(session),
                 "--model", "test-toy-cli", "--engine", "numpy"]) == 0
    with Session.open(session) as s:
        assert s.elicitor.hyper.model == "test-toy-cli"


def test_a_session_of_a_model_not_registered_here_says_where_it_is_known(tmp_path, capsys):
    """`elicit export` (a fresh process) on a session a script made with its own model said
    only "unknown model 'x'; choose one of paper, ...": a choice the file does not give.
    (`elicit history`, also `--agreement`, reads the record without the model.)"""
    from elicit.model.variants import unregister_model

    register_model(ModelVariant("test-own-cli", "xi ~ N+(m, 0.3 m)",
                                xi_prior=ThresholdPrior(0.3), program=SHIPPED_PROGRAM))
    session = tmp_path / "own.session"
    try:
        assert main(["session", "new", "--from-npz", str(_npz(tmp_path)), "--out",
                     str(session), "--model", "test-own-cli", "--engine", "numpy"]) == 0
    finally:
        unregister_model("test-own-cli")      # as in a process that never registered it
    capsys.readouterr()
    # the record is read without the model, and the experts compared; the export needs it
    assert main(["history", str(session)]) == 0
    assert main(["history", str(session), "--agreement"]) == 0
    capsys.readouterr()
    assert main(["export", str(session), str(tmp_path / "prior.json")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1, err
    assert "unknown model 'test-own-cli'" in err
    assert "one of your own is known only in the process that registers it" in err, err
