"""``experiments/refit_modes.py`` audits any number of rounds of a sweep, and keeps the sweeps
it is given apart."""

import shutil
from pathlib import Path

from helpers import experiment_script

ROOT = Path(__file__).resolve().parents[2]


def test_a_synthetic_sweep_is_audited_with_fewer_rounds_than_its_snapshots():
    """The synthetic sweep records snapshots at 0, 10, 30 and 100 answers: ``--rounds 30``
    (the command docs/benchmarks.md quotes) kept them and the sweep's configuration refused
    them, a traceback from the worker."""
    got = experiment_script("refit_modes").audit_run(ROOT / "results" / "synthetic", 0, "after",
                                                     rounds=0)
    assert got["counts"]["refits"] == 0
    assert all(asked == [] for asked in got["asked"].values())


def test_two_folders_of_one_data_set_are_two_summaries(tmp_path):
    """Both were named by their data set ("synthetic"): one summary summed their refits, and
    its question and curve comparison paired the runs of one folder only."""
    script = experiment_script("refit_modes")
    for name in ("syn-a", "syn-b"):
        (tmp_path / name).mkdir()
        shutil.copy(ROOT / "results" / "synthetic" / "config.json", tmp_path / name)
    results = [script.audit_run(tmp_path / name, 0, policy, rounds=0)
               for name in ("syn-a", "syn-b") for policy in script.POLICIES]
    summary = script.summarize(results)
    assert list(summary) == [str(tmp_path / "syn-a"), str(tmp_path / "syn-b")]
    strategies = len(results[0]["asked"])
    assert all(s["after"]["runs_strategies"] == strategies for s in summary.values())
