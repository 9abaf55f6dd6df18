"""A mutation audit of the internal caches, the memo, the code version, the registries and the
package's facade: what no other test pinned down. A cache or memo entry is never served for
another input, a checkout with changes is never named as its clean commit, a registry refuses
every name docs/extending.md forbids and any name it cannot look up in one line, and every
name the docs import from ``elicit`` is there."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import numpy as np
import pytest

import elicit
from elicit.elicitation.strategies import (
    RandomStrategy,
    get_strategy,
    register_strategy,
    unregister_strategy,
)
from elicit.errors import ElicitError
from elicit.internal import memo as memo_module
from elicit.internal import provenance
from elicit.internal.cache import LRUCache, arrays_key, checksum, frozen
from elicit.internal.memo import Memo, memo_key

ROOT = Path(__file__).resolve().parents[2]


# -- the array cache: keys and checksums ------------------------------------------------------

def test_the_key_of_several_arrays_sees_a_change_of_any_of_them():
    # the engine's memo and the marginal cache key a fit by (X, y, U): an answer-free refit
    # after y was changed in place must not be served the old fit
    X, y, U = np.ones((4, 3)), np.zeros(4), np.ones((3, 2))
    before = arrays_key(X, y, U)
    y[2] = 1.0
    assert arrays_key(X, y, U) != before
    U[0, 0] = 2.0
    assert arrays_key(X, y, U) != arrays_key(X, y, np.ones((3, 2)))


def test_the_checksum_sees_a_change_of_sign_of_any_value():
    # a sign is the top bit of a float's word: a weight w times a change of 2**63 vanishes
    # modulo 2**64 unless w is odd, so each of the first 4096 words must see its sign
    x = np.arange(1.0, 4097.0)
    c = checksum(x)
    for k in range(0, 4096, 7):
        y = x.copy()
        y[k] = -y[k]
        assert checksum(y) != c, k


def test_the_checksum_sees_a_change_in_the_first_weights_of_a_large_array():
    # beyond 65,536 words the weights wrap around: a change before the last block counts too
    big = np.random.default_rng(0).standard_normal(70_000)
    c = checksum(big)
    big[0] += 1.0
    assert checksum(big) != c


def test_the_checksum_sees_the_length_of_arrays_of_zeros():
    # a key holds the id too, but a checksum alone tells 8 zero bytes from 16 (its docstring)
    assert len({checksum(np.zeros(n)) for n in range(1, 6)}) == 5


def test_freezing_a_read_only_view_copies_what_the_caller_can_still_change():
    a = np.arange(4.0)
    view = a.view()
    view.flags.writeable = False
    held = frozen(view)
    a[0] = 9.0                              # the caller's write after the model took it
    assert held[0] == 0.0 and not held.flags.writeable


def test_a_cached_result_is_never_served_to_another_array_of_the_same_bytes():
    # the key holds the array's id: an entry keeps its array alive, so that a new array (12
    # zeros as 3 x 4 and as 4 x 3: the same checksum) cannot take over its id
    cache = LRUCache(4)
    for k in range(60):
        a = np.zeros((3, 4) if k % 2 else (4, 3))
        assert cache.of_array(a, lambda x: x.shape) == a.shape, k
        del a


# -- the memo: keys and stored files ----------------------------------------------------------

@pytest.mark.parametrize("a, b", [
    ({"a": "sb"}, {"as": "b"}),                                   # where one text ends
    ({"g": ((1, 2), 3)}, {"g": ((1,), 2, 3)}),                    # where a tuple ends
    ({"t": 0.1}, {"t": float(np.nextafter(0.1, 1.0))}),           # the last bit of a float
    ({"X": np.arange(4.0)}, {"X": np.arange(4.0).view(np.int64)}),  # the same bytes, another type
])
def test_memo_keys_of_other_inputs_differ_where_their_bytes_could_meet(a, b):
    assert memo_key("piece", a) != memo_key("piece", b)


@pytest.mark.parametrize("dist", ["numpy", "scipy", "scikit-learn"])
def test_the_code_salt_sees_the_version_of_each_numeric_library(dist, monkeypatch):
    before = memo_module.code_salt.__wrapped__()
    real = memo_module.metadata.version
    monkeypatch.setattr(memo_module.metadata, "version",
                        lambda d: real(d) + (".post1" if d == dist else ""))
    assert memo_module.code_salt.__wrapped__() != before


def test_a_stored_entry_without_a_value_is_computed_again(tmp_path):
    # an entry of the right key but no value (a hand-edited or older file) is a miss, as a
    # cut or copied one is (test_runinfo_memo.py), not a KeyError
    memo = Memo(tmp_path)
    key = memo_key("n", {"x": 1})
    memo.path(key).parent.mkdir(parents=True)
    memo.path(key).write_text(json.dumps({"name": "n", "key": key}))
    assert memo("n", {"x": 1}, lambda: [7]) == [7]
    assert memo("n", {"x": 1}, lambda: None) == [7]             # and stored in its place


# -- the code version ---------------------------------------------------------------------------

@pytest.mark.parametrize("changed", ["elicit/internal/memo.py", "stan/elicit.stan",
                                     "pyproject.toml"])
def test_a_change_in_any_part_of_the_code_marks_the_version(changed, monkeypatch):
    def fake_git(cmd, **kw):   # a checkout at abc1234567 with one file edited
        paths = cmd[cmd.index("--") + 1:] if "--" in cmd else []
        edited = any(changed == p or changed.startswith(p + "/") for p in paths)
        out = "abc1234567" if "rev-parse" in cmd else f" M {changed}" if edited else ""
        return subprocess.CompletedProcess(cmd, 0, stdout=out)

    monkeypatch.setattr(provenance.subprocess, "run", fake_git)
    assert provenance.code_version.__wrapped__().startswith("abc1234567+changes+")


def test_code_outside_a_git_checkout_is_named_by_its_salt(monkeypatch):
    def no_checkout(cmd, **kw):
        raise subprocess.CalledProcessError(128, cmd, "", "fatal: not a git repository")

    monkeypatch.setattr(provenance.subprocess, "run", no_checkout)
    monkeypatch.setattr(provenance, "code_salt", lambda: "f" * 64)
    assert provenance.code_version.__wrapped__() == "elicit+" + "f" * 10


# -- the registries -----------------------------------------------------------------------------

@pytest.mark.usefixtures("registries_restored")
@pytest.mark.parametrize("name", ["", "é" * 128])
def test_a_registry_refuses_a_name_that_cannot_name_a_folder(name):
    # "" names no folder; "é" * 128 is 128 characters but 256 bytes, longer than a file
    # name may be
    with pytest.raises(ElicitError, match=r"^a strategy needs a name without commas"):
        register_strategy(RandomStrategy(name, "Mine", stream_id=93))


@pytest.mark.usefixtures("registries_restored")
def test_a_registry_takes_a_name_of_255_bytes():
    name = "y" * 255
    assert get_strategy(register_strategy(RandomStrategy(name, "Mine", stream_id=93)).name)


def test_a_registry_refuses_unknown_and_unhashable_names_in_one_line():
    with pytest.raises(ElicitError, match=r"^no strategy named 'nope' is registered$"):
        unregister_strategy("nope")
    with pytest.raises(ElicitError, match=r"^unknown strategy \['random'\]; choose one of "):
        get_strategy(["random"])  # type: ignore[arg-type]


# -- the facade ---------------------------------------------------------------------------------

def test_every_name_the_docs_take_from_the_package_is_there():
    texts = [p.read_text() for p in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]]
    named = {n.strip() for t in texts for line in re.findall(r"from elicit import ([\w, ]+)", t)
             for n in line.split(",")}
    named |= {n for t in texts for n in re.findall(r"(?<![\w.])elicit\.([A-Z]\w*|kernel)\b", t)}
    assert {"Session", "Elicitor", "GroupOracle", "Expert", "RoundSettings"} <= named
    assert named <= set(elicit.__all__) and named <= set(dir(elicit))
