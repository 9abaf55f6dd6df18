"""Several experts on one question set, and files of the previous format (format 1)."""

from __future__ import annotations

import io
import json
import shutil
import sqlite3

import numpy as np
import pytest
from conftest import FORMAT1_SESSION
from conftest import make_session_data as make_data
from helpers import SAME, create_session, page_state

from elicit.cli.main import main as cli_main
from elicit.elicitation.elicitor import Elicitor
from elicit.errors import ElicitError
from elicit.model.spec import Hyper
from elicit.session.session import Session
from elicit.session.store import FORMAT_VERSION


@pytest.fixture
def path(tmp_path):
    p = tmp_path / "e.session"
    create_session(p, seed=2).close()
    return p


def test_two_experts_answer_the_same_pair_and_both_answers_count(path):
    with Session.open(path, expert="alice") as a, Session.open(path, expert="bob") as b:
        qa = a.next_query()
        qb = b.next_query()
        assert (qa.i, qa.j) == (qb.i, qb.j) and qa.id != qb.id  # each has their own query
        assert qa.expert == "alice" and qb.expert == "bob"
        a.answer(qa, "similar")
        b.answer(qb, "similar")
        assert a.active_answers() == [(qa.i, qa.j, "similar")] * 2
        # Both answers enter the likelihood: the model equals a fit with the pair twice.
        X, y, U = make_data()
        ref = Elicitor(X, y - y.mean(), U, Hyper(), engine="numpy")
        ref.set_answers([(qa.i, qa.j, "similar")] * 2, asked=[])
        np.testing.assert_allclose(a.fit.gamma, ref.fit.gamma, rtol=1e-12)
        once = Elicitor(X, y - y.mean(), U, Hyper(), engine="numpy")
        once.set_answers([(qa.i, qa.j, "similar")])
        assert not np.allclose(a.fit.gamma, once.fit.gamma)


def test_an_expert_is_never_asked_the_same_pair_twice(tmp_path):
    X, y, U = make_data(p=4)
    with Session.create(X, y, U, list("abcd"), path=tmp_path / "s.session", engine="numpy",
                        expert="alice") as s:
        seen = {"alice": [], "bob": []}
        for _ in range(6):
            for who in ("alice", "bob"):
                q = s.next_query(who)
                seen[who].append((q.i, q.j))
                s.answer(q, "dissimilar")
        for who in seen:
            assert len(set(seen[who])) == 6
            assert s.is_done(who)
        assert len(s.active_answers()) == 12
        with pytest.raises(ElicitError, match="answered by expert 'bob'; nothing is left"):
            s.next_query("bob")
        assert not s.is_done("carol")
        s.undo("bob")  # undo is per expert: alice keeps all hers
        assert s.progress("alice")["answered"] == 6 and s.progress("bob")["answered"] == 5


def test_an_expert_cannot_answer_or_skip_another_experts_query(path):
    with Session.open(path, expert="alice") as s:
        q = s.next_query()
        with pytest.raises(ElicitError, match="was asked to expert 'alice', not to expert "
                                              "'bob'"):
            s.answer(q.id, "similar", expert="bob")
        with pytest.raises(ElicitError, match="no answer by expert 'bob' to undo"):
            s.undo("bob")


@pytest.mark.parametrize("name, message", [
    ("x" * 81, "expert name is 81 characters long; the limit is 80"),
    ("bo\x07b", "contains control characters"),
    (3, "expert must be a name"),
])
def test_bad_expert_names(path, name, message):
    with pytest.raises(ElicitError, match=message):
        Session.open(path, expert=name)


def test_history_exports_and_agreement_carry_the_expert(path, tmp_path, capsys):
    with Session.open(path) as s:
        asked = []
        for a_ans, b_ans in (("similar", "similar"), ("dissimilar", "similar"),
                             ("similar", "dont_know")):
            # Both are asked at the same state: with all 28 pairs in the pool, the same pair.
            qa, qb = s.next_query("alice"), s.next_query("bob")
            asked += [("alice", qa.i, qa.j), ("bob", qb.i, qb.j)]
            s.answer(qa, a_ans)
            s.answer(qb, b_ans)
        h = s.history
        assert list(h["expert"]) == ["alice", "bob"] * 3
        assert s.experts() == ["alice", "bob"]
        ag = s.agreement()
    pairs_a = [(i, j) for w, i, j in asked if w == "alice"]
    pairs_b = [(i, j) for w, i, j in asked if w == "bob"]
    assert pairs_a == pairs_b  # same model state, same questions for both
    assert ag.compared == 2 and ag.agreeing == 1 and ag.rate == 0.5
    conflict = ag.pairs[ag.pairs["conflict"]]
    assert len(conflict) == 1 and conflict.iloc[0]["answers"] == \
        "'alice': dissimilar; 'bob': similar"
    assert cli_main(["history", str(path), "--agreement"]) == 0
    out = capsys.readouterr().out
    assert "2 expert(s): alice, bob" in out and "agreement: 1 of 2 pairs" in out
    assert "(50%); 1 with conflicting answers" in out
    assert cli_main(["history", str(path)]) == 0
    out = capsys.readouterr().out
    assert "3 of 28 pairs answered by alice" in out and "bob" in out
    assert cli_main(["export", str(path), str(tmp_path / "p.json")]) == 0
    prior = json.loads((tmp_path / "p.json").read_text())
    assert [a["expert"] for a in prior["answers"]] == ["alice", "bob"] * 3
    assert cli_main(["export", str(path), str(tmp_path / "h.csv")]) == 0
    assert (tmp_path / "h.csv").read_text().splitlines()[0].startswith(
        "answer_id,query_id,expert,")


def test_cli_ask_as_a_named_expert(path, monkeypatch, capsys):
    monkeypatch.setattr("sys.stdin", io.StringIO("s\nd\nq\n"))
    assert cli_main(["ask", str(path), "--expert", "carol"]) == 0
    assert "expert carol" in capsys.readouterr().out
    with Session.open(path) as s:
        assert list(s.history["expert"]) == ["carol", "carol"]
        assert s.progress()["answered"] == 0 and s.progress("carol")["answered"] == 2


def test_web_page_answers_as_the_named_expert(path):
    pytest.importorskip("flask")
    from elicit.session.web import create_app

    app = create_app(path, expert="dora")
    c = app.test_client()

    def state(html):
        st = page_state(html)
        return st["token"], st["qid"]

    html = c.get("/").get_data(as_text=True)
    assert 'name="expert" value="dora"' in html
    token, qid = state(html)
    r = c.post("/answer", data={"csrf_token": token, "query_id": qid, "answer": "similar",
                                "expert": "dora"}, headers=SAME)
    # The server's default expert needs no name in the address; anyone else keeps theirs.
    assert r.status_code == 303 and "expert" not in r.headers["Location"]
    # A new name gets its first question through a POST (a GET never writes).
    assert 'id="next-form"' in c.get("/?expert=erik").get_data(as_text=True)
    r = c.post("/next", data={"csrf_token": token, "expert": "erik"}, headers=SAME)
    assert r.status_code == 303 and "expert=erik" in r.headers["Location"]
    html = c.get(r.headers["Location"]).get_data(as_text=True)
    assert 'name="expert" value="erik"' in html and "0 of 28 pairs answered by" in html
    token, qid2 = state(html)
    r = c.post("/answer", data={"csrf_token": token, "query_id": qid2, "answer": "dissimilar",
                                "expert": "erik"}, headers=SAME)
    assert r.status_code == 303 and "expert=erik" in r.headers["Location"]
    r = c.post("/answer", data={"csrf_token": token, "query_id": qid2, "answer": "similar",
                                "expert": "dora"}, headers=SAME)
    assert r.status_code == 400 and "was asked to expert &#39;erik&#39;" in r.get_data(
        as_text=True)
    assert c.get("/?expert=" + "x" * 90).status_code == 400
    app.config["ELICIT_SESSION"].close()
    with Session.open(path) as s:
        assert list(s.history["expert"]) == ["dora", "erik"]


# --------------------------------------------------------------------------------------------
# Format 1 files (written by the code before experts; tests/fixtures/format1.session was made by
# it: 4 answers of which one undone, a skip, a pending query, WAL journal)
# --------------------------------------------------------------------------------------------

def test_a_format_1_file_opens_migrates_in_place_and_continues(tmp_path):
    path = tmp_path / "old.session"
    shutil.copyfile(FORMAT1_SESSION, path)
    raw = sqlite3.connect(path)
    assert json.loads(raw.execute("SELECT value FROM meta WHERE key = 'format_version'"
                                  ).fetchone()[0]) == 1
    assert "expert" not in [r[1] for r in raw.execute("PRAGMA table_info(answers)")]
    raw.close()
    X, y, U = make_data()
    with Session.open(path) as s:
        assert s.meta["format_version"] == FORMAT_VERSION
        h = s.history
        assert list(h["answer"]) == ["similar", "dissimilar", "dont_know", "similar"]
        # every question of a file before kinds had names is a pair question
        assert set(h["kind"]) == set(s.queries["kind"]) == {"pairs"}
        assert s.settings["questions"] == ["pairs"] and s.questions == ("pairs",)
        assert list(h["undone"]) == [False, False, False, True]
        assert set(h["expert"]) == {""} and h.loc[0, "comment"] == "first"
        assert s.progress()["skipped"] == 1 and s.description == "made by elicit format 1"
        # Same model as format 1: y as stored, all pairs, the stored y_offset.
        fresh = Elicitor(X, y, U, Hyper(), engine="numpy")
        fresh.set_answers(s.active_answers())
        np.testing.assert_allclose(s.fit.gamma, fresh.fit.gamma, rtol=1e-12)
        np.testing.assert_allclose(s.predict(X[:2]), fresh.predict(X[:2]) + 2.5)
        assert s.n_pairs == 28
        q = s.pending()[0]  # the pending query survived the migration
        assert q.names == ("price", "handle")
        s.answer(q, "dissimilar", expert="")
        s.answer(s.next_query("zoe"), "similar", expert="zoe")
        assert s.conn.execute("PRAGMA journal_mode").fetchone()[0] == "delete"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["old.session"]
    with Session.open(path) as s:  # opens again without migrating twice
        kinds = list(s.events["kind"])
        assert kinds.count("migrate") == 1 and len(s.history) == 6


def test_a_format_1_file_with_a_stuck_query_is_healed(tmp_path):
    path = tmp_path / "old.session"
    shutil.copyfile(FORMAT1_SESSION, path)
    raw = sqlite3.connect(path)
    i, j = raw.execute("SELECT i, j FROM answers WHERE undone_at IS NULL LIMIT 1").fetchone()
    raw.execute("UPDATE queries SET status = 'cancelled' WHERE status = 'pending'")
    raw.execute("INSERT INTO queries (i, j, expected_gain, exact_gain, shown_at, status) "
                "VALUES (?, ?, 0.1, 1, 'now', 'pending')", (i, j))
    raw.commit()
    raw.close()
    with Session.open(path) as s:
        q = s.next_query()
        assert (q.i, q.j) != (i, j)
        s.answer(q, "similar")
        assert "cancel" in list(s.events["kind"])
