"""A sweep folder belongs to one named model."""

from __future__ import annotations

import json

import pytest

from elicit.cli.main import main
from elicit.elicitation.settings import RoundSettings
from elicit.errors import ElicitError
from elicit.harness.store import SweepStore
from elicit.harness.sweep import SweepConfig
from elicit.model.variants import (
    PAPER,
)

# the sweeps here are read by their tables: figures drawn, not saved (conftest)
pytestmark = pytest.mark.usefixtures("unsaved_figures")


def test_synthetic_sweep_refuses_parts_of_another_model(tmp_path, capsys):
    out = tmp_path / "syn"
    args = ["synthetic", "--runs", "1", "--rounds", "1", "--strategies", "random",
            "--engine", "numpy", "--quiet", "--out", str(out)]
    assert main([*args, "--model", "tied-threshold"]) == 0
    part = json.loads((out / "parts" / "synthetic" / "random" / "run000.json").read_text())
    assert part["model"] == "tied-threshold"
    assert main(args) == 2
    # config.json names the difference before any part is read
    assert ("holds results of other settings (model: 'tied-threshold' there, 'paper' now)"
            in capsys.readouterr().err)
    # the Python sweep gets the same refusal from the folder's config.json
    from elicit.harness.sweep import sweep

    with pytest.raises(ElicitError, match="model: 'tied-threshold' there, 'paper' now"):
        sweep(None, SweepConfig("synthetic", 1, 1, ("random",),
                                settings=RoundSettings(engine="numpy")), out,
              progress=False)


def test_config_without_model_key_counts_as_paper(tmp_path):
    cfg = {"seed": 0, "rounds": 5}
    (tmp_path / "config.json").write_text(json.dumps(cfg))   # a folder of before --model
    (tmp_path / "parts").mkdir()                              # with a result
    (tmp_path / "parts" / "run000.json").write_text("{}")
    SweepStore.open(tmp_path, {**cfg, "model": PAPER})
    with pytest.raises(ElicitError, match=r"model: 'paper' there, 'tied-threshold' now"):
        SweepStore.open(tmp_path, {**cfg, "model": "tied-threshold"})
