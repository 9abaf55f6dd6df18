"""``experiments/tall_table.py`` leaves no table behind, and shows a failed size's own error."""

import sys
import tempfile

import pytest
from helpers import experiment_script


def test_a_size_removes_its_table_and_session_file(tmp_path, monkeypatch):
    """Every size left its CSV and session file in a temporary folder of its own (about
    600 MB of CSV at the documented 1,000,000 x 30)."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    got = experiment_script("tall_table").one(50, 5, 1)
    assert got["n"] == 50 and "refused" not in got
    assert list(tmp_path.iterdir()) == []


def test_a_size_whose_process_fails_shows_that_processs_error(tmp_path, monkeypatch):
    """A size's process that failed (not a refusal of the package) ended the script in a
    CalledProcessError that showed none of the process's own error."""
    worker = tmp_path / "python"
    worker.write_text("#!/bin/sh\necho 'MemoryError: Unable to allocate 6.0 GiB' >&2\nexit 3\n")
    worker.chmod(0o755)
    monkeypatch.setattr(sys, "executable", str(worker))
    monkeypatch.setattr(sys, "argv", ["tall_table.py", "--rows", "10", "--features", "5"])
    with pytest.raises(SystemExit) as stop:
        experiment_script("tall_table").main()
    said = str(stop.value.code)
    assert said.startswith("the 10 x 5 table's process failed (exit 3)"), said
    assert "MemoryError: Unable to allocate 6.0 GiB" in said
