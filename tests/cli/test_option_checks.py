"""Command-line checks a mutation audit found unguarded: a port out of range, a tau2 that is
not a positive number, an option prefix, an empty or plural strategy, and option combinations
that were silently accepted; each refused in one line."""

from __future__ import annotations

import pytest


def _cli(capsys, *argv):
    from helpers import run_main

    from elicit.cli.main import main

    return run_main(main, capsys, *argv)


@pytest.mark.parametrize("value", ["65536", "-1"])
def test_serve_refuses_a_port_out_of_range_in_one_line(capsys, tmp_path, value):
    from helpers import one_line

    code, _, err = _cli(capsys, "serve", tmp_path / "none.session", "--port", value)
    assert code == 2
    assert "port must be between 0 and 65535" in one_line(err)


@pytest.mark.parametrize("value", ["0", "inf", "-2", "nan"])
def test_realdata_refuses_a_tau2_that_is_not_a_positive_number(capsys, tmp_path, value):
    from helpers import one_line

    code, _, err = _cli(capsys, "realdata", "--dataset", "amazon", "--out", tmp_path / "o",
                        "--data-dir", tmp_path / "nodata", "--tau2", value)
    assert code == 2
    assert f"--tau2 must be a positive number or 'cv', got '{value}'" in one_line(err)
    assert not (tmp_path / "o").exists()


def test_a_prefix_of_an_option_is_refused_by_the_parser_before_anything_runs(capsys):
    """`--run 7` is not `--runs 7`: refused by parsing alone (with prefixes allowed, the
    command line test of this would start a whole sweep instead of failing)."""
    from elicit.cli.main import build_parser

    with pytest.raises(SystemExit) as e:
        build_parser().parse_args(["realdata", "--dataset", "amazon", "--run", "7",
                                   "--out", "o"])
    assert e.value.code == 2
    assert "unrecognized arguments: --run 7" in capsys.readouterr().err


@pytest.mark.parametrize("argv, message", [
    (["realdata", "--dataset", "amazon", "--out", "o", "--strategies", " , "],
     "unknown strategy ' , '; choose from random, nonsequential, sequential"),
    (["session", "new", "--out", "s.session", "--strategy", "random,sequential"],
     "give one strategy, got 'random,sequential'"),
])
def test_an_empty_or_plural_strategy_is_refused_by_the_parser(capsys, argv, message):
    from helpers import one_line

    from elicit.cli.main import build_parser

    with pytest.raises(SystemExit) as e:
        build_parser().parse_args(argv)
    assert e.value.code == 2
    assert message in one_line(capsys.readouterr().err)


@pytest.mark.parametrize("meta", [["--meta-features", "ppmi"], ["--meta-dim", "4"]])
def test_meta_options_with_an_npz_file_are_refused_in_one_line(capsys, tmp_path, meta):
    from helpers import one_line

    code, _, err = _cli(capsys, "session", "new", "--from-npz", tmp_path / "d.npz", *meta,
                        "--out", tmp_path / "s.session")
    assert code == 2
    assert "--meta-features/--meta-dim do not go with --from-npz" in one_line(err)
    assert not (tmp_path / "s.session").exists()


def test_run_with_a_table_is_refused_in_one_line(capsys, tmp_path):
    from helpers import one_line

    code, _, err = _cli(capsys, "session", "new", "--from-csv", tmp_path / "t.csv", "--target",
                        "y", "--run", "3", "--out", tmp_path / "s.session")
    assert code == 2
    assert "--run goes with --dataset or --corpus only" in one_line(err)


