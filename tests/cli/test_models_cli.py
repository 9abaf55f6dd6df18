"""The named models on the command line: one-line errors and elicit models."""

from __future__ import annotations

import numpy as np
import pytest

from elicit.cli.main import main
from elicit.elicitation.settings import RoundSettings
from elicit.errors import ElicitError
from elicit.harness.sweep import SweepConfig
from elicit.model.spec import Hyper
from elicit.model.variants import (
    MODELS,
    PAPER,
    get_model,
)

# the sweeps here are read by their tables: figures drawn, not saved (conftest)
pytestmark = pytest.mark.usefixtures("unsaved_figures")


def test_unknown_model_is_one_line_error_listing_names():
    with pytest.raises(ElicitError, match=r"unknown model 'bogus'; choose one of paper, "
                                          r"tied-threshold, known-coupling, known-coupling-tied"):
        Hyper(model="bogus")
    with pytest.raises(ElicitError, match="unknown model 'Paper'"):
        SweepConfig("x", 1, 1, settings=RoundSettings(model="Paper"))
    assert Hyper().model == PAPER and get_model(PAPER).threshold_sd == 0.5


def test_models_command_lists_every_model_and_its_program(capsys, tmp_path, monkeypatch):
    # It printed stan/elicit.stan, a path of the checkout only: an installed copy keeps the
    # program in site-packages, the file to copy for --stan-file. The program's own path is
    # found from any folder.
    from elicit.engines.contract import stan_folder

    monkeypatch.chdir(tmp_path)
    assert main(["models"]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    shipped = stan_folder() / "elicit.stan"
    assert shipped.is_absolute() and shipped.is_file()
    for m in MODELS.values():
        at = lines.index(f"{m.name}: {m.assumes}")
        assert lines[at + 1].startswith(f"    {shipped}"), lines[at + 1]
    assert f"    {shipped} (data: threshold_sd = 0.02)\n" in out      # tied-threshold
    assert f"    {shipped} (data: coupled = J)\n" in out              # known-coupling
    assert "(data: threshold_sd = 0.02, coupled = J)" in out      # known-coupling-tied


@pytest.mark.parametrize("argv", [
    ["synthetic", "--runs", "1", "--rounds", "1"],
    ["realdata", "--dataset", "amazon", "--runs", "1", "--rounds", "1"],
])
def test_bogus_model_is_a_one_line_cli_error(argv, tmp_path, capsys):
    assert main([*argv, "--out", str(tmp_path / "o"), "--model", "bogus"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("elicit: error: unknown model 'bogus'; choose one of paper,")
    assert err.count("\n") == 1
    assert not (tmp_path / "o" / "config.json").exists()


def test_session_new_bogus_model_is_a_one_line_error(tmp_path, capsys):
    rng = np.random.default_rng(0)
    npz = tmp_path / "p.npz"
    np.savez(npz, X=rng.normal(size=(8, 4)), y=rng.normal(size=8),
             U=rng.poisson(1.0, (4, 2)).astype(float))
    assert main(["session", "new", "--from-npz", str(npz), "--out", str(tmp_path / "s.json"),
                 "--model", "bogus"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("elicit: error: unknown model 'bogus'") and err.count("\n") == 1


@pytest.mark.parametrize("command", [["synthetic"], ["realdata"], ["session", "new"]])
def test_the_model_help_names_the_default_of_every_kind(command, capsys):
    # the --questions take a model of their own when none is named: the help says which,
    # as docs/models.md gives them (not recomputed by model_for, which the help itself calls)
    from elicit.elicitation.kinds import KINDS

    with pytest.raises(SystemExit):
        main([*command, "--help"])
    text = " ".join(capsys.readouterr().out.split()).replace("- ", "-")  # wrapped at a -
    documented = {"relevance": "relevance with feature questions",
                  "direction": "direction with direction questions"}
    assert {k.name for k in KINDS.values() if k.model is not None} == set(documented), (
        "a kind with a model of its own: add the default docs/models.md gives it")
    for said in [*documented.values(), "relevance-direction with all"]:
        assert said in text, said
