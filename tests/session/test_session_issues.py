"""The failures measured on sessions before format 2, one test each (docs/reliability.md).

Concurrency that left a session stuck, answers that only the -wal file held, no CSV input,
no default meta-features, silent misalignment, an uncentred y, constant columns, misleading
messages, an unbounded --batch, and what the expert was shown.
"""

from __future__ import annotations

import functools
import io
import json
import re
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from conftest import SESSION_NAMES as NAMES
from conftest import make_session_data as make_data
from conftest import needs_data, read_only_run
from helpers import SAME, answer_shown, create_session, one_line, run_main, shown, sql_edit

from elicit.cli.main import main as cli_main
from elicit.errors import ElicitError
from elicit.session.session import Session, UnknownQuery

ROOT = Path(__file__).resolve().parents[2]


cli = functools.partial(run_main, cli_main)


# --------------------------------------------------------------------------------------------
# Two processes on one session
# --------------------------------------------------------------------------------------------

def test_a_pair_answered_while_a_question_is_chosen_never_leaves_the_session_stuck(
        tmp_path, monkeypatch):
    """Process A chooses a pair; before A records it, process B asks and answers that very
    pair. A must not record a pending query for an answered pair (which nobody could ever
    answer: `ask`, `serve` and a fresh open all repeated "already answered")."""
    path = tmp_path / "race.session"
    create_session(path).close()
    a, b = Session.open(path), Session.open(path)
    original = Session._choose
    raced = []

    def choose_then_lose_the_race(self, *args):
        chosen = original(self, *args)
        if self is a and not raced:
            raced.append(True)
            q = b.next_query()
            assert (q.i, q.j) == (chosen[0].i, chosen[0].j)  # same model, same question
            b.answer(q, "similar")
        return chosen

    monkeypatch.setattr(Session, "_choose", choose_then_lose_the_race)
    q = a.next_query()
    answered = {(r.i, r.j) for r in b.history.itertuples()}
    assert (q.i, q.j) not in answered, "a pending query for an answered pair"
    a.answer(q, "dissimilar")
    assert len(a.history) == 2
    with Session.open(path) as fresh:
        q2 = fresh.next_query()
        fresh.answer(q2, "similar")
    a.close()
    b.close()


def test_a_stuck_file_left_by_an_older_elicit_is_healed_on_open(tmp_path):
    path = tmp_path / "stuck.session"
    with create_session(path) as s:
        q = s.next_query()
        s.answer(q, "similar")
    # the state two racing processes left behind
    sql_edit(path, "INSERT INTO queries (kind, i, j, expected_gain, exact_gain, shown_at, "
             "status) VALUES (?, ?, ?, 0.1, 1, 'now', 'pending')", q.kind, q.i, q.j)
    with Session.open(path) as s:
        nq = s.next_query()
        assert (nq.i, nq.j) != (q.i, q.j)
        s.answer(nq, "dissimilar")
        assert s.progress()["answered"] == 2


def test_the_loser_hears_answered_elsewhere_and_gets_a_fresh_question(tmp_path):
    path = tmp_path / "two.session"
    create_session(path).close()
    with Session.open(path) as a, Session.open(path) as b:
        qa, qb = a.next_query(), b.next_query()
        assert qa.id == qb.id
        a.answer(qa, "similar")
        with pytest.raises(ElicitError, match="answered elsewhere"):
            b.answer(qb, "dissimilar")
        nb = b.next_query()
        assert nb.id != qb.id and (nb.i, nb.j) != (qa.i, qa.j)
        b.answer(nb, "dissimilar")


# --------------------------------------------------------------------------------------------
# The .session file alone holds every confirmed answer
# --------------------------------------------------------------------------------------------

def test_a_copy_of_the_session_file_alone_holds_every_confirmed_answer(tmp_path):
    path = tmp_path / "live.session"
    with create_session(path) as s:
        for a in ("similar", "dissimilar", "dont_know"):
            s.answer(s.next_query(), a)
        s.next_query()  # a pending query too
        # While the session is open: nothing beside the file, and the file alone is whole.
        assert sorted(p.name for p in tmp_path.iterdir()) == ["live.session"]
        copy = tmp_path / "copy" / "live.session"
        copy.parent.mkdir()
        shutil.copyfile(path, copy)
        with Session.open(copy) as c:
            assert list(c.history["answer"]) == ["similar", "dissimilar", "dont_know"]
            assert c.pending()[0] == s.pending()[0]


# --------------------------------------------------------------------------------------------
# Your own data
# --------------------------------------------------------------------------------------------

def write_table(tmp_path, n=30, seed=0) -> tuple[Path, pd.DataFrame]:
    rng = np.random.default_rng(seed)
    df = pd.DataFrame({"age": rng.uniform(20, 70, n), "income": rng.uniform(1e4, 9e4, n),
                       "height": rng.normal(170, 10, n), "weight": rng.normal(70, 8, n),
                       "city": ["a", "b"] * (n // 2)})
    df["price"] = 100 + 0.3 * df["age"] + 1e-4 * df["income"] + rng.normal(0, 1, n)
    path = tmp_path / "data.csv"
    df.to_csv(path, index=False)
    return path, df


def test_cli_new_from_a_csv_table(tmp_path, capsys):
    table, df = write_table(tmp_path)
    feats = ["age", "income", "height", "weight"]
    meta = pd.DataFrame({"unit_years": [1, 0, 0, 0], "money": [0, 1, 0, 0],
                         "body": [0, 0, 1, 1]}, index=feats).iloc[::-1]  # another row order
    meta.to_csv(tmp_path / "meta.csv")
    out = tmp_path / "t.session"
    code, text, err = cli(capsys, "session", "new", "--from-csv", table, "--target", "price",
                          "--features", ",".join(feats), "--meta-features",
                          tmp_path / "meta.csv", "--out", out, "--engine", "numpy")
    assert code == 0, err
    # height and weight have the same meta-features: that one pair is not asked.
    assert "4 features, 5 pairs" in text
    with Session.open(out) as s:
        assert s.feature_names == feats
        np.testing.assert_array_equal(s.U, meta.loc[feats].to_numpy(float))  # by name
        assert s.target_description == "the outcome 'price'"
        pred = s.predict(df[feats].iloc[::-1])  # raw units, columns in another order too
        assert abs(pred.mean() - df["price"].mean()) < 2.0
    code, _, err = cli(capsys, "session", "new", "--from-csv", table, "--target", "price",
                       "--out", tmp_path / "u.session", "--engine", "numpy")
    assert code == 2 and re.search(r"column\(s\) 'city' of data.csv are not numeric",
                                   one_line(err))


def test_from_npz_given_a_csv_points_to_from_csv(tmp_path, capsys):
    table, _ = write_table(tmp_path)
    code, _, err = cli(capsys, "session", "new", "--from-npz", table, "--out",
                       tmp_path / "n.session")
    line = one_line(err)
    assert code == 2 and "is not a numpy .npz file" in line and "--from-csv" in line
    assert "pickle" not in line


def test_parquet_tables(tmp_path, capsys):
    _, df = write_table(tmp_path)
    try:
        import pyarrow  # noqa: F401
    except ImportError:
        (tmp_path / "d.parquet").write_bytes(b"PAR1 not really")
        code, _, err = cli(capsys, "session", "new", "--from-csv", tmp_path / "d.parquet",
                           "--target", "price", "--out", tmp_path / "p.session")
        assert code == 2 and "needs the pyarrow package" in one_line(err)
        return
    df.drop(columns="city").to_parquet(tmp_path / "d.parquet")
    code, text, err = cli(capsys, "session", "new", "--from-csv", tmp_path / "d.parquet",
                          "--target", "price", "--out", tmp_path / "p.session",
                          "--engine", "numpy")
    assert code == 0 and "4 features" in text, err


def test_meta_feature_names_that_do_not_match_are_listed(tmp_path):
    X, y, U = make_data()
    Xdf = pd.DataFrame(X, columns=NAMES)
    Udf = pd.DataFrame(U, index=NAMES[:7] + ["volume"])
    with pytest.raises(ElicitError, match=r"no row for feature\(s\) 'weight'; row\(s\) for "
                                          r"unknown feature\(s\) 'volume'"):
        Session.create(Xdf, y, Udf, path=tmp_path / "m.session", engine="numpy")


def test_meta_features_default_to_the_columns_correlation_structure(tmp_path):
    from elicit.data.metafeatures import table_meta_features

    X, y, _ = make_data()
    with Session.create(pd.DataFrame(X, columns=NAMES), y, path=tmp_path / "a.session",
                        engine="numpy") as s:
        np.testing.assert_array_equal(s.U, table_meta_features(X))
        assert any("principal directions" in line for line in s.summary)
        s.answer(s.next_query(), "similar")
    with Session.create(X, y, None, NAMES, path=tmp_path / "b.session", engine="numpy") as s:
        assert s.U.shape == (8, 8)  # 8 columns of rank 8: fewer than the 10 directions
    out = io.StringIO()
    with Session.open(tmp_path / "a.session") as s:
        from elicit.session.terminal import show_history

        show_history(s, out=out)
    assert "principal directions" in out.getvalue()


def test_meta_features_indexed_by_name_are_aligned_not_taken_in_row_order(tmp_path):
    X, y, U = make_data()
    Xdf = pd.DataFrame(X, columns=NAMES)
    shuffled = pd.DataFrame(U, index=NAMES).iloc[[3, 1, 7, 0, 2, 6, 5, 4]]
    with Session.create(Xdf, y, shuffled, path=tmp_path / "a.session", engine="numpy") as a:
        np.testing.assert_array_equal(a.U, U)


def test_predict_matches_dataframe_columns_by_name(tmp_path):
    X, y, U = make_data()
    with Session.create(pd.DataFrame(X, columns=NAMES), y, U, path=tmp_path / "p.session",
                        engine="numpy") as s:
        df = pd.DataFrame(X[:4], columns=NAMES)
        np.testing.assert_allclose(s.predict(df[NAMES[::-1]]), s.predict(X[:4]))
        with pytest.raises(ElicitError, match=r"missing column\(s\) 'weight'; unknown "
                                              r"column\(s\) 'mass'"):
            s.predict(df.rename(columns={"weight": "mass"}))


def test_a_y_that_is_not_centred_gives_predictions_on_its_own_scale(tmp_path):
    X, y, U = make_data()
    with Session.create(X, y + 100, U, NAMES, path=tmp_path / "y.session",
                        engine="numpy") as s:
        pred = s.predict(X)
        assert abs(pred.mean() - (y + 100).mean()) < 1.0
        assert np.corrcoef(pred, y)[0, 1] > 0.5
        s.export_prior(tmp_path / "prior.json")
    prior = json.loads((tmp_path / "prior.json").read_text())
    assert prior["y_offset"] == pytest.approx((y + 100).mean())


def test_constant_and_duplicate_columns_are_reported_and_never_asked(tmp_path):
    X, y, U = make_data()
    X = np.column_stack([X, np.full(12, 2.0), np.zeros(12), X[:, 0]])
    U = np.vstack([U, np.ones((3, 3))])
    names = NAMES + ["const", "zero", "price_again"]
    with Session.create(X, y, U, names, path=tmp_path / "c.session", engine="numpy",
                        strategy="random") as s:
        assert s.excluded == {"const": "constant column", "zero": "constant column",
                              "price_again": "same values as 'price'"}
        assert any("constant column(s): 'const', 'zero'" in line for line in s.summary)
        asked = set()
        while not s.is_done():
            q = s.next_query()
            asked |= {q.i, q.j}
            s.answer(q, "dont_know")
        assert asked == set(range(8))
        assert s.predict(X[:2]).shape == (2,)  # still in the model


# --------------------------------------------------------------------------------------------
# Messages that said the wrong thing
# --------------------------------------------------------------------------------------------


def test_a_session_in_a_read_only_folder_is_called_read_only(tmp_path):
    folder = tmp_path / "ro"
    folder.mkdir()
    create_session(folder / "s.session").close()
    r = read_only_run(folder, ["ask", str(folder / "s.session")])
    if r is None:
        pytest.skip("cannot make a read-only folder here")
    assert r.returncode == 2
    line = one_line(r.stderr)
    assert "read-only" in line and "corrupted" not in line and "backup" not in line


def test_identical_meta_features_say_so_without_naming_threshold_mean(tmp_path):
    X, y, _ = make_data()
    with pytest.raises(ElicitError) as e:
        Session.create(X, y, np.ones((8, 3)), NAMES, path=tmp_path / "i.session",
                       engine="numpy")
    assert "identical meta-features" in str(e.value)
    assert "threshold_mean" not in str(e.value)


def test_an_id_out_of_range_is_refused_before_anything_else(tmp_path):
    """An id SQLite cannot hold is refused before the session looks at the expert, the file
    or its write lock: not "opened read-only", not a complaint about the expert's name."""
    path = tmp_path / "r.session"
    create_session(path).close()
    with Session.open(path, read_only=True) as s:
        for bad in (0, 2**63, "0"):
            with pytest.raises(UnknownQuery, match=r"query \d+ was not asked in this session"):
                s.answer(bad, "similar", expert="not a valid name!")
            with pytest.raises(UnknownQuery):
                s.skip(bad)


def test_a_huge_query_id_is_an_unknown_query_in_the_api_and_the_web(tmp_path):
    path = tmp_path / "h.session"
    create_session(path).close()
    with Session.open(path) as s:
        with pytest.raises(ElicitError, match=r"query 10+ was not asked in this session"):
            s.answer(10**30, "similar")
        with pytest.raises(ElicitError, match="was not asked"):
            s.skip(str(10**30))
    pytest.importorskip("flask")
    from elicit.session.web import create_app

    app = create_app(path)
    c = app.test_client()
    token = shown(c)["token"]
    for qid in (str(10**30), "²"):
        r = c.post("/answer", data={"csrf_token": token, "query_id": qid,
                                    "answer": "similar"}, headers=SAME)
        assert r.status_code in (400, 404), (qid, r.status_code)
    app.config["ELICIT_SESSION"].close()


def test_batch_is_bounded_with_a_message(tmp_path, capsys):
    path = tmp_path / "b.session"
    # 5 features, 10 pairs: 7 answers leave the 3 the bound is about (8 features took 25)
    X, y, U = make_data(p=5)
    Session.create(X, y, U, NAMES[:5], path=path, engine="numpy").close()
    # refused by the parser (its message), before the session is opened: no clock, which a
    # busy machine can run past
    code, _, err = cli(capsys, "ask", path, "--batch", "100000")
    assert code == 2 and "at most 50 questions at a time, got 100000" in err
    with Session.open(path) as s:
        with pytest.raises(ElicitError, match="at most 50 questions"):
            s.batch(51)
        for _ in range(7):
            s.answer(s.next_query(), "dont_know")
        with pytest.raises(ElicitError, match=r"larger than the 3 pair\(s\) left to ask; "
                                              r"ask for 3 or fewer"):
            s.batch(4)
    code, _, err = cli(capsys, "ask", path, "--batch", "5")
    assert code == 2 and "use --batch 3 or less" in one_line(err)


# --------------------------------------------------------------------------------------------
# What the expert sees
# --------------------------------------------------------------------------------------------

def test_the_terminal_names_the_outcome_shows_worth_and_marks_the_keyword(tmp_path):
    from elicit.session.terminal import run_ask

    texts = {n: [f"the {n.upper()} was fine, a fair {n}"] for n in NAMES}
    with create_session(tmp_path / "t.session",
                        texts=texts, target_description="the blender's star rating") as s:
        out = io.StringIO()
        run_ask(s, io.StringIO("s\nq\n"), out)
    text = out.getvalue()
    assert "Do these two features affect the blender's star rating in the same way?" in text
    assert "worth 100% of the best question so far" in text and "expected gain" not in text
    q = re.search(r"A: (\w+)", text).group(1)
    assert f"the **{q.upper()}** was fine, a fair **{q}**" in text


def test_a_stopping_hint_once_recent_questions_are_worth_little(tmp_path):
    with create_session(tmp_path / "h.session") as s:
        for _ in range(6):
            s.answer(s.next_query(), "similar")
        assert s.stop_hint() is None
        sql_edit(s.path, "UPDATE queries SET expected_gain = expected_gain * 0.001 WHERE id > 1")
        assert ("last 5 questions were each worth less than 5% of the best question so far"
                in s.stop_hint())


def test_the_web_page_names_the_outcome_marks_keywords_and_the_done_page_is_plain(tmp_path):
    pytest.importorskip("flask")
    from elicit.session.web import create_app

    X, y, U = make_data(p=3)
    path = tmp_path / "w.session"
    Session.create(X, y, U, ["price", "lid", "noise"], path=path, engine="numpy",
                   target_description="the star rating",
                   texts={"price": ["<b>the price</b> is right"]}).close()
    app = create_app(path)
    c = app.test_client()
    html = c.get("/").get_data(as_text=True)
    assert "affect the star rating in the same way?" in html
    assert "worth 100% of the best question so far" in html and "expected gain" not in html
    if "price" in re.findall(r'id="feature-\d">([^<]+)<', html):
        assert "&lt;b&gt;the <mark>price</mark>&lt;/b&gt; is right" in html
    for _ in range(3):
        _, r = answer_shown(c)
        assert r.status_code == 303
    done = c.get(r.headers["Location"]).get_data(as_text=True)
    assert 'id="done"' in done and "Here is the next question" not in done
    assert 'id="message"' not in done
    app.config["ELICIT_SESSION"].close()


def test_every_option_has_help_and_there_is_a_version(capsys):
    import argparse

    from elicit.cli.session import add_session_parsers

    parser = argparse.ArgumentParser(prog="elicit")
    sub = parser.add_subparsers(dest="command")
    add_session_parsers(sub)
    missing = []
    for name, sp in sub.choices.items():
        subs = [(name, sp)]
        for act in sp._actions:
            if isinstance(act, argparse._SubParsersAction):
                subs += [(f"{name} {n}", p) for n, p in act.choices.items()]
        for label, p in subs:
            for act in p._actions:
                if act.option_strings and act.help in (None, "") and "-h" not in \
                        act.option_strings:
                    missing.append(f"{label} {act.option_strings[0]}")
    assert missing == []
    code, out, _ = cli(capsys, "--version")
    assert code == 0 and re.match(r"elicit \d+\.\d+", out)


def test_the_readme_commands_run_from_the_virtualenv():
    text = (ROOT / "README.md").read_text()
    section = text.split("## Elicit with a real expert", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```bash\n(.*?)```", section, re.S)
    lines = [ln.strip() for b in blocks for ln in b.splitlines() if ln.strip()]
    assert lines, "no commands in the section"
    # `make setup` puts the command in .venv/bin only: a bare `elicit` is not found.
    bare = [ln for ln in lines if ln.startswith("elicit ")]
    assert not bare, f"commands that fail after make setup: {bare}"
    assert all(ln.startswith(".venv/bin/elicit ") for ln in lines), lines


# --------------------------------------------------------------------------------------------
# SIGTERM and SIGHUP close the session like Ctrl-C
# --------------------------------------------------------------------------------------------

def _until(stream, marker: str, limit: float = 60.0) -> str:
    buf, t0 = "", time.monotonic()
    while not buf.endswith(marker) and time.monotonic() - t0 < limit:
        ch = stream.read(1)
        if not ch:
            break
        buf += ch
    return buf


# a real process and a signal, as the kill tests of test_session_faults.py: slow like them
# (`make test` runs it, `make test-fast` does not)
@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP])
def test_ask_closes_cleanly_on_sigterm_and_sighup(tmp_path, sig):
    path = tmp_path / "sig.session"
    create_session(path).close()
    proc = subprocess.Popen([sys.executable, "-m", "elicit", "ask", str(path)],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, bufsize=1)
    try:
        _until(proc.stdout, "\n> ")
        saved = 0
        for key in ("s", "d"):
            proc.stdin.write(key + "\n")
            proc.stdin.flush()
            saved += _until(proc.stdout, "\n> ").count("saved: ")
        proc.send_signal(sig)
        out, err = proc.communicate(timeout=600)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert saved == 2
    assert proc.returncode == 128 + sig, (proc.returncode, err)
    assert f"stopped by signal {int(sig)}: 2 answers are saved" in out and "Traceback" not in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["sig.session"]
    with Session.open(path) as s:
        assert s.progress()["answered"] == 2


# a real process and a signal, as the kill tests of test_session_faults.py: slow like them
# (`make test` runs it, `make test-fast` does not)
@pytest.mark.slow
def test_serve_closes_cleanly_on_sigterm(tmp_path):
    import urllib.request

    path = tmp_path / "srv.session"
    create_session(path).close()
    proc = subprocess.Popen([sys.executable, "-m", "elicit", "serve", str(path),
                             "--port", "0"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    try:
        m = re.search(r"at http://127.0.0.1:(\d+)/", proc.stdout.readline())
        assert m
        with urllib.request.urlopen(f"http://127.0.0.1:{m.group(1)}/", timeout=600) as r:
            assert r.status == 200
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=600)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 128 + signal.SIGTERM, err
    assert "stopped; 0 answers are saved" in out and "Traceback" not in err


# --------------------------------------------------------------------------------------------
# What the docs said and the code did not
# --------------------------------------------------------------------------------------------

def test_the_posterior_group_says_it_is_the_map(tmp_path):
    """docs/session.md puts point_estimate = "MAP" on the posterior; it was on constant_data
    only."""
    pytest.importorskip("arviz")
    import arviz as az

    with create_session(tmp_path / "s.session") as s:
        s.answer(s.next_query(), "similar")
        s.export_prior(tmp_path / "p.nc")
        idata = s.to_inferencedata()
    for data in (idata, az.from_netcdf(tmp_path / "p.nc")):
        for group in (data.posterior, data.constant_data):
            assert group.attrs["point_estimate"] == "MAP"
            assert group.attrs["n_answers"] == 1


@needs_data
@pytest.mark.slow
def test_the_pair_counts_docs_session_states_for_amazon_run_7(tmp_path, capsys):
    """docs/session.md's counts for `--dataset amazon --run 7` are what the command prints."""
    text = (ROOT / "docs" / "session.md").read_text()
    m = re.search(r"`--dataset\s+amazon\s+--run\s+7`:\s+(\d+)\s+keywords\s+are\s+constant,\s+"
                  r"and\s+(\d+)\s+of\s+the\s+(\d+)\s+pairs\s+are\s+asked", text)
    assert m, "the sentence with the counts moved; update this test"
    constant, asked, total = map(int, m.groups())
    code, out, _ = cli(capsys, "session", "new", "--dataset", "amazon", "--run", "7",
                       "--out", tmp_path / "a.session", "--engine", "numpy")
    assert code == 0
    assert f"{asked} pairs," in out and f"{constant} constant column(s)" in out
    assert f"{asked} pairs can be asked about; {total - asked} are not" in out
    assert f"2 of {asked} pairs answered" in text  # the terminal example


def test_a_journal_gone_between_look_and_stat_is_no_journal(tmp_path, monkeypatch, capsys):
    """`elicit history` / `export` failed now and then with "No such file or directory:
    ...-journal" while another program answered: its commit deleted the journal between an
    exists() and a stat(). Here the journal is seen to exist and is gone when read."""
    import pathlib

    path = tmp_path / "s.session"
    create_session(path).close()
    seen = pathlib.Path.exists
    monkeypatch.setattr(pathlib.Path, "exists",
                        lambda p: p.name.endswith("-journal") or seen(p))
    code, out, err = cli(capsys, "history", str(path))
    assert code == 0 and err == "", err
    code, _, err = cli(capsys, "export", str(path), str(tmp_path / "prior.json"))
    assert code == 0 and err == "", err
    with Session.open(path) as s:  # a writable open looks for a cut write too
        assert s.progress()["answered"] == 0


@pytest.mark.parametrize("message", ["database or disk is full", "disk I/O error",
                                     "unable to open database file"])
@pytest.mark.parametrize("when", ["COMMIT", "INSERT INTO answers"])
def test_an_answer_sqlite_cannot_save_says_nothing_was_saved(tmp_path, monkeypatch, message,
                                                            when):
    """A full disk, an I/O error or a journal that cannot be created (the folder made
    read-only while the session is open) surfaced as SQLite's own words ("session file
    problem: unable to open database file", though the file is there)."""
    from elicit.session import store

    path = tmp_path / "s.session"
    create_session(path).close()

    class Refusing(store._Connection):
        def execute(self, sql, *args):
            if sql.startswith(when):  # the commit, or a statement that needs the journal
                raise sqlite3.OperationalError(message)
            return super().execute(sql, *args)

    with Session.open(path) as s:
        q = s.next_query()
        monkeypatch.setattr(store, "_Connection", Refusing)
        with Session.open(path) as s2:
            with pytest.raises(ElicitError, match=rf"\({message}\); nothing was saved\. "):
                s2.answer(s2.next_query(), "similar")
        monkeypatch.undo()
        assert q.id == s.next_query().id
    with Session.open(path) as s:
        assert s.progress()["answered"] == 0


@pytest.mark.parametrize("flag", ["overwrite", "standardize"])
@pytest.mark.parametrize("value", ["no", "0", 1, None])
def test_create_takes_only_true_or_false_for_its_switches(tmp_path, flag, value):
    """overwrite='no' (a string read from a config file) used to replace the session file and
    its answers: any truthy value counted as True. Nothing is touched before the refusal."""
    X, y, U = make_data()
    path = tmp_path / "s.session"
    with Session.create(X, y, U, NAMES, path=path) as s:
        s.answer(s.next_query(), "similar")
    before = path.read_bytes()
    with pytest.raises(ElicitError, match=f"^{flag} must be True or False, got {value!r}$"):
        Session.create(X, y, U, NAMES, path=path, **{flag: value})
    assert path.read_bytes() == before


@pytest.mark.parametrize("name", ["table.csv", "prior.json"])
def test_export_never_replaces_a_file_without_overwrite(tmp_path, capsys, name):
    """`elicit export my.session mydata.csv` replaced the user's own table with the history
    without a word."""
    path = tmp_path / "s.session"
    create_session(path).close()
    target = tmp_path / name
    target.write_text("area,price\n1,2\n")
    code, _, err = cli(capsys, "export", path, target)
    assert code == 2
    assert one_line(err) == (f"elicit: error: {target} already exists; pass overwrite=True "
                             "(CLI: --overwrite) to replace it")
    assert target.read_text() == "area,price\n1,2\n"
    if name.endswith(".json"):
        with Session.open(path, read_only=True) as s, pytest.raises(ElicitError,
                                                                   match="already exists"):
            s.export_prior(target)
    code, out, _ = cli(capsys, "export", path, target, "--overwrite")
    assert code == 0 and out.strip() == f"wrote {target}"
    assert target.read_text() != "area,price\n1,2\n"
