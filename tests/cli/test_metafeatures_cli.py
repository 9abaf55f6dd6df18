"""The meta-feature options on the command line."""

from __future__ import annotations

import functools
import re

import pandas as pd
import pytest
from helpers import one_line, run_main

from elicit.cli.main import main

# the sweeps here are read by their tables: figures drawn, not saved (conftest)
pytestmark = pytest.mark.usefixtures("unsaved_figures")

cli = functools.partial(run_main, main)


def test_realdata_parser_accepts_meta_options():
    from elicit.cli.main import build_parser

    args = build_parser().parse_args(["realdata", "--dataset", "amazon", "--out", "x",
                                      "--meta-features", "ppmi", "--meta-dim", "25"])
    assert args.meta_features == "ppmi" and args.meta_dim == "25"
    args = build_parser().parse_args(["realdata", "--dataset", "amazon", "--out", "x"])
    assert args.meta_features is None and args.meta_dim is None


@pytest.mark.parametrize("extra, message", [
    (["--meta-features", "tfidf"], r"^elicit: error: --meta-features 'tfidf' is neither one "
                                   r"of counts, ppmi, lsa nor an existing file$"),
    (["--meta-features", "ppmi", "--meta-dim", "0"],
     r"^elicit: error: --meta-dim must be a positive integer, got '0'$"),
    (["--meta-features", "lsa", "--meta-dim", "ten"],
     r"^elicit: error: --meta-dim must be a positive integer, got 'ten'$"),
    (["--meta-features", "counts", "--meta-dim", "5"],
     r"^elicit: error: --meta-dim goes with --meta-features ppmi or lsa"),
    # --paper's meta-features are the paper's counts, which have no dimensions
    (["--paper", "--meta-dim", "5"],
     r"^elicit: error: --meta-dim goes with --meta-features ppmi or lsa only \(the "
     r"dimensions of the embedding\), not with 'counts'$"),
])
def test_realdata_cli_bad_meta_options(capsys, tmp_path, extra, message):
    code, _, err = cli(capsys, "realdata", "--dataset", "amazon", "--out",
                       str(tmp_path / "o"), "--data-dir", str(tmp_path / "nodata"), *extra)
    assert code == 2
    assert re.search(message, one_line(err))
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("argv, message", [
    (["--from-csv", "{tmp}/t.csv", "--target", "y", "--meta-features", "ppmi"],
     r"^elicit: error: --meta-features ppmi learns from review text: use it with --dataset "
     r"or --corpus"),
    (["--corpus", "{tmp}/c.jsonl", "--meta-features", "counts", "--meta-dim", "4"],
     r"^elicit: error: --meta-dim goes with --meta-features ppmi or lsa"),
    # it said "not with 'counts'", an option the user had not given (issue 24)
    (["--from-csv", "{tmp}/t.csv", "--target", "y", "--meta-dim", "4"],
     r"^elicit: error: --meta-dim does not go with --from-csv: it sets the dimensions of a "
     r"ppmi or lsa embedding of review text \(--dataset, --corpus\); a table's meta-features "
     r"are how its columns correlate, or a --meta-features FILE$"),
    (["--corpus", "{tmp}/c.jsonl", "--meta-features", "nope"],
     r"^elicit: error: --meta-features 'nope' is neither one of counts, ppmi, lsa nor"),
])
def test_session_new_bad_meta_options(capsys, tmp_path, argv, message):
    pd.DataFrame({"a": [1.0, 2, 3], "b": [3.0, 1, 2], "y": [1.0, 0, 1]}).to_csv(
        tmp_path / "t.csv", index=False)
    (tmp_path / "c.jsonl").write_text("")
    argv = [a.replace("{tmp}", str(tmp_path)) for a in argv]
    code, _, err = cli(capsys, "session", "new", *argv, "--out", str(tmp_path / "s.session"))
    assert code == 2
    assert re.search(message, one_line(err))
