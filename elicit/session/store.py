"""The session file: one SQLite database holding everything a session saw and said.

Every SQL statement of a session is in this module. The file holds the data (so a session
resumes from the file alone), the settings, every query shown, every answer, skip and undo.
The format is described in ``docs/session.md``; in short:

========== =================================================================================
table      rows
========== =================================================================================
meta       key -> JSON value: ``format_version``, ``created``, ``session_uid``, ``data_hash``
           (sha256 of X, y, U as float64 bytes with their shapes), ``array_hashes``,
           ``feature_names``, ``settings`` (hyperparameters, engine, utility, strategy, pool
           size, seed), ``y_offset``, ``description``
arrays     ``X``, ``y``, ``U`` as ``.npy`` blobs (``numpy.save``, no pickles)
texts      optional example snippets per feature (shown to the expert)
queries    every pair shown: ``id, i, j, expected_gain, exact_gain, shown_at, status, batch``
           with status ``pending | answered | skipped | cancelled``
answers    ``id, query_id UNIQUE, i, j, answer, comment, answered_at, undone_at``; a partial
           unique index forbids two active (not undone) answers to one pair
events     an append-only log: ``create``, ``query``, ``answer``, ``skip``, ``undo``
========== =================================================================================

Durability. The file runs in WAL mode with ``synchronous=FULL``. Every write is one
``BEGIN IMMEDIATE`` transaction (:func:`write`): an answer checks the query is still pending,
inserts the answer, marks the query answered and logs the event, all or nothing. Two writers
(two browser tabs, two processes) cannot both answer one query: the check runs inside the
write transaction and ``answers.query_id`` is ``UNIQUE``. A new file is built under a
temporary name and renamed into place, so a crash during creation never leaves half a
session. Files that are missing, truncated, corrupted or written by a newer version are
refused before anything is written to them.

The *epoch* of a write is the number of answers and undos logged before it: the model changes
only at those, and skips are remembered per epoch.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import sqlite3
import uuid
from collections.abc import Iterator, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from elicit.errors import ElicitError

if TYPE_CHECKING:
    from elicit.elicitation.strategies import Query

#: Version of the file layout written by this module. Files with a larger number are refused.
FORMAT_VERSION = 1
#: ``PRAGMA application_id`` of session files ("ELIC"), so ``file(1)``-like tools can tell.
APPLICATION_ID = 0x454C4943
_SQLITE_MAGIC = b"SQLite format 3\x00"
_TABLES = ("meta", "arrays", "texts", "queries", "answers", "events")

_SCHEMA = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE arrays (name TEXT PRIMARY KEY, npy BLOB NOT NULL);
CREATE TABLE texts (
    feature INTEGER NOT NULL, k INTEGER NOT NULL, snippet TEXT NOT NULL,
    PRIMARY KEY (feature, k));
CREATE TABLE queries (
    id INTEGER PRIMARY KEY,
    i INTEGER NOT NULL, j INTEGER NOT NULL,
    expected_gain REAL, exact_gain INTEGER NOT NULL DEFAULT 0,
    shown_at TEXT NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('pending', 'answered', 'skipped', 'cancelled')),
    batch INTEGER,
    CHECK (i < j));
CREATE TABLE answers (
    id INTEGER PRIMARY KEY,
    query_id INTEGER NOT NULL UNIQUE REFERENCES queries(id),
    i INTEGER NOT NULL, j INTEGER NOT NULL,
    answer TEXT NOT NULL CHECK (answer IN ('similar', 'dissimilar', 'dont_know')),
    comment TEXT,
    answered_at TEXT NOT NULL,
    undone_at TEXT);
CREATE UNIQUE INDEX answers_one_active_per_pair ON answers (i, j) WHERE undone_at IS NULL;
CREATE TABLE events (
    id INTEGER PRIMARY KEY,
    kind TEXT NOT NULL,
    query_id INTEGER, answer_id INTEGER,
    epoch INTEGER NOT NULL,
    at TEXT NOT NULL,
    detail TEXT);
"""

def now() -> str:
    """The current UTC time as ISO 8601 with microseconds (every timestamp in the file)."""
    return datetime.now(timezone.utc).isoformat(timespec="microseconds")


# --------------------------------------------------------------------------------------------
# Arrays and hashes
# --------------------------------------------------------------------------------------------

def hash_array(name: str, a: np.ndarray) -> str:
    """sha256 of one array: its name, shape and float64 little-endian C-order bytes."""
    a = np.ascontiguousarray(a, dtype="<f8")
    h = hashlib.sha256()
    h.update(name.encode())
    h.update(json.dumps(list(a.shape)).encode())
    h.update(a.tobytes())
    return h.hexdigest()


def data_hashes(X: np.ndarray, y: np.ndarray, U: np.ndarray) -> tuple[str, dict[str, str]]:
    """The data identity of a session: a combined hash and one hash per array.

    The combined hash is sha256 over the three per-array hashes in the order X, y, U, so it
    depends on the float64 content and the shapes of all three.
    """
    per = {"X": hash_array("X", X), "y": hash_array("y", y), "U": hash_array("U", U)}
    combined = hashlib.sha256("".join(per[k] for k in ("X", "y", "U")).encode()).hexdigest()
    return combined, per


def _npy_bytes(a: np.ndarray) -> bytes:
    buf = io.BytesIO()
    np.save(buf, np.ascontiguousarray(a, dtype="<f8"), allow_pickle=False)
    return buf.getvalue()


def _npy_load(blob: bytes) -> np.ndarray:
    return np.load(io.BytesIO(blob), allow_pickle=False)


# --------------------------------------------------------------------------------------------
# Connections and transactions
# --------------------------------------------------------------------------------------------

def connect(path: Path) -> sqlite3.Connection:
    """A connection on which every write is an explicit :func:`write` transaction."""
    # isolation_level=None: we issue BEGIN/COMMIT ourselves so every write is one explicit
    # transaction. check_same_thread=False: the web server calls from worker threads; the
    # Session's lock serialises all use of the connection.
    conn = sqlite3.connect(str(path), isolation_level=None, check_same_thread=False,
                           timeout=10.0)
    conn.execute("PRAGMA busy_timeout = 10000")
    conn.execute("PRAGMA foreign_keys = ON")
    return conn


def set_durable(conn: sqlite3.Connection) -> None:
    """WAL mode with ``synchronous=FULL`` (the first write this module makes to a file)."""
    mode = conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
    if str(mode).lower() != "wal":
        raise ElicitError(f"could not switch the session file to WAL mode (got {mode!r}); "
                          "is it on a network file system?")
    # FULL: the WAL is synced at every commit, so a committed answer survives power loss too.
    conn.execute("PRAGMA synchronous = FULL")


@contextlib.contextmanager
def write(conn: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """One write transaction. IMMEDIATE takes the write lock up front, so checks made inside
    the transaction cannot be invalidated by another writer before we commit."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield conn
    except BaseException:
        # BaseException: a Ctrl-C in the middle must roll back, never commit half a write.
        conn.execute("ROLLBACK")
        raise
    else:
        conn.execute("COMMIT")


# --------------------------------------------------------------------------------------------
# Creating a file
# --------------------------------------------------------------------------------------------

def check_new_path(path: Path, overwrite: bool) -> None:
    """Refuse a target that is a directory, exists (without ``overwrite``) or has no parent."""
    if path.is_dir():
        raise ElicitError(f"{path} is a directory; give a file name for the session")
    if path.exists() and not overwrite:
        raise ElicitError(f"{path} already exists; pass overwrite=True (CLI: --overwrite) "
                          "to replace it, or Session.open() to continue it")
    if not path.parent.exists():
        raise ElicitError(f"directory {path.parent} does not exist")


def create_file(path: Path, meta: dict[str, Any], X: np.ndarray, y: np.ndarray,
                U: np.ndarray, texts: dict[int, list[str]], overwrite: bool = False) -> None:
    """Write a new session file: schema, ``meta``, the arrays, the snippets and the
    ``create`` event, built under a temporary name and renamed into place."""
    tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex[:8]}.tmp")
    try:
        conn = connect(tmp)
        conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
        conn.execute(f"PRAGMA user_version = {FORMAT_VERSION}")
        set_durable(conn)
        with write(conn):
            for stmt in _SCHEMA.split(";"):
                if stmt.strip():
                    conn.execute(stmt)
            conn.executemany("INSERT INTO meta VALUES (?, ?)",
                             [(k, json.dumps(v)) for k, v in meta.items()])
            conn.executemany("INSERT INTO arrays VALUES (?, ?)",
                             [("X", _npy_bytes(X)), ("y", _npy_bytes(y)),
                              ("U", _npy_bytes(U))])
            conn.executemany("INSERT INTO texts VALUES (?, ?, ?)",
                             [(f, k, s) for f, ss in texts.items() for k, s in enumerate(ss)])
            conn.execute("INSERT INTO events (kind, epoch, at, detail) VALUES "
                         "('create', 0, ?, NULL)", (now(),))
        # Fold the WAL into the main file before the rename: the renamed file must be
        # complete on its own (the -wal file keeps the temporary name).
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        conn.close()
        for suffix in ("-wal", "-shm"):
            Path(str(tmp) + suffix).unlink(missing_ok=True)
        if overwrite:
            for suffix in ("-wal", "-shm"):
                Path(str(path) + suffix).unlink(missing_ok=True)
        os.replace(tmp, path)
        _fsync_dir(path.parent)
    finally:
        for suffix in ("", "-wal", "-shm"):
            Path(str(tmp) + suffix).unlink(missing_ok=True)


def _fsync_dir(d: Path) -> None:
    # Make the rename itself durable (POSIX); harmless where directories cannot be opened.
    try:
        fd = os.open(str(d), os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


# --------------------------------------------------------------------------------------------
# Opening a file safely
# --------------------------------------------------------------------------------------------

def open_file(path: Path, given: dict[str, Any] | None = None,
              ) -> tuple[sqlite3.Connection, dict[str, Any], dict[str, np.ndarray],
                         dict[int, list[str]]]:
    """Check and read a session file, then make its connection durable.

    Nothing is written to a file that fails a check, nor to one whose data differs from the
    arrays ``given`` (``{"X": ..., "y": ..., "U": ...}``, None for those not to check).
    Returns the connection, the meta data, the arrays ``X``, ``y``, ``U`` and the snippets
    per feature.
    """
    _inspect_file(path)
    try:
        conn = connect(path)
    except sqlite3.Error as e:
        raise ElicitError(f"cannot open session file {path}: {e}") from None
    try:
        meta, arrays, texts = _read_file(conn, path)
        if given and any(v is not None for v in given.values()):
            _check_same_data(path, meta, given)
        set_durable(conn)
    except BaseException:
        conn.close()
        raise
    return conn, meta, arrays, texts


def _inspect_file(path: Path) -> None:
    """Refuse files that are missing, empty, not SQLite or visibly truncated, before SQLite
    touches them (so nothing is ever written to such a file)."""
    if not path.exists():
        raise ElicitError(f"session file {path} does not exist (create one with "
                          "Session.create or `elicit session new`)")
    if path.is_dir():
        raise ElicitError(f"{path} is a directory, not a session file")
    size = path.stat().st_size
    if size == 0:
        raise ElicitError(f"session file {path} is empty (0 bytes): it is truncated or was "
                          "never written; it was left untouched")
    with open(path, "rb") as fh:
        header = fh.read(100)
    if not header.startswith(_SQLITE_MAGIC):
        if len(header) < len(_SQLITE_MAGIC) and _SQLITE_MAGIC.startswith(header):
            raise ElicitError(f"session file {path} is truncated ({size} bytes); it was left "
                              "untouched")
        raise ElicitError(f"{path} is not an elicit session file (not an SQLite database); it "
                          "was left untouched")
    if len(header) < 100:
        raise ElicitError(f"session file {path} is truncated ({size} bytes, shorter than the "
                          "100-byte SQLite header); it was left untouched")
    page_size = int.from_bytes(header[16:18], "big")
    page_size = 65536 if page_size == 1 else page_size
    n_pages = int.from_bytes(header[28:32], "big")
    change_counter = header[24:28]
    valid_for = header[92:96]
    # The in-header page count is only trustworthy when it was written by the same
    # transaction as the change counter (SQLite's own rule). With a non-empty -wal file
    # beside it, a checkpoint may have been cut short (header written, file not yet grown);
    # SQLite's recovery finishes it, so leave that case to SQLite and quick_check.
    wal = Path(str(path) + "-wal")
    wal_pending = wal.exists() and wal.stat().st_size > 0
    if (n_pages and change_counter == valid_for and size < n_pages * page_size
            and not wal_pending):
        raise ElicitError(f"session file {path} is truncated: its header promises "
                          f"{n_pages * page_size} bytes but the file has {size}; it was left "
                          "untouched (restore it from a backup)")


def _read_file(conn: sqlite3.Connection, path: Path):
    """Validate the file's structure and read meta, arrays and texts (read-only)."""
    try:
        check = conn.execute("PRAGMA quick_check").fetchall()
        if [r[0] for r in check] != ["ok"]:
            detail = "; ".join(str(r[0]) for r in check[:3])
            raise ElicitError(f"session file {path} is corrupted ({detail}); it was left "
                              "untouched (restore it from a backup)")
        tables = {r[0] for r in conn.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table'")}
        if "meta" not in tables:
            raise ElicitError(f"{path} is an SQLite database but not an elicit session (it "
                              "has no meta table); it was left untouched")
        meta_rows = dict(conn.execute("SELECT key, value FROM meta").fetchall())
        if "format_version" not in meta_rows or "session_uid" not in meta_rows:
            raise ElicitError(f"{path} is an SQLite database but not an elicit session (no "
                              "format_version in its meta table); it was left untouched")
        try:
            meta = {k: json.loads(v) for k, v in meta_rows.items()}
        except (TypeError, ValueError) as e:
            raise ElicitError(f"session file {path} is corrupted (unreadable meta data: {e})"
                              ) from None
        fv = meta["format_version"]
        if isinstance(fv, bool) or not isinstance(fv, int) or fv < 1:
            raise ElicitError(f"session file {path} is corrupted (format_version {fv!r})")
        if fv > FORMAT_VERSION:
            raise ElicitError(f"session file {path} was written by a newer elicit (format "
                              f"version {fv}; this elicit reads up to {FORMAT_VERSION}). "
                              "Upgrade elicit to open it; the file was left untouched")
        missing = [t for t in _TABLES if t not in tables]
        if missing:
            raise ElicitError(f"session file {path} is corrupted or incomplete: missing "
                              f"table(s) {', '.join(missing)}")
        for key in ("feature_names", "settings", "data_hash", "array_hashes"):
            if key not in meta:
                raise ElicitError(f"session file {path} is corrupted: meta has no {key!r}")
        blobs = dict(conn.execute("SELECT name, npy FROM arrays").fetchall())
        arrays = {}
        for name in ("X", "y", "U"):
            if name not in blobs:
                raise ElicitError(f"session file {path} is corrupted: array {name} is missing")
            try:
                arrays[name] = _npy_load(blobs[name])
            except (ValueError, OSError, EOFError) as e:
                raise ElicitError(f"session file {path} is corrupted: array {name} cannot be "
                                  f"read ({e})") from None
        combined, per = data_hashes(arrays["X"], arrays["y"], arrays["U"])
        if combined != meta["data_hash"]:
            bad = [k for k in per if per[k] != meta["array_hashes"].get(k)]
            raise ElicitError(f"session file {path} is corrupted: stored array(s) "
                              f"{', '.join(bad) or 'X, y, U'} do not match the data hash "
                              "recorded at creation")
        texts: dict[int, list[str]] = {}
        for f, _, s in conn.execute("SELECT feature, k, snippet FROM texts ORDER BY feature, k"):
            texts.setdefault(int(f), []).append(str(s))
    except sqlite3.DatabaseError as e:
        raise ElicitError(f"session file {path} is corrupted or truncated ({e}); it was left "
                          "untouched (restore it from a backup)") from None
    if len(meta["feature_names"]) != arrays["X"].shape[1]:
        raise ElicitError(f"session file {path} is corrupted: {len(meta['feature_names'])} "
                          f"feature names for {arrays['X'].shape[1]} features")
    return meta, arrays, texts


def _check_same_data(path: Path, meta: dict, given: dict[str, Any]) -> None:
    """Refuse to open a session with data that differs from the stored data."""
    labels = {"X": "X", "y": "y", "U": "meta_features"}
    try:
        full = {k: np.asarray(v, dtype=float) if v is not None else None
                for k, v in given.items()}
    except (TypeError, ValueError) as e:
        raise ElicitError(f"the data given to check {path} against is not numeric: {e}"
                          ) from None
    if full["y"] is not None and full["y"].ndim == 2 and 1 in full["y"].shape:
        full["y"] = full["y"].reshape(-1)
    for k, arr in full.items():
        if arr is None:
            continue
        got = hash_array(k, arr)
        want = meta["array_hashes"].get(k)
        if got != want:
            shape = meta.get("shapes", {}).get(k)
            raise ElicitError(
                f"session file {path} was created for different data: {labels[k]} differs "
                f"(session: shape {tuple(shape) if shape else '?'}, sha256 {str(want)[:12]}; "
                f"given: shape {arr.shape}, sha256 {got[:12]}). Open it without data to use "
                "the arrays stored in the file, or create a new session for this data")


# --------------------------------------------------------------------------------------------
# Reading the record
# --------------------------------------------------------------------------------------------

def data_version(conn: sqlite3.Connection) -> int:
    """``PRAGMA data_version``: changes when *another* connection commits."""
    return int(conn.execute("PRAGMA data_version").fetchone()[0])


def epoch(conn: sqlite3.Connection) -> int:
    """The number of answers and undos logged so far."""
    return int(conn.execute(
        "SELECT COUNT(*) FROM events WHERE kind IN ('answer', 'undo')").fetchone()[0])


def active_answers(conn: sqlite3.Connection) -> list[tuple[int, int, str]]:
    """The answers not undone, ``(i, j, answer)`` in answer order."""
    rows = conn.execute("SELECT i, j, answer FROM answers WHERE undone_at IS NULL "
                        "ORDER BY id").fetchall()
    return [(int(i), int(j), str(a)) for i, j, a in rows]


def last_event(conn: sqlite3.Connection) -> int:
    """The id of the latest event (0 for none): grows with every recorded event."""
    return int(conn.execute("SELECT COALESCE(MAX(id), 0) FROM events").fetchone()[0])


def progress(conn: sqlite3.Connection, n_pairs: int) -> dict[str, int]:
    """Counts of the record: ``answered`` (active answers), ``pairs`` (``n_pairs``), ``left``,
    ``skipped``, ``undone``, ``pending`` and the active answers per kind."""
    kinds = dict(conn.execute("SELECT answer, COUNT(*) FROM answers WHERE undone_at IS NULL "
                              "GROUP BY answer").fetchall())
    skipped, pending = conn.execute("SELECT COALESCE(SUM(status = 'skipped'), 0), "
                                    "COALESCE(SUM(status = 'pending'), 0) FROM queries").fetchone()
    undone = conn.execute("SELECT COUNT(*) FROM answers WHERE undone_at IS NOT NULL").fetchone()[0]
    n_ans = sum(kinds.values())
    return {"answered": n_ans, "pairs": n_pairs, "left": n_pairs - n_ans,
            "skipped": int(skipped), "undone": int(undone), "pending": int(pending),
            **{k: int(kinds.get(k, 0)) for k in ("similar", "dissimilar", "dont_know")}}


def pending_queries(conn: sqlite3.Connection) -> list[tuple]:
    """Queries shown and not yet answered or skipped, oldest first: id, i, j, expected_gain,
    exact_gain."""
    return conn.execute("SELECT id, i, j, expected_gain, exact_gain FROM queries "
                        "WHERE status='pending' ORDER BY id").fetchall()


def n_queries(conn: sqlite3.Connection) -> int:
    """How many queries were ever recorded (the round number of the next one)."""
    return int(conn.execute("SELECT COUNT(*) FROM queries").fetchone()[0])


def skipped_pairs(conn: sqlite3.Connection, at_epoch: int) -> set[tuple[int, int]]:
    """The pairs skipped since the last answer or undo."""
    return {(int(i), int(j)) for i, j in conn.execute(
        "SELECT q.i, q.j FROM events e JOIN queries q ON q.id = e.query_id "
        "WHERE e.kind = 'skip' AND e.epoch = ?", (at_epoch,))}


def open_query_row(conn: sqlite3.Connection, qid: int, action: str, names: list[str]):
    """``(id, i, j, expected_gain, exact_gain, status)`` of a pending query; for any other
    query an error saying what became of it (``action`` is what was refused)."""
    row = conn.execute("SELECT id, i, j, expected_gain, exact_gain, status FROM queries "
                       "WHERE id = ?", (qid,)).fetchone()
    if row is None:
        raise ElicitError(f"query {qid} was not asked in this session; ask for the next "
                          "query first")
    status = row[5]
    pair = f"{names[row[1]]!r} vs {names[row[2]]!r}"
    if status == "answered":
        a = conn.execute("SELECT id, answer, answered_at, undone_at FROM answers WHERE "
                         "query_id = ?", (qid,)).fetchone()
        when = f" ({a[1]!r}, answer {a[0]} at {a[2]})" if a else ""
        undone = " and later undone" if a and a[3] else ""
        raise ElicitError(f"query {qid} ({pair}) was already answered{when}{undone}, "
                          f"perhaps in another tab or window; cannot {action} it again")
    if status == "skipped":
        raise ElicitError(f"query {qid} ({pair}) was skipped; it may come back later. "
                          "Ask for the next query")
    if status == "cancelled":
        raise ElicitError(f"query {qid} ({pair}) was withdrawn by an undo; ask for the "
                          "next query")
    return row


def history_rows(conn: sqlite3.Connection) -> list[tuple]:
    """Every answer with its query's gain and time, oldest first (columns as in
    :func:`elicit.session.export.history`, without the feature names)."""
    return conn.execute(
        "SELECT a.id, a.query_id, a.i, a.j, a.answer, a.comment, q.expected_gain, "
        "q.shown_at, a.answered_at, a.undone_at FROM answers a JOIN queries q ON "
        "q.id = a.query_id ORDER BY a.id").fetchall()


def query_rows(conn: sqlite3.Connection) -> list[tuple]:
    """Every query shown: id, i, j, expected_gain, exact_gain, shown_at, status, batch."""
    return conn.execute("SELECT id, i, j, expected_gain, exact_gain, shown_at, status, batch "
                        "FROM queries ORDER BY id").fetchall()


def event_rows(conn: sqlite3.Connection) -> list[tuple]:
    """The event log in order: id, kind, query_id, answer_id, epoch, at, detail."""
    return conn.execute("SELECT id, kind, query_id, answer_id, epoch, at, detail FROM events "
                        "ORDER BY id").fetchall()


# --------------------------------------------------------------------------------------------
# Writing the record (each function is, or runs inside, one write transaction)
# --------------------------------------------------------------------------------------------

def add_queries(conn: sqlite3.Connection, chosen: Sequence[Query]) -> None:
    """Record chosen queries as pending (one batch if more than one), unless another
    connection recorded pending queries meanwhile: those win and ``chosen`` is dropped."""
    at = now()
    with write(conn):
        # The queries were chosen without the write lock held, so check again inside it.
        if conn.execute("SELECT COUNT(*) FROM queries WHERE status='pending'").fetchone()[0]:
            return
        e = epoch(conn)
        batch_id = None
        if len(chosen) > 1:
            batch_id = int(conn.execute("SELECT COALESCE(MAX(batch), 0) + 1 FROM queries"
                                        ).fetchone()[0])
        for q in chosen:
            cur = conn.execute("INSERT INTO queries (i, j, expected_gain, exact_gain, "
                               "shown_at, status, batch) VALUES (?, ?, ?, ?, ?, 'pending', ?)",
                               (q.i, q.j, q.expected_gain, int(q.exact_gain), at, batch_id))
            conn.execute("INSERT INTO events (kind, query_id, epoch, at) VALUES "
                         "('query', ?, ?, ?)", (cur.lastrowid, e, at))


def insert_answer(conn: sqlite3.Connection, qid: int, i: int, j: int, answer: str,
                  comment: str | None, at: str) -> int:
    """Inside a write transaction: record an answer to a pending query; returns its id."""
    e = epoch(conn)
    cur = conn.execute("INSERT INTO answers (query_id, i, j, answer, comment, answered_at) "
                       "VALUES (?, ?, ?, ?, ?, ?)", (qid, i, j, answer, comment, at))
    aid = cur.lastrowid
    assert aid is not None  # an INSERT always sets it
    conn.execute("UPDATE queries SET status='answered' WHERE id = ?", (qid,))
    conn.execute("INSERT INTO events (kind, query_id, answer_id, epoch, at) "
                 "VALUES ('answer', ?, ?, ?, ?)", (qid, aid, e, at))
    return aid


def mark_skipped(conn: sqlite3.Connection, qid: int) -> None:
    """Inside a write transaction: record a skip of a pending query."""
    conn.execute("UPDATE queries SET status='skipped' WHERE id = ?", (qid,))
    conn.execute("INSERT INTO events (kind, query_id, epoch, at) VALUES ('skip', ?, ?, ?)",
                 (qid, epoch(conn), now()))


def undo_last(conn: sqlite3.Connection, at: str) -> tuple:
    """Undo the last active answer in one transaction: mark it undone, withdraw the pending
    queries and ask its pair again. Returns ``(id, query_id, i, j, answer, comment,
    answered_at)`` of the undone answer."""
    with write(conn):
        row = conn.execute("SELECT a.id, a.query_id, a.i, a.j, a.answer, a.comment, "
                           "a.answered_at, q.expected_gain, q.exact_gain FROM answers a "
                           "JOIN queries q ON q.id = a.query_id WHERE a.undone_at IS NULL "
                           "ORDER BY a.id DESC LIMIT 1").fetchone()
        if row is None:
            raise ElicitError("there is no answer to undo")
        aid, qid, i, j, _, _, _, gain, exact = row
        e = epoch(conn)
        conn.execute("UPDATE answers SET undone_at = ? WHERE id = ?", (at, aid))
        conn.execute("UPDATE queries SET status='cancelled' WHERE status='pending'")
        # The model is back where it was when this pair was asked, so its stored gain still
        # applies.
        cur = conn.execute("INSERT INTO queries (i, j, expected_gain, exact_gain, shown_at, "
                           "status) VALUES (?, ?, ?, ?, ?, 'pending')", (i, j, gain, exact, at))
        conn.execute("INSERT INTO events (kind, query_id, answer_id, epoch, at, detail) "
                     "VALUES ('undo', ?, ?, ?, ?, ?)",
                     (qid, aid, e, at, json.dumps({"requeued": cur.lastrowid})))
    return row[:7]
