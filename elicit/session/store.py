"""The session file as a whole: schema, connections, durability, creation (the tables and the
durability rules: ``docs/session.md``, The session file, and ``docs/reliability.md``)."""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import sqlite3
import time
import uuid
from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np

from elicit.elicitation.questions import NO_FEATURE
from elicit.errors import ElicitError

#: Version of the file layout written here; larger ones are refused, older ones migrated when
#: opened (1: no experts, WAL journal; 2: pair questions only; 3: pair and feature questions
#: told apart by ``j``, their answers fixed by CHECK constraints).
FORMAT_VERSION = 4
#: ``PRAGMA application_id`` of session files ("ELIC"), so ``file(1)``-like tools can tell.
APPLICATION_ID = 0x454C4943
#: How long a write waits for another program's lock before giving up, in seconds.
BUSY_TIMEOUT = 10.0
TABLES = ("meta", "arrays", "texts", "queries", "answers", "events")
#: The ``j`` of a feature question in the queries and answers tables (the Elicitor's).
FEATURE_J = NO_FEATURE

# The record's two tables (rebuilt by the migrations under a temporary name); kinds and answer
# words are checked where written (record.answer_query) and on opening (opening._check_record).
_QUERIES = f"""
CREATE TABLE {{name}} (
    id INTEGER PRIMARY KEY,
    kind TEXT NOT NULL,
    i INTEGER NOT NULL, j INTEGER NOT NULL,
    expected_gain REAL, exact_gain INTEGER NOT NULL DEFAULT 0,
    shown_at TEXT NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('pending', 'answered', 'skipped', 'cancelled')),
    batch INTEGER,
    expert TEXT NOT NULL DEFAULT '',
    CHECK (i < j OR (j = {FEATURE_J} AND i >= 0)))"""
_ANSWERS = """
CREATE TABLE {name} (
    id INTEGER PRIMARY KEY,
    query_id INTEGER NOT NULL UNIQUE REFERENCES queries(id),
    kind TEXT NOT NULL,
    i INTEGER NOT NULL, j INTEGER NOT NULL,
    answer TEXT NOT NULL,
    comment TEXT,
    answered_at TEXT NOT NULL,
    undone_at TEXT,
    expert TEXT NOT NULL DEFAULT '')"""
_RECORD_INDEXES = """
CREATE UNIQUE INDEX answers_one_active_per_expert_question ON answers (kind, i, j, expert)
    WHERE undone_at IS NULL;
CREATE INDEX queries_by_status ON queries (status, expert);
"""

_SCHEMA = f"""
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE arrays (name TEXT PRIMARY KEY, npy BLOB NOT NULL);
CREATE TABLE texts (
    feature INTEGER NOT NULL, k INTEGER NOT NULL, snippet TEXT NOT NULL,
    PRIMARY KEY (feature, k));
{_QUERIES.format(name="queries")};
{_ANSWERS.format(name="answers")};
{_RECORD_INDEXES}
CREATE TABLE events (
    id INTEGER PRIMARY KEY,
    kind TEXT NOT NULL,
    query_id INTEGER, answer_id INTEGER,
    epoch INTEGER NOT NULL,
    at TEXT NOT NULL,
    detail TEXT,
    expert TEXT NOT NULL DEFAULT '');
"""

# Format 1 -> 2: every row gets an expert ('' = the unnamed expert of the old file); the
# indexes come with the rebuild to format 4, which always follows.
MIGRATE_1_TO_2 = """
ALTER TABLE queries ADD COLUMN expert TEXT NOT NULL DEFAULT '';
ALTER TABLE answers ADD COLUMN expert TEXT NOT NULL DEFAULT '';
ALTER TABLE events ADD COLUMN expert TEXT NOT NULL DEFAULT '';
"""

# Formats 1 to 3 -> 4: kinds of question by name; the record's tables are rebuilt (SQLite cannot
# drop a CHECK in place) with foreign keys off. :one and :two: see opening._migrate.
_RECORD_COLUMNS = {
    "queries": "id, i, j, expected_gain, exact_gain, shown_at, status, batch, expert",
    "answers": "id, query_id, i, j, answer, comment, answered_at, undone_at, expert"}
_OLD_KIND = f"CASE WHEN j = {FEATURE_J} THEN :one ELSE :two END"
MIGRATE_TO_4 = f"""
{_QUERIES.format(name="queries_4")};
{_ANSWERS.format(name="answers_4")};
INSERT INTO queries_4 (kind, {_RECORD_COLUMNS["queries"]})
    SELECT {_OLD_KIND}, {_RECORD_COLUMNS["queries"]} FROM queries;
INSERT INTO answers_4 (kind, {_RECORD_COLUMNS["answers"]})
    SELECT {_OLD_KIND}, {_RECORD_COLUMNS["answers"]} FROM answers;
DROP TABLE answers;
DROP TABLE queries;
ALTER TABLE queries_4 RENAME TO queries;
ALTER TABLE answers_4 RENAME TO answers;
{_RECORD_INDEXES}
"""


def now() -> str:
    """The current UTC time as ISO 8601 with microseconds (every timestamp in the file)."""
    return datetime.now(timezone.utc).isoformat(timespec="microseconds")


def statements(script: str) -> list[str]:
    return [s for s in script.split(";") if s.strip()]


def hash_array(name: str, a: np.ndarray) -> str:
    """sha256 of one array: its name, shape and float64 little-endian C-order bytes."""
    a = np.ascontiguousarray(a, dtype="<f8")
    h = hashlib.sha256()
    h.update(name.encode())
    h.update(json.dumps(list(a.shape)).encode())
    h.update(a.tobytes())
    return h.hexdigest()


def data_hashes(X: np.ndarray, y: np.ndarray, U: np.ndarray) -> tuple[str, dict[str, str]]:
    """The data identity (sha256 over the per-array hashes of X, y, U) and those hashes."""
    per = {"X": hash_array("X", X), "y": hash_array("y", y), "U": hash_array("U", U)}
    combined = hashlib.sha256("".join(per[k] for k in ("X", "y", "U")).encode()).hexdigest()
    return combined, per


def _npy_bytes(a: np.ndarray) -> bytes:
    buf = io.BytesIO()
    np.save(buf, np.ascontiguousarray(a, dtype="<f8"), allow_pickle=False)
    return buf.getvalue()


class SessionReplaced(ElicitError):
    """The session file was replaced (``elicit session new --overwrite``) or removed while a
    program had it open: nothing more is written, to the file now there or to the old one."""


class _Connection(sqlite3.Connection):
    """A connection that knows its file, as it was when opened (see :func:`check_same_file`)."""

    path: Path | None = None
    identity: tuple[int, int] | None = None


def _identity(path: Path) -> tuple[int, int] | None:
    """The file at ``path`` (device and inode; None when there is none)."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_dev, st.st_ino


def check_same_file(conn: sqlite3.Connection, writing: bool = True) -> None:
    """Refuse to go on when the connection's file is no longer the file at its path (``elicit
    session new --overwrite`` renamed a new one into place): writes would go to the old one."""
    path, identity = getattr(conn, "path", None), getattr(conn, "identity", None)
    if path is not None and identity is not None and _identity(path) != identity:
        saved = "; nothing was saved" if writing else ""
        raise SessionReplaced(f"session file {path} was replaced or removed while this program "
                              f"had it open (by `elicit session new --overwrite`?){saved}. Open "
                              "it again (restart `elicit ask` or `serve`) to go on with the "
                              "file now there")


def connect(path: Path, read_only: bool = False) -> sqlite3.Connection:
    """A connection on which every write is an explicit :func:`write` transaction;
    ``read_only``: opened with ``mode=ro`` (a read-only file or folder is fine), refusing
    writes (each read still takes SQLite's shared lock, so it never sees half of a commit).
    """
    # BEGIN/COMMIT are ours; the web server's threads share it under the Session's lock.
    target = f"{Path(path).resolve().as_uri()}?mode=ro" if read_only else str(path)
    conn = sqlite3.connect(target, isolation_level=None, check_same_thread=False,
                           timeout=BUSY_TIMEOUT, uri=read_only, factory=_Connection)
    # absolute: a later change of the working directory must not look like a replaced file
    conn.path = Path(os.path.abspath(path))
    conn.identity = _identity(conn.path)
    conn.execute("PRAGMA foreign_keys = ON")
    if read_only:
        conn.execute("PRAGMA query_only = ON")
    return conn


def is_read_only(conn: sqlite3.Connection) -> bool:
    """True for a connection made by ``connect(path, read_only=True)``."""
    return bool(conn.execute("PRAGMA query_only").fetchone()[0])


def set_durable(conn: sqlite3.Connection, path: Path) -> None:
    """Rollback journal (``DELETE``) with ``synchronous=EXTRA``: every commit is in the
    session file itself, synced, before it returns.

    Not WAL: a WAL commit reaches the session file only at a checkpoint (which any reader can
    hold back), so a copy of the ``.session`` file alone would miss recent answers. EXTRA (not
    FULL) also syncs the directory after the journal is deleted, so a power cut cannot
    resurrect the journal and roll the answer back.
    """
    deadline = time.monotonic() + BUSY_TIMEOUT
    while True:
        try:  # a format-1 file is in WAL mode; leaving it needs every other connection closed
            mode = str(conn.execute("PRAGMA journal_mode = DELETE").fetchone()[0]).lower()
        except sqlite3.OperationalError as e:  # while one is open: "locked" at once, unwaited
            if "locked" not in str(e):
                raise
            mode = "wal"
        if mode == "delete" or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    if mode != "delete":
        raise ElicitError(f"session file {path} is open in another program that keeps it in "
                          f"the older WAL format (journal mode {mode!r}), probably an older "
                          "elicit; close that program and try again")
    conn.execute("PRAGMA synchronous = EXTRA")


@contextlib.contextmanager
def write(conn: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """One write transaction; IMMEDIATE takes the write lock up front, so checks made inside
    it hold until the commit."""
    if is_read_only(conn):
        raise ElicitError("the session was opened read-only (read_only=True, as `elicit "
                          "history` and `export` open it); nothing was saved. Open it without "
                          "read_only to answer")
    check_same_file(conn)
    try:
        conn.execute("BEGIN IMMEDIATE")
    except sqlite3.OperationalError as e:
        raise _busy_or(e, conn) from None
    try:
        yield conn
        # The file may have been replaced meanwhile: then the commit would go to the old one.
        check_same_file(conn)
        conn.execute("COMMIT")
        # Replaced while committing: the write went to the old file, which nothing reads.
        check_same_file(conn)
    except BaseException as e:
        # BaseException: a Ctrl-C in the middle must roll back, never commit half a write; a
        # refused COMMIT (busy, a full disk) is rolled back and reported as a refused write.
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        if isinstance(e, Exception):
            check_same_file(conn)  # a write SQLite refused because the file was replaced
        if isinstance(e, sqlite3.OperationalError):  # a full disk, no room for the journal
            raise _busy_or(e, conn) from None
        raise


def _busy_or(e: sqlite3.OperationalError, conn: sqlite3.Connection) -> Exception:
    check_same_file(conn)
    msg = str(e)
    if "locked" in msg or "busy" in msg:
        return ElicitError(f"the session file stayed locked by another program for "
                           f"{BUSY_TIMEOUT:.0f} s ({msg}); nothing was saved. Close programs "
                           "that hold the file open (a database browser?) and try again")
    if "readonly" in msg or "read-only" in msg:
        return ElicitError(f"the session file cannot be written ({msg}); nothing was saved. "
                           "Make it and its folder writable, or copy the session to a folder "
                           "you can write to")
    if any(w in msg for w in ("disk is full", "disk I/O", "unable to open")):
        return ElicitError(f"the session could not be saved ({msg}); nothing was saved. Free "
                           "disk space, and keep the session's folder writable (a save "
                           "creates a journal file beside the session)")
    return e


def check_new_path(path: Path, overwrite: bool, what: str = "the session") -> None:
    """Refuse a target that is a directory, exists (without ``overwrite``), has no parent or
    lies in a folder we cannot write to (``what``: the file, in the directory's message)."""
    if path.is_dir():
        raise ElicitError(f"{path} is a directory; give a file name for {what}")
    if path.exists() and not overwrite:
        raise ElicitError(f"{path} already exists; pass overwrite=True (CLI: --overwrite) "
                          "to replace it" + (", or Session.open() to continue it"
                                             if what == "the session" else ""))
    if not path.parent.exists():
        raise ElicitError(f"directory {path.parent} does not exist")
    if not os.access(path.parent, os.W_OK):
        raise ElicitError(f"cannot create {path}: the folder {path.parent} is read-only; "
                          "choose a folder you can write to")


def create_file(path: Path, meta: dict[str, Any], X: np.ndarray, y: np.ndarray,
                U: np.ndarray, texts: dict[int, list[str]], overwrite: bool = False) -> None:
    """Write a new session file: schema, ``meta``, the arrays, the snippets and the
    ``create`` event, built under a temporary name and renamed into place."""
    tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex[:8]}.tmp")
    try:
        conn = connect(tmp)
        try:
            conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
            conn.execute(f"PRAGMA user_version = {FORMAT_VERSION}")
            set_durable(conn, tmp)
            with write(conn):
                for stmt in statements(_SCHEMA):
                    conn.execute(stmt)
                conn.executemany("INSERT INTO meta VALUES (?, ?)",
                                 [(k, json.dumps(v)) for k, v in meta.items()])
                conn.executemany("INSERT INTO arrays VALUES (?, ?)",
                                 [("X", _npy_bytes(X)), ("y", _npy_bytes(y)),
                                  ("U", _npy_bytes(U))])
                conn.executemany("INSERT INTO texts VALUES (?, ?, ?)",
                                 [(f, k, s) for f, ss in texts.items()
                                  for k, s in enumerate(ss)])
                conn.execute("INSERT INTO events (kind, epoch, at, detail) VALUES "
                             "('create', 0, ?, NULL)", (now(),))
        finally:
            conn.close()
        if overwrite:
            for suffix in ("-wal", "-shm", "-journal"):
                Path(str(path) + suffix).unlink(missing_ok=True)
        os.replace(tmp, path)
        _fsync_dir(path.parent)
    finally:
        for suffix in ("", "-journal", "-wal", "-shm"):
            Path(str(tmp) + suffix).unlink(missing_ok=True)


def _fsync_dir(d: Path) -> None:
    # Make the rename itself durable (POSIX); harmless where directories cannot be opened.
    with contextlib.suppress(OSError):
        fd = os.open(str(d), os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
