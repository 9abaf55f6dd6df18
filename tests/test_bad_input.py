"""Bad input across the session API, the CLI and the web page: every case asserts its message.

The counts of cases per front end are recorded in docs/reliability.md.
"""

from __future__ import annotations

import functools
import io
import json
import os
import re
import runpy
import shutil
import socket
import sqlite3
import subprocess
import sys
from html import unescape
from pathlib import Path

import numpy as np
import pytest
from conftest import SESSION_NAMES as NAMES
from conftest import make_session_data as make_data
from conftest import needs_data, read_only_run, read_only_runs
from helpers import (
    SAME,
    create_session,
    leave_hot_journal,
    one_line,
    page_state,
    run_main,
    sql_edit,
    sql_rows,
)

from elicit.cli.main import main as cli_main
from elicit.elicitation.elicitor import Elicitor
from elicit.elicitation.settings import RoundSettings
from elicit.errors import ElicitError
from elicit.model.kernel import kernel
from elicit.model.spec import Hyper
from elicit.session.session import Session
from elicit.session.store import FORMAT_VERSION
from elicit.session.terminal import run_ask

# the sweeps here are read by their tables: figures drawn, not saved (conftest)
pytestmark = pytest.mark.usefixtures("unsaved_figures")



@pytest.fixture(scope="module")
def new_session_file(tmp_path_factory) -> Path:
    """A new session, made once: each test that takes ``path`` gets a copy of its own (65
    tests take one, and a copy costs a hundredth of a creation)."""
    p = tmp_path_factory.mktemp("new") / "b.session"
    create_session(p).close()
    return p


@pytest.fixture
def path(tmp_path, new_session_file):
    p = tmp_path / "b.session"
    shutil.copyfile(new_session_file, p)
    return p


@pytest.fixture
def sess(path):
    s = Session.open(path)
    yield s
    s.close()


# --------------------------------------------------------------------------------------------
# API: creating a session
# --------------------------------------------------------------------------------------------

def _nan_in(name):
    X, y, U = make_data()
    {"X": X, "y": y, "U": U}[name].flat[3] = np.nan
    return X, y, U


def _frame(columns):
    import pandas as pd

    return pd.DataFrame(make_data()[0], columns=columns)


CREATE_CASES = [
    ("duplicate names", lambda: make_data(), {"feature_names": NAMES[:7] + ["price"]},
     r"duplicate feature name 'price' \(features 0 and 7\)"),
    ("empty name", lambda: make_data(), {"feature_names": NAMES[:7] + ["  "]},
     r"feature name 7 is empty"),
    ("too few names", lambda: make_data(), {"feature_names": NAMES[:5]},
     r"got 5 feature names for 8 features"),
    ("non-string name", lambda: make_data(), {"feature_names": NAMES[:7] + [3]},
     r"feature name 7 must be a string"),
    ("one string as names", lambda: make_data(), {"feature_names": "price"},
     r"feature_names must be a list of strings"),
    ("NaN in X", lambda: _nan_in("X"), {}, r"X contains 1 NaN or infinite value"),
    ("NaN in y", lambda: _nan_in("y"), {}, r"y contains 1 NaN or infinite value"),
    ("NaN in U", lambda: _nan_in("U"), {}, r"meta-features U contains 1 NaN"),
    ("y too short", lambda: (make_data()[0], make_data()[1][:5], make_data()[2]), {},
     r"X has 12 rows but y has 5 entries"),
    ("U rows", lambda: (make_data()[0], make_data()[1], make_data()[2][:6]), {},
     r"meta-features have 6 rows but X has 8 features"),
    ("X 1-D", lambda: (make_data()[0][0], make_data()[1], make_data()[2]), {},
     r"X must be a 2-D array"),
    ("empty data", lambda: (np.zeros((0, 8)), np.zeros(0), make_data()[2]), {},
     r"X is empty \(shape \(0, 8\)\)"),
    ("one feature", lambda: (np.ones((4, 1)), np.ones(4), np.ones((1, 2))),
     {"feature_names": ["a"]}, r"need at least 2 features"),
    ("text data", lambda: ([["a", "b"]], [1.0], [[1.0], [2.0]]), {}, r"X must be numeric"),
    # a DataFrame naming a column twice was "X must be numeric; column(s) 'price', 'price'"
    ("a DataFrame naming a column twice", lambda: (_frame(NAMES[:7] + ["price"]),
                                                   *make_data()[1:]),
     {"feature_names": None}, r"duplicate feature name 'price' \(features 0 and 7\)"),
    # complex values lost their imaginary part with a ComplexWarning
    ("complex X", lambda: (_frame(NAMES).astype(complex), *make_data()[1:]),
     {"feature_names": None}, r"X must be numeric \(real\); column\(s\) 'price', .* are not"),
    ("complex U", lambda: (*make_data()[:2], make_data()[2] * 1j), {},
     r"^meta-features U must be real numbers, got complex values$"),
    ("bad strategy", lambda: make_data(), {"strategy": "greedy"},
     r"unknown strategy 'greedy'; choose one of random, nonsequential, sequential"),
    ("bad utility", lambda: make_data(), {"utility": "approx"},
     r"utility must be 'fast' or 'exact'"),
    ("bad engine", lambda: make_data(), {"engine": "jax"}, r"unknown engine 'jax'"),
    ("negative seed", lambda: make_data(), {"seed": -1},
     r"seed must be a non-negative integer"),
    ("texts for unknown feature", lambda: make_data(), {"texts": {"pricey": ["x"]}},
     r"texts names an unknown feature 'pricey'"),
    ("texts wrong length", lambda: make_data(), {"texts": [["x"]] * 3},
     r"texts has 3 entries for 8 features"),
    ("bad hyper", lambda: make_data(), {"hyper": {"tau2": 1}},
     r"hyper must be an elicit.model.Hyper"),
]


@pytest.mark.parametrize("what, data, kw, message", CREATE_CASES,
                         ids=[c[0] for c in CREATE_CASES])
def test_create_refuses_bad_input(tmp_path, what, data, kw, message):
    X, y, U = data()
    kw = {"feature_names": NAMES if np.ndim(X) == 2 and np.shape(X)[1] == 8 else None,
          "engine": "numpy", **kw}
    with pytest.raises(ElicitError, match=message):
        Session.create(X, y, U, path=tmp_path / "x.session", **kw)
    assert not (tmp_path / "x.session").exists()


def test_the_kernel_takes_meta_features_as_a_list():
    """``elicit.kernel(U.tolist(), gamma)``: AttributeError: 'list' object has no attribute
    'shape'."""
    U = np.random.default_rng(0).normal(size=(4, 2))
    np.testing.assert_array_equal(kernel(U.tolist(), [1.0, 0.5]), kernel(U, np.array([1.0, 0.5])))


def test_bad_hyperparameter_value():
    with pytest.raises(ElicitError, match="hyperparameter tau2 must be a positive number"):
        Hyper(tau2=-1.0)


def test_a_noise_prior_with_no_posterior_mean_on_one_row_is_refused():
    """a* = a_sigma + n/2 must exceed 1 for sigma^2's posterior mean b*/(a* - 1): one row and
    a_sigma 0.5 gave a ZeroDivisionError traceback, a_sigma 0.3 a negative noise variance."""
    from elicit.estimator import ElicitRegressor
    from elicit.model.spec import ModelData

    rng = np.random.default_rng(0)
    X, y, U = rng.normal(size=(1, 4)), np.array([0.7]), rng.normal(size=(4, 2))
    for a in (0.5, 0.3):
        with pytest.raises(ElicitError, match=r"^a_sigma must exceed 0.5 with 1 row"):
            ModelData(X, y, U, Hyper(a_sigma=a, threshold_mean=1.0))
        with pytest.raises(ElicitError, match=r"^a_sigma must exceed 0.5 with 1 row"):
            ElicitRegressor(U, a_sigma=a, tau2=0.5, standardize=False, normalize_y=False,
                            fit_intercept=False).fit(X, y)
    ModelData(X, y, U, Hyper(a_sigma=0.6, threshold_mean=1.0))   # a* = 1.1: fine


def test_numpy_scalar_hyperparameters_make_a_session(tmp_path):
    """Hyper kept numpy scalars as given: Session.create failed writing its JSON with a
    TypeError traceback (Object of type int64 is not JSON serializable), and a float32
    threshold_mean was refused as "not a positive number"."""
    hyper = Hyper(tau2=np.int64(1), a_sigma=np.float32(2.0), threshold_mean=np.float32(1.5))
    assert all(type(getattr(hyper, n)) is float
               for n in ("a_sigma", "b_sigma", "tau2", "a_tau", "b_tau", "threshold_mean"))
    path = tmp_path / "s.session"
    create_session(path, hyper=hyper).close()
    with Session.open(path, engine="numpy") as sess:
        assert sess.elicitor.hyper.tau2 == 1.0


def test_create_refuses_an_existing_file(path):
    before = path.read_bytes()
    with pytest.raises(ElicitError, match=r"already exists; pass overwrite=True"):
        create_session(path)
    assert path.read_bytes() == before


def test_create_refuses_a_missing_directory(tmp_path):
    with pytest.raises(ElicitError, match=r"directory .*nowhere does not exist"):
        create_session(tmp_path / "nowhere" / "x.session")


# --------------------------------------------------------------------------------------------
# API: opening files
# --------------------------------------------------------------------------------------------

def _truncate(p):
    data = p.read_bytes()
    p.write_bytes(data[: len(data) // 2])


def _corrupt(p):
    data = bytearray(p.read_bytes())
    # Overwrite the b-tree page of the first table after the schema page.
    data[4096 + 8: 4096 + 1000] = b"\xa5" * (1000 - 8)
    p.write_bytes(bytes(data))


def _newer(p):
    sql_edit(p, "UPDATE meta SET value = ? WHERE key = 'format_version'",
             json.dumps(FORMAT_VERSION + 1))


def _other_sqlite(p):
    p.unlink()
    sql_edit(p, "CREATE TABLE notes (x TEXT)")


def _bad_array(p):
    raw = sqlite3.connect(p)
    X = make_data()[0]
    X[0, 0] = 42.0
    buf = io.BytesIO()
    np.save(buf, X)
    raw.execute("UPDATE arrays SET npy = ? WHERE name = 'X'", (buf.getvalue(),))
    raw.commit()
    raw.close()


def _meta(key, value):
    """A damage: the meta data's ``key`` set to ``value`` behind elicit's back."""
    return lambda p: sql_edit(p, "INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", key,
                              json.dumps(value))


OPEN_CASES = [
    ("truncated", _truncate, r"is truncated"),
    ("corrupted", _corrupt, r"is corrupted"),
    ("newer format", _newer, rf"written by a newer elicit \(format version {FORMAT_VERSION + 1}; "
                             rf"this elicit reads up to {FORMAT_VERSION}\)"),
    ("other sqlite", _other_sqlite, r"an SQLite database but not an elicit session"),
    ("text file", lambda p: p.write_text("hello\n"), r"is not an elicit session file"),
    ("empty file", lambda p: p.write_bytes(b""), r"is empty \(0 bytes\)"),
    ("tampered array", _bad_array, r"stored array\(s\) X do not match the data hash"),
    # these ended history and ask in a ValueError or AttributeError traceback
    ("excluded unknown", _meta("excluded_features", {"nope": "why"}),
     r"is corrupted: meta excluded_features is not what elicit writes"),
    ("excluded list", _meta("excluded_features", ["lid"]),
     r"is corrupted: meta excluded_features is not what elicit writes"),
    ("description number", _meta("description", 42),
     r"is corrupted: meta description is not what elicit writes"),
]


@pytest.mark.parametrize("what, damage, message", OPEN_CASES, ids=[c[0] for c in OPEN_CASES])
def test_open_refuses_damaged_files_and_leaves_them_untouched(path, what, damage, message):
    damage(path)
    before = path.read_bytes()
    with pytest.raises(ElicitError, match=message):
        Session.open(path)
    assert path.read_bytes() == before, "a refused file must never be written"
    # ... and creating over it without overwrite is refused too.
    with pytest.raises(ElicitError, match="already exists"):
        create_session(path)
    assert path.read_bytes() == before


def test_open_missing_file(tmp_path):
    with pytest.raises(ElicitError, match=r"session file .*missing.session does not exist"):
        Session.open(tmp_path / "missing.session")


def test_open_a_directory(tmp_path):
    with pytest.raises(ElicitError, match=r"is a directory, not a session file"):
        Session.open(tmp_path)


def test_open_with_other_data(path):
    X, y, U = make_data(seed=2)
    with pytest.raises(ElicitError, match=r"was created for different data: X differs"):
        Session.open(path, X=X, y=y, meta_features=U)


def test_open_with_other_y_shape(path):
    with pytest.raises(ElicitError, match=r"y differs \(session: shape \(12,\)"):
        Session.open(path, y=np.zeros(11))


# --------------------------------------------------------------------------------------------
# API: answering
# --------------------------------------------------------------------------------------------

def test_invalid_answer_value(sess):
    q = sess.next_query()
    with pytest.raises(ElicitError, match=r"invalid answer 'maybe': use 'similar', 'dissimilar' "
                                          r"or 'dont_know'"):
        sess.answer(q, "maybe")
    assert sess.history.empty


def test_answer_not_asked(sess):
    with pytest.raises(ElicitError, match=r"query 999 was not asked in this session"):
        sess.answer(999, "similar")


def test_answer_query_of_another_session(sess, tmp_path):
    with create_session(tmp_path / "o.session") as other:
        q = other.next_query()
    with pytest.raises(ElicitError, match=r"belongs to another session"):
        sess.answer(q, "similar")


def test_answer_something_that_is_not_a_query(sess):
    with pytest.raises(ElicitError, match=r"expected a query from next_query\(\)"):
        sess.answer(("price", "lid"), "similar")


def test_already_answered(sess):
    q = sess.next_query()
    sess.answer(q, "similar")
    with pytest.raises(ElicitError, match=r"was already answered \('similar', answer 1 at"):
        sess.answer(q, "similar")


def test_comment_not_text(sess):
    with pytest.raises(ElicitError, match=r"comment must be text, got int"):
        sess.answer(sess.next_query(), "similar", comment=5)


def test_comment_too_long(sess):
    with pytest.raises(ElicitError, match=r"comment is 10001 characters long; the limit is "
                                          r"10000"):
        sess.answer(sess.next_query(), "similar", comment="x" * 10001)


def test_undo_nothing(sess):
    with pytest.raises(ElicitError, match=r"there is no answer to undo"):
        sess.undo()


def test_unknown_feature_name(sess):
    with pytest.raises(ElicitError, match=r"unknown feature name 'pricey'"):
        sess.texts("pricey")
    with pytest.raises(ElicitError, match=r"unknown feature name 'pricey'"):
        sess.plot_K(features=["price", "pricey"])


@pytest.mark.parametrize("bad", [0, -1, 2.5, "8", True])
def test_plot_K_refuses_a_max_features_that_is_not_a_positive_whole_number(sess, bad):
    # 0 ended in an IndexError, 2.5 in a TypeError, -1 silently showed 7 of the 8 features
    with pytest.raises(ElicitError, match=r"^max_features must be a positive integer "
                                          rf"number of features, got {bad!r}$"):
        sess.plot_K(max_features=bad)


def test_plot_K_refuses_a_feature_named_twice(sess):
    # "lid" is feature 3: it was drawn twice and the title counted "(2 of 8 features)"
    with pytest.raises(ElicitError, match=r"^features name 'lid' twice; name each feature once$"):
        sess.plot_K(features=["lid", 3])


def test_feature_index_out_of_range(sess):
    with pytest.raises(ElicitError, match=r"feature index 8 out of range 0..7"):
        sess.texts(8)


def test_predict_wrong_shape(sess):
    with pytest.raises(ElicitError, match=r"X_new must have shape \(m, 8\), got \(2, 3\)"):
        sess.predict(np.zeros((2, 3)))


def test_export_bad_suffix(sess, tmp_path):
    with pytest.raises(ElicitError, match=r"use a .nc \(netCDF\) or .json file name"):
        sess.export_prior(tmp_path / "prior.txt")


def test_use_after_close(path):
    s = Session.open(path)
    s.close()
    with pytest.raises(ElicitError, match=r"is closed"):
        s.next_query()


# --------------------------------------------------------------------------------------------
# CLI
# --------------------------------------------------------------------------------------------

run_cli = functools.partial(run_main, cli_main)


def new_from_csv(capsys, tmp_path, path, *options: str):
    """``elicit session new --from-csv path --target y *options`` into ``tmp_path/s.session``
    with the numpy engine: ``(status, stdout, stderr)``."""
    return run_cli(capsys, "session", "new", "--from-csv", str(path), "--target", "y", *options,
                   "--out", str(tmp_path / "s.session"), "--engine", "numpy")


def assert_one_line_error(err: str, message: str) -> None:
    line = one_line(err)
    assert re.search(message, line), line


@pytest.mark.parametrize("argv, message", [
    (["ask", "{tmp}/missing.session"], r"elicit: error: session file .*missing.session does "
                                        r"not exist"),
    (["history", "{tmp}/missing.session"], r"does not exist"),
    (["export", "{path}", "{tmp}/prior.xlsx"],
     r"use a .nc \(netCDF\) or .json file name for the prior, or .csv for the history$"),
    (["export", "{path}", "{tmp}/no/dir/prior.json"], r"directory .*no/dir does not exist"),
    (["session", "new", "--from-npz", "{tmp}/none.npz", "--out", "{tmp}/n.session"],
     r"--from-npz file .*none.npz does not exist"),
    (["session", "new", "--from-npz", "{tmp}/bad.npz", "--out", "{tmp}/n.session"],
     r"has no array\(s\) y; it must hold X"),
    (["session", "new", "--from-npz", "{tmp}/good.npz", "--out", "{path}"],
     r"already exists; pass overwrite=True \(CLI: --overwrite\)"),
    (["session", "new", "--from-npz", "{tmp}/dup.npz", "--out", "{tmp}/n.session"],
     r"duplicate feature name 'a'"),
    (["session", "new", "--dataset", "amazon", "--data-dir", "{tmp}/nodata", "--out",
      "{tmp}/n.session"], r"data directory .*nodata .*does not exist"),
    (["session", "new", "--from-npz", "{tmp}/good.npz", "--texts", "{tmp}/t.json", "--out",
      "{tmp}/n.session"], r"--texts file .*t.json is not valid JSON"),
    (["session", "new", "--dataset", "amazon", "--run-seed", "7", "--out", "{tmp}/n.session"],
     r"--run-seed is gone: use --run 7 \(and --seed S\) for run 7 of the sweep with seed S"),
    (["session", "new", "--from-npz", "{tmp}/good.npz", "--run", "3", "--out",
      "{tmp}/n.session"], r"--run goes with --dataset or --corpus only"),
])
def test_cli_errors(capsys, tmp_path, path, argv, message):
    X, y, U = make_data()
    np.savez(tmp_path / "bad.npz", X=X)
    np.savez(tmp_path / "good.npz", X=X, y=y, U=U)
    np.savez(tmp_path / "dup.npz", X=X, y=y, U=U, feature_names=np.array(["a"] * 8))
    (tmp_path / "t.json").write_text("{not json")
    argv = [a.format(tmp=tmp_path, path=path) for a in argv]
    code, _, err = run_cli(capsys, *argv)
    assert code == 2
    assert_one_line_error(err, message)


def test_every_one_line_error_is_an_elicit_error():
    """The CLI catches one class: the engines' errors are ElicitErrors too (and stay
    RuntimeErrors for code that caught them as such)."""
    from elicit.errors import EngineError, EngineUnavailable

    for cls in (EngineError, EngineUnavailable):
        assert issubclass(cls, ElicitError) and issubclass(cls, RuntimeError)
    assert issubclass(ElicitError, ValueError)


@pytest.mark.parametrize("exc, line, status", [
    ("EngineError", "elicit: error: CmdStan optimisation failed: lbfgs: x", 2),
    ("EngineUnavailable", "elicit: error: no CmdStan (choose another engine with --engine "
                          "numpy)", 2),
    ("FileExistsError", "elicit: error: File exists: out.csv", 2),
    ("KeyboardInterrupt", "elicit: interrupted", 130),
])
def test_cli_reports_each_error_in_one_line(capsys, exc, line, status):
    """Whatever a command raises that elicit can state in one line is one line and status 2,
    for the session and the experiment commands alike (one handler)."""
    import elicit.errors
    from elicit.cli.oneline import run_command

    raised = {"EngineError": lambda: elicit.errors.EngineError(
                  "CmdStan optimisation failed: lbfgs: x"),
              "EngineUnavailable": lambda: elicit.errors.EngineUnavailable("no CmdStan"),
              "FileExistsError": lambda: FileExistsError(17, "File exists", "out.csv"),
              "KeyboardInterrupt": KeyboardInterrupt}[exc]

    def command(args):
        raise raised()

    assert run_command(command, None) == status
    assert capsys.readouterr().err == line + "\n"


def test_cli_keeps_the_traceback_of_a_bug():
    from elicit.cli.oneline import run_command

    def command(args):
        return 1 / 0

    with pytest.raises(ZeroDivisionError):
        run_command(command, None)


def test_cli_engine_unavailable_names_the_way_out(capsys, tmp_path, monkeypatch):
    """No CmdStan: the experiment commands give the session commands' hint too."""
    from elicit.cli.main import main as elicit_main

    monkeypatch.setenv("CMDSTAN", str(tmp_path / "no-cmdstan"))
    X, y, U = make_data()
    np.savez(tmp_path / "good.npz", X=X, y=y, U=U)
    for argv in (["session", "new", "--from-npz", str(tmp_path / "good.npz"), "--out",
                  str(tmp_path / "n.session"), "--engine", "cmdstan"],
                 ["bench", "--size", "synthetic", "--rounds", "1", "--no-exact", "--engine",
                  "cmdstan"]):
        assert elicit_main(argv) == 2
        out, err = capsys.readouterr()
        # a CMDSTAN that names no folder is said as such (it was "needs an installation ...
        # point CMDSTAN at one", which it did)
        assert_one_line_error(err, r"^elicit: error: CMDSTAN is set to .*no-cmdstan, which is "
                                   r"not a CmdStan installation \(no such folder\).*\(choose "
                                   r"another engine with --engine numpy\)$")
    assert not (tmp_path / "n.session").exists()


def test_cli_serve_without_flask_names_the_extra(capsys, path, monkeypatch):
    """Flask is the optional extra ``web``: an installed elicit without it says how to get it
    (it was a traceback ending in "No module named 'flask'")."""
    for name in [m for m in sys.modules if m.startswith("elicit.session.web")]:
        monkeypatch.delitem(sys.modules, name)  # imported again, and put back after the test
    monkeypatch.setitem(sys.modules, "flask", None)  # `import flask` fails as if not installed
    assert cli_main(["serve", str(path)]) == 2
    assert_one_line_error(capsys.readouterr().err,
                          r"^elicit: error: .*needs Flask: pip install 'elicit\[web\]'")


def test_cli_bad_option_values(capsys, path):
    with pytest.raises(SystemExit, match="^2$") as e:
        cli_main(["serve", str(path), "--port", "70000"])
    assert e.value.code == 2
    assert "port must be between 0 and 65535, got 70000" in capsys.readouterr().err
    with pytest.raises(SystemExit, match="^2$") as e:
        cli_main(["ask", str(path), "--batch", "0"])
    assert e.value.code == 2
    assert "expected a positive integer, got 0" in capsys.readouterr().err


def test_cli_port_in_use(capsys, path):
    with socket.socket() as blocker:
        blocker.bind(("127.0.0.1", 0))
        blocker.listen(1)
        port = blocker.getsockname()[1]
        code, _, err = run_cli(capsys, "serve", str(path), "--port", str(port))
    assert code == 2
    assert_one_line_error(err, rf"port {port} on 127.0.0.1 is already in use; stop the program "
                               r"using it or choose another port with --port")


def test_cli_corrupted_file_in_a_real_process(path):
    """End to end through the interpreter: one line, exit status 2, no traceback."""
    _truncate(path)
    r = subprocess.run([sys.executable, "-m", "elicit", "ask", str(path)],
                       capture_output=True, text=True, timeout=600, stdin=subprocess.DEVNULL)
    assert r.returncode == 2
    assert_one_line_error(r.stderr, r"elicit: error: session file .* is truncated")


def test_terminal_ui_bad_keys(sess):
    out = io.StringIO()
    code = run_ask(sess, io.StringIO("x\nyes please\nu\ns\nq\n"), out)
    text = out.getvalue()
    assert code == 0
    assert "unknown key 'x': use s, d, ?, k, u or q" in text
    assert "unknown key 'yes': use s, d, ?, k, u or q" in text
    assert "error: there is no answer to undo" in text
    assert text.count("saved: ") == 1


# --------------------------------------------------------------------------------------------
# Web page
# --------------------------------------------------------------------------------------------

@pytest.fixture
def client(path):
    pytest.importorskip("flask")
    from elicit.session.web import create_app

    app = create_app(path)
    c = app.test_client()
    st = page_state(c.get("/").get_data(as_text=True))
    c.token, c.qid = st["token"], st["qid"]
    yield c
    app.config["ELICIT_SESSION"].close()


def _message(resp) -> str:
    m = re.search(r'id="message"[^>]*>([^<]*)<', resp.get_data(as_text=True))
    return m.group(1) if m else resp.get_data(as_text=True)


@pytest.mark.parametrize("form, status, message", [
    ({"answer": "maybe"}, 400, r"invalid answer &#39;maybe&#39;"),
    ({"answer": ""}, 400, r"invalid answer &#39;&#39;"),
    ({"query_id": "999", "answer": "similar"}, 404, r"query 999 was not asked in this session"),
    ({"query_id": "abc", "answer": "similar"}, 400, r"the form sent no valid query id"),
    ({"query_id": "", "answer": "similar"}, 400, r"the form sent no valid query id"),
])
def test_web_bad_answers(client, form, status, message):
    data = {"csrf_token": client.token, "query_id": client.qid, **form}
    r = client.post("/answer", data=data, headers=SAME)
    assert r.status_code == status
    assert re.search(message, _message(r))


def test_web_undo_nothing(client):
    r = client.post("/undo", data={"csrf_token": client.token, "answer_id": "0"}, headers=SAME)
    assert r.status_code == 400 and "there is no answer to undo" in _message(r)
    # without the answer the page showed as the last, nothing is undone
    r = client.post("/undo", data={"csrf_token": client.token}, headers=SAME)
    assert r.status_code == 400 and "no valid answer id" in _message(r)


def test_web_skip_answered(client):
    d = {"csrf_token": client.token, "query_id": client.qid}
    assert client.post("/answer", data={**d, "answer": "similar"}, headers=SAME
                       ).status_code == 303
    r = client.post("/skip", data=d, headers=SAME)
    assert r.status_code == 409 and "already answered" in _message(r)


def test_web_request_too_large(client):
    r = client.post("/answer", data={"csrf_token": client.token, "query_id": client.qid,
                                     "answer": "similar", "comment": "x" * (
                                         client.application.config["MAX_CONTENT_LENGTH"])},
                    headers=SAME)
    assert r.status_code == 413 and "request too large" in r.get_data(as_text=True)


def test_web_missing_session_file(tmp_path):
    from elicit.session.web import create_app

    with pytest.raises(ElicitError, match=r"does not exist"):
        create_app(tmp_path / "nope.session")


@pytest.mark.parametrize("argv,message", [
    (["synthetic", "--out", "x", "--runs", "abc"],
     "elicit synthetic: error: argument --runs: expected a positive integer, got 'abc'"),
    (["synthetic", "--out", "x", "--utility-target", "kl"],
     "elicit synthetic: error: argument --utility-target: invalid choice: 'kl'"),
    (["realdata", "--dataset", "amazon", "--out", "x", "--tau2", "-1"],
     "elicit realdata: error: argument --tau2: --tau2 must be a positive number or 'cv'"),
    (["realdata", "--dataset", "amazon", "--out", "x", "--tau2-again", "10,x"],
     "elicit realdata: error: argument --tau2-again: expected a positive integer, got 'x'"),
    (["realdata", "--out", "x"],
     "elicit realdata: error: one of the arguments --dataset --corpus is required"),
    (["bench", "--size", "huge"], "elicit bench: error: argument --size: invalid choice"),
    # was a NumPy traceback (found 2026-11-29)
    (["bench", "--seed", "-1"],
     "elicit bench: error: argument --seed: expected an integer >= 0, got -1"),
    (["no-such-command"], "elicit: error: argument command: invalid choice"),
])
def test_cli_option_errors_are_one_line(capsys, argv, message):
    """argparse's own errors (types, choices, missing options) are one line too, naming the
    option and where to look, without the usage block."""
    from elicit.cli.main import main as elicit_main

    with pytest.raises(SystemExit) as e:
        elicit_main(argv)
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1, err
    assert err.startswith(message), err
    assert "--help" in err and "usage:" not in err


# --------------------------------------------------------------------------------------------
# Hostile inputs: each gets one line that says what to fix, and nothing is touched
# --------------------------------------------------------------------------------------------

def _table(tmp_path, name="t.csv", n=20, seed=0):
    """A CSV table of n rows: features a..e and target y."""
    import pandas as pd

    rng = np.random.default_rng(seed)
    df = pd.DataFrame(rng.normal(size=(n, 5)), columns=list("abcde"))
    df["y"] = rng.normal(size=n)
    df.to_csv(tmp_path / name, index=False)
    return tmp_path / name, df


def _meta(tmp_path, name="m.csv"):
    import pandas as pd

    rng = np.random.default_rng(1)
    m = pd.DataFrame(rng.normal(size=(5, 3)), index=list("abcde"), columns=["m0", "m1", "m2"])
    m.index.name = "feature"
    m.to_csv(tmp_path / name)
    return tmp_path / name, m


def _quiet_cli(capsys, *argv):
    """The CLI with numpy's RuntimeWarnings turned into errors: a warning is a failure."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        return run_cli(capsys, *[str(a) for a in argv])


@pytest.mark.parametrize("where, message", [
    ("X", r"X has 1e\+300 at line 5, column 'c'"),
    ("y", r"y has -1e\+300 at line 3"),
    ("meta", r"meta-features U has 1e\+300 at feature 'd', meta-feature 'm1'"),
])
def test_a_huge_value_in_a_csv_is_refused_naming_column_and_row(capsys, tmp_path, where,
                                                                message):
    """1e300 once gave RuntimeWarnings and then the false "all candidate pairs have identical
    meta-features; give threshold_mean explicitly" (an option the CLI does not have), or was
    accepted in y and predicted about 5e298."""
    path, df = _table(tmp_path)
    meta, m = _meta(tmp_path)
    if where == "X":
        df.loc[3, "c"] = 1e300
    elif where == "y":
        df.loc[1, "y"] = -1e300
    else:
        m.loc["d", "m1"] = 1e300
        m.to_csv(meta)
    df.to_csv(path, index=False)
    extra = ["--meta-features", meta] if where == "meta" else []
    code, out, err = _quiet_cli(capsys, "session", "new", "--from-csv", path, "--target", "y",
                                *extra, "--out", tmp_path / "s.session", "--engine", "numpy")
    assert code == 2
    assert_one_line_error(err, message + r".*overflow.*rescale")
    assert "threshold_mean" not in err and not (tmp_path / "s.session").exists()


@pytest.mark.parametrize("where, message", [
    ("X", r"X contains 1 NaN or infinite value\(s\), the first at line 5, column 'c'; remove"),
    ("meta", r"meta-features U contains 1 NaN or infinite value\(s\), the first at feature "
             r"'d', meta-feature 'm1'; remove"),
])
def test_an_infinite_value_in_a_csv_is_placed(capsys, tmp_path, where, message):
    """'inf' in a table (pandas reads it as a number, so it is no missing value) or a NaN in
    the meta-features was "X contains 1 NaN or infinite value(s)", without saying where."""
    path, df = _table(tmp_path)
    meta, m = _meta(tmp_path)
    if where == "X":
        df.loc[3, "c"] = np.inf
    else:
        m.loc["d", "m1"] = np.nan
        m.to_csv(meta)
    df.to_csv(path, index=False)
    extra = ["--meta-features", meta] if where == "meta" else []
    code, out, err = _quiet_cli(capsys, "session", "new", "--from-csv", path, "--target", "y",
                                *extra, "--out", tmp_path / "s.session", "--engine", "numpy")
    assert code == 2
    assert_one_line_error(err, message)


@pytest.mark.parametrize("extra", ["blank lines", "a quoted field over two lines"])
def test_a_value_in_a_csv_is_never_placed_on_a_wrong_line(capsys, tmp_path, extra):
    """The place named was line k + 2 for data row k: with blank lines (which pandas skips)
    or a quoted field over two lines before it, 1e300 on line 6 (or 5) was "at line 4"."""
    path, df = _table(tmp_path)
    df.loc[2, "c"] = 1e300
    head, *rows = df.to_csv(index=False).splitlines()
    if extra == "blank lines":
        rows[:2] = [rows[0] + "\n", rows[1] + "\n"]
    else:
        rows[0] = '"{}\n",{}'.format(*rows[0].split(",", 1))  # a number pandas reads
    path.write_text("\n".join([head, *rows]) + "\n")
    line = next(k for k, t in enumerate(path.read_text().splitlines(), 1) if "1e+300" in t)
    assert line in (5, 6)  # not line 4, the line of data row 3 without the extra lines
    code, out, err = _quiet_cli(capsys, "session", "new", "--from-csv", path, "--target", "y",
                                "--out", tmp_path / "s.session", "--engine", "numpy")
    assert code == 2
    assert_one_line_error(err, r"X has 1e\+300 at data row 3, column 'c'")


def test_a_huge_value_in_the_api_is_refused_naming_column_and_row(tmp_path):
    """Session.create on X with one 1e300 cell predicted [nan nan nan]; the estimator with
    1e300 in y predicted nan."""
    import pandas as pd

    from elicit.estimator import ElicitRegressor

    X, y, U = make_data()
    Xd = pd.DataFrame(X, columns=NAMES)
    Xd.iloc[4, 2] = 1e300
    with pytest.raises(ElicitError, match=rf"X has 1e\+300 at row 4, column '{NAMES[2]}'"):
        Session.create(Xd, y, U, path=tmp_path / "x.session", engine="numpy")
    Ub = U.copy()
    Ub[6, 1] = -3e200
    with pytest.raises(ElicitError, match=r"meta-features U has -3e\+200 at feature 'colour', "
                                          r"meta-feature 1"):
        Session.create(X, y, Ub, NAMES, path=tmp_path / "x.session", engine="numpy")
    assert not (tmp_path / "x.session").exists()
    yb = y.copy()
    yb[7] = 1e300
    with pytest.raises(ElicitError, match=r"y has 1e\+300 at row 7.*overflow"):
        ElicitRegressor().fit(X, yb)
    with pytest.raises(ElicitError, match=rf"X has 1e\+300 at row 4, column '{NAMES[2]}'"):
        ElicitRegressor().fit(Xd, y)
    with pytest.raises(ElicitError, match=r"meta-features U has -3e\+200 at feature 6, "
                                          r"meta-feature 1"):
        ElicitRegressor(meta_features=Ub).fit(X, y)




@pytest.mark.parametrize("scale", [1e100, 1e-160, 1e-200])
def test_meta_features_on_a_scale_no_fit_can_compute_with_are_one_line(tmp_path, scale):
    """Meta-features inside ±1e150 but scaled by 1e100 gave an OverflowError traceback (the
    threshold prior squares its mean, about U^2) or, without answers, overflowing kernel
    Hessians and another answer than at 1e70 (K is the identity at both); at 1e-160 a
    ZeroDivisionError; at 1e-200 "all candidate pairs have identical meta-features", which
    they are not."""
    from elicit.estimator import ElicitRegressor

    X, y, U = make_data()
    Us = U * scale
    with pytest.raises(ElicitError, match=r"rescale") as e:
        Session.create(X, y, Us, NAMES, path=tmp_path / "x.session", engine="numpy")
    assert "\n" not in str(e.value) and not (tmp_path / "x.session").exists()
    with pytest.raises(ElicitError, match=r"rescale"):
        ElicitRegressor(meta_features=Us, feedback=[(0, 1, "similar")]).fit(X, y)
    if scale > 1:
        with pytest.raises(ElicitError, match=r"meta-features U has .* at feature 0, .*1e\+75 "
                                              r"overflow in the kernel; rescale"):
            ElicitRegressor(meta_features=Us).fit(X, y)
    else:
        assert "meta-feature distances (gamma0 . w) average" in str(e.value)
@pytest.mark.parametrize("argv", [
    ["synthetic", "--runs", "1", "--rounds", "1", "--quiet"],
    ["realdata", "--dataset", "amazon", "--runs", "1", "--rounds", "1", "--quiet"],
    ["table1", "--runs", "1", "--quiet"],
])
def test_an_output_folder_that_is_a_file_is_refused_before_any_work(capsys, tmp_path, argv):
    from elicit.cli.main import main as elicit_main

    afile = tmp_path / "afile"
    afile.write_text("keep me\n")
    code = elicit_main([*argv, "--out", str(afile)])
    err = capsys.readouterr().err
    assert code == 2
    assert_one_line_error(err, r"--out .*afile is a file, not a folder: give the name of a "
                               r"new folder .*or of an earlier run's folder")
    assert afile.read_text() == "keep me\n"
    code = elicit_main([*argv, "--out", str(afile / "sub")])
    assert code == 2
    assert_one_line_error(capsys.readouterr().err, r"--out .*afile/sub: .*afile is a file")


def test_bench_suite_refuses_a_missing_elicit_data_as_a_missing_data_dir(tmp_path, capsys,
                                                                          monkeypatch):
    """$ELICIT_DATA naming a missing folder skipped every real-data figure with exit 0, where
    --data-dir with the same folder is refused."""
    from elicit.cli.main import main as elicit_main

    monkeypatch.setenv("ELICIT_DATA", str(tmp_path / "missing"))
    assert elicit_main(["bench", "--suite", "--figures", "amazon_round", "--steps", ""]) == 2
    assert_one_line_error(capsys.readouterr().err, r"^elicit: error: data directory .*missing "
                          r"\(from environment variable ELICIT_DATA\) does not exist")


def test_a_record_folder_that_is_a_file_is_refused_saying_what_to_give(capsys, tmp_path,
                                                                       monkeypatch):
    """`bench --suite --record FILE` said to give "an earlier run's folder (the run resumes
    there)": the suite resumes nothing; the folder holds the earlier records."""
    import elicit.paper.bench_suite as suite
    from elicit.cli.main import main as elicit_main

    monkeypatch.setattr(suite, "run_suite", lambda *a: pytest.fail("measured"))
    afile = tmp_path / "afile"
    afile.write_text("keep me\n")
    assert elicit_main(["bench", "--suite", "--record", str(afile)]) == 2
    assert_one_line_error(capsys.readouterr().err, r"--record .*afile is a file, not a folder: "
                          r"give the name of a new folder \(it is created\) or of the folder "
                          r"of earlier records$")
    assert afile.read_text() == "keep me\n"


def test_bench_json_in_a_folder_that_is_a_file_is_refused_before_the_bench(capsys, tmp_path):
    from elicit.cli.main import main as elicit_main

    (tmp_path / "afile").write_text("")
    code = elicit_main(["bench", "--size", "synthetic", "--rounds", "1", "--no-exact",
                        "--json", str(tmp_path / "afile" / "b.json")])
    out, err = capsys.readouterr()
    assert code == 2 and "bench synthetic" not in out + err
    assert_one_line_error(err, r"--json .*afile/b\.json: .*afile is a file")


@pytest.fixture(scope="module")
def long_table(tmp_path_factory):
    """A CSV table of 20,000 rows, written once for the two tests that only read it."""
    return _table(tmp_path_factory.mktemp("long"), "long.csv", n=20_000)[0]


def test_too_many_rows_are_refused_up_front_saying_what_fits(capsys, tmp_path, monkeypatch,
                                                             long_table):
    """200,000 rows once gave a numpy MemoryError traceback (a 298 GiB n x n array); with
    more rows than features the model's memory grows with the rows, not their square, so the
    refusal is set up with a machine of 8 MiB."""
    import elicit.model.spec as spec_mod

    monkeypatch.setattr(spec_mod, "memory_limit", lambda: 2.0**23)
    # a sixth of the rows, an eighth the memory
    code, _, err = run_cli(capsys, "session", "new", "--from-csv", str(long_table), "--target", "y",
                           "--out", str(tmp_path / "s.session"), "--engine", "numpy")
    assert code == 2
    assert_one_line_error(err, r"20,000 rows .*numbers per row.* GiB.* this machine has .* "
                               r"GiB.*at most [0-9,]+ rows")
    rows = int(re.search(r"at most ([0-9,]+) rows", err).group(1).replace(",", ""))
    assert 1_000 < rows < 20_000
    # what fits: the rows advised fit this table's 5 features and meta-features, one more not
    assert spec_mod.model_bytes(rows, 5, 5) <= 2.0**23 < spec_mod.model_bytes(rows + 1, 5, 5)
    assert not (tmp_path / "s.session").exists()


def test_a_table_with_many_rows_makes_a_session(capsys, tmp_path, long_table):
    """120,000 rows x 5 features were refused ("use at most 11,023 rows"): the model held
    n x n arrays. 20,000 rows are well past that limit."""
    code, _, err = run_cli(capsys, "session", "new", "--from-csv", long_table, "--target", "y",
                           "--out", str(tmp_path / "s.session"), "--engine", "numpy")
    assert code == 0, err
    assert (tmp_path / "s.session").exists()


def test_the_estimator_refuses_too_many_rows_up_front(monkeypatch):
    import elicit.model.spec as spec_mod
    from elicit.estimator import ElicitRegressor

    monkeypatch.setattr(spec_mod, "memory_limit", lambda: 2.0**24)
    rng = np.random.default_rng(0)
    X = rng.normal(size=(120_000, 3))
    with pytest.raises(ElicitError, match=r"120,000 rows .*at most [0-9,]+ rows"):
        ElicitRegressor(meta_features=np.eye(3)).fit(X, X[:, 0])


@pytest.mark.parametrize("soft", [2**20, None])
def test_the_memory_limit_counts_the_address_space_limit(monkeypatch, soft):
    """Under `ulimit -v 4000000` the memory check still took the machine's 23.5 GiB: the
    advice for 77,778 keywords (--min-df 6, 4,114 keywords: a model of 17 GB) ran out of
    memory again. The address-space limit counts like a container's; 'unlimited' does not."""
    resource = pytest.importorskip("resource")
    from elicit.internal import memory

    limit = resource.RLIM_INFINITY if soft is None else soft
    monkeypatch.setattr(resource, "getrlimit", lambda what: (
        limit if what == resource.RLIMIT_AS else resource.RLIM_INFINITY, resource.RLIM_INFINITY))
    memory.memory_limit.cache_clear()
    try:  # 1 MiB is below any machine's memory; 'unlimited' (-1 on Linux) is no limit
        got = memory.memory_limit()
        assert got == soft if soft else got is None or got > 2**20
    finally:
        memory.memory_limit.cache_clear()


@pytest.mark.parametrize("which", ["--from-csv", "--meta-features", "--texts", "link"])
def test_the_output_is_never_an_input_file_even_with_overwrite(capsys, tmp_path, which):
    """--out equal to the input CSV with --overwrite replaced the data by the session."""
    path, _ = _table(tmp_path)
    meta, _ = _meta(tmp_path)
    texts = tmp_path / "t.json"
    texts.write_text(json.dumps({"a": ["an a"]}))
    target = {"--from-csv": path, "--meta-features": meta, "--texts": texts}.get(which)
    if which == "link":
        target = tmp_path / "link.csv"
        target.symlink_to(path)
        which = "--from-csv"
    before = {p: p.read_bytes() for p in (path, meta, texts)}
    code, _, err = run_cli(capsys, "session", "new", "--from-csv", str(path), "--target", "y",
                           "--meta-features", str(meta), "--texts", str(texts),
                           "--out", str(target), "--overwrite", "--engine", "numpy")
    assert code == 2
    assert_one_line_error(err, rf"--out .* is the {which} file: elicit never overwrites an "
                               r"input; choose another name for the output")
    assert {p: p.read_bytes() for p in before} == before


def test_export_never_overwrites_its_session(capsys, tmp_path):
    p = tmp_path / "s.csv"
    create_session(p).close()
    before = p.read_bytes()
    code, _, err = run_cli(capsys, "export", str(p), str(p))
    assert code == 2
    assert_one_line_error(err, r"export .* is the session file: elicit never overwrites an "
                               r"input; choose another name")
    assert p.read_bytes() == before


def _answered(path, k=2):
    with Session.open(path) as s:
        for a in ("similar", "dissimilar")[:k]:
            s.answer(s.next_query(), a, comment="c")


def _answered_in_folder(tmp_path) -> tuple[Path, Path]:
    """A session with two answers, ``s.session`` in the new folder ``ro`` (for a test to run
    commands on with the folder read-only): the folder and the file."""
    p = tmp_path / "ro" / "s.session"
    p.parent.mkdir()
    create_session(p).close()
    _answered(p)
    return p.parent, p


def test_history_and_export_read_a_read_only_session(tmp_path):
    """They were refused ("read-only, and elicit saves every answer into it")."""

    from elicit.session.export import export_prior

    folder, p = _answered_in_folder(tmp_path)
    before = p.read_bytes()
    outs = ("prior.json", "history.csv")
    # one process for the five commands (its start is most of each command's cost)
    runs = read_only_runs(folder, ["history", str(p)],
                          *(["export", str(p), str(tmp_path / out)] for out in outs),
                          ["history", str(p), "--agreement"],
                          ["ask", str(p)])  # writing still says why it cannot
    if runs is None:
        pytest.skip("cannot make a read-only folder here")
    r, *exports, agreement, ask = runs
    assert r.returncode == 0, r.stderr
    assert r.stderr == "" and "2 of 28 pairs answered" in r.stdout
    for out, r in zip(outs, exports):
        assert r.returncode == 0, r.stderr
        assert (tmp_path / out).stat().st_size > 0
    assert json.loads((tmp_path / "prior.json").read_text())["answers"][1]["answer"] == \
        "dissimilar"
    assert agreement.returncode == 0, agreement.stderr
    assert ask.returncode == 2 and "read-only" in ask.stderr
    # The netCDF export (the posterior snapshot) in this process, on the file opened as
    # `export` opens it (mode=ro: any write raises): the folder's read-only open is the one
    # above, and importing arviz in the child cost more than all five commands.
    with Session.open(p, read_only=True) as s:
        assert export_prior(s, tmp_path / "prior.nc").stat().st_size > 0
    assert p.read_bytes() == before and sorted(os.listdir(folder)) == ["s.session"]


def test_a_read_only_session_object_refuses_writes_in_one_line(path):
    before = path.read_bytes()
    with Session.open(path, read_only=True) as s:
        assert s.progress()["answered"] == 0 and len(s.history) == 0
        with pytest.raises(ElicitError, match=r"opened read-only.*nothing was saved"):
            s.next_query()
    assert path.read_bytes() == before


def test_a_read_only_open_sees_a_format_1_file_without_changing_it(tmp_path):
    from conftest import FORMAT1_SESSION as FORMAT1

    p = tmp_path / "old.session"
    shutil.copyfile(FORMAT1, p)
    before = p.read_bytes()
    with Session.open(p, read_only=True) as s:
        assert list(s.history["answer"]) == ["similar", "dissimilar", "dont_know", "similar"]
    assert p.read_bytes() == before
    assert sorted(os.listdir(tmp_path)) == ["old.session"]


@pytest.mark.parametrize("edit, message", [
    ("UPDATE answers SET i = 1000 WHERE id = 1", r"answer 1 is about features \(1000, \d\)"),
    ("UPDATE answers SET i = j, j = i WHERE id = 2", r"answer 2 is about features \(\d, \d\)"),
    ("UPDATE answers SET j = -1 WHERE id = 1", r"answer 1 is about features \(\d, -1\)"),
    ("UPDATE answers SET i = 'x' WHERE id = 1", r"answer 1 is about features \('x', \d\)"),
    ("UPDATE queries SET j = 99 WHERE id = 1", r"query 1 is about features \(\d, 99\)"),
])
def test_an_edited_answer_row_is_reported_as_a_damaged_file(capsys, path, edit, message):
    """It said "(1000, 2) is not a candidate pair"."""
    _answered(path)
    sql_edit(path, edit)
    before = path.read_bytes()
    with pytest.raises(ElicitError, match=r"session file .* is damaged: " + message +
                       r", but the session has 8 features \(0\.\.7\).*restore it from a backup"):
        Session.open(path)
    code, _, err = run_cli(capsys, "history", str(path))
    assert code == 2
    assert_one_line_error(err, "is damaged")
    assert path.read_bytes() == before


def test_history_into_a_closed_pipe_exits_quietly(path):
    """`elicit history x | head -1` ended with "elicit: error: Broken pipe" and exit 2."""
    _answered(path)
    proc = subprocess.Popen([sys.executable, "-m", "elicit", "history", str(path)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            stdin=subprocess.DEVNULL)
    proc.stdout.close()  # the reader is gone before the first line is written
    err = proc.stderr.read().decode()
    proc.stderr.close()
    assert proc.wait(timeout=600) == 141  # 128 + SIGPIPE, as a shell reports `yes | head`
    assert err == ""


def test_a_y_series_with_other_row_labels_is_refused(tmp_path):
    """It was used by position although the docs say "aligned by index"."""
    import pandas as pd

    X, y, U = make_data()
    Xd = pd.DataFrame(X, columns=NAMES)                      # rows 0..11
    ys = pd.Series(y, index=range(100, 112))                  # rows 100..111
    with pytest.raises(ElicitError, match=r"y's index does not match X's rows: no y for "
                                          r"row\(s\) 0, 1, .*give y with X's row labels "
                                          r"\(or y\.to_numpy\(\) to match by position\)"):
        Session.create(Xd, ys, U, path=tmp_path / "x.session", engine="numpy")
    # the same labels in another order are aligned, as documented
    shuffled = pd.Series(y, index=range(12)).iloc[::-1]
    with Session.create(Xd, shuffled, U, path=tmp_path / "x.session", engine="numpy") as s:
        np.testing.assert_array_equal(s.y, y)


def _new_from_files(capsys, tmp_path, path, meta, table: str):
    """`session new` on a table and a meta-features file: its exit status, its error and how
    the message names the file of ``table`` ("data" or "meta")."""
    code, _, err = new_from_csv(capsys, tmp_path, path, "--meta-features", str(meta))
    return code, err, ("--from-csv file t.csv" if table == "data" else "--meta-features file m.csv")


@pytest.mark.parametrize("table", ["data", "meta"])
def test_duplicate_csv_headers_are_refused(capsys, tmp_path, table):
    """They were silently renamed (f0, f0.1)."""
    path, df = _table(tmp_path)
    meta, m = _meta(tmp_path)
    if table == "data":
        path.write_text(path.read_text().replace("a,b,c", "a,b,a", 1))
    else:
        meta.write_text(meta.read_text().replace("m0,m1", "m0,m0", 1))
    code, err, name = _new_from_files(capsys, tmp_path, path, meta, table)
    col = "a" if table == "data" else "m0"
    assert code == 2
    assert_one_line_error(err, rf"{name} names column '{col}' twice \(columns \d and \d\); "
                               r"give every column its own name")


@pytest.mark.parametrize("table", ["data", "meta"])
@pytest.mark.parametrize("content", ["cp1252", "gzip", "xlsx"])
def test_a_table_that_is_not_utf8_text_says_how_to_save_it(capsys, tmp_path, table, content):
    """A CSV saved by Excel on Windows (cp1252: 'Größe' is not UTF-8), a gzipped CSV or a
    workbook named .csv was "cannot read ... as a table: 'utf-8' codec can't decode byte 0xf6
    in position 2: invalid start byte", which says nothing of what to do."""
    import gzip

    path, _ = _table(tmp_path)
    meta, _ = _meta(tmp_path)
    target = path if table == "data" else meta
    text = target.read_text().replace("a", "Größe" if table == "data" else "a", 1)
    raw = text.encode("cp1252") if table == "data" else text.replace("m0", "m²").encode("cp1252")
    if content == "gzip":
        raw = gzip.compress(target.read_bytes())
    elif content == "xlsx":
        raw = b"PK\x03\x04\x14\x00\x06\x00\x08\x00\x00\x00!\x00\xff"
    target.write_bytes(raw)
    code, err, name = _new_from_files(capsys, tmp_path, path, meta, table)
    assert code == 2
    assert_one_line_error(err, rf"{name} is not UTF-8 text \(compressed, a workbook, or "
                               r"another encoding\?\): save the "
                               r"table as CSV in UTF-8 \(from a spreadsheet: Save As 'CSV UTF-8'\)")


@pytest.mark.parametrize("suffix", [".xlsx", ".csv.gz"])
def test_a_workbook_or_compressed_table_is_told_to_be_saved_as_csv(capsys, tmp_path, suffix):
    """"name it with one of .csv, ..." sent the user with a workbook to rename it, and then to
    the message of the test above."""
    path, _ = _table(tmp_path, name="t" + suffix)
    code, _, err = new_from_csv(capsys, tmp_path, path)
    assert code == 2
    assert_one_line_error(err, rf"--from-csv file 't{re.escape(suffix)}' is neither CSV nor "
                               r"Parquet: save the table as CSV in UTF-8 \(from a spreadsheet: "
                               r"Save As 'CSV UTF-8'\) or Parquet, its name ending in one of "
                               r"\.csv, \.tsv, \.txt, \.parquet, \.pq")


@pytest.mark.parametrize("command, sub", [("session", "new"), ("data", "fetch")])
def test_a_command_without_its_sub_command_names_the_sub_commands(capsys, command, sub):
    """`elicit session` said "the following arguments are required: session_command", the
    name of a variable inside elicit (`elicit data` says "{fetch}")."""
    from elicit.cli.main import main

    with pytest.raises(SystemExit) as e:
        main([command])
    assert e.value.code == 2
    assert_one_line_error(capsys.readouterr().err, rf"^elicit {command}: error: the following "
                                                   rf"arguments are required: \{{{sub}\}} ")


def test_a_texts_file_with_a_byte_order_mark_is_read(capsys, tmp_path):
    """Notepad and PowerShell save UTF-8 JSON with a byte-order mark, which --from-csv takes;
    --texts said "is not valid JSON: Unexpected UTF-8 BOM (decode using utf-8-sig)"."""
    path, _ = _table(tmp_path)
    texts = tmp_path / "t.json"
    texts.write_text('{"a": ["an ä snippet"]}', encoding="utf-8-sig")
    code, _, err = new_from_csv(capsys, tmp_path, path, "--texts", str(texts))
    assert code == 0, err
    with Session.open(tmp_path / "s.session", read_only=True) as s:
        assert s.texts("a") == ["an ä snippet"]


@pytest.mark.parametrize("arrays, said", [
    ({"names": np.array(list("abcdefgh"))}, "names"),
    ({"meta_features": np.ones((8, 2))}, "meta_features")])
def test_an_npz_array_elicit_does_not_read_is_refused(capsys, tmp_path, arrays, said):
    """`names=` for `feature_names` was ignored without a word (the features became x0, x1,
    ...), and so were `meta_features` beside `U`."""
    X, y, U = make_data()
    np.savez(tmp_path / "d.npz", X=X, y=y, U=U, **arrays)
    code, _, err = run_cli(capsys, "session", "new", "--from-npz", str(tmp_path / "d.npz"),
                           "--out", str(tmp_path / "s.session"), "--engine", "numpy")
    assert code == 2
    assert_one_line_error(err, rf"d\.npz has array\(s\) {said} that elicit does not read; it "
                               r"must hold X \(n x p\), y \(n\) and optionally U .* and "
                               r"feature_names; found ")
    assert not (tmp_path / "s.session").exists()


def test_a_texts_file_that_is_not_utf8_says_how_to_save_it(capsys, tmp_path):
    """A --texts file saved in cp1252 said "is not valid JSON: 'utf-8' codec can't decode byte
    0xf6 in position 9: invalid start byte"."""
    path, _ = _table(tmp_path)
    texts = tmp_path / "t.json"
    texts.write_bytes('{"a": ["größer"]}'.encode("cp1252"))
    code, _, err = new_from_csv(capsys, tmp_path, path, "--texts", str(texts))
    assert code == 2
    assert_one_line_error(err, r"--texts file .*t\.json is not UTF-8 text: save it as UTF-8")


def test_a_meta_features_file_of_names_alone_says_it_has_no_meta_feature_columns(capsys,
                                                                                tmp_path):
    """It said "has no data (shape (5, 0))" of a file with a row for each of the 5 features."""
    path, _ = _table(tmp_path)
    meta = tmp_path / "m.csv"
    meta.write_text("feature\n" + "".join(f"{c}\n" for c in "abcde"))
    code, _, err = new_from_csv(capsys, tmp_path, path, "--meta-features", str(meta))
    assert code == 2
    assert_one_line_error(err, r"--meta-features file m\.csv has no data: 5 row\(s\) and no "
                               r"column\(s\) besides the names")


def test_feature_names_that_differ_only_in_spaces_are_refused(capsys, tmp_path):
    """A spreadsheet's `price` and `price ` were two features the expert saw under one name
    (`A: price`, `B: price`); names are stored as written, so they are compared stripped."""
    path, df = _table(tmp_path)
    df.rename(columns={"b": "a "}).to_csv(path, index=False)
    code, _, err = new_from_csv(capsys, tmp_path, path)
    assert code == 2
    assert_one_line_error(err, r"duplicate feature name 'a ' \(features 0 and 1\); feature "
                               r"names must be unique, also without their spaces")


def test_an_outcome_that_never_varies_is_refused(capsys, tmp_path):
    """A target column with one value in every row made a session whose questions were worth
    "100%", "53%", ... of each other, although no answer could change a prediction."""
    import pandas as pd

    path, df = _table(tmp_path)
    df.assign(y=4.0).to_csv(path, index=False)
    code, _, err = new_from_csv(capsys, tmp_path, path)
    assert code == 2
    assert_one_line_error(err, r"y is 4 in every row: no answer could change a prediction; "
                               r"give an outcome that varies")
    assert not (tmp_path / "s.session").exists()
    X, y, U = make_data()
    with pytest.raises(ElicitError, match=r"^y is -1\.5 in every row"):
        Session.create(pd.DataFrame(X, columns=NAMES), np.full(len(y), -1.5), U,
                       path=tmp_path / "x.session", engine="numpy")


def test_a_column_named_twice_in_features_is_refused(capsys, tmp_path):
    """`--features a,b,a` was taken as a,b without a word (a header naming a column twice is
    refused)."""
    path, _ = _table(tmp_path)
    code, _, err = new_from_csv(capsys, tmp_path, path, "--features", "a,b,a")
    assert code == 2
    assert_one_line_error(err, r"--features names column 'a' twice; name each column once")
    assert not (tmp_path / "s.session").exists()


@pytest.mark.parametrize("table", ["data", "meta"])
@pytest.mark.parametrize("sep", [";", "\t"])
def test_a_table_with_another_separator_says_which_one_elicit_reads(capsys, tmp_path, table,
                                                                       sep):
    """A spreadsheet's CSV separated by ';' (or a .csv with tabs) was one column 'a;b;c;...':
    "--target column 'y' is not in t.csv; its columns are 'a;b;c;d;e;y'", or "has no data
    (shape (5, 0))" for meta-features."""
    path, df = _table(tmp_path)
    meta, m = _meta(tmp_path)
    sep = sep.replace("\\t", "\t")
    if table == "data":
        df.to_csv(path, index=False, sep=sep)
    else:
        m.to_csv(meta, sep=sep)
    code, err, name = _new_from_files(capsys, tmp_path, path, meta, table)
    assert code == 2
    assert_one_line_error(err, rf"{name} has one column, its columns separated by "
                               rf"{re.escape(repr(sep))} "
                               r"rather than ','; save it separated by commas \(or name it "
                               r"\.tsv if separated by tabs\)")


@pytest.mark.parametrize("table", ["data", "meta"])
@pytest.mark.parametrize("extra", ["", "7"])
def test_a_table_with_more_fields_than_header_names_is_refused(capsys, tmp_path, table, extra):
    """Data lines with one field more than the header (a comma at the end of each line) made
    pandas take the first column as the row index: every column shifted one name to the left,
    a session was made on the shifted table without a word (or, with the extra fields empty,
    "t.csv has missing values: 'y' (12 rows)")."""
    path, df = _table(tmp_path)
    meta, m = _meta(tmp_path)
    target = path if table == "data" else meta
    (df.to_csv(path, index=False) if table == "data" else m.to_csv(meta))
    head, *rows = target.read_text().splitlines()
    target.write_text("\n".join([head, *[f"{r},{extra}" for r in rows]]) + "\n")
    code, err, name = _new_from_files(capsys, tmp_path, path, meta, table)
    assert code == 2
    assert_one_line_error(err, rf"{name} has more fields on its first data line than names "
                               r"in its header line \(a ',' at the end of each line\?\)")
    assert not (tmp_path / "s.session").exists()


def test_predicting_from_an_array_warns_that_its_columns_are_taken_by_position():
    import pandas as pd

    from elicit.estimator import ElicitRegressor

    X, y, U = make_data()
    Xd = pd.DataFrame(X, columns=NAMES)
    est = ElicitRegressor(tau2=0.5).fit(Xd, y)
    with pytest.warns(UserWarning, match=r"X has no column names: its columns are taken by "
                                         r"position, as \['price', 'quality', .*pass a "
                                         r"DataFrame"
                      ) as rec:
        est.predict(X[:, ::-1])
    assert len(rec) == 1  # one warning, not scikit-learn's as well


def test_a_read_only_open_after_a_cut_write(tmp_path):
    """A write cut short is undone first when the file may be written (as by any opener);
    in a read-only folder the one line says how to get it undone."""

    folder, p = _answered_in_folder(tmp_path)
    leave_hot_journal(p)
    r = read_only_run(folder, ["history", str(p)])
    if r is None:
        pytest.skip("cannot make a read-only folder here")
    assert r.returncode == 2
    assert_one_line_error(r.stderr, r"has an unfinished write \(its journal s\.session-journal "
                                    r"is beside it\).*make it and its folder writable")
    with Session.open(p, read_only=True) as s:
        assert len(s.history) == 2
    assert sorted(os.listdir(folder)) == ["s.session"]


#: the data a learned-tau2 program of the paper's model declares, but W_f
_PROGRAM_DATA = "".join(f"  {decl};\n" for decl in (
    "int<lower=1> N", "int<lower=1> M", "int<lower=1> d", "vector[N] y", "matrix[N, M] X",
    "matrix[M, d] FD", "real<lower=0> a_sigma", "real<lower=0> b_sigma", "int<lower=0> N_f",
    "array[N_f] int<lower=0, upper=1> f", "real<lower=0> threshold_mean"))


@pytest.mark.pystan(builds=False)  # refused before any build
@pytest.mark.parametrize("program, message", [
    # a valid program that ignores the pairs' W_f and calls the threshold xi
    ("data {\n" + _PROGRAM_DATA + "  real a_tau;\n  real b_tau;\n}\nparameters {\n"
     "  vector<lower=0>[d] gamma;\n  real<lower=0> xi;\n  real<lower=0> tau;\n}\n"
     "model {\n  gamma ~ normal(1, 0.5);\n}\n",
     r"^elicit: error: .*bad.stan does not follow the elicit Stan contract of the learned-tau2 "
     r"variant: data block lacks W_f; parameters block lacks threshold\. See docs/stan.md for "
     r"the names\.$"),
    # a program of the fixed tau2 variant
    ("data {\n" + _PROGRAM_DATA + "  matrix[N_f, d] W_f;\n  real tau_fixed;\n}\n"
     "parameters {\n  vector<lower=0>[d] gamma;\n  real<lower=0> threshold;\n}\n"
     "model {\n}\n",
     r"^elicit: error: .*bad.stan does not follow the elicit Stan contract of the learned-tau2 "
     r"variant: data block lacks a_tau, b_tau; parameters block lacks tau; data block declares "
     r"tau_fixed as a scalar \(the learned-tau2 variant of model 'paper' has none\) "
     r"\(tau_fixed is data there: is this a fixed-tau2 program\? use variant 'fixed'\)\. "
     r"See docs/stan.md for the names\.$"),
    ("data {\n" + _PROGRAM_DATA + "  real a_tau\n}\nmodel {\n}\n",
     r"^elicit: error: .*bad.stan is not a valid Stan program: Syntax error in '.*bad.stan', "
     r"line \d+, column \d+ to column \d+, parsing error: \";\" expected after variable "
     r"declaration\.$"),
], ids=["missing names", "a fixed-tau2 program", "stanc's error"])
def test_cli_custom_stan_file_errors_are_one_line(capsys, tmp_path, program, message):
    """A --stan-file that breaks the contract, or that stanc refuses, is one line naming what
    to fix, before any build."""
    from elicit.cli.main import main as elicit_main

    bad = tmp_path / "bad.stan"
    bad.write_text(program)
    assert elicit_main(["synthetic", "--runs", "1", "--rounds", "1", "--engine", "pystan",
                        "--utility", "exact", "--quiet", "--stan-file", str(bad),
                        "--out", str(tmp_path / "out")]) == 2
    assert_one_line_error(capsys.readouterr().err, message)


# --------------------------------------------------------------------------------------------
# The last hostile inputs (issue 24): each is one line that says what to fix
# --------------------------------------------------------------------------------------------

@pytest.mark.parametrize("option", ["--from-csv", "--from-npz", "--texts"])
def test_a_folder_given_as_an_input_file_is_called_a_folder(capsys, tmp_path, option):
    """It said "--from-csv file DIR does not exist" of a folder that exists."""
    folder = tmp_path / "data.csv"
    folder.mkdir()
    good, _ = _table(tmp_path)
    source = ["--from-npz", folder] if option == "--from-npz" else \
        ["--from-csv", folder if option == "--from-csv" else good, "--target", "y"]
    extra = ["--texts", folder] if option == "--texts" else []
    code, _, err = run_cli(capsys, "session", "new", *map(str, source + extra),
                           "--out", str(tmp_path / "s.session"), "--engine", "numpy")
    assert code == 2
    assert_one_line_error(err, rf"{option} .*data\.csv is a folder, not a file; give the path "
                               r"of the file itself")
    assert not (tmp_path / "s.session").exists()


@pytest.mark.parametrize("where, column", [("index", 1), ("middle", 3)])
def test_a_csv_column_without_a_name_is_refused(capsys, tmp_path, where, column):
    """An empty header name silently became a feature called 'Unnamed: 0' (a table saved by
    pandas with its row index)."""
    path, df = _table(tmp_path)
    if where == "index":
        df.to_csv(path)  # pandas writes the unnamed row index as the first column
    else:
        path.write_text(path.read_text().replace("a,b,c", "a,b,", 1))
    code, _, err = new_from_csv(capsys, tmp_path, path)
    hint = r" \(a table saved with its row index\? save it with index=False\)" \
        if where == "index" else ""
    assert code == 2
    assert_one_line_error(err, rf"--from-csv file t\.csv has a column without a name \(column "
                               rf"{column}\){hint}; give every column a name")
    assert "Unnamed" not in err and not (tmp_path / "s.session").exists()


def test_a_meta_features_file_may_leave_its_name_column_unnamed(capsys, tmp_path):
    path, _ = _table(tmp_path)
    meta, m = _meta(tmp_path)
    m.index.name = None
    m.to_csv(meta)  # header ",m0,m1,m2"
    code, out, err = new_from_csv(capsys, tmp_path, path, "--meta-features", str(meta))
    assert code == 0, err
    assert "meta-features: 3 per feature, from m.csv" in out


@pytest.mark.parametrize("rows", [1, 2])
def test_a_table_of_too_few_rows_is_told_so(capsys, tmp_path, rows):
    """Two rows got a note that the meta-features were on the wrong scale (every pair of
    columns is perfectly correlated), one row a note about constant columns."""
    path, _ = _table(tmp_path, n=rows)
    code, out, err = new_from_csv(capsys, tmp_path, path)
    assert code == 2
    assert_one_line_error(err, rf"the data has only {rows} row\(s\): the default meta-features "
                               r"describe each feature by how its column correlates with the "
                               r"others, which needs at least 3 rows; add rows, or give "
                               r"meta-features")
    assert not (tmp_path / "s.session").exists()
    if rows == 1:
        return  # every column is constant: nothing to ask about either way
    # with meta-features of its own, a small table is the user's choice
    meta, _ = _meta(tmp_path)
    code, out, err = new_from_csv(capsys, tmp_path, path, "--meta-features", str(meta))
    assert code == 0, err


def test_the_out_path_is_printed_escaped(capsys, tmp_path):
    """A file name with an escape sequence was echoed raw by `session new` (it cleared the
    terminal), in its three lines."""
    path, _ = _table(tmp_path)
    out_path = tmp_path / "s\x1b[2J.session"
    code, out, err = run_cli(capsys, "session", "new", "--from-csv", str(path), "--target", "y",
                             "--out", str(out_path), "--engine", "numpy")
    assert code == 0, err
    assert "\x1b" not in out
    assert out.count("s\\x1b[2J.session") == 3
    assert out_path.exists()


@pytest.mark.parametrize("settings, message", [
    ("[1]", r"its meta 'settings' is an array, not a JSON object"),
    ('"x"', r"its meta 'settings' is a string, not a JSON object"),
    ("null", r"its meta 'settings' is null, not a JSON object"),
    ("{}", r"its meta 'settings' has no 'hyper', 'engine', .*'seed'"),
    ('{"hyper": 3, "engine": "numpy", "utility": "fast", "refine": 1, "strategy": "random", '
     '"pool_size": null, "seed": 0}', r"its meta 'settings' 'hyper' is not a JSON object"),
    ('{"hyper": {"tau": 1}, "engine": "numpy", "utility": "fast", "refine": 1, '
     '"strategy": "random", "pool_size": null, "seed": 0}',
     r"its meta 'settings' 'hyper' names unknown setting\(s\) 'tau'"),
])
def test_settings_that_are_not_an_object_are_a_damaged_file(capsys, path, settings, message):
    """`history` and `ask` crashed with AttributeError ('list' object has no attribute 'get')
    or KeyError."""
    sql_edit(path, "UPDATE meta SET value = ? WHERE key = 'settings'", settings)
    before = path.read_bytes()
    # `history` reads the record without the model, whose hyperparameters' names it leaves
    model_only = "unknown setting" in message
    assert not model_only or run_cli(capsys, "history", str(path))[0] == 0
    for command in ("ask",) if model_only else ("history", "ask"):
        code, _, err = run_cli(capsys, command, str(path))
        assert code == 2
        assert_one_line_error(err, rf"session file .* is damaged: {message}; it was left "
                                   r"untouched \(restore it from a backup\)")
    assert path.read_bytes() == before


def _other_session(tmp_path):
    """A new session file, to be renamed over another one as `session new --overwrite` does."""
    X, y, U = make_data(seed=3)
    other = tmp_path / "other.session"
    Session.create(X, y, U, NAMES, path=other, engine="numpy").close()
    return other


def _n_answers(p) -> int:
    return sql_rows(p, "SELECT COUNT(*) FROM answers")[0][0]


REPLACED = (r"session file .*b\.session was replaced or removed while this program had it open "
            r"\(by `elicit session new --overwrite`\?\)")


@pytest.mark.parametrize("when", ["before the answer", "inside its transaction",
                                  "while it commits"])
def test_an_answer_to_a_replaced_file_says_it_was_not_saved(path, tmp_path, when):
    """Bug: `session new --overwrite` while `ask` or `serve` had the file open gave "attempt
    to write a readonly database" (SQLite's refusal of a moved file), or, when the file was
    replaced after the answer's first write, committed the answer into the old file, which
    nothing reads: reported as saved, and lost."""
    other = _other_session(tmp_path)
    with Session.open(path) as s:
        q = s.next_query()
        if when == "before the answer":
            os.replace(other, path)
        else:
            start = "INSERT INTO answers" if when == "inside its transaction" else "COMMIT"

            def replace_at(sql: str) -> None:
                if sql.startswith(start) and other.exists():
                    os.replace(other, path)

            s.conn.set_trace_callback(replace_at)
        with pytest.raises(ElicitError, match=REPLACED + r"; nothing was saved\. Open it again "
                                                         r"\(restart `elicit ask` or `serve`\)"):
            s.answer(q, "similar")
        with pytest.raises(ElicitError, match=REPLACED):
            s.next_query()
    assert _n_answers(path) == 0
    with Session.open(path) as s:  # the file now there is whole
        assert s.progress()["answered"] == 0


def test_ask_on_a_replaced_file_ends_with_one_line(capsys, monkeypatch, path, tmp_path):
    other = _other_session(tmp_path)

    class ReplacedWhileTyping(io.StringIO):
        def readline(self, *args):
            if other.exists():
                os.replace(other, path)  # as the expert types the answer
            return super().readline(*args)

    monkeypatch.setattr(sys, "stdin", ReplacedWhileTyping("s\n"))
    code, out, err = run_cli(capsys, "ask", str(path))
    assert code == 2
    assert_one_line_error(err, "elicit: error: " + REPLACED + r"; nothing was saved")
    assert "saved:" not in out and _n_answers(path) == 0


def test_the_web_page_of_a_replaced_file_answers_409(client, path, tmp_path):
    """It gave HTTP 500 ("attempt to write a readonly database"); its pages showed the new
    file's questions."""
    os.replace(_other_session(tmp_path), path)
    r = client.post("/answer", data={"csrf_token": client.token, "query_id": client.qid,
                                     "answer": "similar"}, headers=SAME)
    # a page of its own (a form's POST is a navigation): its one line, and a link back
    text = unescape(_message(r))
    assert (r.status_code, r.mimetype) == (409, "text/html") and "\n" not in text, text
    assert re.match(REPLACED + r"; nothing was saved\. Open it again", text), text
    assert '<a href="/">' in r.get_data(as_text=True)
    r = client.get("/")
    text = unescape(_message(r))
    assert (r.status_code, r.mimetype) == (409, "text/html") and "\n" not in text, text
    assert re.match(REPLACED + r"\. Open it again", text), text
    assert _n_answers(path) == 0


@pytest.mark.parametrize("host", ["bad..host", "x" * 70])
def test_serve_on_a_host_name_idna_refuses_is_one_line(capsys, tmp_path, host):
    """An empty or over-long label raised UnicodeError from the idna codec: a traceback."""
    pytest.importorskip("flask")
    p = tmp_path / "s.session"
    Session.create(*make_data(), NAMES, path=p, engine="numpy").close()
    code, _, err = run_cli(capsys, "serve", str(p), "--host", host, "--port", "0")
    assert code == 2
    assert_one_line_error(err, r"cannot listen on .*: unknown host")


@pytest.mark.parametrize("name", ["out.json", "out.nc", "out.csv"])
def test_export_into_a_directory_names_it(capsys, tmp_path, name):
    """It said "Is a directory: .out.json.<pid>.<hex>.tmp" (a name the user never gave), and
    for .nc HDF5's words."""
    p = tmp_path / "s.session"
    Session.create(*make_data(), NAMES, path=p, engine="numpy").close()
    (tmp_path / name).mkdir()
    code, _, err = run_cli(capsys, "export", str(p), str(tmp_path / name))
    assert code == 2
    assert_one_line_error(err, rf"{re.escape(str(tmp_path / name))} is a directory; give a "
                               "file name")


def test_history_agreement_with_csv_is_refused(capsys, tmp_path):
    """--csv was ignored beside --agreement (the table printed, exit 0)."""
    p = tmp_path / "s.session"
    Session.create(*make_data(), NAMES, path=p, engine="numpy").close()
    code, _, err = run_cli(capsys, "history", str(p), "--agreement", "--csv")
    assert code == 2
    assert_one_line_error(err, r"--agreement .*--csv")


def test_history_takes_no_engine_and_compares_the_experts_without_the_model(capsys, tmp_path,
                                                                            monkeypatch):
    """`history --engine cmdstan` was taken and ignored (the record is read without the
    model); `--agreement` built the model (a fit: 0.3 s on the Amazon data) to read the
    answers, which the record alone holds."""
    from elicit.elicitation.elicitor import Elicitor

    p = tmp_path / "s.session"
    with Session.create(*make_data(), NAMES, path=p, engine="numpy") as s:
        qa, qb = s.next_query("alice"), s.next_query("bob")  # one state: the same pair
        s.answer(qa, "similar")
        s.answer(qb, "dissimilar")
    code, _, err = run_cli(capsys, "history", str(p), "--engine", "cmdstan")
    assert code == 2
    assert_one_line_error(err, r"unrecognized arguments: --engine cmdstan")

    def no_model(*args, **kwargs):
        raise AssertionError("the model was built")

    monkeypatch.setattr(Elicitor, "__init__", no_model)
    code, out, err = run_cli(capsys, "history", str(p), "--agreement")
    assert code == 0, err
    assert "2 expert(s): alice, bob" in out and "agreement: 0 of 1 pairs" in out, out


@pytest.mark.parametrize("argv, message", [
    # session new's "take run 7" read as realdata's --runs 7: a sweep of 7 runs
    (["realdata", "--dataset", "amazon", "--run", "7", "--out", "o"],
     r"^elicit realdata: error: unrecognized arguments: --run 7 \(see elicit realdata --help\)$"),
    (["synthetic", "--thresh", "5", "--out", "o"],
     r"^elicit synthetic: error: unrecognized arguments: --thresh 5 \(see elicit synthetic "
     r"--help\)$"),
    (["session", "new", "--from-csv", "x.csv", "--target", "y", "--out", "s.session",
      "--batch", "2"],
     r"^elicit session new: error: unrecognized arguments: --batch 2 \(see elicit session new "
     r"--help\)$")])
def test_an_unknown_option_is_not_taken_for_another_and_points_to_its_commands_help(
        capsys, argv, message):
    """argparse took a prefix of an option for the option, and an unknown option of a
    sub-command pointed to `elicit --help`, which lists no sub-command's options."""
    from elicit.cli.main import main

    with pytest.raises(SystemExit) as e:
        main(argv)
    assert e.value.code == 2
    assert_one_line_error(capsys.readouterr().err, message)


@pytest.mark.parametrize("extra, message", [
    # an explicit --model paper was taken as "not given" and known-coupling ran
    (["--recommended", "--model", "paper"],
     "--recommended sets --model known-coupling; drop --model paper or --recommended"),
    # ignored by the cv rules, but recorded: the identical rerun without it was refused
    (["--expert-rule", "cv-min", "--expert-nonzero", "7"],
     "--expert-nonzero goes with --expert-rule target; drop it with --expert-rule cv-min"),
    # failed at the reference lines, after config.json was written, naming nothing to fix
    (["--pool", "open"],
     "--pool open asks pairs among the keywords not called irrelevant: it needs feature "
     "questions .--questions both.; with pair questions only, use --pool paper")])
@needs_data
def test_realdata_options_that_do_not_go_together_are_refused_first(tmp_path, capsys, extra,
                                                                     message):
    from conftest import REAL_DATA_DIR

    from elicit.cli.main import main

    out = tmp_path / "o"
    code = main(["realdata", "--dataset", "amazon", "--out", str(out), "--data-dir",
                 str(REAL_DATA_DIR), "--quiet", "--runs", "1", "--rounds", "0", *extra])
    assert code == 2
    assert_one_line_error(capsys.readouterr().err, "^elicit: error: " + message + "$")
    assert not out.exists()


# --------------------------------------------------------------------------------------------
# The Python API's arguments (a review's findings): one-line ElicitErrors, nothing clamped
# --------------------------------------------------------------------------------------------

def _sweep_config(**kw):
    from elicit.harness import SweepConfig

    return SweepConfig("x", **{"runs": 1, "rounds": 2, **kw})


@pytest.mark.parametrize("build, message", [
    # 'unknown strategy 'r'': the string was read letter by letter
    (lambda: _sweep_config(strategies="random"),
     r"^strategies must be a list of strategy names such as \('random',\), got 'random'$"),
    (lambda: _sweep_config(strategies=()), r"^strategies must name at least one strategy$"),
    (lambda: _sweep_config(runs=1.5), r"^runs must be a positive integer, got 1\.5$"),
    (lambda: _sweep_config(rounds=2.5), r"^rounds must be a non-negative integer, got 2\.5$"),
    (lambda: _sweep_config(snapshots=(-1, 99)),
     r"^snapshots must be answer counts from 0 to rounds \(2\), got \(-1, 99\)$"),
    (lambda: Hyper(tau2="0.01"),
     r"^hyperparameter tau2 must be a positive number, got '0\.01'$"),
    (lambda: Hyper(tau2=True), r"^hyperparameter tau2 must be a positive number, got True$"),
    (lambda: Hyper(a_tau=None), r"^hyperparameter a_tau must be a positive number, got None$"),
    # a float index was cut to an integer: the pair (0, 1) was taken for (0.5, 1)
    (lambda: Elicitor(*make_data(), engine="numpy", candidates=[[0.5, 1], [2, 3]]),
     r"^candidate pair indices must be integers, got 0\.5$"),
    (lambda: RoundSettings(pool_size=2.5).validate(),
     r"^pool_size must be a positive integer, got 2\.5$"),
    (lambda: RoundSettings(refine=2.5).validate(),
     r"^refine must be a non-negative integer, got 2\.5$")])
def test_python_arguments_are_checked_with_one_line(build, message):
    with pytest.raises(ElicitError, match=message):
        build()


@pytest.mark.parametrize("call, message", [
    (lambda el: el.next_query("random", 0),
     r"^rng must be a numpy Generator \(numpy\.random\.default_rng\(seed\)\), got 0$"),
    (lambda el: el.next_batch("sequential", None, 2),
     r"^rng must be a numpy Generator \(numpy\.random\.default_rng\(seed\)\), got None$"),
    (lambda el: el.score([10**9]),
     r"^question index 1000000000 is out of range: this elicitor has \d+ questions$"),
    *[(lambda el, row=row: el.score(np.array([row])),
       rf"^question row \[{row[0]}, {row[1]}\] is out of range: this elicitor has p = 8 features "
       r"\(0 to 7; a one-feature question's row is \(k, -1\)\)$")
      for row in ([0, 9], [0, 8], [-1, 3], [3, -2])],
    (lambda el: el.posterior().mse(np.zeros((3, 8)), np.zeros(4)),
     r"^X_test is \(3, 8\) and y_test \(4,\); they need m x 8 and m$"),
    # y as a column was broadcast against the predictions: the mean of a 3 x 3 table
    (lambda el: el.posterior().mse(np.zeros((3, 8)), np.zeros((3, 1))),
     r"^X_test is \(3, 8\) and y_test \(3, 1\); they need m x 8 and m$"),
    # a float index was cut: question 0 was scored for 0.5
    (lambda el: el.score([0.5]),
     r"^question index 0\.5 is out of range: this elicitor has \d+ questions$")])
def test_elicitor_arguments_are_checked_with_one_line(call, message):
    X, y, U = make_data()
    el = Elicitor(X, y, U, Hyper(), engine="numpy")
    with pytest.raises(ElicitError, match=message):
        call(el)


@pytest.mark.parametrize("argv, message", [
    (["bench", "--record", "rec"], "--record goes with --suite"),
    (["bench", "--figures", "synthetic_round"], "--figures goes with --suite"),
    (["bench", "--suite", "--figures", "no_such_figure", "--steps", ""],
     "unknown round figure 'no_such_figure'; choose from synthetic_round, "),
    (["bench", "--suite", "--figures", "", "--steps", "no_such_step"],
     "unknown step 'no_such_step'; choose from synthetic, "),
    (["bench", "--suite", "--figures", "", "--steps", "", "--json", "s.json"],
     "--json does not go with --suite: it measures its own figures on the numpy engine, "
     "and --record DIR writes them"),
    (["bench", "--data-dir", "/nonexistent"], "--data-dir goes with the -real sizes"),
    # the random sizes have no standardisation to choose: it was ignored
    (["bench", "--size", "synthetic", "--standardize", "train"],
     "--standardize goes with the -real sizes, not --size synthetic"),
    # nothing measured, exit 0 (and with --record an empty record, the next run's baseline)
    (["bench", "--suite", "--figures", "", "--steps", ""],
     "--figures '' and --steps '' measure nothing; name a round figure or a step"),
    (["bench", "--suite", "--figures", "synthetic_round,synthetic_round", "--steps", ""],
     "round figure 'synthetic_round' is named twice; name it once"),
    # a subset record replaced the whole suite's record of the commit, and then stood for
    # every figure as the next call's baseline ("no figure more than 20% slower")
    *[(["bench", "--suite", *subset, "--record", "rec"],
       "--record writes the whole suite's record: measure a subset (--figures, --steps) "
       "without it") for subset in (["--figures", "synthetic_round"], ["--steps", ""])],
    # an explicit data directory that is missing skipped every real-data figure, exit 0
    (["bench", "--suite", "--data-dir", "/nonexistent", "--figures", "amazon_round",
      "--steps", ""], "data directory /nonexistent (from --data-dir / data_dir option) does "
                      "not exist"),
    # the suite measured the numpy engine's figures at its own sizes, whatever was asked
    *[(["bench", "--suite", "--figures", "", "--steps", "", *given],
       f"{given[0]} does not go with --suite: it measures its own figures on the numpy engine")
      for given in (["--engine", "cmdstan"], ["--size", "p2000"], ["--rounds", "2"],
                    ["--no-exact"], ["--standardize", "train"])]])
def test_bench_refuses_the_options_its_call_would_ignore(tmp_path, capsys, monkeypatch, argv,
                                                         message):
    """Each was ignored with exit 0: a user asking for a record got none."""
    from elicit.cli.main import main

    monkeypatch.chdir(tmp_path)
    assert main(argv) == 2
    assert_one_line_error(capsys.readouterr().err, "^elicit: error: " + re.escape(message))
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("script, args, message", [
    ("compare_targets.py", ["a", "b", "--at", "x"], "argument --at: expected a positive integer"),
    ("diagnose_realdata.py", ["--run", "-1"], "argument --run: expected an integer >= 0"),
    ("diagnose_realdata.py", ["--rounds", "0"], "argument --rounds: expected a positive integer"),
    ("diagnose_realdata.py", ["--meta-features", "file.csv"],
     "argument --meta-features: invalid choice: 'file.csv'"),
    ("refit_modes.py", ["x", "--runs", "0"], "argument --runs: expected a positive integer"),
    ("models_table.py", ["--tau2", "abc"], "--tau2 must be a positive number or 'cv', got 'abc'"),
    ("models_table.py", ["--dataset", "foo"], "argument --dataset: invalid choice: 'foo'"),
    ("relevance_orders.py", ["--dataset", "foo"], "argument --dataset: invalid choice: 'foo'"),
    ("relevance_orders.py", ["--corpus", "/nonexistent.jsonl"],
     "review file /nonexistent.jsonl not found"),
    # both were ignored without a word (the Amazon reviews were measured, or the corpus)
    ("relevance_orders.py", ["--name", "kitchen"], "--name names a --corpus; give --corpus FILE"),
    *[("relevance_orders.py", ["--corpus", "x.jsonl", "--dataset", dataset],
       "--dataset and --corpus are two data sets; give one") for dataset in ("amazon", "yelp")],
    ("diagnose_realdata.py", ["--tau2", "-1"], "--tau2 must be a positive number, got '-1'"),
    ("diagnose_realdata.py", ["--tau2", "cv"], "--tau2 must be a positive number, got 'cv' (a "
                                               "sweep's CV of tau2 is not run here)"),
    *[("tall_table.py", [option, value], f"argument {option}: expected a positive integer, "
                                         f"got {shown}")
      for option in ("--rows", "--features") for value, shown in (("1,x", "'x'"), ("-5", "-5"),
                                                                  ("0", "0"))],
    ("tall_table.py", ["--rounds", "0"], "argument --rounds: expected a positive integer")])
def test_the_experiments_scripts_answer_bad_options_with_one_line(script, args, message,
                                                                 capsys, monkeypatch):
    """They parsed with plain int: tracebacks, and refit_modes --runs 0 audited every run;
    models_table --tau2 abc and relevance_orders --dataset foo were tracebacks too, and so were
    diagnose_realdata --tau2 -1 and --tau2 cv (refused deep in the model) and tall_table --rows x,
    --rows -5 and --rounds 0 (in a worker process: CalledProcessError); --rows 0 made a table
    of refusals."""
    code, _, err = run_script(script, args, capsys, monkeypatch)
    assert code == 2
    assert_one_line_error(err, re.escape(message))


@pytest.mark.parametrize("script", ["diagnose_realdata.py", "models_table.py"])
def test_the_experiments_scripts_say_a_missing_data_directory_in_one_line(script, capsys,
                                                                          monkeypatch):
    """$ELICIT_DATA naming no folder was an ElicitError traceback (relevance_orders said it in
    one line)."""
    monkeypatch.setenv("ELICIT_DATA", "/nonexistent")
    code, out, err = run_script(script, ["--rounds" if script[0] == "d" else "--runs", "1"],
                                capsys, monkeypatch)
    assert code == 2 and out == "", out
    assert_one_line_error(err, re.escape("data directory /nonexistent (from environment "
                                         "variable ELICIT_DATA) does not exist"))


@pytest.mark.parametrize("args, meta_features", [([], "ppmi"),
                                                  (["--meta-features", "counts"], "counts")])
def test_diagnose_realdata_builds_the_meta_features_asked(args, meta_features, capsys,
                                                          monkeypatch):
    """It had no --meta-features: since PPMI became the default its paper-literal
    configuration (docs/realdata.md's "mean gamma 1.01 -> 0.54") was no longer the paper's
    counts, and gamma moved the other way."""
    import elicit.paper.real_problem
    from elicit.errors import ElicitError

    made = []

    def stop(cfg, run):
        made.append(cfg)
        raise ElicitError("stopped before the data are read")

    monkeypatch.setattr(elicit.paper.real_problem, "realdata_problem", stop)
    code, out, err = run_script("diagnose_realdata.py", [*args, "--standardize", "train"],
                                capsys, monkeypatch)
    assert code == 2 and "stopped before the data are read" in err
    assert [(c.meta_features, c.standardize) for c in made] == [(meta_features, "train")]


def run_script(script: str, args: list[str], capsys, monkeypatch) -> tuple[int, str, str]:
    """``python experiments/<script> args`` from the repository's root, run in this process
    (a process of its own costs a second of imports per call): exit status, stdout, stderr.
    An exception the script does not turn into an exit fails the test, as a traceback would."""
    root = Path(__file__).resolve().parents[1]
    monkeypatch.chdir(root)
    monkeypatch.setattr(sys, "argv", [script, *args])
    capsys.readouterr()
    try:
        runpy.run_path(str(root / "experiments" / script), run_name="__main__")
        code = 0
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else 1
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("value", ["nan", "-1", "inf", "0"])
def test_every_bad_threshold_mean_gets_one_message(tmp_path, capsys, value):
    """--threshold-mean was checked twice by two rules: nan and -1 'must be positive' (the
    argument type), inf taken by it and refused by the configuration in other words."""
    from elicit.cli.main import main as elicit_main

    assert elicit_main(["synthetic", "--runs", "1", "--rounds", "1", "--quiet", "--out",
                        str(tmp_path / "o"), "--threshold-mean", value]) == 2
    assert_one_line_error(capsys.readouterr().err, "the threshold mean must be 'auto' or a "
                                                   "positive number, got ")
    assert not (tmp_path / "o").exists()


def test_study_table_refuses_a_folder_without_a_realdata_sweep_before_its_table(
        tmp_path, capsys, monkeypatch):
    """It printed the table's header, then 'study_table: X holds no finished realdata sweep'
    with exit status 1."""
    code, out, err = run_script("study_table.py", [str(tmp_path)], capsys, monkeypatch)
    assert code == 2 and out == "", out
    assert_one_line_error(err, re.escape(f"{tmp_path} holds no finished realdata sweep"))


def test_refit_modes_refuses_a_folder_it_cannot_audit_before_its_workers(tmp_path, capsys,
                                                                       monkeypatch):
    """A folder without config.json (a typo, or results/ itself) was a FileNotFoundError
    traceback from a worker process; a sweep of feature questions too (an ElicitError from
    the pair loop), whose answers the audit's likelihood of pair answers does not cover."""
    import json

    config = json.loads((Path(__file__).resolve().parents[1] / "results" / "synthetic"
                         / "config.json").read_text())
    (tmp_path / "mixed").mkdir()
    mixed = {**config, "questions": "both", "model": "relevance"}
    (tmp_path / "mixed" / "config.json").write_text(json.dumps(mixed))
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "config.json").write_text("{")
    for folder, message in [
            (tmp_path / "none", f"{tmp_path / 'none'} holds no sweep (config.json)"),
            (tmp_path / "bad", f"{tmp_path / 'bad'}/config.json is damaged (not JSON"),
            (tmp_path / "mixed", f"{tmp_path / 'mixed'} asks pairs and relevance questions: "
                                 f"refit_modes audits sweeps of pair questions")]:
        code, out, err = run_script("refit_modes.py", [str(folder), "--runs", "1"], capsys,
                                    monkeypatch)
        assert code == 2 and out == "", out
        assert_one_line_error(err, re.escape(message))
    # one folder named twice was audited twice and summed into one summary
    code, out, err = run_script("refit_modes.py", [str(tmp_path / "bad"), str(tmp_path / "bad"),
                                                   "--runs", "1"], capsys, monkeypatch)
    assert code == 2 and out == "", out
    assert_one_line_error(err, re.escape(f"{tmp_path / 'bad'} is named twice: name each sweep "
                                         f"folder once"))


def test_compare_targets_takes_only_two_sweeps_that_differ_in_the_target(tmp_path, capsys,
                                                                         monkeypatch):
    """A missing folder was a FileNotFoundError traceback; sweeps of other seeds (or the
    synthetic beside Amazon) were paired without a word; --at beyond the sweeps' rounds printed
    an empty table."""
    import pandas as pd

    from elicit.harness.store import SweepStore

    def folder(name, **settings):
        SweepStore.open(tmp_path / name, {"seed": 0, "rounds": 2, **settings})
        pd.DataFrame({"dataset": "d", "strategy": "random", "run": 0, "n_feedback": [0, 1, 2],
                      "mse": 1.0}).to_csv(tmp_path / name / "mse.csv", index=False)
        return str(tmp_path / name)

    pred, params = folder("a"), folder("b", utility_target="params")
    for args, message in [
            ([str(tmp_path / "nowhere"), params], "nowhere holds no finished sweep"),
            ([pred, folder("c", utility_target="params", seed=1)],
             "differ in more than the utility target (seed: 0 there, 1 now)"),
            ([params, pred], "the first sweep's utility target is params, the second's "
                             "predictive: give the predictive sweep first"),
            ([pred, params], "no curve reaches --at 10, 20, 30 answers (the sweeps end at 2)")]:
        code, out, err = run_script("compare_targets.py", args, capsys, monkeypatch)
        assert code == 2 and out == "", out
        assert_one_line_error(err, re.escape(message))
    code, out, err = run_script("compare_targets.py", [pred, params, "--at", "2"], capsys,
                                monkeypatch)
    assert code == 0 and "| random | 2 | 1.000 | 1.000 |" in out, err


def test_a_damaged_sweep_record_is_one_line(tmp_path, capsys):
    """A config.json or part that is not JSON (edited by hand, a disk error) gave a
    JSONDecodeError traceback."""
    from elicit.cli.main import main

    out = tmp_path / "o"
    argv = ["synthetic", "--runs", "1", "--rounds", "1", "--strategies", "random", "--out",
            str(out), "--quiet"]
    assert main(argv) == 0
    capsys.readouterr()
    part = next((out / "parts").rglob("*.json"))
    part.write_text('{"mse": [1.0, ')
    assert main(argv) == 2
    assert_one_line_error(capsys.readouterr().err, f"^elicit: error: {re.escape(str(part))} is "
                                                   "damaged \\(not JSON: .*\\); delete it and run "
                                                   "the command again: it is computed again$")
    (out / "config.json").write_text('{"seed": 0, ')
    assert main(argv) == 2
    assert_one_line_error(capsys.readouterr().err, "config.json is damaged \\(not JSON: .*\\); "
                                                   "delete the folder .* or use another --out$")


def test_a_problem_file_of_the_simulations_docs_makes_a_session(capsys, tmp_path):
    """Bug: the refusal of arrays elicit does not read also refused the problem files
    docs/simulations.md tells users to write (a test set and an expert beside X, y, U)."""
    X, y, U = make_data()
    np.savez(tmp_path / "run000.npz", X=X, y=y, U=U, X_test=X[:3], y_test=y[:3],
             groups=np.arange(X.shape[1]) % 2, beta=np.ones(X.shape[1]))
    code, out, err = run_cli(capsys, "session", "new", "--from-npz",
                             str(tmp_path / "run000.npz"), "--out",
                             str(tmp_path / "s.session"), "--engine", "numpy")
    assert code == 0, err
    assert (tmp_path / "s.session").exists()


@pytest.mark.parametrize("columns, rows, said", [
    (["y"], 30, "need at least 2 feature columns besides the target, got 0"),
    (["y", "a"], 2, "need at least 2 feature columns besides the target, got 1")])
def test_a_table_with_too_few_feature_columns_says_so(capsys, tmp_path, columns, rows, said):
    """Bug: a table of the target alone said "X is empty (shape (30, 0))", naming an X the
    user never gave, and one of a single feature and 2 rows said to add rows."""
    path = tmp_path / "t.csv"
    rng = np.random.default_rng(0)
    path.write_text(",".join(columns) + "\n" + "".join(
        ",".join(f"{v:.3f}" for v in rng.normal(size=len(columns))) + "\n"
        for _ in range(rows)))
    code, _, err = new_from_csv(capsys, tmp_path, path)
    assert code == 2
    assert_one_line_error(err, re.escape(said))


def test_one_feature_and_two_rows_in_python_is_told_its_features_not_its_rows(tmp_path):
    """The feature count comes before the rows' count: more rows would not help."""
    with pytest.raises(ElicitError, match=r"^need at least 2 features \(columns of X\), got 1$"):
        Session.create(np.array([[1.0], [2.0]]), np.array([1.0, 3.0]),
                       path=tmp_path / "s.session", engine="numpy")


@pytest.mark.parametrize("kwargs, said", [
    ({"n_train": 0}, "n_train and n_test must be positive, got 0 and 1000"),
    ({"n_test": -1}, "n_train and n_test must be positive, got 20 and -1"),
    ({"irrelevant": 26}, "irrelevant must lie in 0..25, got 26"),
])
def test_a_synthetic_data_set_it_cannot_draw_is_refused_in_one_line(kwargs, said):
    """make_synthetic refused these with a ValueError, a traceback where the package's
    commands answer an ElicitError in one line."""
    from elicit.model.simulate import make_synthetic

    with pytest.raises(ElicitError, match=f"^{re.escape(said)}$"):
        make_synthetic(np.random.default_rng(0), **kwargs)
