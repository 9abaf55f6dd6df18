"""The memo that the sweeps of one reproduction share (``OUT/.memo``).

A record computed through the memo must be the record computed without it, a later sweep of
the same runs must take the pieces it shares from the memo, and any changed input must miss.
The runs come from a small written corpus, so this runs in seconds.
"""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest
from helpers import write_corpus

from elicit.data.sources import corpus_source
from elicit.internal.memo import Memo, memo_key
from elicit.paper.configs import RealDataConfig
from elicit.paper.runinfo import prepare_runinfo


def same(a: dict, b: dict) -> bool:
    """Equal to the last bit (JSON text: NaN equals NaN, a float its shortest repr)."""
    return json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)


def entries(folder) -> set:
    return {p.name for p in folder.rglob("*.json")}


@pytest.fixture(scope="module")
def source(tmp_path_factory):
    path = write_corpus(tmp_path_factory.mktemp("corpus") / "shop.jsonl.gz")
    return corpus_source(path, "review", "stars")


KW = dict(runs=2, rounds=0, engine="numpy", expert_nonzero=8)


@pytest.fixture(scope="module")
def computed(source, tmp_path_factory) -> tuple:
    """Run 0's record computed through an empty memo, and that memo (each test takes a copy:
    a record costs most of a second)."""
    memo = tmp_path_factory.mktemp("computed") / "memo"
    return prepare_runinfo(RealDataConfig(source, memo=memo, **KW), 0), memo


def memo_copy(computed: tuple, tmp_path) -> tuple:
    """(the record, a copy of its memo of one's own)."""
    first, memo = computed
    return first, shutil.copytree(memo, tmp_path / "memo")


def test_a_record_through_the_memo_is_the_computed_one(source, computed, tmp_path):
    plain = prepare_runinfo(RealDataConfig(source, **KW), 0)
    first, memo = memo_copy(computed, tmp_path)
    stored = entries(memo)
    assert len(stored) == 5  # expert, baselines, tau2 CV, no-feedback MSEs, yardstick
    again = prepare_runinfo(RealDataConfig(source, memo=memo, **KW), 0)
    assert same(first, plain) and same(again, plain)
    assert entries(memo) == stored

    # Another model and questions on the same runs: only the tau2 CV (it fits the model)
    # is new; the rest (the expert too) is the memo's, and the record is what that sweep
    # computes alone.
    mixed = dict(KW, questions="both")
    other = prepare_runinfo(RealDataConfig(source, memo=memo, **mixed), 0)
    assert len(entries(memo) - stored) == 1
    assert same(other, prepare_runinfo(RealDataConfig(source, **mixed), 0))
    assert other["baselines"] == first["baselines"]


def test_a_later_sweep_reads_the_memo(source, computed, tmp_path):
    """The shared pieces come from the stored entries, not from a recomputation: an entry
    changed on disk shows in the next record."""
    first, memo = memo_copy(computed, tmp_path)
    cfg = RealDataConfig(source, memo=memo, **KW)
    for path in memo.rglob("*.json"):
        entry = json.loads(path.read_text())
        if isinstance(entry["value"], dict) and "ridge" in entry["value"]:
            entry["value"]["ridge"] = -1.0
            path.write_text(json.dumps(entry))
    assert prepare_runinfo(cfg, 0)["baselines"] == {**first["baselines"], "ridge": -1.0}


def test_another_run_or_expert_misses(source, computed, tmp_path):
    _, memo = memo_copy(computed, tmp_path)
    stored = entries(memo)
    prepare_runinfo(RealDataConfig(source, memo=memo, **KW), 1)
    assert len(entries(memo) - stored) == 5  # other data, other streams: nothing shared
    stored = entries(memo)
    # another expert: its fit, and the yardstick its weights make; the rest does not read them
    wider = dict(KW, expert_nonzero=10)
    rec = prepare_runinfo(RealDataConfig(source, memo=memo, **wider), 0)
    assert len(entries(memo) - stored) == 2
    assert same(rec, prepare_runinfo(RealDataConfig(source, **wider), 0))


def test_a_memoised_expert_is_the_fitted_one(source, tmp_path):
    from elicit.paper.real_problem import make_expert

    rd = RealDataConfig(source, **KW).run_data(0)
    fitted = make_expert(rd, n_nonzero=8)
    stored = make_expert(rd, n_nonzero=8, memo=tmp_path)  # computed, stored
    read = make_expert(rd, n_nonzero=8, memo=tmp_path)    # read back
    assert len(entries(tmp_path)) == 1
    for e in (stored, read):
        assert e.coef_.tobytes() == fitted.coef_.tobytes()
        assert e.summary() == fitted.summary() and repr(e) == repr(fitted)
        assert (e.rule, e.n_nonzero, e.random_state) == (
            fitted.rule, fitted.n_nonzero, fitted.random_state)
        assert np.array_equal(e.answerable_pairs(), fitted.answerable_pairs())
        assert np.array_equal(e.groups, fitted.groups)


def test_memo_key_sees_every_input():
    X = np.arange(12.0).reshape(3, 4)
    key = memo_key("piece", {"X": X, "seed": 1, "grid": (0.1, 0.2)})
    assert key == memo_key("piece", {"grid": (0.1, 0.2), "seed": 1, "X": X.copy()})
    X1 = X.copy()
    X1[2, 3] = np.nextafter(X1[2, 3], np.inf)  # one bit of one entry
    changed = [
        memo_key("other", {"X": X, "seed": 1, "grid": (0.1, 0.2)}),
        memo_key("piece", {"X": X1, "seed": 1, "grid": (0.1, 0.2)}),
        memo_key("piece", {"X": X.reshape(4, 3), "seed": 1, "grid": (0.1, 0.2)}),
        memo_key("piece", {"X": X.astype(np.float32), "seed": 1, "grid": (0.1, 0.2)}),
        memo_key("piece", {"X": X, "seed": 1.0, "grid": (0.1, 0.2)}),
        memo_key("piece", {"X": X, "seed": 2, "grid": (0.1, 0.2)}),
        memo_key("piece", {"X": X, "seed": 1, "grid": (0.1, 0.2, 0.3)}),
        memo_key("piece", {"X": X, "seed": 1, "grid": (0.1, 0.2), "model": None}),
        memo_key("piece", {"X": X, "seed": None, "grid": (0.1, 0.2)}),
    ]
    assert len({key, *changed}) == len(changed) + 1
    with pytest.raises(TypeError):
        memo_key("piece", {"x": object()})
    with pytest.raises(TypeError):  # its bytes would be pointers
        memo_key("piece", {"x": np.array([object()])})
    assert memo_key("piece", {"x": {1: 2}}) != memo_key("piece", {"x": {"1": 2}})


def test_an_entry_does_not_outlive_the_code(tmp_path, monkeypatch):
    """Every key holds the hash of elicit's code and of numpy/scipy/scikit-learn's versions:
    after a change of the code a kept memo folder is recomputed, not reused."""
    import elicit.internal.memo as memo_module

    salt = memo_module.code_salt()
    assert len(salt) == 64 and salt == memo_module.code_salt()
    calls = []
    memo = Memo(tmp_path / "m")
    memo("p", {"x": 1}, lambda: calls.append(1) or 1.0)
    memo("p", {"x": 1}, lambda: calls.append(1) or 1.0)
    assert len(calls) == 1
    monkeypatch.setattr(memo_module, "code_salt", lambda: "0" * 64)
    memo("p", {"x": 1}, lambda: calls.append(1) or 1.0)
    assert len(calls) == 2


def test_an_entry_of_another_key_or_an_unwritable_folder(tmp_path):
    """A file at an entry's place that is not that entry (copied, or of an older layout)
    is a miss; a folder that cannot be written still returns the computed value."""
    memo = Memo(tmp_path / "m")
    assert memo("p", {"x": 1}, lambda: 1.0) == 1.0
    a = memo.path(memo_key("p", {"x": 1}))
    b = memo.path(memo_key("p", {"x": 2}))
    b.parent.mkdir(parents=True, exist_ok=True)
    b.write_text(a.read_text())                 # entry x=1 copied to x=2's place
    assert memo("p", {"x": 2}, lambda: 2.0) == 2.0
    b.write_text("2.0")                          # the value alone, without its key
    assert memo("p", {"x": 2}, lambda: 3.0) == 3.0
    blocked = tmp_path / "file"
    blocked.write_text("")                       # a file where the folder should be
    assert Memo(blocked / "m")("p", {"x": 1}, lambda: 4.0) == 4.0


def test_memo_computes_once_and_without_a_folder_always(tmp_path):
    calls = []

    def compute():
        calls.append(1)
        return {"a": 0.1 + 0.2, "b": [float("nan"), 1e-300]}

    memo = Memo(tmp_path / "m")
    first = memo("p", {"x": 1}, compute)
    second = memo("p", {"x": 1}, compute)
    assert len(calls) == 1 and same(first, second) and same(first, compute())
    assert first["a"] == 0.1 + 0.2
    memo("p", {"x": 2}, compute)
    assert len(calls) == 3
    # an unreadable entry (not one the atomic writes leave; a disk error, say) is a miss
    path = next((tmp_path / "m").rglob("*.json"))
    path.write_text('{"a": ')
    memo("p", {"x": 1}, compute)
    memo("p", {"x": 2}, compute)
    assert len(calls) == 4  # only the broken one was recomputed
    none = Memo(None)
    none("p", {"x": 1}, compute)
    none("p", {"x": 1}, compute)
    assert len(calls) == 6
