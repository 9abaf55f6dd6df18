"""One settings object for a question round (RoundSettings): checked in one place, taken by
the Elicitor, stored by a session, held by every sweep configuration and recorded whole in
config.json, which older folders and files still open with."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest

from elicit import Session
from elicit.elicitation.elicitor import Elicitor
from elicit.elicitation.settings import RoundSettings
from elicit.errors import ElicitError
from elicit.harness.store import LEGACY_CONFIG, SweepStore, settings_difference
from elicit.harness.sweep import SweepConfig, sweep
from elicit.model.spec import Hyper
from elicit.paper.configs import RealDataConfig, SyntheticConfig
from elicit.paper.synthetic import SyntheticMaker, run_synthetic

# the sweeps here are read by their tables: figures drawn, not saved (conftest)
pytestmark = pytest.mark.usefixtures("unsaved_figures")


def test_validate_resolves_the_settings():
    st = RoundSettings(questions=("relevance", "pairs"), refine=np.int64(3),
                       seed=np.int64(2)).validate()
    assert st.questions == "both" and st.model == "relevance"
    assert type(st.refine) is int and type(st.seed) is int
    assert RoundSettings().validate().model == "paper"


@pytest.mark.parametrize("kw,match", [
    ({"engine": "jax"}, r"^unknown engine 'jax'; choose one of auto"),
    ({"pool_size": 0}, r"^pool_size must be a positive integer, got 0"),
    ({"seed": -1}, r"^seed must be a non-negative integer, got -1"),
    ({"strategy": "greedy"}, r"greedy"),
    ({"questions": "features"}, r"^unknown question kind 'features'"),
    ({"questions": "both", "model": "paper"}, r"^questions='both' asks feature questions"),
    ({"utility_target": "kl"}, r"^utility target must be one of"),
    ({"refine": -1}, r"refine"),
])
def test_validate_refuses_bad_settings_in_one_line(kw, match):
    with pytest.raises(ElicitError, match=match) as e:
        RoundSettings(**kw).validate()
    assert "\n" not in str(e.value)


def test_the_record_reads_back_and_an_older_one_reads_as_those_sweeps_ran():
    st = RoundSettings(questions="both", refine=2, pool_size=50, seed=4).validate()
    assert RoundSettings.from_json(json.loads(json.dumps(st.to_json()))) == st
    # a config.json written before the settings were one object: the keys it had
    older = {"seed": 0, "engine": "auto", "utility": "fast", "refine": 10,
             "stan_file": None, "stan_file_sha256": None}
    read = RoundSettings.from_json(older, LEGACY_CONFIG)
    assert read == RoundSettings(model="paper", questions="pairs")
    assert settings_difference(older, read.to_json()) == ""


def _data(seed=0, n=12, p=6):
    rng = np.random.default_rng(seed)
    return rng.normal(size=(n, p)), rng.normal(size=n), rng.normal(size=(p, 2))


def test_the_elicitor_takes_the_settings_as_it_takes_the_keywords():
    X, y, U = _data()
    kw = Elicitor(X, y, U, engine="numpy", refine=3, pool_size=7)
    st = Elicitor(X, y, U, settings=RoundSettings(engine="numpy", refine=3, pool_size=7))
    assert kw.settings == st.settings and kw.pool_size == st.pool_size == 7
    qa = kw.next_query("sequential", np.random.default_rng(1))
    qb = st.next_query("sequential", np.random.default_rng(1))
    assert (qa.i, qa.j, qa.expected_gain) == (qb.i, qb.j, qb.expected_gain)
    # the settings' model goes into the hyperparameters; a default one is hyper's
    assert Elicitor(X, y, U, Hyper(model="tied-threshold"), settings=RoundSettings(
        engine="numpy")).hyper.model == "tied-threshold"
    with pytest.raises(ElicitError, match="either as settings= or as keywords"):
        Elicitor(X, y, U, settings=RoundSettings(), refine=3)


def test_a_session_stores_its_settings_and_gives_them_back(tmp_path):
    X, y, U = _data(1)
    st = RoundSettings(engine="numpy", refine=2, strategy="random", seed=5)
    with Session.create(X, y, U, path=tmp_path / "a.session", settings=st) as s:
        first = s.next_query()
    with Session.open(tmp_path / "a.session") as s:
        assert s.round_settings == dataclasses.replace(st, model="paper").validate()
        assert s.next_query().id == first.id
    # the same session made with the keywords is the same file's settings
    with Session.create(X, y, U, path=tmp_path / "b.session", engine="numpy", refine=2,
                        strategy="random", seed=5) as s:
        assert s.settings == json.loads(json.dumps(
            Session.open(tmp_path / "a.session").settings))
        assert (s.next_query().i, s.next_query().j) == (first.i, first.j)
    with pytest.raises(ElicitError, match="either as settings= or as keywords"):
        Session.create(X, y, U, path=tmp_path / "c.session", settings=st, seed=1)
    with pytest.raises(ElicitError, match="either as settings= or as keywords"):
        Session.create(X, y, U, path=tmp_path / "c.session", settings=st, strategy="random")
    # a session stores no Stan program: one given in the settings is refused, not dropped
    with pytest.raises(ElicitError, match="shipped Stan program; leave settings.stan_file"):
        Session.create(X, y, U, path=tmp_path / "d.session",
                       settings=dataclasses.replace(st, stan_file="mine.stan"))
    assert not (tmp_path / "d.session").exists()


def test_a_session_file_without_the_newer_settings_opens(tmp_path):
    """A file whose settings lack the utility target and the questions (made before they
    existed) opens with the values it was made with."""
    import sqlite3

    X, y, U = _data(2)
    path = tmp_path / "old.session"
    Session.create(X, y, U, path=path, engine="numpy").close()
    conn = sqlite3.connect(path)
    stored = json.loads(conn.execute("SELECT value FROM meta WHERE key = 'settings'"
                                     ).fetchone()[0])
    for key in ("utility_target", "questions"):
        del stored[key]
    with conn:
        conn.execute("UPDATE meta SET value = ? WHERE key = 'settings'", (json.dumps(stored),))
    conn.close()
    with Session.open(path, read_only=True) as s:
        assert s.round_settings.utility_target == "predictive"
        assert s.round_settings.questions == "pairs"
        assert s.elicitor.settings.questions == "pairs"


def test_a_sweep_refuses_a_strategy_in_its_settings():
    """A sweep runs each of its strategies: one named in the settings would be recorded in
    config.json but not run, and would make a later rerun with the same results "other
    settings"."""
    with pytest.raises(ElicitError, match=r"^a sweep runs each of its strategies= \(random\); "
                                          r"leave settings.strategy None, not 'sequential'$"):
        SweepConfig("x", 1, 1, strategies=("random",),
                    settings=RoundSettings(strategy="sequential"))


def test_every_configuration_holds_the_settings_and_records_them_whole():
    cfg = SyntheticConfig(runs=1, rounds=2, engine="numpy", questions="both", refine=3)
    assert cfg.settings == RoundSettings(engine="numpy", questions="both", refine=3).validate()
    assert cfg.sweep_config().settings == cfg.settings
    for recorded in (cfg.to_json(), cfg.sweep_config().to_json()):
        assert RoundSettings.from_json(recorded) == cfg.settings
        assert cfg.settings.to_json().items() <= recorded.items()
    assert SyntheticConfig.from_json(cfg.to_json(), runs=1) == cfg


def test_a_configuration_holds_the_settings_once_and_its_keywords_replace_entries():
    given = RoundSettings(engine="numpy", refine=3, seed=2)
    cfg = SyntheticConfig(settings=given, refine=5)
    assert cfg.settings == dataclasses.replace(given, refine=5).validate()
    assert cfg == SyntheticConfig(engine="numpy", refine=5, seed=2)
    assert dataclasses.replace(cfg, seed=7).settings == dataclasses.replace(cfg.settings, seed=7)
    # no copy of a round setting beside ``settings``
    round_names = {f.name for f in dataclasses.fields(RoundSettings)}
    for cls in (SyntheticConfig, RealDataConfig):
        assert not round_names & {f.name for f in dataclasses.fields(cls)}
    # a keyword read back is the settings' entry, not the keyword's default (None)
    for name in ("engine", "refine", "seed", "model", "utility", "questions"):
        assert getattr(cfg, name) == getattr(cfg.settings, name), name
    assert (cfg.engine, cfg.refine, SyntheticConfig().engine) == ("numpy", 5, "auto")
    with pytest.raises(AttributeError):
        cfg.engine = "cmdstan"  # type: ignore[misc]


_OLDER_SWEEP = {"dataset": "mine", "rounds": 2, "seed": 0, "engine": "numpy",
                "utility": "fast", "refine": 10, "snapshots": [], "stan_file": None,
                "stan_file_sha256": None, "threshold_mean": None, "model": "paper",
                "utility_target": "predictive", "questions": "pairs",
                "problems": "SyntheticMaker"}


def test_an_older_sweep_folder_reads_and_resumes(tmp_path):
    """config.json as a sweep wrote it before its round settings were one object: read
    back as the same configuration, and a rerun with it resumes the folder."""
    recorded = SweepConfig.recorded(_OLDER_SWEEP)
    assert recorded["settings"] == RoundSettings(engine="numpy").validate()
    cfg = SweepConfig(runs=1, strategies=("random",), **recorded)
    assert settings_difference(_OLDER_SWEEP, cfg.to_json()) == ""
    out = tmp_path / "old"
    out.mkdir()
    (out / "config.json").write_text(json.dumps(_OLDER_SWEEP))
    store = SweepStore.open(out, {**cfg.to_json(), "problems": "SyntheticMaker"})
    assert store.folder == out


def test_results_are_those_of_the_keywords(tmp_path):
    """The sweep through the composed settings asks and scores as an Elicitor given the same
    settings as keywords, round by round (the results did not move with the object)."""
    from elicit.elicitation.answers import ask
    from elicit.elicitation.strategies import get_strategy
    from elicit.harness.problem import strategy_stream

    cfg = SyntheticConfig(runs=1, rounds=3, engine="numpy", refine=2, seed=7,
                          strategies=("sequential",))
    df = run_synthetic(cfg, tmp_path / "s", progress=False).mse
    problem = SyntheticMaker(cfg.n_train, cfg.irrelevant, str(cfg.pool))(7, 0)
    el = Elicitor(problem.X, problem.y, problem.U, problem.hyper, engine="numpy", refine=2,
                  pool_size=problem.pool_size, candidates=problem.candidates)
    rng = np.random.default_rng(strategy_stream(7, 0, get_strategy("sequential").stream_id))
    mse = [problem.mse(el)]
    for _ in range(3):
        q = el.next_query("sequential", rng)
        el.answer(q.i, q.j, ask(problem.expert, q))
        mse.append(problem.mse(el))
    got = df[df.strategy == "sequential"].sort_values("n_feedback").mse.tolist()
    assert got == mse


def test_sweep_records_the_settings_whole(tmp_path):
    cfg = SweepConfig("mine", 1, 1, ("random",), settings=RoundSettings(engine="numpy"))
    sweep(SyntheticMaker(20, 0, "paper"), cfg, tmp_path / "o", progress=False)
    recorded = json.loads((tmp_path / "o" / "config.json").read_text())
    assert RoundSettings.from_json(recorded) == cfg.settings


def test_a_missing_stan_file_is_refused_by_validate(tmp_path):
    # validate() took it, and to_json() (what config.json records) ended in FileNotFoundError
    missing = tmp_path / "no-such-dir" / "my_model.stan"
    with pytest.raises(ElicitError, match=f"^Stan file {missing} does not exist$"):
        RoundSettings(stan_file=str(missing), utility="exact", engine="cmdstan").validate()
