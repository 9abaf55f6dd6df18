"""Sessions under stress: two processes answering one file, and kills followed by a copy of the
``.session`` file alone.

Both print a summary line (``STRESS-TEST``, ``COPY-TEST``) that ``docs/reliability.md``
records. They are slow (about a minute each), so ``make test-fast`` skips them.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import random
import shutil
import signal
import sqlite3
import statistics
import time
from pathlib import Path

import pytest
from conftest import make_session_data
from helpers import act_until_killed, read_log, run_then_kill

from elicit.session import record
from elicit.session.session import Session
from elicit.session.terminal import Interrupted, stop_signals_as_interrupt

pytestmark = pytest.mark.slow

ANSWERS = int(os.environ.get("ELICIT_STRESS_ANSWERS", "50"))
COPY_TRIALS = int(os.environ.get("ELICIT_COPY_TRIALS", "60"))


def _log(fd: int, line: str) -> None:
    os.write(fd, (line + "\n").encode())  # one write: a line is all there or not at all


# --------------------------------------------------------------------------------------------
# Two processes, one file
# --------------------------------------------------------------------------------------------

def answerer(path: str, log_path: str, expert: str, seed: int, target: int,
             limit: float) -> None:
    """Runs in a child: answer ``target`` questions, logging each after it returned."""
    rng = random.Random(seed)
    fd = os.open(log_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    t_end = time.monotonic() + limit
    with Session.open(path, expert=expert) as s:
        done = 0
        while done < target:
            if time.monotonic() > t_end:
                _log(fd, f"stuck {done}")
                os._exit(3)
            q = s.next_query()
            # A pause, as a person takes to read the question: it lets the other process
            # pick up the same pending query, so both race to answer it.
            time.sleep(rng.uniform(0.0, 0.03))
            t0 = time.perf_counter()
            try:
                rec = s.answer(q, rng.choice(["similar", "dissimilar", "dont_know"]))
            except record.AnsweredElsewhere:
                _log(fd, f"elsewhere {q.id}")
                continue
            _log(fd, f"answer {rec.id} {q.id} {expert or '-'} "
                     f"{(time.perf_counter() - t0) * 1000:.2f}")
            done += 1
    os._exit(0)


def test_a_question_answered_elsewhere_between_two_reads_is_chosen_again(tmp_path, monkeypatch):
    """The stress test above once failed with "could not record a new question: other
    programs keep answering": the other process answered the pending question after this
    one brought its model up to date and before it cancelled the answered question, so the
    round saw as many questions left as before and gave up. Here that moment is forced."""
    X, y, U = make_session_data(seed=5, p=8)
    path = tmp_path / "s.session"
    Session.create(X, y, U, path=path, engine="numpy", refine=2, seed=1).close()
    cancel = record.cancel_answered_pending
    raced: list[int] = []

    def answered_elsewhere_first(conn):
        if raced == [0]:   # the second round of the call: the question it recorded is pending
            raced.append(1)
            with Session.open(path) as other:
                q = other.pending()[0]
                other.answer(q, "similar")
                raced.append(q.id)
        elif not raced:
            raced.append(0)
        return cancel(conn)

    with Session.open(path) as s:
        monkeypatch.setattr(record, "cancel_answered_pending", answered_elsewhere_first)
        q = s.next_query()
        monkeypatch.setattr(record, "cancel_answered_pending", cancel)
        assert len(raced) == 3 and q.id != raced[2]
        s.answer(q, "dissimilar")
        assert s.progress()["answered"] == 2


@pytest.mark.parametrize("experts", [("", ""), ("alice", "bob")],
                         ids=["one expert", "two experts"])
def test_two_processes_answer_one_file_without_getting_stuck(tmp_path, experts):
    # One expert: 2 x 50 answers need 100 of its 120 pairs; two experts: 50 of 66 each.
    p = 16 if experts[0] == experts[1] else 12
    X, y, U = make_session_data(seed=5, p=p)
    path = tmp_path / "stress.session"
    Session.create(X, y, U, path=path, engine="numpy", refine=2, seed=1).close()
    ctx = multiprocessing.get_context("fork")
    logs = [tmp_path / f"p{k}.log" for k in (0, 1)]
    t0 = time.perf_counter()
    procs = [ctx.Process(target=answerer, args=(str(path), str(logs[k]), experts[k], k,
                                                ANSWERS, 300.0)) for k in (0, 1)]
    for pr in procs:
        pr.start()
    for pr in procs:
        pr.join(400)
    seconds = time.perf_counter() - t0
    codes = [pr.exitcode for pr in procs]
    entries = [read_log(lg) for lg in logs]
    assert codes == [0, 0], f"exit codes {codes}: {[e[-1:] for e in entries]}"
    logged = [(int(e[1]), int(e[2])) for es in entries for e in es if e[0] == "answer"]
    assert len(logged) == 2 * ANSWERS
    raw = sqlite3.connect(path)
    try:
        assert raw.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        rows = {(a, q) for a, q in raw.execute("SELECT id, query_id FROM answers")}
        stale = raw.execute(record._STALE_PENDING).fetchall()
    finally:
        raw.close()
    assert set(logged) <= rows, "an acknowledged answer is missing"
    assert len(rows) == 2 * ANSWERS and stale == []
    with Session.open(path, expert=experts[0]) as s:
        s.answer(s.next_query(), "similar")  # never stuck: the session goes on
    ms = [float(e[4]) for es in entries for e in es if e[0] == "answer"]
    summary = {"experts": list(experts), "answers": len(logged),
               "answered_elsewhere": sum(e[0] == "elsewhere" for es in entries for e in es),
               "median_ms_per_answer": round(statistics.median(ms), 1),
               "seconds": round(seconds, 1)}
    print("\nSTRESS-TEST", json.dumps(summary))


# --------------------------------------------------------------------------------------------
# Kill, then copy the .session file alone
# --------------------------------------------------------------------------------------------

def worker(path: str, log_path: str, seed: int) -> None:
    """Runs in a child until it is killed: answer (mostly), skip or undo, logging each
    action after it returned. SIGTERM closes the session cleanly (exit status 143)."""
    s = Session.open(path)
    try:
        with stop_signals_as_interrupt():
            act_until_killed(s, seed, log_path, undo=0.1, skip=0.08)
    except Interrupted as e:
        s.close()
        os._exit(e.code)


def _read_copy(copy: Path) -> tuple[bool, dict, set]:
    """Whether SQLite finds the file whole, and (if so) its answers (id -> "query answer")
    and the ids of the undone ones."""
    raw = sqlite3.connect(copy)
    try:
        try:
            whole = raw.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        except sqlite3.DatabaseError:          # "database disk image is malformed"
            whole = False
        if not whole:
            return False, {}, set()
        rows = dict(raw.execute("SELECT id, query_id || ' ' || answer FROM answers"))
        undone = {r[0] for r in raw.execute("SELECT id FROM answers WHERE undone_at IS NOT NULL")}
    finally:
        raw.close()
    return True, rows, undone


def test_kills_then_a_copy_of_the_session_file_alone_keeps_every_confirmed_answer(tmp_path):
    X, y, U = make_session_data(seed=5, p=8)
    path = tmp_path / "kill.session"
    log_path = tmp_path / "kill.log"
    Session.create(X, y, U, path=path, engine="numpy", refine=2, seed=3).close()
    rng = random.Random(11)
    t0 = time.perf_counter()
    stats = {"SIGKILL": 0, "SIGTERM": 0, "clean_sigterm_exits": 0, "hot_journal_after_kill": 0,
             "damaged_copies_while_a_commit_was_written": 0}
    copies = tmp_path / "copies"
    copies.mkdir()
    checked = 0
    for trial in range(COPY_TRIALS):
        sig = signal.SIGKILL if trial % 2 == 0 else signal.SIGTERM
        child = run_then_kill(worker, (str(path), str(log_path), trial), rng.uniform(0.05, 0.6),
                              sig, timeout=30)
        stats[sig.name] += 1
        if sig == signal.SIGTERM:
            assert child.exitcode in (128 + signal.SIGTERM, -signal.SIGTERM), child.exitcode
            stats["clean_sigterm_exits"] += child.exitcode == 128 + signal.SIGTERM
        journal = Path(str(path) + "-journal")
        hot = journal.exists() and journal.stat().st_size > 0
        stats["hot_journal_after_kill"] += hot
        # The .session file alone, as a user would copy it right now.
        copy = copies / f"t{trial}.session"
        shutil.copyfile(path, copy)
        log = read_log(log_path)
        whole, rows, undone = _read_copy(copy)
        if not whole:
            # The kill landed while SQLite wrote a commit's pages into the file
            # (docs/reliability.md, "What is left"): the file alone is a mix of old and new
            # pages, which its journal rolls back on the next open. That needs a journal
            # left beside the file, and the file with its journal holds every confirmed
            # answer.
            assert hot, f"trial {trial}: a damaged copy with no write in flight"
            stats["damaged_copies_while_a_commit_was_written"] += 1
            with_journal = copies / f"t{trial}-with-journal.session"
            shutil.copyfile(path, with_journal)
            shutil.copyfile(journal, str(with_journal) + "-journal")
            whole, rows, undone = _read_copy(with_journal)
            assert whole, f"trial {trial}: the file with its journal is damaged too"
            copy.unlink()
            copy = with_journal
        for e in log:
            if e[0] == "answer":
                assert rows.get(int(e[1])) == f"{e[2]} {e[3]}", f"trial {trial}: {e} lost"
                checked += 1
            elif e[0] == "undo":
                assert int(e[1]) in undone, f"trial {trial}: undo {e[1]} lost"
        with Session.open(copy) as s:  # the copy is a working session
            if not s.is_done():
                s.next_query()
        copy.unlink()
    log = read_log(log_path)
    summary = {"trials": COPY_TRIALS, **stats,
               "acknowledged_answers": sum(e[0] == "answer" for e in log),
               "acknowledged_undos": sum(e[0] == "undo" for e in log),
               "answers_missing_from_copies": 0, "answer_checks": checked,
               "seconds": round(time.perf_counter() - t0, 1)}
    print("\nCOPY-TEST", json.dumps(summary))
    assert summary["acknowledged_answers"] >= min(50, COPY_TRIALS)
