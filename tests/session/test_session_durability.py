"""The session file's durability, test by test against what a refactor could break: each test
names in brackets the change of elicit/session it fails on (a mutation audit of the durability
code found these untested; docs/reliability.md, "A mutation audit of the session's
durability code")."""

from __future__ import annotations

import os
import shutil
import sqlite3
import stat
import threading

import pytest
from conftest import FORMAT1_SESSION
from conftest import make_session_data as make_data
from helpers import create_session, leave_hot_journal, sql_rows

from elicit.errors import ElicitError
from elicit.session import record, store
from elicit.session.session import Session
from elicit.session.store import SessionReplaced


def test_a_write_takes_the_lock_before_its_checks(tmp_path, monkeypatch):
    """[deferred] BEGIN IMMEDIATE: what a write checks holds until its commit only if the
    write lock is taken before the checks; with another program writing, nothing runs."""
    path = tmp_path / "t.session"
    create_session(path).close()
    monkeypatch.setattr(store, "BUSY_TIMEOUT", 0.05)
    conn, other = store.connect(path), sqlite3.connect(path, isolation_level=None)
    try:
        other.execute("BEGIN IMMEDIATE")  # another program is in the middle of a write
        ran = []
        with pytest.raises(ElicitError, match="locked"), store.write(conn):
            ran.append(conn.execute("SELECT COUNT(*) FROM answers").fetchone())
        assert ran == []
    finally:
        other.execute("ROLLBACK")
        other.close()
        conn.close()


def test_an_answer_waits_for_another_programs_commit(tmp_path):
    """[busy_drop] the busy timeout: an answer given while another program commits waits for
    it instead of being refused at once."""
    path = tmp_path / "t.session"
    with create_session(path) as s:
        q = s.next_query()
        other = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        other.execute("BEGIN IMMEDIATE")
        done = threading.Timer(0.1, other.execute, ("COMMIT",))
        done.start()
        try:
            s.answer(q, "similar")
        finally:
            done.join()
            other.close()
        assert sql_rows(path, "SELECT COUNT(*) FROM answers") == [(1,)]


def test_a_ctrl_c_inside_a_write_rolls_it_back(tmp_path, monkeypatch):
    """[except_exception] a KeyboardInterrupt between the INSERT and the COMMIT rolls the
    write back: no transaction (and no write lock) is left open, the next answer is saved."""
    path = tmp_path / "t.session"
    with create_session(path) as s:
        q = s.next_query()
        log_event = record.log_event

        def interrupted(conn, kind, *args, **kw):
            if kind == "answer":
                raise KeyboardInterrupt
            return log_event(conn, kind, *args, **kw)

        monkeypatch.setattr(record, "log_event", interrupted)
        with pytest.raises(KeyboardInterrupt):
            s.answer(q, "similar")
        monkeypatch.setattr(record, "log_event", log_event)
        assert not s.conn.in_transaction
        assert sql_rows(path, "SELECT COUNT(*) FROM answers") == [(0,)]
        s.answer(q, "similar")
    assert sql_rows(path, "SELECT COUNT(*) FROM answers") == [(1,)]


def test_create_syncs_the_folder_after_renaming_the_file_into_place(tmp_path, monkeypatch):
    """[create_no_fsync_dir, fsync_dir_noop] the rename of a new session file is made durable:
    its folder is fsynced once the file is in place (SQLite's own syncs are not os.fsync)."""
    path, synced, fsync = tmp_path / "t.session", [], os.fsync

    def seen(fd):
        st = os.fstat(fd)
        if stat.S_ISDIR(st.st_mode):
            synced.append((st.st_dev, st.st_ino, path.exists()))
        return fsync(fd)

    monkeypatch.setattr(os, "fsync", seen)
    create_session(path).close()
    folder = os.stat(tmp_path)
    assert (folder.st_dev, folder.st_ino, True) in synced


def test_an_overwrite_replaces_the_file_that_an_open_session_holds(tmp_path):
    """[create_copy_in_place] `--overwrite` renames a new file into place (never rewrites the
    old one in place), so a program that has the old session open refuses to save into it."""
    path = tmp_path / "t.session"
    with create_session(path) as old:
        q = old.next_query()
        create_session(path, overwrite=True, seed=9).close()
        with pytest.raises(SessionReplaced):
            old.answer(q, "similar")
    with Session.open(path) as new:
        assert new.progress()["answered"] == 0 and new.settings["seed"] == 9


def test_an_overwrite_removes_the_old_files_journal(tmp_path):
    """[create_keep_stale_journal] a hot journal left by a write cut short in the old file
    must not be rolled back into the new one."""
    path = tmp_path / "t.session"
    create_session(path).close()
    leave_hot_journal(path)  # a writer of the old file, killed in a commit
    create_session(path, overwrite=True, seed=9, texts={"price": ["the price is right"]}).close()
    assert not os.path.exists(f"{path}-journal")
    with Session.open(path) as new:  # the old file's pages were not played into it
        assert new.settings["seed"] == 9 and new.texts("price") == ["the price is right"]
    assert sql_rows(path, "PRAGMA integrity_check") == [("ok",)]


def test_a_format_1_file_with_other_data_is_left_untouched(tmp_path):
    """[durable_before_checks] a refused open writes nothing: leaving WAL rewrites the file's
    header, so it comes only after the data check."""
    path = tmp_path / "old.session"
    shutil.copyfile(FORMAT1_SESSION, path)
    before = path.read_bytes()
    X, y, U = make_data()
    with pytest.raises(ElicitError, match="created for different data"):
        Session.open(path, X=X + 1.0, y=y, meta_features=U)
    assert path.read_bytes() == before


def test_a_migration_cut_short_leaves_the_old_file_whole(tmp_path, monkeypatch):
    """[migrate_no_txn] the migration is one transaction: an error at its last step leaves
    the format-1 file as it was, and it migrates on the next open."""
    path = tmp_path / "old.session"
    shutil.copyfile(FORMAT1_SESSION, path)
    log_event = record.log_event

    def cut(conn, kind, *args, **kw):
        if kind == "migrate":
            raise ElicitError("cut short")
        return log_event(conn, kind, *args, **kw)

    monkeypatch.setattr(record, "log_event", cut)
    with pytest.raises(ElicitError, match="cut short"):
        Session.open(path)
    monkeypatch.setattr(record, "log_event", log_event)
    assert sql_rows(path, "SELECT value FROM meta WHERE key = 'format_version'") == [("1",)]
    with Session.open(path) as s:
        assert len(s.history) == 4 and list(s.events["kind"]).count("migrate") == 1


def test_an_empty_journal_is_no_write_cut_short(tmp_path):
    """[unfinished_any_size] only a non-empty -journal is a write in flight: an empty one
    (left by a journal_mode=TRUNCATE program) does not hide a truncated file."""
    path = tmp_path / "t.session"
    create_session(path).close()
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    open(f"{path}-journal", "wb").close()
    with pytest.raises(ElicitError, match="header promises"):
        Session.open(path)


def test_a_read_only_open_sees_answers_still_in_a_format_1_files_wal(tmp_path):
    """[wal_mem_ignores_wal] an older elicit keeps the file open with a commit only in its
    -wal: a read-only open (history, export) must show it, not the file's stale pages."""
    path = tmp_path / "old.session"
    shutil.copyfile(FORMAT1_SESSION, path)
    writer = sqlite3.connect(path, isolation_level=None)
    try:
        writer.execute("PRAGMA wal_autocheckpoint = 0")
        writer.execute("UPDATE answers SET comment = 'in the wal' WHERE id = "
                       "(SELECT MIN(id) FROM answers)")
        assert os.path.getsize(f"{path}-wal") > 0
        from elicit.session.opening import read
        assert read(path).history_rows()[0][9] == "in the wal"
    finally:
        writer.close()


def test_a_file_replaced_inside_a_write_gets_no_commit(tmp_path, monkeypatch):
    """[no_check_before_commit] a file replaced while an answer is being written: the answer
    is rolled back, in the old file too (the message says nothing was saved)."""
    path, other = tmp_path / "t.session", tmp_path / "other.session"
    create_session(other, seed=9).close()
    with create_session(path) as s:
        q = s.next_query()
        os.link(path, tmp_path / "old.session")  # the old file, still readable once replaced
        log_event = record.log_event

        def replaced(conn, kind, *args, **kw):
            if kind == "answer":
                os.replace(other, path)  # `elicit session new --overwrite` meanwhile
            return log_event(conn, kind, *args, **kw)

        monkeypatch.setattr(record, "log_event", replaced)
        with pytest.raises(SessionReplaced, match="nothing was saved"):
            s.answer(q, "similar")
    assert sql_rows(tmp_path / "old.session", "SELECT COUNT(*) FROM answers") == [(0,)]
    assert sql_rows(path, "SELECT COUNT(*) FROM answers") == [(0,)]


def test_a_file_shorter_than_its_header_says_opens_when_its_journal_restores_it(tmp_path):
    """[trunc_ignore_pending] a commit cut short while it grew the file: its header already
    counts the new pages, the file is short, and the hot journal beside it rolls both back.
    Such a file is opened (SQLite's recovery), not refused as truncated."""
    path = tmp_path / "t.session"
    create_session(path).close()
    size = path.stat().st_size
    leave_hot_journal(path)
    with open(path, "r+b") as fh:  # the header written, the new pages not yet
        head = bytearray(fh.read(100))
        head[28:32] = (int.from_bytes(head[28:32], "big") + 1000).to_bytes(4, "big")
        fh.seek(0)
        fh.write(head)
        fh.truncate(size)
    with Session.open(path) as s:
        assert s.progress()["answered"] == 0
    assert sql_rows(path, "SELECT COUNT(*) FROM texts WHERE feature = 999") == [(0,)]


def test_the_files_two_unique_rules_each_refuse_a_second_answer(tmp_path):
    """[no_unique_qid, no_unique_index] each rule on its own: the existing test inserts a row
    that breaks both, so either one alone passes it."""
    path = tmp_path / "t.session"
    with create_session(path) as s:
        q = s.next_query()
        s.answer(q, "similar")
    raw = sqlite3.connect(path)
    try:
        add = ("INSERT INTO answers (query_id, kind, i, j, answer, answered_at) "
               "VALUES (?, ?, ?, ?, 'similar', 'now')")
        # another query of the same question to the same expert: one active answer each
        qid = raw.execute("INSERT INTO queries (kind, i, j, shown_at, status) VALUES "
                          "(?, ?, ?, 'now', 'pending')", (q.kind, q.i, q.j)).lastrowid
        with pytest.raises(sqlite3.IntegrityError, match="answers.kind"):
            raw.execute(add, (qid, q.kind, q.i, q.j))
        # the first answer undone: still one answer per query
        raw.execute("UPDATE answers SET undone_at = 'now'")
        with pytest.raises(sqlite3.IntegrityError, match="answers.query_id"):
            raw.execute(add, (q.id, q.kind, q.i, q.j))
    finally:
        raw.close()


def test_a_second_query_of_an_answered_question_gets_no_second_answer(tmp_path):
    """[no_conflict_no_index] two pending queries of one question (another program recorded
    one meanwhile, or an older elicit left it): the second answer is refused, by the check
    or by the file's index; the existing tests reach neither with another query id."""
    from elicit.session.record import AnsweredElsewhere

    path = tmp_path / "t.session"
    with create_session(path) as s:
        q = s.next_query()
        raw = sqlite3.connect(path)
        qid2 = raw.execute("INSERT INTO queries (kind, i, j, shown_at, status) VALUES "
                           "(?, ?, ?, 'now', 'pending')", (q.kind, q.i, q.j)).lastrowid
        raw.commit()
        raw.close()
        s.answer(q, "similar")
        with pytest.raises(AnsweredElsewhere):
            s.answer(qid2, "dissimilar")
        assert s.active_answers() == [(q.i, q.j, "similar")]
    assert sql_rows(path, "SELECT COUNT(*) FROM answers") == [(1,)]


def test_a_question_another_program_recorded_meanwhile_wins(tmp_path, monkeypatch):
    """[add_queries_no_pending_check] the question is chosen without the write lock; if
    another program recorded one for the same expert meanwhile, that one is asked, and the
    expert never has two pending queries of one question."""
    path = tmp_path / "t.session"
    create_session(path).close()
    with Session.open(path) as a, Session.open(path) as b:
        choose, theirs = a._choose, []

        def other_program_first(k, who):
            chosen = choose(k, who)
            theirs.append(b.next_query())  # recorded while this program chose
            return chosen

        monkeypatch.setattr(a, "_choose", other_program_first)
        q = a.next_query()
        assert q.id == theirs[0].id and [p.id for p in a.pending()] == [q.id]


def test_a_page_is_read_at_one_state_of_the_file(tmp_path, monkeypatch):
    """[web_no_snapshot] the page's reads are one transaction: an answer committed by another
    program between two of them cannot show a question beside its own answer."""
    pytest.importorskip("flask")
    from elicit.session.web.app import FileReader

    path = tmp_path / "t.session"
    with create_session(path) as s:
        q = s.next_query()
        history_rows = record.history_rows

        def answered_meanwhile(conn, names):
            other = sqlite3.connect(path, timeout=0, isolation_level=None)
            try:
                other.execute("BEGIN IMMEDIATE")
                other.execute("INSERT INTO answers (query_id, kind, i, j, answer, answered_at) "
                              "VALUES (?, ?, ?, ?, 'similar', 'now')", (q.id, q.kind, q.i, q.j))
                other.execute("UPDATE queries SET status = 'answered' WHERE id = ?", (q.id,))
                other.execute("COMMIT")
            except sqlite3.OperationalError:  # held off by the page's snapshot
                if other.in_transaction:
                    other.execute("ROLLBACK")
            finally:
                other.close()
            return history_rows(conn, names)

        monkeypatch.setattr(record, "history_rows", answered_meanwhile)
        st = FileReader(s).page("")
    shown = st.query.id if st.query else None
    assert shown not in [h["query_id"] for h in st.history]
    assert st.progress["answered"] == len(st.history)


def test_a_create_that_fails_leaves_no_file_behind(tmp_path, monkeypatch):
    """[create_no_tmp_cleanup] a session file is built under a temporary name: a create
    that fails (here a full disk) leaves neither it nor its journal in the folder."""
    def disk_full(a):
        raise sqlite3.OperationalError("database or disk is full")

    monkeypatch.setattr(store, "_npy_bytes", disk_full)
    with pytest.raises(ElicitError, match="could not be saved"):
        create_session(tmp_path / "t.session")
    assert list(tmp_path.iterdir()) == []


def test_a_format_1_file_waits_for_another_connection_to_leave_wal(tmp_path):
    """[jm_noretry] leaving WAL needs every other connection closed: a program that closes
    the file a moment later is waited for, not reported as an older elicit keeping it (SQLite
    raised "database is locked" at once, without its busy wait, and the loop never retried:
    `Session.open` ended in a bare OperationalError)."""
    path = tmp_path / "old.session"
    shutil.copyfile(FORMAT1_SESSION, path)
    other = sqlite3.connect(path, check_same_thread=False)
    other.execute("SELECT COUNT(*) FROM meta").fetchone()
    closing = threading.Timer(0.2, other.close)
    closing.start()
    try:
        with Session.open(path) as s:
            assert s.conn.execute("PRAGMA journal_mode").fetchone()[0] == "delete"
    finally:
        closing.join()
