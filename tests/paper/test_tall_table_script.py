"""``experiments/tall_table.py`` leaves no table behind."""

import tempfile

from helpers import experiment_script


def test_a_size_removes_its_table_and_session_file(tmp_path, monkeypatch):
    """Every size left its CSV and session file in a temporary folder of its own (about
    600 MB of CSV at the documented 1,000,000 x 30)."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    got = experiment_script("tall_table").one(50, 5, 1)
    assert got["n"] == 50 and "refused" not in got
    assert list(tmp_path.iterdir()) == []
