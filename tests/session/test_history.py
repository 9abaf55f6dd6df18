"""``elicit history``: the table and the CSV of a session's answers, read without the model
(``elicit.session.opening``), hold what the session's own record (``Session.history``, the
DataFrame that ``elicit export FILE.csv`` writes) holds."""

from __future__ import annotations

import csv
import functools
import io
import re

import pandas as pd
import pytest

from elicit.cli.main import main
from elicit.elicitation.kinds import get_kind
from elicit.internal.text import printable
from elicit.model.spec import Hyper
from elicit.session.session import Session
from tests.helpers import create_session, run_main

cli = functools.partial(run_main, main)

#: comments a table or a CSV could mangle: separators, quotes, a wide letter, a control
ODD = ['two, "quoted" words', "naïve — 価格", "tab\there", None, "ends\x1b[2J"]


@pytest.fixture(scope="module")
def sessions(tmp_path_factory):
    """One kind and one expert, with an undone answer; two kinds, two experts and the random
    strategy (no expected gains)."""
    folder = tmp_path_factory.mktemp("history")
    one, two = folder / "one.session", folder / "two.session"
    with create_session(one) as s:
        for k, comment in enumerate(ODD[:4]):
            s.answer(s.next_query(), "similar" if k % 2 else "dissimilar", comment=comment)
        s.undo()
    with create_session(two, questions="pairs,relevance", hyper=Hyper(model="relevance"),
                        strategy="random") as s:
        for k, who in enumerate(["ann", "bob", "ann", "bob"]):
            q = s.next_query(who)
            word = get_kind(q.kind).answers[k % 2].value
            s.answer(q, word, comment=ODD[4] if k == 3 else None, expert=who)
    return {"one": one, "two": two}


@pytest.mark.parametrize("name", ["one", "two"])
def test_the_history_table_holds_every_answer(sessions, capsys, name):
    """Each answer is a line of the table, in its columns' order, with what the session's
    record holds (text escaped, the gain to four significant digits, blank for none); the
    columns line up under their headings."""
    with Session.open(sessions[name], read_only=True) as s:
        h = s.history
        several = len(s.kinds) > 1, len(s.experts()) > 1
    code, out, err = cli(capsys, "history", sessions[name])
    assert code == 0 and err == ""
    lines = out.splitlines()
    head = next(k for k, ln in enumerate(lines) if ln.lstrip().startswith("answer_id"))
    header, rows = lines[head], lines[head + 1:]
    assert ("expert" in header.split(), "kind" in header.split()) == (several[1], several[0])
    assert len(rows) == len(h) >= 4
    for line, (_, r) in zip(rows, h.iterrows()):
        shown = [str(r["answer_id"]), *([r["expert"]] if several[1] else []),
                 *([r["kind"]] if several[0] else []), r["feature_i"], r["feature_j"],
                 r["answer"]]
        gain = not pd.isna(r["expected_gain"])  # none: the random strategy's
        comment = "" if pd.isna(r["comment"]) else printable(r["comment"])
        rest = [r["answered_at"][:19], str(r["undone"]), comment]
        pattern = (r"\s*" + r"\s+".join(re.escape(v) for v in shown if v)
                   + (r"\s+(?P<gain>\S+)" if gain else "") + r"\s+"
                   + r"\s+".join(re.escape(v) for v in rest if v) + r"\s*")
        m = re.fullmatch(pattern, line)
        assert m, (line, pattern)
        if gain:
            assert float(m["gain"]) == pytest.approx(r["expected_gain"], rel=1e-3)
        # the fixed-width time starts under its heading on every line
        assert line.index(r["answered_at"][:19]) == header.index("answered_at")
    assert "1 undone" in out if name == "one" else "by ann" in out and "by bob" in out


@pytest.mark.parametrize("name", ["one", "two"])
def test_the_history_csv_holds_the_values_of_the_export(sessions, capsys, tmp_path, name):
    """``history --csv`` (read without pandas) and ``export FILE.csv`` (the DataFrame's) hold
    the same cells; the printed one escapes control characters."""
    code, out, _ = cli(capsys, "history", sessions[name], "--csv")
    assert code == 0
    code, _, _ = cli(capsys, "export", sessions[name], tmp_path / "h.csv")
    assert code == 0
    exported = list(csv.reader(io.StringIO((tmp_path / "h.csv").read_text(encoding="utf-8"))))
    printed = list(csv.reader(io.StringIO(out)))
    assert printed == [[printable(c) for c in row] for row in exported]
    assert len(printed) > 4
    assert any(c.startswith("ends\\x1b") for c in printed[-1]) == (name == "two")


def test_no_stored_text_of_the_table_reaches_the_terminal_raw(tmp_path, capsys):
    """The table printed the answer's time as stored, unescaped (only its first 19
    characters): a file from elsewhere could retitle or clear the terminal through it."""
    from tests.helpers import sql_edit

    path = tmp_path / "s.session"
    with create_session(path) as s:
        s.answer(s.next_query(), "similar")
    sql_edit(path, "UPDATE answers SET answered_at = '\x1b[2J\x1b]0;x\x07' || answered_at")
    code, out, err = cli(capsys, "history", path)
    assert code == 0 and err == "" and "\x1b" not in out and "\x07" not in out
    assert "\\x1b[2J" in out
