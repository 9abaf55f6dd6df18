"""The SQL of the record inside a session file: queries, answers, skips, undos and the event
log. Each writing function is, or runs inside, one :func:`~elicit.session.store.write`
transaction; rows are keyed by ``(kind, i, j)`` and carry their expert (``''``: unnamed)."""

from __future__ import annotations

import hashlib
import json
import sqlite3
from collections.abc import Sequence
from typing import TYPE_CHECKING

from elicit.elicitation.answers import Answer
from elicit.errors import ElicitError
from elicit.session.questions import (
    SessionQuery,
    public_j,
    question_label,
    question_names,
    stored_j,
)
from elicit.session.store import FEATURE_J, is_read_only, now, write

if TYPE_CHECKING:
    from elicit.elicitation.strategies import Query

#: The largest id SQLite can store; larger numbers cannot name a query.
MAX_ID = 2**63 - 1
#: The most questions :meth:`Session.batch` (``elicit ask --batch``) asks at once.
MAX_BATCH = 50
#: SQL: query q's question has an active answer by q's expert.
_ANSWERED = ("EXISTS (SELECT 1 FROM answers a WHERE a.undone_at IS NULL AND a.kind = q.kind "
             "AND a.i = q.i AND a.j = q.j AND a.expert = q.expert)")


class NotPending(ElicitError):
    """The query was answered, skipped or withdrawn first (a stale page); nothing was changed."""


class AnsweredElsewhere(NotPending):
    """The expert answered elsewhere first (another tab or program); nothing was changed."""


class UnknownQuery(ElicitError):
    """No query with this id was asked in the session."""


def data_version(conn: sqlite3.Connection) -> int:
    """``PRAGMA data_version``: changes when *another* connection commits."""
    return int(conn.execute("PRAGMA data_version").fetchone()[0])


def epoch(conn: sqlite3.Connection) -> int:
    """The number of answers and undos logged so far (all experts)."""
    return int(conn.execute(
        "SELECT COUNT(*) FROM events WHERE kind IN ('answer', 'undo')").fetchone()[0])


def active_answers(conn: sqlite3.Connection) -> list[tuple[str, int, int, str, str]]:
    """The answers not undone, ``(kind, i, j, answer, expert)`` in answer order."""
    rows = conn.execute("SELECT kind, i, j, answer, expert FROM answers WHERE undone_at IS "
                        "NULL ORDER BY id").fetchall()
    return [(str(k), int(i), int(j), str(a), str(e)) for k, i, j, a, e in rows]


def last_event(conn: sqlite3.Connection) -> int:
    """The id of the latest event (0 for none): grows with every recorded event."""
    return int(conn.execute("SELECT COALESCE(MAX(id), 0) FROM events").fetchone()[0])


def experts(conn: sqlite3.Connection) -> list[str]:
    """The experts with at least one query, in order of their first query."""
    return [str(e) for (e,) in conn.execute(
        "SELECT expert FROM queries GROUP BY expert ORDER BY MIN(id)")]


def progress(conn: sqlite3.Connection, n_pairs: int, expert: str) -> dict[str, int]:
    """Counts of one expert's record: ``answered`` (active answers), ``questions`` (``n_pairs``;
    also as ``pairs``, its older name), ``left``, ``skipped``, ``undone``, ``pending``, the
    active answers per answer word, and ``all_answers`` / ``experts`` over every expert."""
    kinds = dict(conn.execute("SELECT answer, COUNT(*) FROM answers WHERE undone_at IS NULL "
                              "AND expert = ? GROUP BY answer", (expert,)).fetchall())
    # questions, not skips: one skipped thrice counts once, and not once answered since
    skipped, pending = conn.execute(
        f"SELECT COUNT(DISTINCT CASE WHEN status = 'skipped' AND NOT {_ANSWERED} THEN kind || "
        "' ' || i || ' ' || j END), COALESCE(SUM(status = 'pending'), 0) FROM queries q "
        "WHERE expert = ?", (expert,)).fetchone()
    undone = conn.execute("SELECT COUNT(*) FROM answers WHERE undone_at IS NOT NULL "
                          "AND expert = ?", (expert,)).fetchone()[0]
    total, n_experts = conn.execute("SELECT COUNT(*), COUNT(DISTINCT expert) FROM answers "
                                    "WHERE undone_at IS NULL").fetchone()
    n_ans = sum(kinds.values())
    return {"answered": n_ans, "pairs": n_pairs, "questions": n_pairs,
            "left": n_pairs - n_ans, "skipped": int(skipped), "undone": int(undone),
            "pending": int(pending), **{a.value: int(kinds.get(a.value, 0)) for a in Answer},
            "all_answers": int(total), "experts": int(n_experts)}


def pending_queries(conn: sqlite3.Connection, expert: str) -> list[tuple]:
    """The expert's pending queries, oldest first: id, kind, i, j, expected_gain, exact_gain.
    Not one whose question they answered meanwhile: a read-only reader leaves it pending."""
    return conn.execute("SELECT id, kind, i, j, expected_gain, exact_gain FROM queries q "
                        f"WHERE status = 'pending' AND expert = ? AND NOT {_ANSWERED} "
                        "ORDER BY id", (expert,)).fetchall()


def n_queries(conn: sqlite3.Connection) -> int:
    """How many queries were ever recorded (the round number of the next one)."""
    return int(conn.execute("SELECT COUNT(*) FROM queries").fetchone()[0])


def skipped_questions(conn: sqlite3.Connection, expert: str) -> set[tuple[str, int, int]]:
    """The questions ``(kind, i, j)`` the expert skipped since their last answer or undo."""
    return {(str(k), int(i), int(j)) for k, i, j in conn.execute(
        "SELECT q.kind, q.i, q.j FROM events e JOIN queries q ON q.id = e.query_id "
        "WHERE e.kind = 'skip' AND e.expert = ? AND e.id > (SELECT COALESCE(MAX(id), 0) "
        "FROM events WHERE kind IN ('answer', 'undo') AND expert = ?)", (expert, expert))}


def best_gain(conn: sqlite3.Connection, upto: int) -> float | None:
    """The largest expected gain of the questions up to query ``upto`` (all experts; None
    before any gain): the yardstick of a question's worth."""
    row = conn.execute("SELECT MAX(expected_gain) FROM queries WHERE id <= ?", (upto,)).fetchone()
    return None if row[0] is None else float(row[0])


def recent_answered(conn: sqlite3.Connection, expert: str,
                    k: int) -> list[tuple[int, float | None]]:
    """``(query id, expected gain)`` of the expert's last ``k`` active answers, latest first."""
    return [(int(q), None if g is None else float(g)) for q, g in conn.execute(
        "SELECT q.id, q.expected_gain FROM answers a JOIN queries q ON q.id = a.query_id "
        "WHERE a.expert = ? AND a.undone_at IS NULL ORDER BY a.id DESC LIMIT ?",
        (expert, k))]


def unknown_query(qid: int) -> UnknownQuery:
    """The error for a query id this session never asked (or cannot even store)."""
    return UnknownQuery(f"query {qid} was not asked in this session; ask for the next query first")


def open_query_row(conn: sqlite3.Connection, qid: int, action: str, names: list[str],
                   expert: str):
    """``(id, i, j, expected_gain, exact_gain, status, kind)`` of the expert's pending query;
    for any other query an error saying what became of it (``action``: what was refused)."""
    row = None  # an id SQLite cannot store is not looked up (it would overflow)
    if 1 <= qid <= MAX_ID:
        row = conn.execute("SELECT id, i, j, expected_gain, exact_gain, status, expert, kind "
                           "FROM queries WHERE id = ?", (qid,)).fetchone()
    if row is None:
        raise unknown_query(qid)
    status = row[5]
    pair = question_label(names, row[1], row[2])
    if row[6] != expert:
        raise ElicitError(f"query {qid} ({pair}) was asked to {expert_label(row[6])}, not to "
                          f"{expert_label(expert)}; ask for your own next query")
    if status == "answered":
        a = conn.execute("SELECT id, answer, answered_at, undone_at FROM answers WHERE "
                         "query_id = ?", (qid,)).fetchone()
        when = f" ({a[1]!r}, answer {a[0]} at {a[2]})" if a else ""
        undone = " and later undone" if a and a[3] else ""
        raise AnsweredElsewhere(f"query {qid} ({pair}) was already answered{when}{undone}; "
                                "if not by you here, it was answered elsewhere (another "
                                f"tab, window or process). Cannot {action} it again; ask "
                                "for the next query")
    if status == "skipped":
        raise NotPending(f"query {qid} ({pair}) was skipped; it may come back later. "
                         "Ask for the next query")
    if status == "cancelled":
        raise NotPending(f"query {qid} ({pair}) was withdrawn (by an undo, or because its "
                         "pair was answered elsewhere); ask for the next query")
    return (*row[:6], row[7])


def active_answer_to(conn: sqlite3.Connection, kind: str, i: int, j: int, expert: str):
    """The expert's active answer to ``(kind, i, j)``: ``(id, answer, answered_at)`` or None."""
    return conn.execute("SELECT id, answer, answered_at FROM answers WHERE kind = ? AND i = ? "
                        "AND j = ? AND expert = ? AND undone_at IS NULL",
                        (kind, i, j, expert)).fetchone()


def names_or_blank(names: Sequence[str]) -> dict[int, str]:
    """Feature name by index, and ``""`` for :data:`~elicit.session.store.FEATURE_J`."""
    return {**dict(enumerate(names)), FEATURE_J: ""}


def history_rows(conn: sqlite3.Connection, names: Sequence[str]) -> list[tuple]:
    """Every answer with its query's gain and time, oldest first, as the columns
    :data:`~elicit.session.opening.HISTORY_COLUMNS` (as :func:`export.history`): with the
    features' names (a feature question: ``j = -1``, ``feature_j`` empty) and whether undone."""
    rows = conn.execute(
        "SELECT a.id, a.query_id, a.expert, a.kind, a.i, a.j, a.answer, a.comment, "
        "q.expected_gain, q.shown_at, a.answered_at, a.undone_at FROM answers a JOIN queries q "
        "ON q.id = a.query_id ORDER BY a.id").fetchall()
    named = names_or_blank(names)
    return [(*r[:6], named[r[4]], named[r[5]], *r[6:11], r[11] is not None, r[11]) for r in rows]


def query_rows(conn: sqlite3.Connection, names: Sequence[str]) -> list[tuple]:
    """Every query shown: id, expert, kind, i, j, feature_i, feature_j (empty for a feature
    question), expected_gain, exact_gain (a bool), shown_at, status, batch."""
    rows = conn.execute("SELECT id, expert, kind, i, j, expected_gain, exact_gain, shown_at, "
                        "status, batch FROM queries ORDER BY id").fetchall()
    named = names_or_blank(names)
    return [(*r[:5], named[r[3]], named[r[4]], r[5], bool(r[6]), *r[7:]) for r in rows]


def event_rows(conn: sqlite3.Connection) -> list[tuple]:
    """The event log in order: id, kind, expert, query_id, answer_id, epoch, at, detail."""
    return conn.execute("SELECT id, kind, expert, query_id, answer_id, epoch, at, detail "
                        "FROM events ORDER BY id").fetchall()


#: The longest expert name, in characters.
MAX_EXPERT = 80


def check_expert(expert: str | None) -> str:
    """An expert's name, stripped (``''`` is the unnamed expert); refuses non-text, overlong
    names and control characters."""
    if expert is None:
        return ""
    if not isinstance(expert, str):
        raise ElicitError(f"expert must be a name (text), got {type(expert).__name__}")
    expert = " ".join(expert.split())
    if len(expert) > MAX_EXPERT:
        raise ElicitError(f"expert name is {len(expert)} characters long; the limit is "
                          f"{MAX_EXPERT}")
    if any(not ch.isprintable() for ch in expert):
        raise ElicitError(f"expert name {expert!r} contains control characters; use letters, "
                          "digits and spaces")
    return expert


def expert_label(expert: str) -> str:
    return f"expert {expert!r}" if expert else "the unnamed expert"


def by_expert(expert: str) -> str:
    """`` by expert 'NAME'`` in messages; empty for the unnamed expert."""
    return f" by {expert_label(expert)}" if expert else ""


def log_event(conn: sqlite3.Connection, kind: str, qid: int | None, at: str, expert: str,
              answer_id: int | None = None, detail: dict | None = None) -> None:
    """Append an event to the log, at the current :func:`epoch`."""
    conn.execute("INSERT INTO events (kind, query_id, answer_id, epoch, at, detail, expert) "
                 "VALUES (?, ?, ?, ?, ?, ?, ?)",
                 (kind, qid, answer_id, epoch(conn), at,
                  None if detail is None else json.dumps(detail), expert))


def _cancel(conn: sqlite3.Connection, qids: Sequence[int], reason: str) -> None:
    at = now()
    for qid in qids:
        (expert,) = conn.execute("SELECT expert FROM queries WHERE id = ?", (qid,)).fetchone()
        conn.execute("UPDATE queries SET status = 'cancelled' WHERE id = ?", (qid,))
        log_event(conn, "cancel", qid, at, expert, detail={"reason": reason})


_STALE_PENDING = f"SELECT q.id FROM queries q WHERE q.status = 'pending' AND {_ANSWERED}"


def cancel_answered_pending(conn: sqlite3.Connection) -> None:
    """Cancel every pending query whose question its expert has already answered (an older
    elicit could leave one behind, which could never be answered); one read when none."""
    if is_read_only(conn) or not conn.execute(_STALE_PENDING + " LIMIT 1").fetchone():
        return  # a read-only session leaves them: its readers never ask
    with write(conn):
        _cancel(conn, [int(q) for (q,) in conn.execute(_STALE_PENDING)], "pair answered elsewhere")


def add_queries(conn: sqlite3.Connection, chosen: Sequence[Query], expert: str) -> None:
    """Record chosen queries of an expert as pending (one batch if more than one). Chosen
    without the write lock, so checked again: pending queries another connection recorded
    for this expert meanwhile win, questions the expert answered meanwhile are dropped."""
    at = now()
    with write(conn):
        if conn.execute("SELECT 1 FROM queries WHERE status = 'pending' AND expert = ? "
                        "LIMIT 1", (expert,)).fetchone():
            return
        fresh = [q for q in chosen
                 if active_answer_to(conn, q.kind, q.i, stored_j(q.j), expert) is None]
        batch_id = None if len(fresh) == 1 else int(conn.execute(
            "SELECT COALESCE(MAX(batch), 0) + 1 FROM queries").fetchone()[0])
        for q in fresh:
            cur = conn.execute("INSERT INTO queries (kind, i, j, expected_gain, exact_gain, "
                               "shown_at, status, batch, expert) VALUES "
                               "(?, ?, ?, ?, ?, ?, 'pending', ?, ?)",
                               (q.kind, q.i, stored_j(q.j), q.expected_gain,
                                int(q.exact_gain), at, batch_id, expert))
            log_event(conn, "query", cur.lastrowid, at, expert)


#: The meta key of a new session's first question, chosen while its model was loaded and
#: not shown yet (``elicit session new``), so that ``elicit ask`` shows it before its own loads.
FIRST = "first_question"


def _digest(meta: dict, kept: dict) -> str:
    """What the first question was chosen from: every meta datum (settings, data) and itself."""
    return hashlib.sha256(json.dumps([{k: v for k, v in meta.items() if k != FIRST}, kept],
                                     sort_keys=True).encode()).hexdigest()


def keep_first(conn: sqlite3.Connection, meta: dict, q: Query) -> None:
    """Store ``q``, the loop's choice on a session nobody was asked anything yet, as chosen and
    not shown (:func:`first_question`); it is never answered as such."""
    kept = {"kind": q.kind, "i": int(q.i), "j": stored_j(q.j), "exact_gain": bool(q.exact_gain),
            "expected_gain": None if q.expected_gain is None else float(q.expected_gain)}
    with write(conn):
        conn.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)",
                     (FIRST, json.dumps({**kept, "digest": _digest(meta, kept)})))


def first_question(conn: sqlite3.Connection, meta: dict, names: Sequence[str], uid: str,
                   expert: str) -> SessionQuery | None:
    """The kept first question as the loop will record it (query 1), while the loop would
    choose it: before any expert was asked anything and with the meta data it was chosen
    from (None otherwise: the loop's choice replaces it, never an answer to it)."""
    kept = dict(meta[FIRST]) if isinstance(meta.get(FIRST), dict) else {}
    if n_queries(conn) or kept.pop("digest", None) != _digest(meta, kept) or \
            set(kept) != {"kind", "i", "j", "exact_gain", "expected_gain"}:  # another layout
        return None
    i, j, g = kept["i"], kept["j"], kept["expected_gain"]
    return SessionQuery(1, i, public_j(j), question_names(names, i, j), g, kept["exact_gain"],
                        uid, expert, worth(g, g), kept["kind"])


def answer_query(conn: sqlite3.Connection, qid: int, answer: str, comment: str | None,
                 names: list[str], expert: str) -> tuple[int, int, int, str, str]:
    """Record an answer to the expert's pending query in one transaction; returns ``(answer
    id, i, j, answered_at, kind)``. If the expert answered the same question through another
    query meanwhile, the query is cancelled (committed) and :class:`AnsweredElsewhere` raised."""
    at = now()
    with write(conn):
        # Checked inside the write transaction (no other writer can slip in before the insert),
        # backed up by the unique indexes.
        row = open_query_row(conn, qid, "answer", names, expert)
        i, j, kind = int(row[1]), int(row[2]), str(row[6])
        try:
            Answer.parse(answer, kind)
        except ElicitError as err:
            raise ElicitError(f"query {qid} ({question_label(names, i, j)}): {err}") from None
        conflict = active_answer_to(conn, kind, i, j, expert)
        if conflict is not None:
            _cancel(conn, [qid], "pair answered elsewhere")
            aid = -1
        else:
            cur = conn.execute("INSERT INTO answers (query_id, kind, i, j, answer, comment, "
                               "answered_at, expert) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                               (qid, kind, i, j, answer, comment, at, expert))
            assert cur.lastrowid is not None  # an INSERT always sets it
            aid = int(cur.lastrowid)
            conn.execute("UPDATE queries SET status = 'answered' WHERE id = ?", (qid,))
            log_event(conn, "answer", qid, at, expert, aid)
    if conflict is not None:
        raise AnsweredElsewhere(
            f"{question_label(names, i, j)} was already answered elsewhere by "
            f"{expert_label(expert)} ({conflict[1]!r}, answer {conflict[0]} at {conflict[2]}, "
            f"in another tab, window or process); query {qid} was withdrawn and this answer "
            "was not recorded. Ask for the next query")
    return aid, i, j, at, kind


def cancel_query(conn: sqlite3.Connection, qid: int, reason: str) -> None:
    with write(conn):
        st = conn.execute("SELECT status FROM queries WHERE id = ?", (qid,)).fetchone()
        if st is not None and st[0] == "pending":
            _cancel(conn, [qid], reason)


def skip_query(conn: sqlite3.Connection, qid: int, names: list[str], expert: str) -> None:
    with write(conn):
        open_query_row(conn, qid, "skip", names, expert)
        conn.execute("UPDATE queries SET status = 'skipped' WHERE id = ?", (qid,))
        log_event(conn, "skip", qid, now(), expert)


def undo_last(conn: sqlite3.Connection, expert: str, answer_id: int | None = None) -> tuple:
    """Undo the expert's last active answer (which must be ``answer_id`` if given), withdraw
    their pending queries and ask its question again, in one transaction. Returns ``(id,
    query_id, i, j, answer, comment, answered_at, kind)`` of the undone answer."""
    at = now()
    with write(conn):
        row = conn.execute("SELECT a.id, a.query_id, a.i, a.j, a.answer, a.comment, "
                           "a.answered_at, a.kind, q.expected_gain, q.exact_gain FROM answers a "
                           "JOIN queries q ON q.id = a.query_id WHERE a.undone_at IS NULL "
                           "AND a.expert = ? ORDER BY a.id DESC LIMIT 1", (expert,)).fetchone()
        if row is None:
            raise ElicitError(f"there is no answer{by_expert(expert)} to undo")
        aid, qid, i, j, _, _, _, kind, gain, exact = row
        if answer_id is not None and aid != answer_id:
            raise AnsweredElsewhere(f"the last answer{by_expert(expert)} is no longer the one "
                                    "this page showed (answered since in another tab or "
                                    "program); nothing was undone: reload the page to see it")
        conn.execute("UPDATE answers SET undone_at = ? WHERE id = ?", (at, aid))
        conn.execute("UPDATE queries SET status = 'cancelled' WHERE status = 'pending' "
                     "AND expert = ?", (expert,))
        # The model is back where it was when this pair was asked (if nobody else answered
        # meanwhile), so its stored gain still applies.
        cur = conn.execute("INSERT INTO queries (kind, i, j, expected_gain, exact_gain, "
                           "shown_at, status, expert) VALUES (?, ?, ?, ?, ?, ?, 'pending', ?)",
                           (kind, i, j, gain, exact, at, expert))
        log_event(conn, "undo", qid, at, expert, aid, {"requeued": cur.lastrowid})
    return row[:8]


#: The stopping hint: shown once the expert's last ``STOP_WINDOW`` answered questions were
#: each worth less than ``STOP_FRACTION`` (see :func:`worth`).
STOP_WINDOW, STOP_FRACTION = 5, 0.05


# Read on any connection, also the web page's read-only one (never waiting for the lock).
def read_pending(conn: sqlite3.Connection, names: Sequence[str], uid: str,
                 expert: str) -> list[SessionQuery]:
    """:meth:`Session.pending` read on ``conn`` (without bringing the model up to date)."""
    return [SessionQuery(int(q), int(i), public_j(j), question_names(names, i, j),
                         None if g is None else float(g), bool(exact), uid, expert,
                         worth(g, best_gain(conn, q)), str(kind))
            for q, kind, i, j, g, exact in pending_queries(conn, expert)]


def read_stop_hint(conn: sqlite3.Connection, expert: str) -> str | None:
    """:meth:`Session.stop_hint` read on ``conn``."""
    worths = [worth(g, best_gain(conn, q))
              for q, g in recent_answered(conn, expert, STOP_WINDOW)]
    if len(worths) < STOP_WINDOW or not all(w is not None and w < STOP_FRACTION
                                            for w in worths):
        return None
    return (f"Your last {STOP_WINDOW} questions were each worth less than "
            f"{STOP_FRACTION:.0%} of the best question so far: further answers will "
            "change the model little, so this is a good point to stop.")


def worth(gain: float | None, best: float | None) -> float | None:
    """A question's expected gain over the largest of the questions offered up to it
    (``best``, itself included), in [0, 1] (the best so far, not the first: docs/session.md);
    None without gains or when no question so far had a positive gain."""
    if gain is None or best is None or not best > 0:
        return None
    return min(max(float(gain), 0.0) / best, 1.0)
