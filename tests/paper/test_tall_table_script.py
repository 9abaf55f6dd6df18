"""``experiments/tall_table.py`` leaves no table behind."""

import importlib.util
import tempfile
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "experiments" / "tall_table.py"


def _script():
    spec = importlib.util.spec_from_file_location("tall_table_under_test", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_size_removes_its_table_and_session_file(tmp_path, monkeypatch):
    """Every size left its CSV and session file in a temporary folder of its own (about
    600 MB of CSV at the documented 1,000,000 x 30)."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    got = _script().one(50, 5, 1)
    assert got["n"] == 50 and "refused" not in got
    assert list(tmp_path.iterdir()) == []
