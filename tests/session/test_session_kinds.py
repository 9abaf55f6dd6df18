"""A kind of question registered from outside the package (tests/toykind.py) in a session:
asked beside the relevance questions (both about one feature), stored by name, answered in
the terminal and on the web page, undone, reopened; a file holding a kind this elicit does
not know is refused in one line."""

from __future__ import annotations

import io
import json
import re
import shutil
import sqlite3
from pathlib import Path

import numpy as np
import pytest
import toykind
from conftest import SESSION_NAMES as NAMES
from conftest import make_session_data as make_data
from helpers import SAME, create_session, page_state, sql_rows

from elicit.errors import ElicitError
from elicit.session.session import Session
from elicit.session.store import FEATURE_J
from elicit.session.terminal import keys_help, question_text, run_ask

pytestmark = pytest.mark.usefixtures("one_blas_thread")
TOY = toykind.NAME


def new_session(path, questions=("relevance", TOY), **kw) -> Session:
    return create_session(path, questions=questions, **{"refine": 1, "strategy": "random", **kw})


def next_of(s: Session, kind: str):
    """The next query of ``kind``, answering "don't know" to the others on the way."""
    for _ in range(4 * len(NAMES)):
        q = s.next_query()
        if q.kind == kind:
            return q
        s.answer(q, "dont_know")
    raise AssertionError(f"no {kind} question came")


def rows(path) -> list[tuple]:
    return sql_rows(path, "SELECT kind, i, j, answer, undone_at IS NOT NULL FROM answers "
                          "ORDER BY id")


def test_a_registered_kind_is_asked_stored_undone_and_reopened(tmp_path):
    path = tmp_path / "k.session"
    with toykind.registered() as toy:
        answers = _ask_undo_reopen(path, toy)
    # without the kind registered the file is refused, untouched
    before = path.read_bytes()
    with pytest.raises(ElicitError, match=rf"holds query \d+ of the kind of question '{TOY}', "
                                          r"which this elicit does not know"):
        Session.open(path, read_only=True)
    assert path.read_bytes() == before
    with toykind.registered(), Session.open(path) as s:     # and opens once it is
        assert s.active_answers() == answers


def _ask_undo_reopen(path, toy) -> list:
    s = new_session(path)
    assert s.settings["questions"] == ["relevance", TOY] and s.kinds[1] is toy
    assert s.n_pairs == 2 * len(NAMES) and s.question_noun == "question"
    q = next_of(s, TOY)
    assert q.j is None and q.question_kind is toy and q.names == (NAMES[q.i],)
    assert question_text(s, q) == f"Does more {NAMES[q.i]} raise the outcome?"
    # an answer of another kind is refused in one line and writes nothing
    n = len(rows(path))
    with pytest.raises(ElicitError, match=rf"^query {q.id} .*'relevant' answers a feature "
                                          r"question .*, not a sign question"):
        s.answer(q, "r")
    assert len(rows(path)) == n
    rec = s.answer(q, "+", comment="more is better")
    assert (rec.kind, rec.i, rec.j, rec.answer.value) == (TOY, q.i, None, "increases")
    assert rows(path)[-1] == (TOY, q.i, FEATURE_J, "increases", 0)
    # the relevance question of the same feature is another question
    assert not s.elicitor.is_asked(q.i, None, kind="relevance")
    assert s.elicitor.is_asked(q.i, None, kind=TOY)
    assert s.progress()["increases"] == 1
    h = s.history
    assert h["kind"].iloc[-1] == TOY and h["feature_j"].iloc[-1] == ""
    # undo: the toy question comes back, first
    undone = s.undo()
    assert (undone.kind, undone.i) == (TOY, q.i) and rows(path)[-1][-1] == 1
    again = s.next_query()
    assert (again.kind, again.i, again.j) == (TOY, q.i, None)
    answers = s.active_answers()
    s.close()
    with Session.open(path) as s2:
        assert s2.questions == ("relevance", TOY)
        assert [(p.kind, p.i) for p in s2.pending()] == [(TOY, q.i)]
        assert s2.active_answers() == answers
        s2.answer(s2.pending()[0], "decreases")
        assert rows(path)[-1] == (TOY, q.i, FEATURE_J, "decreases", 0)
        return s2.active_answers()


def test_the_terminal_shows_the_kinds_keys_and_answers_with_them(toy, tmp_path):
    path = tmp_path / "t.session"
    with new_session(path) as s:
        q = next_of(s, TOY)
        help_ = keys_help(s)
        assert "feature questions: [r] relevant" in help_
        assert "sign questions:    [+] increases  [-] decreases" in help_
        out = io.StringIO()
        assert run_ask(s, io.StringIO("r\n-\nq\n"), out) == 0
        text = out.getvalue()
        assert f"Does more {NAMES[q.i]} raise the outcome?" in text
        assert "[+] increases  [-] decreases  [?] don't know" in text
        assert "'r' answers a feature question; this is a sign question: use +, -, ?" in text
        assert f"saved: {NAMES[q.i]} -> decreases" in text
        assert rows(path)[-1][:4] == (TOY, q.i, FEATURE_J, "decreases")


def test_the_web_page_asks_the_kind_with_its_buttons(toy, tmp_path):
    pytest.importorskip("flask")
    from elicit.session.web import create_app

    path = tmp_path / "w.session"
    with new_session(path, questions=(TOY,)) as s:
        q = s.next_query()
        assert q.kind == TOY
    app = create_app(path)
    try:
        c = app.test_client()
        html = c.get("/").get_data(as_text=True)
        assert f"Does more {NAMES[q.i]} raise the outcome?" in html
        for needle in ('id="btn-increases"', 'data-key="+"', 'id="btn-decreases"',
                       'id="btn-dont_know"', "0 of 8 questions answered"):
            assert needle in html, needle
        assert 'id="btn-relevant"' not in html
        form = {"csrf_token": page_state(html)["token"], "query_id": str(q.id),
                "answer": "relevant"}
        r = c.post("/answer", data=form, headers=SAME)
        assert r.status_code == 400 and "not a sign question" in r.get_data(as_text=True)
        r = c.post("/answer", data={**form, "answer": "increases"}, headers=SAME)
        assert r.status_code == 303
        assert rows(path) == [(TOY, q.i, FEATURE_J, "increases", 0)]
        html = c.get("/?m=saved").get_data(as_text=True)
        assert re.search(r"1 of 8 questions answered\s+\(1 increases, 0 decreases, 0 don't "
                         r"know\)", html)
    finally:
        app.config["ELICIT_SESSION"].close()


def test_a_session_with_the_paper_model_takes_a_kind_that_needs_none(toy, tmp_path):
    with new_session(tmp_path / "p.session", questions=f"pairs,{TOY}",
                     strategy="sequential") as s:
        assert s.elicitor.hyper.model == "paper"
        qs = s.batch(4)
        assert {q.kind for q in qs} <= {"pairs", TOY}
        # a batch is feature-disjoint across the kinds
        feats = [f for q in qs for f in q.features]
        assert len(set(feats)) == len(feats)
        assert np.isfinite(s.fit.gamma).all()


# -- the file format: kinds by name (format 4), older files migrated -------------------------------

FORMAT3 = Path(__file__).resolve().parents[1] / "fixtures" / "format3.session"


def _table_sql(path, name: str) -> str:
    return sql_rows(path, "SELECT sql FROM sqlite_master WHERE name = ?", name)[0][0]


def test_a_format_3_file_is_migrated_to_kinds_by_name_and_keeps_its_model(tmp_path):
    """tests/fixtures/format3.session was made by the elicit before kinds had names
    (questions="both", random strategy, seed 5): three pair answers (one don't know), a
    feature answer undone, a skipped feature question, expert ann's feature answer, a pending
    pair."""
    path = tmp_path / "old.session"
    shutil.copyfile(FORMAT3, path)
    raw = sqlite3.connect(path)
    assert raw.execute("SELECT value FROM meta WHERE key = 'format_version'").fetchone() == ("3",)
    assert json.loads(raw.execute("SELECT value FROM meta WHERE key = 'settings'"
                                  ).fetchone()[0])["questions"] == "both"
    assert "kind" not in [r[1] for r in raw.execute("PRAGMA table_info(answers)")]
    raw.close()
    assert "answer IN ('similar'" in _table_sql(path, "answers")
    before = path.read_bytes()
    want = [("pairs", 3, 5, "similar", False, ""), ("pairs", 3, 6, "dissimilar", False, ""),
            ("pairs", 1, 5, "dont_know", False, ""), ("relevance", 2, -1, "relevant", True, ""),
            ("relevance", 2, -1, "irrelevant", False, "ann")]

    def history(s):
        h = s.history
        return list(zip(h["kind"], h["i"], h["j"], h["answer"], h["undone"], h["expert"]))

    with Session.open(path, read_only=True) as s:     # migrated in memory only
        assert s.meta["format_version"] == 4 and history(s) == want
    assert path.read_bytes() == before
    X, y, U = make_data()
    with Session.open(path) as s:
        assert s.meta["format_version"] == 4
        assert s.settings["questions"] == ["pairs", "relevance"]
        assert s.questions == ("pairs", "relevance") and s.elicitor.hyper.model == "relevance"
        assert history(s) == want
        assert list(s.queries["kind"]) == ["pairs"] * 3 + ["relevance"] * 3 + ["pairs"]
        assert [(q.kind, q.i, q.j) for q in s.pending()] == [("pairs", 4, 6)]
        # ann's feature answer, and the features of the two answered pairs (the don't know
        # says nothing)
        assert s.relevance.tolist() == [-1, -1, 0, 1, -1, 1, 1, -1]
        ev = s.events
        assert ev["kind"].iloc[-1] == "migrate"
        assert json.loads(ev["detail"].iloc[-1]) == {"from": 3, "to": 4}
        # the same model as the answers give an Elicitor directly
        from elicit.elicitation.elicitor import Elicitor
        from elicit.model.spec import Hyper

        el = Elicitor(X, y - y.mean(), U, Hyper(**s.settings["hyper"]), engine="numpy",
                      questions="both", candidates=s.elicitor.candidates)
        el.set_answers([a[:3] for a in s.active_answers()],
                       asked=[(k, i, j) for k, i, j, *_ in s.snapshot().answers])
        np.testing.assert_allclose(s.fit.gamma, el.fit.gamma, rtol=1e-10)
        assert s.fit.zeta == pytest.approx(el.fit.zeta, rel=1e-10)
        s.answer(s.pending()[0], "similar")               # and goes on
    assert rows(path)[-1] == ("pairs", 4, 6, "similar", 0)
    sql = _table_sql(path, "answers")
    assert "kind TEXT NOT NULL" in sql and "answer IN" not in sql
    assert "(kind, i, j, expert)" in _table_sql(path, "answers_one_active_per_expert_question")
    raw = sqlite3.connect(path)
    assert raw.execute("PRAGMA user_version").fetchone() == (4,)
    assert raw.execute("PRAGMA foreign_key_check").fetchall() == []
    raw.close()
    with Session.open(path) as s:                         # migrated once
        assert list(s.events["kind"]).count("migrate") == 1
