"""Sessions that ask feature questions ("does feature i affect the outcome?") beside pairs:
asking, storing, wrong-kind answers, undo, reopening, several experts, a killed process, the
file format (4, kinds by name) and its migration, export, and the command line."""

from __future__ import annotations

import io
import json
import random
import sqlite3
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest
from conftest import SESSION_NAMES as NAMES
from conftest import make_session_data as make_data
from helpers import (
    act_until_killed,
    create_session,
    one_line,
    page_state,
    read_log,
    run_then_kill,
)

from elicit.errors import ElicitError
from elicit.model.spec import Hyper
from elicit.session.session import Session
from elicit.session.store import FEATURE_J, FORMAT_VERSION

pytestmark = pytest.mark.usefixtures("one_blas_thread")


def new_session(path, questions: str = "both", **kw) -> Session:
    return create_session(path, questions=questions, **{"refine": 2, **kw})


def answer_for(q, rng: random.Random | None = None) -> str:
    """A fitting answer to ``q``: relevant/irrelevant to a feature question, similar/
    dissimilar to a pair (the first one without ``rng``)."""
    words = ("relevant", "irrelevant") if q.kind == "relevance" else ("similar", "dissimilar")
    return words[0] if rng is None else rng.choice(words)


def test_a_both_session_asks_feature_questions_stores_undoes_and_reopens(tmp_path):
    path = tmp_path / "f.session"
    s = new_session(path)
    assert s.settings["questions"] == ["pairs", "relevance"]
    assert s.questions == ("pairs", "relevance") and s.elicitor.hyper.model == "relevance"
    p = len(NAMES)
    assert s.n_pairs == p * (p - 1) // 2 + p           # every pair and every feature
    # Feature questions come first here (an unjudged feature's answer teaches the most).
    kinds, recs = [], []
    for k in range(4):
        q = s.next_query()
        kinds.append(q.kind)
        if q.kind == "relevance":
            assert q.j is None and q.names == (NAMES[q.i],)
        recs.append(s.answer(q, "r" if k % 2 else "i", comment=f"c{k}"))
    assert "relevance" in kinds
    feats = [r for r in recs if r.j is None]
    assert feats and all(r.answer.value in ("relevant", "irrelevant") for r in feats)
    # The model's classes are the answers.
    classes = s.relevance
    for r in feats:
        assert classes[r.i] == r.answer.outcome and r.kind == "relevance"
    assert int(np.sum(classes != -1)) == len(feats)
    # Stored as (kind, i, FEATURE_J) rows.
    raw = sqlite3.connect(path)
    rows = raw.execute("SELECT kind, i, j, answer FROM answers ORDER BY id").fetchall()
    meta = dict(raw.execute("SELECT key, value FROM meta"))
    raw.close()
    assert json.loads(meta["format_version"]) == FORMAT_VERSION == 4
    assert [(r.kind, r.i, FEATURE_J if r.j is None else r.j, r.answer.value)
            for r in recs] == rows
    h = s.history
    assert list(h.loc[h["j"] == FEATURE_J, "feature_j"]) == [""] * len(feats)
    assert s.progress()["relevant"] + s.progress()["irrelevant"] == len(feats)
    # Undo the last answer: its feature is unjudged again and asked next.
    last = recs[-1]
    undone = s.undo()
    assert undone.id == last.id and undone.j == last.j
    if last.j is None:
        assert s.relevance[last.i] == -1
    q = s.next_query()
    assert (q.i, q.j) == (last.i, last.j)
    before = (s.active_answers(), s.relevance.copy(), s.fit.zeta, s.fit.gamma.copy())
    s.close()
    # Reopened: the same answers, classes and MAP, the same pending question.
    with Session.open(path) as s2:
        assert s2.questions == ("pairs", "relevance")
        assert s2.active_answers() == before[0]
        assert np.array_equal(s2.relevance, before[1])
        assert s2.fit.zeta == pytest.approx(before[2], rel=1e-10)
        np.testing.assert_allclose(s2.fit.gamma, before[3], rtol=1e-10)
        assert [(x.i, x.j) for x in s2.pending()] == [(q.i, q.j)]


def test_an_answer_of_the_other_kind_is_a_one_line_error_and_writes_nothing(tmp_path):
    with new_session(tmp_path / "f.session") as s:
        q = s.next_query()
        wrong = "similar" if q.kind == "relevance" else "relevant"
        with pytest.raises(ElicitError, match=f"^query {q.id} .*'{wrong}' answers a "):
            s.answer(q, wrong)
        assert s.progress()["answered"] == 0 and s.pending() == [q]
        s.answer(q, answer_for(q))
    with new_session(tmp_path / "p.session", questions="pairs") as s:
        q = s.next_query()
        assert q.kind == "pairs"
        with pytest.raises(ElicitError, match="^'relevant' answers a feature question"):
            s.answer(q, "r")
    with new_session(tmp_path / "r.session", questions="relevance") as s:
        q = s.next_query()
        assert q.kind == "relevance"
        with pytest.raises(ElicitError, match="^'similar' answers a pair question"):
            s.answer(q, "s")


def test_feature_questions_need_the_relevance_model_and_pairs_stay_the_default(tmp_path):
    with pytest.raises(ElicitError, match="^questions='both' asks feature questions, which "
                                          "need a model with relevance classes"):
        new_session(tmp_path / "x.session", hyper=Hyper(model="paper"))
    assert not (tmp_path / "x.session").exists()
    with pytest.raises(ElicitError, match="^unknown question kind 'features' in "):
        new_session(tmp_path / "y.session", questions="features")
    with new_session(tmp_path / "r.session", questions="relevance",
                     hyper=Hyper(tau2=0.5, model="relevance")) as s:
        assert s.elicitor.hyper.tau2 == 0.5 and s.n_pairs == len(NAMES)
    with new_session(tmp_path / "p.session", questions="pairs") as s:
        assert s.elicitor.hyper.model == "paper" and s.settings["questions"] == ["pairs"]


def test_a_file_without_the_questions_setting_asks_pairs(tmp_path):
    path = tmp_path / "old.session"
    new_session(path, questions="pairs").close()
    raw = sqlite3.connect(path)
    settings = json.loads(raw.execute("SELECT value FROM meta WHERE key = 'settings'"
                                      ).fetchone()[0])
    del settings["questions"]
    raw.execute("UPDATE meta SET value = ? WHERE key = 'settings'", (json.dumps(settings),))
    raw.commit()
    raw.close()
    with Session.open(path) as s:
        assert s.questions == ("pairs",) and s.next_query().kind == "pairs"


# Format 2 (pairs only): the record's tables as they were, without feature questions.
_FORMAT2_TABLES = """
CREATE TABLE queries_2 (id INTEGER PRIMARY KEY, i INTEGER NOT NULL, j INTEGER NOT NULL,
    expected_gain REAL, exact_gain INTEGER NOT NULL DEFAULT 0, shown_at TEXT NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('pending', 'answered', 'skipped', 'cancelled')),
    batch INTEGER, expert TEXT NOT NULL DEFAULT '', CHECK (i < j));
CREATE TABLE answers_2 (id INTEGER PRIMARY KEY,
    query_id INTEGER NOT NULL UNIQUE REFERENCES queries(id), i INTEGER NOT NULL,
    j INTEGER NOT NULL,
    answer TEXT NOT NULL CHECK (answer IN ('similar', 'dissimilar', 'dont_know')),
    comment TEXT, answered_at TEXT NOT NULL, undone_at TEXT, expert TEXT NOT NULL DEFAULT '');
INSERT INTO queries_2 SELECT id, i, j, expected_gain, exact_gain, shown_at, status, batch,
    expert FROM queries;
INSERT INTO answers_2 SELECT id, query_id, i, j, answer, comment, answered_at, undone_at,
    expert FROM answers;
DROP TABLE answers;
DROP TABLE queries;
ALTER TABLE queries_2 RENAME TO queries;
ALTER TABLE answers_2 RENAME TO answers;
CREATE UNIQUE INDEX answers_one_active_per_expert_pair ON answers (i, j, expert)
    WHERE undone_at IS NULL;
CREATE INDEX queries_by_status ON queries (status, expert);
UPDATE meta SET value = '2' WHERE key = 'format_version';
"""


def test_a_format_2_file_is_migrated_and_keeps_its_answers(tmp_path):
    path = tmp_path / "two.session"
    with new_session(path, questions="pairs") as s:
        for a in ("similar", "dissimilar", "dont_know"):
            s.answer(s.next_query(), a)
        s.undo()
        s.next_query()
        before = (s.history.drop(columns=["undone_at"]), s.active_answers(), s.fit.gamma)
    raw = sqlite3.connect(path)
    raw.executescript(_FORMAT2_TABLES)
    raw.close()
    copy = tmp_path / "copy.session"
    copy.write_bytes(path.read_bytes())
    # read-only: migrated in memory, the file unchanged
    with Session.open(copy, read_only=True) as s:
        assert s.meta["format_version"] == FORMAT_VERSION and len(s.history) == 3
    assert copy.read_bytes() == path.read_bytes()
    with Session.open(path) as s:
        assert s.meta["format_version"] == FORMAT_VERSION
        assert s.history.drop(columns=["undone_at"]).equals(before[0])
        assert s.active_answers() == before[1]
        np.testing.assert_allclose(s.fit.gamma, before[2], rtol=1e-12, atol=1e-14)
        assert s.events["kind"].iloc[-1] == "migrate"
        s.answer(s.next_query(), "similar")          # and goes on
    raw = sqlite3.connect(path)
    schema = raw.execute("SELECT sql FROM sqlite_master WHERE name = 'queries'").fetchone()[0]
    assert raw.execute("PRAGMA foreign_key_check").fetchall() == []
    raw.close()
    assert f"j = {FEATURE_J}" in schema


def test_several_experts_set_a_class_where_they_agree(tmp_path):
    path = tmp_path / "f.session"
    new_session(path, questions="relevance").close()
    votes = {"ann": {}, "bob": {}}
    for who, answers in (("ann", ("relevant", "relevant", "irrelevant")),
                         ("bob", ("relevant", "irrelevant", "irrelevant"))):
        with Session.open(path, expert=who) as s:
            for a in answers:
                q = s.next_query()
                votes[who][q.i] = a
                s.answer(q, a)
    with Session.open(path) as s:
        classes = s.relevance
        for k in range(len(NAMES)):
            given = {v[k] for v in votes.values() if k in v}
            want = -1 if len(given) != 1 else (1 if given == {"relevant"} else 0)
            assert classes[k] == want, (k, given)
        ag = s.agreement()
        shared = set(votes["ann"]) & set(votes["bob"])
        assert ag.compared == len(shared)
        assert ag.agreeing == sum(votes["ann"][k] == votes["bob"][k] for k in shared)
        assert "relevant" in ag.pairs.columns and set(ag.pairs["feature_j"]) <= {""}


def test_several_experts_a_pair_answer_judges_a_disputed_feature_and_to_estimator_agrees(tmp_path):
    """ann calls a feature relevant, bob irrelevant, and bob answers a pair about it: the
    live session, the reopened one and its estimator have the feature relevant and one
    model (the pair answer judges the feature the experts disagree about)."""
    pytest.importorskip("sklearn")
    path = tmp_path / "f.session"
    new_session(path, strategy="random").close()
    with Session.open(path, expert="ann") as s:
        q = s.next_query()
        while q.kind != "relevance":
            s.answer(q, "dont_know")
            q = s.next_query()
        k = q.i
        s.answer(q, "relevant")
    with Session.open(path, expert="bob") as s:
        todo = {"relevance", "pairs"}
        while todo:
            q = s.next_query()
            if k in (q.i, q.j) and q.kind in todo:
                s.answer(q, "irrelevant" if q.kind == "relevance" else "similar")
                todo.discard(q.kind)
            else:
                s.answer(q, "dont_know")
        live = (s.relevance, s.fit.gamma.copy())
        assert live[0][k] == 1
        est = s.to_estimator()
        np.testing.assert_array_equal(est.relevance_, live[0])
        X = pd.DataFrame(s.X, columns=NAMES)
        np.testing.assert_allclose(est.predict(X), s.predict(X), rtol=1e-6, atol=1e-8)
    with Session.open(path, read_only=True) as s:
        np.testing.assert_array_equal(s.relevance, live[0])
        np.testing.assert_allclose(s.fit.gamma, live[1], rtol=1e-8, atol=1e-10)


def test_export_holds_the_relevance_posterior(tmp_path):
    pytest.importorskip("arviz")
    path = tmp_path / "f.session"
    with new_session(path) as s:
        for _ in range(3):
            q = s.next_query()
            s.answer(q, answer_for(q))
        q = s.next_query()
        if q.kind == "relevance":
            s.answer(q, "irrelevant")
        classes, fit = s.relevance, s.fit
        s.export_prior(tmp_path / "prior.nc")
        s.export_prior(tmp_path / "prior.json")
    import xarray as xr

    const = xr.open_dataset(tmp_path / "prior.nc", group="constant_data")
    post = xr.open_dataset(tmp_path / "prior.nc", group="posterior")
    assert list(const["relevance_class"].values) == list(classes)
    assert list(const["relevance_class"].coords["feature"].values) == NAMES
    p = const["p_relevant"].values
    assert np.all(p[classes == 1] == 1.0) and np.all(p[classes == 0] == 0.0)
    unjudged = p[classes == -1]
    assert np.all((unjudged > 0) & (unjudged < 1))
    np.testing.assert_allclose(const["prior_scale"].values, fit.scales)
    assert const["prior_scale"].values[classes == 0] == pytest.approx(0.1)  # sqrt(eps)
    assert float(post["zeta"].values.ravel()[0]) == pytest.approx(fit.zeta)
    for name in ("relevance_class", "p_relevant", "prior_scale"):
        assert const[name].attrs["description"]
    assert post["zeta"].attrs["description"] and post.attrs["questions"] == "pairs,relevance"
    # the neighbours' answers enter the share (RelevanceScales.logits): it said s(zeta + log BF)
    assert "s(zeta + 2 a_j + log BF)" in const["p_relevant"].attrs["description"]
    assert "s(zeta + 2 a_j), a_j the answers about j's neighbours" in \
        post["zeta"].attrs["description"]
    const.close()
    post.close()
    doc = json.loads((tmp_path / "prior.json").read_text())
    assert doc["relevance_class"] == list(classes) and doc["zeta"] == pytest.approx(fit.zeta)
    assert all(a["feature_j"] == "" for a in doc["answers"] if a["j"] == FEATURE_J)
    assert {a["kind"] for a in doc["answers"]} <= {"pairs", "relevance"}
    assert doc["questions"] == ["pairs", "relevance"]


def test_to_estimator_carries_the_relevance_answers(tmp_path):
    pytest.importorskip("sklearn")
    with new_session(tmp_path / "f.session", questions="relevance") as s:
        for a in ("relevant", "irrelevant", "irrelevant"):
            s.answer(s.next_query(), a)
        est = s.to_estimator()
        np.testing.assert_array_equal(est.relevance_, s.relevance)
        X = pd.DataFrame(s.X, columns=NAMES)
        np.testing.assert_allclose(est.predict(X), s.predict(X), rtol=1e-6, atol=1e-8)


# -- a killed process loses no confirmed feature answer ------------------------------------------

def _child(path: str, log_path: str, seed: int) -> None:
    act_until_killed(Session.open(path), seed, log_path, undo=0.1,
                     answer=lambda q, rng: answer_for(q, rng) if rng.random() < 0.85
                     else "dont_know")


# it kills real processes, as the tests of test_session_faults.py do: slow like them (`make
# test` runs it, `make test-fast` does not)
@pytest.mark.slow
def test_sigkill_loses_no_confirmed_feature_answer(tmp_path):
    path, log_path = tmp_path / "k.session", tmp_path / "k.log"
    new_session(path).close()
    rng = random.Random(7)
    logged = 0
    for trial in range(5):
        run_then_kill(_child, (str(path), str(log_path), trial), rng.uniform(0.5, 1.5))
        lines = read_log(log_path)
        raw = sqlite3.connect(path)
        rows = {r[0]: r[1:] for r in raw.execute("SELECT id, query_id, answer, undone_at, i, j "
                                                 "FROM answers")}
        assert raw.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        raw.close()
        for e in lines:
            if e[0] == "answer":
                assert rows[int(e[1])][:2] == (int(e[2]), e[3])
            elif e[0] == "undo":
                assert rows[int(e[1])][2] is not None
        logged = sum(e[0] == "answer" for e in lines)
        with Session.open(path) as s:             # the classes are the active answers'
            want = np.full(len(NAMES), -1)
            active = s.active_answers()
            for i, j, a in active:
                if j is None and a != "dont_know":
                    want[i] = 1 if a == "relevant" else 0
            # A similar/dissimilar answer judges both features relevant where no feature
            # answer did (PairKind.judged). Missing this made the test fail whenever the kill
            # came after a pair answer about a feature answered "don't know": a matter of
            # timing, seen on a loaded machine (2026-11-29).
            for i, j, a in active:
                if j is not None and a != "dont_know":
                    want[[k for k in (i, j) if want[k] == -1]] = 1
            assert np.array_equal(s.relevance, want)
    assert logged > 0


# -- the command line --------------------------------------------------------------------------

def assert_one_line_error(err: str, message: str) -> None:
    assert message in one_line(err), err


def test_cli_new_with_questions_both_and_ask_with_r_i_and_dont_know(tmp_path, monkeypatch,
                                                                  capsys):
    def _elicit(*args, stdin: str = "") -> subprocess.CompletedProcess:
        # the command line in this process: a process start per command was most of the
        # test's time (test_terminal.py feeds keys through a pipe to a real process)
        from elicit.cli.main import main

        monkeypatch.setattr(sys, "stdin", io.StringIO(stdin))
        try:
            code = main(list(args))
        except SystemExit as exc:
            code = int(exc.code or 0)
        out, err = capsys.readouterr()
        return subprocess.CompletedProcess(args, code, out, err)

    X, y, U = make_data()
    npz = tmp_path / "d.npz"
    np.savez(npz, X=X, y=y, U=U, feature_names=np.array(NAMES))
    out = tmp_path / "c.session"
    r = _elicit("session", "new", "--from-npz", str(npz), "--out", str(out), "--questions",
                "both", "--engine", "numpy", "--refine", "2")
    assert r.returncode == 0, r.stderr
    assert "36 questions (28 pairs, 8 feature questions)" in r.stdout
    assert "model relevance" in r.stdout
    # s to a feature question is refused in one line; r, i and ? are saved.
    r = _elicit("ask", str(out), stdin="s\nr\ni\n?\nq\n")
    assert r.returncode == 0, r.stderr
    assert "'s' answers a pair question; this is a feature question: use r, i, ?" in r.stdout
    assert "feature questions: [r] relevant" in r.stdout and "any question:" in r.stdout
    assert "[r] relevant  [i] irrelevant  [?] don't know" in r.stdout
    saved = [ln for ln in r.stdout.splitlines() if "saved:" in ln]
    assert [ln.rsplit("-> ", 1)[1] for ln in saved] == ["relevant", "irrelevant", "dont know"]
    r = _elicit("history", str(out))
    assert r.returncode == 0 and "1 relevant, 1 irrelevant, 1 don't know" in r.stdout
    with Session.open(out) as s:
        assert [a for _, j, a in s.active_answers() if j is None] == [
            "relevant", "irrelevant", "dont_know"]
    # A feature question with a model without relevance classes: one line.
    r = _elicit("session", "new", "--from-npz", str(npz), "--out", str(tmp_path / "x.session"),
                "--questions", "relevance", "--model", "paper", "--engine", "numpy")
    assert r.returncode == 2
    assert_one_line_error(r.stderr, "need a model with relevance classes")


# -- the web page ------------------------------------------------------------------------------

def test_web_feature_question_is_answered_by_a_checked_post_only(tmp_path):
    pytest.importorskip("flask")
    import re

    from elicit.session.web import create_app

    path = tmp_path / "w.session"
    new_session(path, questions="relevance",
                texts={n: [f"the <b>{n}</b> was fair"] for n in NAMES}).close()
    app = create_app(path)
    try:
        c = app.test_client()
        html = c.get("/").get_data(as_text=True)
        q = Session.open(path, read_only=True)
        pend = q.pending()[0]
        q.close()
        name = NAMES[pend.i]
        assert f"Does {name} affect the outcome?" in html
        for needle in ('id="btn-relevant"', 'id="btn-irrelevant"', 'id="btn-dont_know"',
                       "0 of 8 questions answered", "&lt;b&gt;"):
            assert needle in html, needle
        assert 'id="btn-similar"' not in html and "<b>" not in html
        st = page_state(html)
        form = {"csrf_token": st["token"], "query_id": st["qid"], "answer": "relevant"}
        # another site's page cannot answer, even with the token
        r = c.post("/answer", data=form, headers={"Origin": "http://evil.example"})
        assert r.status_code == 403 and "cross-site request refused" in r.get_data(as_text=True)
        # an answer of the other kind: a 400 page, nothing written
        r = c.post("/answer", data={**form, "answer": "similar"},
                   headers={"Origin": "http://localhost"})
        assert r.status_code == 400 and "answers a pair question" in r.get_data(as_text=True)
        raw = sqlite3.connect(path)
        assert raw.execute("SELECT COUNT(*) FROM answers").fetchone()[0] == 0
        raw.close()
        r = c.post("/answer", data=form, headers={"Origin": "http://localhost"})
        assert r.status_code == 303
        raw = sqlite3.connect(path)
        assert raw.execute("SELECT query_id, i, j, answer FROM answers").fetchall() == [
            (int(st["qid"]), pend.i, FEATURE_J, "relevant")]
        raw.close()
        html = c.get("/?m=saved").get_data(as_text=True)
        assert "1 of 8 questions answered" in html and "1 relevant" in html
        assert re.search(rf"<td>{name}</td><td></td>\s*<td>Relevant", html)
    finally:
        app.config["ELICIT_SESSION"].close()


def test_from_answers_takes_a_sessions_feature_answers(tmp_path):
    pytest.importorskip("sklearn")
    from elicit.estimator import ElicitRegressor

    with new_session(tmp_path / "f.session", questions="both") as s:
        for _ in range(3):
            q = s.next_query()
            s.answer(q, answer_for(q) if q.kind == "pairs" else "irrelevant")
        answers = s.active_answers()
        est = ElicitRegressor.from_answers(s.U, answers, feature_names=s.feature_names,
                                           hyper=s.elicitor.hyper)
        assert est.irrelevant == [NAMES[i] for i, j, a in answers if j is None]
        X = pd.DataFrame(s.X, columns=NAMES)
        est.fit(X, s.y - s.meta["y_centre"])
        np.testing.assert_array_equal(est.relevance_, s.relevance)
        np.testing.assert_allclose(est.predict(X) + s.y_offset, s.predict(X), rtol=1e-6,
                                   atol=1e-8)


def test_a_question_of_a_kind_the_session_does_not_ask_is_a_damaged_file(tmp_path):
    path = tmp_path / "p.session"
    with new_session(path, questions="pairs") as s:
        s.answer(s.next_query(), "dont_know")
    raw = sqlite3.connect(path)
    # a "feature" don't know
    raw.execute(f"UPDATE answers SET kind = 'relevance', j = {FEATURE_J} WHERE id = 1")
    raw.commit()
    raw.close()
    before = path.read_bytes()
    with pytest.raises(ElicitError, match=r"is damaged: answer 1 is one of the feature "
                                          r"questions, but the session asks "
                                          r"questions='pairs'"):
        Session.open(path)
    assert path.read_bytes() == before
    # a kind this elicit does not know (a file of a newer elicit, or an edit)
    raw = sqlite3.connect(path)
    raw.execute("UPDATE answers SET kind = 'colour' WHERE id = 1")
    raw.commit()
    raw.close()
    with pytest.raises(ElicitError, match=r"holds answer 1 of the kind of question "
                                          r"'colour', which this elicit does not know; "
                                          r"import the module that registers that kind"):
        Session.open(path, read_only=True)


def test_plot_gains_draws_every_answer_of_every_kind(tmp_path):
    """Bug (2026-11-29): the gains figure coloured a fixed list of answer words, so a direction
    answer ("raises") was left out of the scatter; and with every answer undone its legend
    had no entry (a matplotlib warning)."""
    import warnings

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    s = new_session(tmp_path / "g.session", questions="all")
    words = {"relevance": "relevant", "pairs": "similar", "direction": "raises"}
    kinds = set()
    while "direction" not in kinds or len(kinds) < 2:
        q = s.next_query()
        s.answer(q, words[q.kind])
        kinds.add(q.kind)
    s.undo()
    ax = s.plot_gains()
    assert sum(len(c.get_offsets()) for c in ax.collections) == len(s.history)
    plt.close("all")
    t = new_session(tmp_path / "u.session")
    t.answer(t.next_query(), "relevant")
    t.undo()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        t.plot_gains()
    plt.close("all")


def _direction_session(path):
    """A session asking direction questions, with answers that set signs of the prior mean."""
    s = new_session(path, questions="direction")
    for word in ("raises", "lowers", "raises"):
        s.answer(s.next_query(), word)
    return s


def test_export_holds_the_direction_prior_mean(tmp_path):
    """Bug (2026-11-30): the exported prior of a session with direction answers left out the
    prior mean delta s of beta (docs/session.md, "Exported priors"): delta and the signs were
    in neither the .nc nor the .json file."""
    pytest.importorskip("arviz")
    with _direction_session(tmp_path / "d.session") as s:
        fit = s.fit
        # the signs the answers give (not read back from the model the export reads)
        signs = [0] * len(NAMES)
        for i, _, word in s.active_answers():
            signs[i] = {"raises": 1, "lowers": -1}[word]
        s.export_prior(tmp_path / "prior.nc")
        s.export_prior(tmp_path / "prior.json")
    assert fit.delta is not None and np.count_nonzero(signs) == 3
    import xarray as xr

    with xr.open_dataset(tmp_path / "prior.nc", group="constant_data") as const, \
            xr.open_dataset(tmp_path / "prior.nc", group="posterior") as post:
        assert list(const["direction"].values) == list(signs)
        assert float(post["delta"].values.ravel()[0]) == pytest.approx(fit.delta)
        assert const["direction"].attrs["description"] and post["delta"].attrs["description"]
    doc = json.loads((tmp_path / "prior.json").read_text())
    assert doc["direction"] == list(signs) and doc["delta"] == pytest.approx(fit.delta)


def test_to_estimator_refuses_direction_answers_it_cannot_carry(tmp_path):
    """Bug (2026-11-30): to_estimator() dropped the direction answers (the estimator has no
    prior mean), so its predictions differed from the session's without a word; it now says
    so in one line. Without direction answers the estimator is still the session's model."""
    pytest.importorskip("sklearn")
    with _direction_session(tmp_path / "d.session") as s:
        with pytest.raises(ElicitError, match=r"^to_estimator\(\) .*direction answers") as e:
            s.to_estimator()
        assert "\n" not in str(e.value)
    with new_session(tmp_path / "e.session", questions="direction") as s:
        s.answer(s.next_query(), "dont_know")
        est = s.to_estimator()
        X = pd.DataFrame(s.X, columns=NAMES)
        np.testing.assert_allclose(est.predict(X), s.predict(X), rtol=1e-6, atol=1e-8)
