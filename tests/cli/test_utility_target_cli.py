"""The utility target on the command line and in a sweep configuration."""

from __future__ import annotations

import numpy as np
import pytest

from elicit.cli.main import build_parser
from elicit.cli.main import main as cli_main
from elicit.elicitation.elicitor import Elicitor
from elicit.elicitation.settings import RoundSettings
from elicit.errors import ElicitError
from elicit.harness.sweep import SweepConfig
from elicit.model.simulate import make_synthetic

# the sweeps here are read by their tables: figures drawn, not saved (conftest)
pytestmark = pytest.mark.usefixtures("unsaved_figures")


def test_a_bad_target_is_a_one_line_error():
    sd = make_synthetic(np.random.default_rng(0))
    with pytest.raises(ElicitError, match=r"^utility target must be one of predictive, params, "
                                          r"got 'kl'$"):
        Elicitor(sd.X, sd.y, sd.U, target="kl")
    with pytest.raises(ElicitError, match="utility target must be one of"):
        SweepConfig("synthetic", 1, 1, settings=RoundSettings(utility_target="kl"))
    with pytest.raises(ElicitError, match="params utility target uses the shipped model"):
        SweepConfig("synthetic", 1, 1,
                    settings=RoundSettings(engine="cmdstan", utility="exact",
                                           stan_file="my.stan", utility_target="params"))


def test_cli_bad_utility_target(capsys):
    with pytest.raises(SystemExit) as e:
        cli_main(["synthetic", "--out", "x", "--utility-target", "kl"])
    assert e.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    # argparse's own report (as for every other choice option), on one line
    assert err[-1].startswith("elicit synthetic: error: argument --utility-target: invalid "
                              "choice: 'kl'")




def test_cli_utility_target_option():
    parser = build_parser()
    for cmd in (["synthetic", "--out", "x"], ["realdata", "--dataset", "amazon", "--out", "x"]):
        assert parser.parse_args(cmd).utility_target == "predictive"
        assert parser.parse_args([*cmd, "--utility-target", "params"]).utility_target == "params"


def test_cli_session_new_takes_the_target():
    args = build_parser().parse_args(["session", "new", "--from-npz", "x.npz", "--out", "o",
                                      "--utility-target", "params"])
    assert args.utility_target == "params"
