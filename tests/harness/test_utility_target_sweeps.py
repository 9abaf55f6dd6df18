"""A sweep folder records its utility target."""

from __future__ import annotations

import json

import pytest

from elicit.errors import ElicitError
from elicit.harness.store import SweepStore


def test_realdata_config_without_a_target_was_predictive(tmp_path):
    cfg = {"dataset": "amazon", "seed": 0, "utility": "fast"}
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    (tmp_path / "parts").mkdir()   # a folder with a result (a failed start's may be replaced)
    (tmp_path / "parts" / "run000.json").write_text("{}")
    SweepStore.open(tmp_path, {**cfg, "utility_target": "predictive"})
    assert json.loads((tmp_path / "config.json").read_text())["utility_target"] == "predictive"
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    with pytest.raises(ElicitError, match="utility_target: 'predictive' there, 'params' now"):
        SweepStore.open(tmp_path, {**cfg, "utility_target": "params"})
