"""Guarantees of a sweep's store, random streams, memo and code version that no other test
pins down: a record is never half-written, a stale one is not reused, a missing one is an
error, two runs or strategies never share a random stream, and the memo's key, the code's
salt and the code version see every input."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from elicit.data.files import DATA_ENV, STOPWORDS_FILE, load_stopwords
from elicit.data.sources import split_seed
from elicit.elicitation.settings import RoundSettings
from elicit.elicitation.strategies import RandomStrategy, register_strategy, unregister_strategy
from elicit.errors import ElicitError
from elicit.harness import RunProblem, SweepConfig
from elicit.harness import sweep as sweep_module
from elicit.harness.problem import strategy_stream
from elicit.harness.store import SweepStore
from elicit.internal import memo as memo_module
from elicit.internal import provenance
from elicit.internal.memo import Memo, memo_key
from elicit.model.simulate import make_synthetic
from elicit.model.spec import Hyper
from elicit.paper import runinfo


def test_a_record_that_cannot_be_written_leaves_the_old_one_whole(tmp_path):
    path = tmp_path / "parts" / "d" / "random" / "run000.json"
    SweepStore.save(path, {"mse": [1.0]})
    with pytest.raises(TypeError):
        SweepStore.save(path, {"mse": [2.0], "bad": object()})
    assert json.loads(path.read_text())["mse"] == [1.0]
    assert [p.name for p in path.parent.iterdir()] == ["run000.json"]


def test_missing_names_a_stale_record_as_missing(tmp_path):
    store = SweepStore(tmp_path, {})
    old, new, none = (tmp_path / f"{k}.json" for k in ("old", "new", "none"))
    store.save(old, {"layout": 1})
    store.save(new, {"layout": 2})
    paths = {"old": old, "new": new, "none": none}
    assert store.missing(paths, current=lambda r: r["layout"] == 2) == ("old", "none")
    assert store.missing(paths) == ("none",)


def test_need_refuses_a_missing_record(tmp_path):
    with pytest.raises(ElicitError, match="has no result of random run 0; run the sweep first"):
        SweepStore(tmp_path, {}).need(tmp_path / "run000.json", "result of random run 0")


def test_two_sweeps_beside_each_other_keep_their_own_sample_curves(tmp_path):
    amazon, yelp = SweepStore(tmp_path / "amazon", {}), SweepStore(tmp_path / "yelp", {})
    assert amazon.samples_path("lasso", 0) != yelp.samples_path("lasso", 0)
    assert amazon.samples_path("lasso", 0) != amazon.samples_path("lasso", 1)


@pytest.mark.parametrize("a, b", [((0, 1), (1, 0)), ((0, 2), (1, 1)), ((3, 0), (0, 3))])
def test_no_two_seed_and_run_pairs_share_a_stream(a, b):
    assert split_seed(*a) != split_seed(*b)
    assert (strategy_stream(*a, 0).generate_state(2).tolist()
            != strategy_stream(*b, 0).generate_state(2).tolist())


def _problem(seed, run):
    from elicit import GroupOracle

    sd = make_synthetic(np.random.default_rng([seed, 0]), n_train=10, n_test=20)
    return RunProblem(sd.X, sd.y, sd.U, sd.X_test, sd.y_test, GroupOracle(sd.groups),
                      Hyper(variant="learned"))


def test_strategies_and_runs_draw_their_own_questions():
    """The same problem in runs 0 and 1, and two uniform strategies of other stream ids in
    one run: each asks its own questions."""
    register_strategy(RandomStrategy("random_twin", "Random twin", stream_id=97))
    try:
        cfg = SweepConfig("mine", runs=2, rounds=3, strategies=("random", "random_twin"),
                          settings=RoundSettings(engine="numpy", seed=0))
        problem = _problem(0, 0)
        run0 = sweep_module.run_one(problem, cfg, 0, cfg.strategies)
        run1 = sweep_module.run_one(problem, cfg, 1, ("random",))
    finally:
        unregister_strategy("random_twin")
    assert run0["random"]["asked"] != run0["random_twin"]["asked"]
    assert run0["random"]["asked"] != run1["random"]["asked"]


@pytest.mark.parametrize("a, b", [(("x", {"a": True}), ("x", {"a": 1})),
                                  (("x", {"a": 1}), ("x", {"b": 1}))])
def test_memo_keys_of_other_inputs_differ(a, b):
    assert memo_key(*a) != memo_key(*b)


def test_a_memoised_value_is_the_same_on_the_first_call_and_later(tmp_path):
    memo = Memo(tmp_path)
    first = memo("n", {"x": 1}, lambda: {"t": (1, 2), 3: 4.5})
    assert first == memo("n", {"x": 1}, lambda: None) == {"t": [1, 2], "3": 4.5}


@pytest.mark.parametrize("rel", ["elicit/harness/store.py", "stan/elicit.stan"])
def test_the_code_salt_sees_every_source_file(rel, monkeypatch):
    target = Path(memo_module.__file__).resolve().parents[2] / rel
    assert target.is_file()
    before = memo_module.code_salt.__wrapped__()
    read = Path.read_bytes
    monkeypatch.setattr(Path, "read_bytes",
                        lambda self: read(self) + (b"#" if self == target else b""))
    assert memo_module.code_salt.__wrapped__() != before


def test_a_change_to_the_experiments_or_the_salt_marks_the_version(monkeypatch):
    """A checkout whose only change is in experiments/ runs other code than its commit, and
    two such checkouts of other code are told apart."""
    def fake_git(cmd, **kw):   # a checkout at abc1234567 with experiments/run.py edited
        paths = cmd[cmd.index("--") + 1:] if "--" in cmd else []
        out = ("abc1234567" if "rev-parse" in cmd
               else " M experiments/run.py" if "experiments" in paths else "")
        return subprocess.CompletedProcess(cmd, 0, stdout=out)

    monkeypatch.setattr(provenance.subprocess, "run", fake_git)
    versions = set()
    for salt in ("a" * 64, "b" * 64):
        monkeypatch.setattr(provenance, "code_salt", lambda s=salt: s)
        v = provenance.code_version.__wrapped__()
        assert v.startswith("abc1234567+")
        versions.add(v)
    assert len(versions) == 2


def test_the_tau2_cv_memo_tells_other_candidate_pairs_apart(tmp_path, monkeypatch):
    """Two sweeps of one run whose question pools differ (their candidate pairs) share the
    memo: each gets the tau2 CV of its own pairs."""
    pools: list = []

    def fake_cv(cfg, run, rd, cands):    # the CV's result names the pairs it was given
        pools.append(cands.tolist())
        return 1.0, {1.0: float(cands.sum())}

    monkeypatch.setattr(runinfo, "run_cv_tau2", fake_cv)
    monkeypatch.setattr(runinfo, "fit_baselines", lambda *a, **k: {})
    monkeypatch.setattr(runinfo, "initial_fit", lambda rd, t, eng: (None, None, 0.0))
    monkeypatch.setattr(runinfo, "expert_yardstick",
                        lambda *a, **k: SimpleNamespace(mse=0.0, tau2=1.0))
    rng = np.random.default_rng(0)
    rd = SimpleNamespace(X_train=rng.normal(size=(4, 3)), y_train=rng.normal(size=4),
                         X_test=rng.normal(size=(2, 3)), y_test=rng.normal(size=2), y_mean=0.0,
                         U=rng.normal(size=(3, 2)))
    cfg = SimpleNamespace(memo=tmp_path, settings=SimpleNamespace(seed=0, model="paper"))
    expert = SimpleNamespace(coef_=np.zeros(3))
    one = runinfo.memoised_pieces(cfg, 0, rd, expert, np.array([[0, 1]]))
    two = runinfo.memoised_pieces(cfg, 0, rd, expert, np.array([[0, 2]]))
    assert pools == [[[0, 1]], [[0, 2]]]
    assert one["tau2_cv"] != two["tau2_cv"]


def test_a_stop_list_in_the_env_data_dir_is_checked(tmp_path, monkeypatch):
    (tmp_path / STOPWORDS_FILE).write_text("only\nthese\n")
    monkeypatch.setenv(DATA_ENV, str(tmp_path))
    with pytest.raises(ElicitError, match="differs from the SMART list"):
        load_stopwords()
