"""A resumed sweep keeps the records an earlier call made, maybe with other code: every record
names the code that made it, and the command's output and ``REPORT.md`` list them."""

from __future__ import annotations

import importlib.util
import json
import subprocess

import pandas as pd
import pytest
from helpers import tiny_problem

from elicit.elicitation.settings import RoundSettings
from elicit.errors import ElicitError
from elicit.harness import RunProblem, SweepConfig
from elicit.harness import store as store_module
from elicit.harness import sweep as sweep_module
from elicit.harness.store import SweepStore, made_by
from elicit.harness.sweep import run_sweep, sweep
from elicit.internal import provenance
from elicit.internal.memo import code_salt
from elicit.report import write_report

# the sweeps here are read by their tables: figures drawn, not saved (conftest)
pytestmark = pytest.mark.usefixtures("unsaved_figures")


def _sweep(folder, runs: int) -> SweepStore:
    cfg = SweepConfig("mine", runs=runs, rounds=1, strategies=("random",),
                      settings=RoundSettings(engine="numpy", seed=0))
    store = SweepStore.open(folder, cfg.to_json())
    run_sweep(tiny_problem, cfg, store, progress=False)
    return store


def test_a_resumed_sweep_names_the_code_of_each_run(tmp_path, monkeypatch):
    """Runs 0 and 1 by one version, run 2 by the next, and a record from before records
    named their code: each says which, and the folder's list counts them."""
    monkeypatch.setattr(store_module, "code_version", lambda: "aaaa")
    store = _sweep(tmp_path / "o", runs=2)
    old = store.part_path("mine", "random", 0)
    record = json.loads(old.read_text())
    assert record["code"] == "aaaa"
    del record["code"]
    old.write_text(json.dumps(record))
    monkeypatch.setattr(store_module, "code_version", lambda: "bbbb")
    _sweep(tmp_path / "o", runs=3)           # resumed: run 2 is the only one computed
    codes = [store.load(store.part_path("mine", "random", r)).get("code") for r in range(3)]
    assert codes == [None, "aaaa", "bbbb"]
    assert made_by(tmp_path / "o") == (
        "Written by commit `bbbb` from run records made by `aaaa` (1), `bbbb` (1), `unknown` (1).")
    assert made_by(tmp_path / "o", "cccc").startswith("Written by commit `cccc` from ")
    for r in (0, 2):
        store.part_path("mine", "random", r).unlink()
    assert made_by(tmp_path / "o", "aaaa") == "Made by commit `aaaa`."
    assert made_by(tmp_path / "o", "bbbb") == (
        "Written by commit `bbbb` from run records made by `aaaa` (1).")


def test_the_report_names_every_version_its_records_came_from(tmp_path, monkeypatch):
    monkeypatch.setattr(store_module, "code_version", lambda: "bbbb")
    for folder, code in (("amazon", "aaaa"), ("yelp", "bbbb"), ("yelp", None)):
        path = SweepStore(tmp_path / folder, {}).part_path(folder, "random", 0 if code else 1)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({"mse": [1.0], **({"code": code} if code else {})}))
    (tmp_path / ".memo" / "ab").mkdir(parents=True)    # a memo entry is no run record
    (tmp_path / ".memo" / "ab" / "abcd.json").write_text("{}")
    # nor is a record of another results folder inside this one (make reproduce-quick's
    # results/quick/ in results/)
    quick = SweepStore(tmp_path / "quick" / "amazon", {}).part_path("amazon", "random", 0)
    quick.parent.mkdir(parents=True)
    quick.write_text(json.dumps({"mse": [1.0], "code": "cccc"}))
    text = write_report(tmp_path, wall_s=60.0).read_text()
    assert "Made by commit" not in text
    assert ("Written by commit `bbbb` from run records made by `aaaa` (1), `bbbb` (1), "
            "`unknown` (1).") in text
    # one version, the report's own: as before
    (tmp_path / "yelp" / "parts" / "yelp" / "random" / "run001.json").unlink()
    (tmp_path / "amazon" / "parts" / "amazon" / "random" / "run000.json").unlink()
    text = write_report(tmp_path, wall_s=60.0).read_text()
    assert "Made by commit `bbbb`." in text and "Written by" not in text


@pytest.mark.parametrize("status", ["", " M elicit/model/spec.py", None])
def test_the_code_version_pins_the_source_where_the_commit_does_not(status, monkeypatch):
    """A clean checkout is named by its commit; two checkouts with other changes, or two
    copies outside git, by the hash of their source as well, so they are told apart."""
    def git(cmd, **kw):
        if status is None:
            raise FileNotFoundError("git")
        out = "abc1234567" if "rev-parse" in cmd else status
        return subprocess.CompletedProcess(cmd, 0, stdout=out + "\n", stderr="")

    monkeypatch.setattr(provenance.subprocess, "run", git)
    provenance.code_version.cache_clear()
    try:
        got = provenance.code_version()
    finally:
        provenance.code_version.cache_clear()
    assert got == {"": "abc1234567", None: f"elicit+{code_salt()[:10]}"}.get(
        status, f"abc1234567+changes+{code_salt()[:10]}")


def test_the_code_is_named_as_imported_though_the_checkout_moves_on(monkeypatch):
    """A long call (``make reproduce``) may outlive the commit it started from: a process names
    the code it imported, not the checkout's HEAD when it first writes a record or the report
    (a 2-run reproduction merged into meanwhile named the new HEAD in its report while its
    workers had named the old one)."""
    heads = iter(["aaaa", "bbbb"])

    def git(cmd, **kw):  # a clean checkout whose HEAD moves after the first look
        out = next(heads) if "rev-parse" in cmd else ""
        return subprocess.CompletedProcess(cmd, 0, out, "")

    monkeypatch.setattr(subprocess, "run", git)
    # the module as a new process imports it (not the one this process already holds)
    spec = importlib.util.spec_from_file_location("provenance_anew", provenance.__file__)
    fresh = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(fresh)
    next(heads)  # the checkout moves on: a later look would see "bbbb"
    assert fresh.code_version() == "aaaa"


def test_config_json_names_the_code_and_a_rerun_of_other_code_is_still_accepted(tmp_path,
                                                                                  monkeypatch):
    """A sweep folder's config.json named no code at all; it names the code of the call that
    wrote it, a key the settings comparison skips (a folder written before it has none, as the
    committed results/ do, and stays valid)."""
    monkeypatch.setattr(store_module, "code_version", lambda: "aaaa")
    _sweep(tmp_path / "o", runs=1)
    config = tmp_path / "o" / "config.json"
    assert json.loads(config.read_text())["code"] == "aaaa"
    monkeypatch.setattr(store_module, "code_version", lambda: "bbbb")
    _sweep(tmp_path / "o", runs=1)       # other code: not another setting
    assert json.loads(config.read_text())["code"] == "bbbb"
    old = json.loads(config.read_text())
    del old["code"]
    config.write_text(json.dumps(old))
    _sweep(tmp_path / "o", runs=1)       # a folder from before the key
    with pytest.raises(ElicitError, match="rounds: 1 there, 2 now"):
        SweepStore.open(tmp_path / "o", {**old, "rounds": 2})


def _mean_rows(folder):
    df = pd.read_csv(folder / "mse.csv")
    return df[df.strategy == "mean"].mse.tolist()


def test_a_resumed_synthetic_sweep_keeps_the_mean_of_its_runs_records(tmp_path, monkeypatch):
    """The "predict the mean" rows were computed again at every call: a folder resumed after
    a change of the problems' code paired each kept run's curves with the new code's mean.
    Each record keeps its run's mean; a record from before holds none (computed, as before)."""
    class Problems:  # a generator whose test targets a later version of its code moves
        def __init__(self, shift: float) -> None:
            self.shift = shift

        def settings(self) -> dict:   # the same settings: only the code differs
            return {"maker": "mine"}

        def __call__(self, seed, run):
            p = tiny_problem(seed, run)
            return RunProblem(p.X, p.y, p.U, p.X_test, p.y_test + self.shift, p.expert,
                              p.hyper)

    monkeypatch.setattr(sweep_module, "mse_curves", lambda *a, **k: None)  # no figure
    cfg = SweepConfig("mine", runs=2, rounds=1, strategies=("random",),
                      settings=RoundSettings(engine="numpy", seed=0))
    first = sweep(Problems(0.0), cfg, tmp_path / "o", progress=False)
    kept = first[first.strategy == "mean"].mse.tolist()
    assert kept == [Problems(0.0)(0, r).mean_mse() for r in range(2)]
    record = tmp_path / "o" / "parts" / "mine" / "random" / "run001.json"
    assert json.loads(record.read_text())["mean_mse"] == kept[1]
    old = json.loads(record.read_text())
    del old["mean_mse"]
    record.write_text(json.dumps(old))
    sweep(Problems(1.0), cfg, tmp_path / "o", progress=False)
    changed = Problems(1.0)(0, 1).mean_mse()
    assert changed != kept[1]
    assert _mean_rows(tmp_path / "o") == [kept[0], changed]
