"""Real-expert elicitation sessions, persisted in one SQLite file after every answer.

A :class:`Session` wraps an :class:`~elicit.query.Elicitor` with a durable record of everything
the expert saw and said. The file holds the data (so a session resumes from the file alone),
the settings, every query shown, every answer, skip and undo. The format is described in
``docs/session.md``; in short:

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

Durability. The file runs in WAL mode with ``synchronous=FULL``. An answer is written in one
``BEGIN IMMEDIATE`` transaction (check the query is still pending, insert the answer, mark the
query answered, log the event) and committed *before* the model is refitted and before the
next query is chosen, so a crash or kill at any point loses no committed answer and never
leaves half of one. Two writers (two browser tabs, two processes) cannot both answer one query:
the check runs inside the write transaction and ``answers.query_id`` is ``UNIQUE``.

Determinism. The model state is a pure function of the active answers: after every answer,
undo or resume the MAP is refitted with :meth:`Elicitor.set_answers` from the no-feedback MAP.
The random stream of round r is ``default_rng(SeedSequence([seed, r]))`` with r the number of
queries recorded so far, so a resumed session asks the same next question as one that never
stopped.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import io
import json
import os
import sqlite3
import threading
import uuid
import warnings
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from elicit.elicitation.answers import Answer
from elicit.elicitation.elicitor import Elicitor
from elicit.elicitation.strategies import STRATEGIES
from elicit.elicitation.utility import UtilityScorer
from elicit.engines.base import Engine, MAPResult
from elicit.errors import ElicitError
from elicit.internal.threads import single_blas_thread
from elicit.model.posterior import NIGPosterior
from elicit.model.spec import Hyper, validate_regression

#: Version of the file layout written by this module. Files with a larger number are refused.
FORMAT_VERSION = 1
#: ``PRAGMA application_id`` of session files ("ELIC"), so ``file(1)``-like tools can tell.
APPLICATION_ID = 0x454C4943
_SQLITE_MAGIC = b"SQLite format 3\x00"
_MAX_COMMENT = 10_000
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


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="microseconds")


# --------------------------------------------------------------------------------------------
# Small value types
# --------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class SessionQuery:
    """A question recorded in a session.

    Attributes
    ----------
    id
        The query's row id in the session file (what :meth:`Session.answer` checks).
    i, j
        Feature indices, ``i < j``.
    names
        The two feature names.
    expected_gain
        Expected information gain when the query was chosen (None for the random strategy).
    exact_gain
        True if ``expected_gain`` is an exact refit value, False for a fast-screen estimate.
    session_uid
        Identifies the session the query belongs to.
    """

    id: int
    i: int
    j: int
    names: tuple[str, str]
    expected_gain: float | None
    exact_gain: bool
    session_uid: str

    def __str__(self) -> str:
        gain = "" if self.expected_gain is None else f", expected gain {self.expected_gain:.3g}"
        return f"query {self.id}: {self.names[0]!r} vs {self.names[1]!r}{gain}"


@dataclass(frozen=True)
class AnswerRecord:
    """A committed answer (returned by :meth:`Session.answer` once it is durable)."""

    id: int
    query_id: int
    i: int
    j: int
    answer: Answer
    comment: str | None
    answered_at: str


# --------------------------------------------------------------------------------------------
# Arrays, hashes, validation
# --------------------------------------------------------------------------------------------

def _hash_array(name: str, a: np.ndarray) -> str:
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
    per = {"X": _hash_array("X", X), "y": _hash_array("y", y), "U": _hash_array("U", U)}
    combined = hashlib.sha256("".join(per[k] for k in ("X", "y", "U")).encode()).hexdigest()
    return combined, per


def _npy_bytes(a: np.ndarray) -> bytes:
    buf = io.BytesIO()
    np.save(buf, np.ascontiguousarray(a, dtype="<f8"), allow_pickle=False)
    return buf.getvalue()


def _npy_load(blob: bytes) -> np.ndarray:
    return np.load(io.BytesIO(blob), allow_pickle=False)


def _check_feature_names(names: Sequence[str] | None, p: int) -> list[str]:
    if names is None:
        return [f"x{k}" for k in range(p)]
    if isinstance(names, str):
        raise ElicitError("feature_names must be a list of strings, not one string")
    names = list(names)
    if len(names) != p:
        raise ElicitError(f"got {len(names)} feature names for {p} features (columns of X); "
                          "give exactly one name per feature")
    for k, n in enumerate(names):
        if not isinstance(n, str):
            raise ElicitError(f"feature name {k} must be a string, got {type(n).__name__} {n!r}")
        if not n.strip():
            raise ElicitError(f"feature name {k} is empty; every feature needs a visible name")
    seen: dict[str, int] = {}
    for k, n in enumerate(names):
        if n in seen:
            raise ElicitError(f"duplicate feature name {n!r} (features {seen[n]} and {k}); "
                              "feature names must be unique")
        seen[n] = k
    return names


def _check_texts(texts, names: list[str]) -> dict[int, list[str]]:
    """Normalise optional snippets to ``{feature index: [snippet, ...]}``."""
    if texts is None:
        return {}
    out: dict[int, list[str]] = {}
    if isinstance(texts, Mapping):
        index = {n: k for k, n in enumerate(names)}
        for key, snippets in texts.items():
            if isinstance(key, str):
                if key not in index:
                    raise ElicitError(f"texts names an unknown feature {key!r}; keys must be "
                                      "feature names (or indices)")
                k = index[key]
            elif isinstance(key, (int, np.integer)) and 0 <= int(key) < len(names):
                k = int(key)
            else:
                raise ElicitError(f"texts key {key!r} is not a feature name or index")
            out[k] = _snippet_list(snippets, names[k])
    else:
        texts = list(texts)
        if len(texts) != len(names):
            raise ElicitError(f"texts has {len(texts)} entries for {len(names)} features; give "
                              "one list of snippets per feature or a dict name -> snippets")
        for k, snippets in enumerate(texts):
            if snippets:
                out[k] = _snippet_list(snippets, names[k])
    return {k: v for k, v in out.items() if v}


def _snippet_list(snippets, name: str) -> list[str]:
    if isinstance(snippets, str):
        snippets = [snippets]
    snippets = list(snippets)
    for s in snippets:
        if not isinstance(s, str):
            raise ElicitError(f"text snippets of feature {name!r} must be strings")
    return snippets


# --------------------------------------------------------------------------------------------
# Opening a file safely
# --------------------------------------------------------------------------------------------

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


def _connect(path: Path) -> sqlite3.Connection:
    # isolation_level=None: we issue BEGIN/COMMIT ourselves so every write is one explicit
    # transaction. check_same_thread=False: the web server calls from worker threads; the
    # Session's lock serialises all use of the connection.
    conn = sqlite3.connect(str(path), isolation_level=None, check_same_thread=False,
                           timeout=10.0)
    conn.execute("PRAGMA busy_timeout = 10000")
    conn.execute("PRAGMA foreign_keys = ON")
    return conn


def _set_durable(conn: sqlite3.Connection) -> None:
    mode = conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
    if str(mode).lower() != "wal":
        raise ElicitError(f"could not switch the session file to WAL mode (got {mode!r}); "
                          "is it on a network file system?")
    # FULL: the WAL is synced at every commit, so a committed answer survives power loss too.
    conn.execute("PRAGMA synchronous = FULL")


@contextlib.contextmanager
def _write(conn: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
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
# The session
# --------------------------------------------------------------------------------------------

class Session:
    """An elicitation session with a real expert, persisted in one SQLite file.

    Do not call the constructor; use :meth:`create` or :meth:`open`. A session is also a
    context manager that closes the file.

    Attributes
    ----------
    path
        The session file.
    feature_names
        The p feature names.
    elicitor
        The underlying :class:`~elicit.query.Elicitor` (read it, do not answer through it).
    settings
        The model and query settings stored in the file.
    """

    def __init__(self, path: Path, conn: sqlite3.Connection, meta: dict[str, Any],
                 X: np.ndarray, y: np.ndarray, U: np.ndarray, texts: dict[int, list[str]],
                 engine: str | Engine | None = None,
                 elicitor: Elicitor | None = None) -> None:
        self.path = path
        self._conn = conn
        self._lock = threading.RLock()
        self.meta = meta
        self.settings: dict[str, Any] = meta["settings"]
        self.feature_names: list[str] = list(meta["feature_names"])
        self.uid: str = meta["session_uid"]
        self.y_offset: float = float(meta.get("y_offset", 0.0))
        self.description: str = meta.get("description", "")
        self.X, self.y, self.U = X, y, U
        self._texts = texts
        st = self.settings
        hyper = Hyper(**st["hyper"])
        self.elicitor = elicitor if elicitor is not None else Elicitor(
            X, y, U, hyper, engine=engine if engine is not None else st["engine"],
            utility=st["utility"], refine=st["refine"], pool_size=st["pool_size"])
        self._ranking: np.ndarray | None = None
        self._data_version = -1
        self._active: list[tuple[int, int, str]] = []
        self._sync(force=True)

    # -- creation ------------------------------------------------------------------------
    @classmethod
    def create(cls, X, y, meta_features, feature_names: Sequence[str] | None = None, *,
               path: str | os.PathLike, hyper: Hyper | None = None,
               engine: str | Engine = "auto", utility: str = "fast", refine: int = 10,
               strategy: str = "sequential", pool_size: int | None = None, seed: int = 0,
               texts: Mapping[str, Sequence[str]] | Sequence[Sequence[str]] | None = None,
               y_offset: float = 0.0, description: str = "",
               overwrite: bool = False) -> Session:
        """Create a new session file and return the open session.

        Parameters
        ----------
        X, y, meta_features
            Training inputs (n x p), targets (n,) and the feature meta-features U (p x d);
            numpy arrays or pandas objects. A DataFrame ``X`` supplies the feature names.
        feature_names
            One unique, non-empty name per feature (default: ``X``'s columns or x0, x1, ...).
        path
            The session file to write. It is built under a temporary name and renamed into
            place, so a crash during creation never leaves half a session.
        hyper, engine, utility, refine, pool_size
            Model and utility settings, as for :class:`~elicit.query.Elicitor`.
        strategy
            ``"sequential"`` (default), ``"nonsequential"`` or ``"random"``.
        seed
            Seeds the query random stream (see the module docstring).
        texts
            Optional example snippets per feature: a dict name -> list of strings, or a list
            of p lists. The terminal and web page show a few of them to the expert.
        y_offset
            Added to predictions (use it when ``y`` was centred, as in the paper's runs).
        description
            Free text stored in the file (for example where the data came from).
        overwrite
            Replace an existing file at ``path``; otherwise an existing file is an error.

        Raises
        ------
        ElicitError
            On invalid data, names or settings, or an existing file without ``overwrite``.
        """
        path = Path(path)
        if feature_names is None and isinstance(X, pd.DataFrame):
            feature_names = [str(c) for c in X.columns]
        X, y, U = validate_regression(X, y, meta_features)
        names = _check_feature_names(feature_names, X.shape[1])
        if X.shape[1] < 2:
            raise ElicitError(f"need at least 2 features to ask about pairs, got {X.shape[1]}")
        hyper = hyper or Hyper()
        if not isinstance(hyper, Hyper):
            raise ElicitError(f"hyper must be an elicit.model.Hyper, got {type(hyper).__name__}")
        if strategy not in STRATEGIES:
            raise ElicitError(f"unknown strategy {strategy!r}; choose one of "
                              f"{', '.join(STRATEGIES)}")
        if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
            raise ElicitError(f"seed must be a non-negative integer, got {seed!r}")
        if not np.isfinite(y_offset):
            raise ElicitError(f"y_offset must be a finite number, got {y_offset!r}")
        snippets = _check_texts(texts, names)
        if path.is_dir():
            raise ElicitError(f"{path} is a directory; give a file name for the session")
        if path.exists() and not overwrite:
            raise ElicitError(f"{path} already exists; pass overwrite=True (CLI: --overwrite) "
                              "to replace it, or Session.open() to continue it")
        if not path.parent.exists():
            raise ElicitError(f"directory {path.parent} does not exist")
        engine_name = engine.name if isinstance(engine, Engine) else str(engine)
        settings = {
            "hyper": dataclasses.asdict(hyper), "engine": engine_name, "utility": utility,
            "refine": int(refine), "strategy": strategy, "pool_size": pool_size,
            "seed": int(seed),
        }
        # Build the model once before writing anything: bad settings fail here, not on open.
        probe = Elicitor(X, y, U, hyper, engine=engine, utility=utility, refine=refine,
                         pool_size=pool_size)
        combined, per = data_hashes(X, y, U)
        from importlib.metadata import PackageNotFoundError, version
        try:
            elicit_version = version("elicit")
        except PackageNotFoundError:
            elicit_version = "unknown"
        meta = {
            "format_version": FORMAT_VERSION, "application": "elicit-session",
            "created": _now(), "session_uid": uuid.uuid4().hex, "elicit_version": elicit_version,
            "data_hash": combined, "array_hashes": per,
            "shapes": {"X": list(X.shape), "y": list(y.shape), "U": list(U.shape)},
            "feature_names": names, "settings": settings,
            "resolved": {"engine": probe.engine.name,
                         "threshold_mean": probe.hyper.threshold_mean,
                         "pool_size": probe.pool_size},
            "y_offset": float(y_offset), "description": str(description),
        }
        tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex[:8]}.tmp")
        try:
            conn = _connect(tmp)
            conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
            conn.execute(f"PRAGMA user_version = {FORMAT_VERSION}")
            _set_durable(conn)
            with _write(conn):
                for stmt in _SCHEMA.split(";"):
                    if stmt.strip():
                        conn.execute(stmt)
                conn.executemany("INSERT INTO meta VALUES (?, ?)",
                                 [(k, json.dumps(v)) for k, v in meta.items()])
                conn.executemany("INSERT INTO arrays VALUES (?, ?)",
                                 [("X", _npy_bytes(X)), ("y", _npy_bytes(y)),
                                  ("U", _npy_bytes(U))])
                conn.executemany("INSERT INTO texts VALUES (?, ?, ?)",
                                 [(f, k, s) for f, ss in snippets.items()
                                  for k, s in enumerate(ss)])
                conn.execute("INSERT INTO events (kind, epoch, at, detail) VALUES "
                             "('create', 0, ?, NULL)", (_now(),))
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
        return cls._open(path, engine=engine, elicitor=probe)

    @classmethod
    def open(cls, path: str | os.PathLike, X=None, y=None, meta_features=None, *,
             engine: str | Engine | None = None) -> Session:
        """Open an existing session and rebuild its model from the recorded answers.

        Parameters
        ----------
        path
            The session file.
        X, y, meta_features
            Optional: the data you expect the session to be about. Each one given is
            compared with the stored array's hash and a mismatch is refused.
        engine
            Override the stored engine setting (e.g. ``"numpy"`` where CmdStan is missing).

        Raises
        ------
        ElicitError
            A missing, empty, truncated, corrupted or non-session file, one written by a newer
            format version, or data that differs from the session's. Such files are never
            written to.
        """
        return cls._open(path, X, y, meta_features, engine=engine)

    @classmethod
    def _open(cls, path, X=None, y=None, meta_features=None, *, engine=None,
              elicitor: Elicitor | None = None) -> Session:
        path = Path(path)
        _inspect_file(path)
        try:
            conn = _connect(path)
        except sqlite3.Error as e:
            raise ElicitError(f"cannot open session file {path}: {e}") from None
        try:
            meta, arrays, texts = _read_file(conn, path)
        except BaseException:
            conn.close()
            raise
        given = {"X": X, "y": y, "U": meta_features}
        if any(v is not None for v in given.values()):
            _check_same_data(path, meta, given)
        try:
            _set_durable(conn)
            self = cls(path, conn, meta, arrays["X"], arrays["y"], arrays["U"], texts,
                       engine=engine, elicitor=elicitor)
        except BaseException:
            conn.close()
            raise
        return self

    # -- lifecycle -----------------------------------------------------------------------
    def close(self) -> None:
        """Close the file (idempotent). Everything was already committed."""
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None  # type: ignore[assignment]

    def __enter__(self) -> Session:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __repr__(self) -> str:
        pr = self.progress()
        return (f"<Session {str(self.path)!r}: {len(self.feature_names)} features, "
                f"{pr['answered']} of {pr['pairs']} pairs answered>")

    @property
    def conn(self) -> sqlite3.Connection:
        if self._conn is None:
            raise ElicitError(f"session {self.path} is closed")
        return self._conn

    # -- state ---------------------------------------------------------------------------
    def _epoch(self) -> int:
        # The model changes only at answers and undos; skips are remembered per epoch.
        return int(self.conn.execute(
            "SELECT COUNT(*) FROM events WHERE kind IN ('answer', 'undo')").fetchone()[0])

    def _read_active(self) -> list[tuple[int, int, str]]:
        rows = self.conn.execute("SELECT i, j, answer FROM answers WHERE undone_at IS NULL "
                                 "ORDER BY id").fetchall()
        return [(int(i), int(j), str(a)) for i, j, a in rows]

    def _sync(self, force: bool = False) -> None:
        """Pick up commits made by other connections (another tab's server, another process).

        ``PRAGMA data_version`` changes only when *another* connection commits, so the usual
        case costs one tiny query.
        """
        v = int(self.conn.execute("PRAGMA data_version").fetchone()[0])
        if not force and v == self._data_version:
            return
        self._data_version = v
        active = self._read_active()
        if force or active != self._active:
            self._refit(active)

    def _after_write(self) -> None:
        # Re-read the answers from the file rather than patching the in-memory list: another
        # process may have committed between our last sync and our write.
        self._data_version = int(self.conn.execute("PRAGMA data_version").fetchone()[0])
        active = self._read_active()
        if active != self._active:
            self._refit(active)

    def _refit(self, active: list[tuple[int, int, str]]) -> None:
        # Always refit from the no-feedback MAP: the state is then a pure function of the
        # active answers, which makes a resumed session identical to an uninterrupted one.
        self.elicitor.set_answers(active)
        self._active = active

    @property
    def fit(self) -> MAPResult:
        """The current MAP (gamma, xi, tau2, K)."""
        with self._lock:
            self._sync()
            return self.elicitor.fit

    def revision(self) -> int:
        """A number that grows with every recorded event (query, answer, skip, undo)."""
        with self._lock:
            return int(self.conn.execute("SELECT COALESCE(MAX(id), 0) FROM events"
                                         ).fetchone()[0])

    @property
    def n_pairs(self) -> int:
        return len(self.elicitor.candidates)

    def progress(self) -> dict[str, int]:
        """Counts: ``answered`` (active answers), ``pairs``, ``left``, ``skipped``, ``undone``,
        ``similar``, ``dissimilar``, ``dont_know``, ``pending``."""
        with self._lock:
            self._sync()
            c = self.conn
            counts = dict(c.execute("SELECT answer, COUNT(*) FROM answers WHERE undone_at IS "
                                    "NULL GROUP BY answer").fetchall())
            n_ans = sum(counts.values())
            skipped = c.execute("SELECT COUNT(*) FROM queries WHERE status='skipped'"
                                ).fetchone()[0]
            undone = c.execute("SELECT COUNT(*) FROM answers WHERE undone_at IS NOT NULL"
                               ).fetchone()[0]
            pending = c.execute("SELECT COUNT(*) FROM queries WHERE status='pending'"
                                ).fetchone()[0]
            return {"answered": n_ans, "pairs": self.n_pairs, "left": self.n_pairs - n_ans,
                    "skipped": int(skipped), "undone": int(undone), "pending": int(pending),
                    "similar": int(counts.get("similar", 0)),
                    "dissimilar": int(counts.get("dissimilar", 0)),
                    "dont_know": int(counts.get("dont_know", 0))}

    @property
    def done(self) -> bool:
        """True when every candidate pair has an active answer."""
        with self._lock:
            self._sync()
            return len(self.elicitor.unasked()) == 0

    def texts(self, feature: int | str) -> list[str]:
        """The example snippets stored for a feature (by index or name)."""
        k = self._feature_index(feature)
        return list(self._texts.get(k, []))

    def _feature_index(self, feature: int | str) -> int:
        if isinstance(feature, str):
            try:
                return self.feature_names.index(feature)
            except ValueError:
                raise ElicitError(f"unknown feature name {feature!r}") from None
        if isinstance(feature, (int, np.integer)) and 0 <= int(feature) < len(self.feature_names):
            return int(feature)
        raise ElicitError(f"feature index {feature!r} out of range 0..{len(self.feature_names)-1}")

    # -- queries -------------------------------------------------------------------------
    def _query_from_row(self, row) -> SessionQuery:
        qid, i, j, gain, exact = row[:5]
        return SessionQuery(int(qid), int(i), int(j),
                            (self.feature_names[i], self.feature_names[j]),
                            None if gain is None else float(gain), bool(exact), self.uid)

    def _pending(self) -> list[SessionQuery]:
        rows = self.conn.execute("SELECT id, i, j, expected_gain, exact_gain FROM queries "
                                 "WHERE status='pending' ORDER BY id").fetchall()
        return [self._query_from_row(r) for r in rows]

    def pending(self) -> list[SessionQuery]:
        """Queries shown and not yet answered or skipped, oldest first."""
        with self._lock:
            self._sync()
            return self._pending()

    def next_query(self) -> SessionQuery:
        """The question to ask now.

        The query is recorded in the file before it is returned. Calling again without
        answering returns the same pending query (also after a restart); with a batch open,
        the oldest unanswered query of the batch.

        Raises
        ------
        ElicitError
            When every pair has been answered.
        """
        with self._lock:
            self._sync()
            pend = self._pending()
            if pend:
                return pend[0]
            return self._new_queries(1)[0]

    def batch(self, k: int) -> list[SessionQuery]:
        """``k`` questions to ask together, chosen greedily by expected gain.

        Diversity rule: the pool is ranked by expected gain and walked best first; a pair is
        taken only if it shares no feature with a pair already taken. If fewer than ``k``
        feature-disjoint pairs exist, the best remaining pairs fill the batch. (Pairs that
        share a feature have correlated meta-feature differences, so their answers tell the
        model much the same thing.) The fast utility refines the ``max(refine, 2k)`` best
        screened pairs exactly so the batch is ranked on exact gains where possible.

        An open batch (pending queries) is returned as it is: a batch is finished (answered or
        skipped) before a new one is chosen.
        """
        if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
            raise ElicitError(f"batch size must be a positive integer, got {k!r}")
        with self._lock:
            self._sync()
            pend = self._pending()
            if pend:
                return pend
            return self._new_queries(int(k))

    @single_blas_thread
    def _choose(self, k: int) -> list[tuple[int, int, float | None, bool]]:
        el = self.elicitor
        unasked = el.unasked()
        if len(unasked) == 0:
            raise ElicitError(f"every one of the {self.n_pairs} pairs has been answered; "
                              "nothing is left to ask (undo an answer to revise it)")
        epoch = self._epoch()
        skipped = {(int(i), int(j)) for i, j in self.conn.execute(
            "SELECT q.i, q.j FROM events e JOIN queries q ON q.id = e.query_id "
            "WHERE e.kind = 'skip' AND e.epoch = ?", (epoch,))}
        allowed = np.array([p for p in unasked if (int(p[0]), int(p[1])) not in skipped],
                           dtype=int).reshape(-1, 2)
        if len(allowed) == 0:
            allowed = unasked  # everything left was skipped: let skipped pairs come back
        round_no = int(self.conn.execute("SELECT COUNT(*) FROM queries").fetchone()[0])
        rng = np.random.default_rng(np.random.SeedSequence([self.settings["seed"], round_no]))
        strategy = self.settings["strategy"]
        k = min(k, len(allowed))
        if strategy == "random":
            idx = rng.choice(len(allowed), size=k, replace=False)
            return [(int(allowed[t, 0]), int(allowed[t, 1]), None, False) for t in idx]
        if strategy == "sequential":
            size = min(el.pool_size, len(allowed))
            pool = allowed[np.sort(rng.choice(len(allowed), size=size, replace=False))]
            refine = el.refine if k == 1 else max(el.refine, 2 * k)
            sc = UtilityScorer(el.data, el.fit, el.engine).score(pool, el.utility, refine)
            order = sc.ranking()
            pairs, gains, exact = sc.pairs, sc.utility, sc.exact
        else:  # nonsequential: one ranking at the no-feedback MAP, asked in order
            ranked = self._nonsequential_ranking()
            ok = {(int(i), int(j)) for i, j in allowed}
            keep = [t for t in range(len(ranked)) if (int(ranked[t, 0]), int(ranked[t, 1])) in ok]
            pairs = ranked[keep, :2].astype(int)
            gains = ranked[keep, 2]
            exact = ranked[keep, 3].astype(bool)
            order = np.arange(len(pairs))
        picked = _disjoint_greedy(pairs, order, k)
        return [(int(pairs[t, 0]), int(pairs[t, 1]), float(gains[t]), bool(exact[t]))
                for t in picked]

    def _nonsequential_ranking(self) -> np.ndarray:
        if self._ranking is None:
            el = self.elicitor
            sc = UtilityScorer(el.base, el.initial_fit, el.engine).score(
                el.candidates, el.utility, el.refine)
            order = sc.ranking()
            self._ranking = np.column_stack([sc.pairs[order], sc.utility[order],
                                             sc.exact[order]])
        return self._ranking

    def _new_queries(self, k: int) -> list[SessionQuery]:
        chosen = self._choose(k)
        now = _now()
        c = self.conn
        with _write(c):
            # Another process may have recorded queries while we were computing (we do not
            # hold the write lock then): its queries win and ours are dropped.
            taken = c.execute("SELECT COUNT(*) FROM queries WHERE status='pending'"
                              ).fetchone()[0]
            if not taken:
                epoch = self._epoch()
                batch_id = None
                if len(chosen) > 1:
                    batch_id = int(c.execute("SELECT COALESCE(MAX(batch), 0) + 1 FROM queries"
                                             ).fetchone()[0])
                for i, j, gain, exact in chosen:
                    cur = c.execute("INSERT INTO queries (i, j, expected_gain, exact_gain, "
                                    "shown_at, status, batch) VALUES (?, ?, ?, ?, ?, "
                                    "'pending', ?)", (i, j, gain, int(exact), now, batch_id))
                    c.execute("INSERT INTO events (kind, query_id, epoch, at) VALUES "
                              "('query', ?, ?, ?)", (cur.lastrowid, epoch, now))
        self._data_version = -1  # re-read on the next call if someone else wrote meanwhile
        self._sync()
        return self._pending()

    # -- answers -------------------------------------------------------------------------
    def _resolve_query(self, query: SessionQuery | int) -> int:
        if isinstance(query, SessionQuery):
            if query.session_uid != self.uid:
                raise ElicitError(f"{query} belongs to another session, not to {self.path}")
            return query.id
        if isinstance(query, (int, np.integer)) and not isinstance(query, bool):
            return int(query)
        if isinstance(query, str) and query.strip().isdigit():
            return int(query.strip())
        raise ElicitError(f"expected a query from next_query() (or its id), got {query!r}")

    def _open_query_row(self, qid: int, action: str):
        c = self.conn
        row = c.execute("SELECT id, i, j, expected_gain, exact_gain, status FROM queries "
                        "WHERE id = ?", (qid,)).fetchone()
        if row is None:
            raise ElicitError(f"query {qid} was not asked in this session; ask for the next "
                              "query first")
        status = row[5]
        names = f"{self.feature_names[row[1]]!r} vs {self.feature_names[row[2]]!r}"
        if status == "answered":
            a = c.execute("SELECT id, answer, answered_at, undone_at FROM answers WHERE "
                          "query_id = ?", (qid,)).fetchone()
            when = f" ({a[1]!r}, answer {a[0]} at {a[2]})" if a else ""
            undone = " and later undone" if a and a[3] else ""
            raise ElicitError(f"query {qid} ({names}) was already answered{when}{undone}, "
                              f"perhaps in another tab or window; cannot {action} it again")
        if status == "skipped":
            raise ElicitError(f"query {qid} ({names}) was skipped; it may come back later. "
                              "Ask for the next query")
        if status == "cancelled":
            raise ElicitError(f"query {qid} ({names}) was withdrawn by an undo; ask for the "
                              "next query")
        return row

    def answer(self, query: SessionQuery | int, answer: str | Answer,
               comment: str | None = None) -> AnswerRecord:
        """Record the expert's answer to a pending query, durably, then refit the model.

        Parameters
        ----------
        query
            A query from :meth:`next_query` / :meth:`batch`, or its id.
        answer
            ``"similar"``, ``"dissimilar"`` or ``"dont_know"`` (also ``s``, ``d``, ``?``).
        comment
            Optional free text, stored with the answer.

        Returns
        -------
        AnswerRecord
            Returned only after the transaction is committed.

        Raises
        ------
        ElicitError
            An invalid answer or comment, a query not asked in this session, or one already
            answered (the message says "already answered"), skipped or withdrawn.
        """
        ans = Answer.parse(answer)
        if comment is not None:
            if not isinstance(comment, str):
                raise ElicitError(f"comment must be text, got {type(comment).__name__}")
            comment = comment.strip() or None
            if comment is not None and len(comment) > _MAX_COMMENT:
                raise ElicitError(f"comment is {len(comment)} characters long; the limit is "
                                  f"{_MAX_COMMENT}")
        with self._lock:
            qid = self._resolve_query(query)
            self._sync()
            c = self.conn
            now = _now()
            try:
                with _write(c):
                    # The check runs inside the write transaction: no other writer can slip
                    # in between it and the insert. UNIQUE(query_id) backs it up.
                    row = self._open_query_row(qid, "answer")
                    _, i, j = int(row[0]), int(row[1]), int(row[2])
                    epoch = self._epoch()
                    cur = c.execute("INSERT INTO answers (query_id, i, j, answer, comment, "
                                    "answered_at) VALUES (?, ?, ?, ?, ?, ?)",
                                    (qid, i, j, ans.value, comment, now))
                    aid = int(cur.lastrowid)
                    c.execute("UPDATE queries SET status='answered' WHERE id = ?", (qid,))
                    c.execute("INSERT INTO events (kind, query_id, answer_id, epoch, at) "
                              "VALUES ('answer', ?, ?, ?, ?)", (qid, aid, epoch, now))
            except sqlite3.IntegrityError as e:
                raise ElicitError(f"query {qid} was already answered (the session file "
                                  f"refused a second answer: {e})") from None
            # Committed. Only now refit; a crash from here on loses nothing.
            self._after_write()
            return AnswerRecord(aid, qid, i, j, ans, comment, now)

    def skip(self, query: SessionQuery | int) -> None:
        """Skip a pending query. Not an answer: the pair is not asked again until the next
        answer or undo, and may come back after that."""
        with self._lock:
            qid = self._resolve_query(query)
            self._sync()
            c = self.conn
            with _write(c):
                self._open_query_row(qid, "skip")
                c.execute("UPDATE queries SET status='skipped' WHERE id = ?", (qid,))
                c.execute("INSERT INTO events (kind, query_id, epoch, at) VALUES "
                          "('skip', ?, ?, ?)", (qid, self._epoch(), _now()))
            self._after_write()

    def undo(self) -> AnswerRecord:
        """Undo the last active answer and refit.

        The answer stays in the file with ``undone_at`` set. Open (pending) queries are
        withdrawn and the undone pair becomes the next query, so the expert can answer it
        again.

        Raises
        ------
        ElicitError
            If there is no answer to undo.
        """
        with self._lock:
            self._sync()
            c = self.conn
            now = _now()
            with _write(c):
                row = c.execute("SELECT a.id, a.query_id, a.i, a.j, a.answer, a.comment, "
                                "a.answered_at, q.expected_gain, q.exact_gain FROM answers a "
                                "JOIN queries q ON q.id = a.query_id WHERE a.undone_at IS "
                                "NULL ORDER BY a.id DESC LIMIT 1").fetchone()
                if row is None:
                    raise ElicitError("there is no answer to undo")
                aid, qid, i, j, a, comment, at, gain, exact = row
                epoch = self._epoch()
                c.execute("UPDATE answers SET undone_at = ? WHERE id = ?", (now, aid))
                c.execute("UPDATE queries SET status='cancelled' WHERE status='pending'")
                # The model is back where it was when this pair was asked, so its stored gain
                # still applies.
                cur = c.execute("INSERT INTO queries (i, j, expected_gain, exact_gain, "
                                "shown_at, status) VALUES (?, ?, ?, ?, ?, 'pending')",
                                (i, j, gain, exact, now))
                c.execute("INSERT INTO events (kind, query_id, answer_id, epoch, at, detail) "
                          "VALUES ('undo', ?, ?, ?, ?, ?)",
                          (qid, aid, epoch, now, json.dumps({"requeued": cur.lastrowid})))
            self._after_write()
            return AnswerRecord(int(aid), int(qid), int(i), int(j), Answer(a), comment, at)

    # -- records -------------------------------------------------------------------------
    @property
    def history(self) -> pd.DataFrame:
        """Every answer, oldest first, including undone ones (``undone`` is True).

        Columns: answer_id, query_id, i, j, feature_i, feature_j, answer, comment,
        expected_gain, shown_at, answered_at, undone, undone_at.
        """
        with self._lock:
            self._sync()
            rows = self.conn.execute(
                "SELECT a.id, a.query_id, a.i, a.j, a.answer, a.comment, q.expected_gain, "
                "q.shown_at, a.answered_at, a.undone_at FROM answers a JOIN queries q ON "
                "q.id = a.query_id ORDER BY a.id").fetchall()
        cols = ["answer_id", "query_id", "i", "j", "answer", "comment", "expected_gain",
                "shown_at", "answered_at", "undone_at"]
        df = pd.DataFrame(rows, columns=cols)
        df.insert(4, "feature_i", [self.feature_names[i] for i in df["i"]])
        df.insert(5, "feature_j", [self.feature_names[j] for j in df["j"]])
        df.insert(len(df.columns) - 1, "undone", df["undone_at"].notna())
        return df

    @property
    def queries(self) -> pd.DataFrame:
        """Every query shown, with its status."""
        with self._lock:
            self._sync()
            rows = self.conn.execute("SELECT id, i, j, expected_gain, exact_gain, shown_at, "
                                     "status, batch FROM queries ORDER BY id").fetchall()
        df = pd.DataFrame(rows, columns=["query_id", "i", "j", "expected_gain", "exact_gain",
                                         "shown_at", "status", "batch"])
        df.insert(3, "feature_i", [self.feature_names[i] for i in df["i"]])
        df.insert(4, "feature_j", [self.feature_names[j] for j in df["j"]])
        df["exact_gain"] = df["exact_gain"].astype(bool)
        return df

    @property
    def events(self) -> pd.DataFrame:
        """The append-only event log."""
        with self._lock:
            rows = self.conn.execute("SELECT id, kind, query_id, answer_id, epoch, at, detail "
                                     "FROM events ORDER BY id").fetchall()
        return pd.DataFrame(rows, columns=["id", "kind", "query_id", "answer_id", "epoch",
                                           "at", "detail"])

    def active_answers(self) -> list[tuple[int, int, str]]:
        """The answers the model uses: (i, j, answer) in answer order."""
        with self._lock:
            self._sync()
            return list(self._active)

    # -- the model -----------------------------------------------------------------------
    def posterior(self) -> NIGPosterior:
        """The NIG posterior of (beta, sigma^2) at the current MAP."""
        with self._lock:
            self._sync()
            return self.elicitor.posterior()

    def predict(self, X_new) -> np.ndarray:
        """Posterior predictive mean at the rows of ``X_new`` (plus the stored ``y_offset``).

        ``X_new`` must be preprocessed like the session's ``X`` (e.g. standardised with the
        training statistics).
        """
        X_new = np.asarray(X_new, dtype=float) if not isinstance(X_new, np.ndarray) else X_new
        with self._lock:
            self._sync()
            return self.elicitor.predict(X_new) + self.y_offset

    def to_inferencedata(self):
        """The current MAP as an :class:`arviz.InferenceData`.

        ``posterior`` holds ``gamma`` (dim ``meta_feature``), ``xi`` and ``tau2`` as one chain
        with one draw (the MAP, not a sample); ``constant_data`` holds ``K`` with dims
        ``(feature, feature_)`` labelled by the feature names, ``mu`` (posterior mean of
        beta) and the answers used. Attributes record the session and the answer count.
        """
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)  # arviz's refactor notice
            import arviz as az
        with self._lock:
            self._sync()
            fit = self.elicitor.fit
            post = self.elicitor.posterior()
            active = list(self._active)
        names = self.feature_names
        d = self.U.shape[1]
        ans_pairs = np.array([[i, j] for i, j, _ in active], dtype=np.int64).reshape(-1, 2)
        ans_vals = np.array([a for _, _, a in active], dtype=str)
        constant = {"K": np.asarray(fit.K), "mu": np.asarray(post.mu)}
        coords = {"meta_feature": np.arange(d), "feature": names, "feature_": names}
        dims = {"gamma": ["meta_feature"], "K": ["feature", "feature_"], "mu": ["feature"]}
        if len(active):
            constant["answer_pair"] = ans_pairs
            constant["answer"] = ans_vals
            coords["answer_index"] = np.arange(len(active))
            coords["pair_end"] = ["i", "j"]
            dims["answer_pair"] = ["answer_index", "pair_end"]
            dims["answer"] = ["answer_index"]
        return az.from_dict(
            posterior={"gamma": np.asarray(fit.gamma)[None, None, :],
                       "xi": np.array([[fit.xi]]), "tau2": np.array([[fit.tau2]])},
            constant_data=constant, coords=coords, dims=dims,
            attrs={"elicit_session": self.uid, "session_file": str(self.path),
                   "data_hash": self.meta["data_hash"], "n_answers": len(active),
                   "point_estimate": "MAP"})

    def prior_dict(self) -> dict[str, Any]:
        """The learned prior as plain Python values (the JSON export format)."""
        with self._lock:
            self._sync()
            fit = self.elicitor.fit
            active = list(self._active)
        return {
            "format": "elicit-prior", "format_version": 1,
            "session_uid": self.uid, "data_hash": self.meta["data_hash"],
            "feature_names": list(self.feature_names),
            "gamma": [float(v) for v in fit.gamma], "xi": float(fit.xi),
            "tau2": float(fit.tau2), "K": np.asarray(fit.K).tolist(),
            "hyper": dataclasses.asdict(self.elicitor.hyper),
            "engine": self.elicitor.engine.name,
            "answers": [{"i": i, "j": j, "feature_i": self.feature_names[i],
                         "feature_j": self.feature_names[j], "answer": a}
                        for i, j, a in active],
            "exported": _now(),
        }

    def export_prior(self, path: str | os.PathLike) -> Path:
        """Write the learned prior: ``.nc`` (netCDF via arviz) or ``.json``.

        The netCDF file is :meth:`to_inferencedata` saved with ``InferenceData.to_netcdf``
        (groups ``posterior`` and ``constant_data``). The JSON file is :meth:`prior_dict`.
        See ``docs/session.md`` for both formats.

        Raises
        ------
        ElicitError
            An unknown suffix, a missing directory, or no netCDF backend for ``.nc``.
        """
        path = Path(path)
        suffix = path.suffix.lower()
        if suffix not in (".nc", ".json"):
            raise ElicitError(f"cannot export to {path.name!r}: use a .nc (netCDF) or .json "
                              "file name")
        if not path.parent.exists():
            raise ElicitError(f"directory {path.parent} does not exist")
        if suffix == ".json":
            tmp = path.with_name(path.name + ".tmp")
            tmp.write_text(json.dumps(self.prior_dict(), indent=1))
            os.replace(tmp, path)
            return path
        idata = self.to_inferencedata()
        try:
            idata.to_netcdf(str(path))
        except (ImportError, ValueError) as e:
            raise ElicitError(f"cannot write netCDF ({e}); install h5netcdf or netCDF4, or "
                              "export to a .json file instead") from None
        return path

    # -- plots ---------------------------------------------------------------------------
    def plot_features(self, max_features: int = 30) -> np.ndarray:
        """Which features :meth:`plot_K` shows when there are more than ``max_features``:
        those in answered pairs (most recent first), then the largest |posterior mean|."""
        p = len(self.feature_names)
        if p <= max_features:
            return np.arange(p)
        chosen: list[int] = []
        for i, j, _ in reversed(self.active_answers()):
            for f in (i, j):
                if f not in chosen and len(chosen) < max_features:
                    chosen.append(f)
        mu = np.abs(self.posterior().mu)
        for f in np.argsort(-mu):
            if len(chosen) >= max_features:
                break
            if int(f) not in chosen:
                chosen.append(int(f))
        return np.array(sorted(chosen))

    def plot_K(self, ax=None, features: Sequence[int | str] | None = None,
               max_features: int = 30):
        """Heatmap of the current kernel matrix K, labelled with feature names.

        With more than ``max_features`` features only a subset is drawn (see
        :meth:`plot_features`) unless ``features`` (indices or names) is given.
        Returns the matplotlib Axes.
        """
        import matplotlib.pyplot as plt

        if features is None:
            idx = self.plot_features(max_features)
        else:
            idx = np.array([self._feature_index(f) for f in features], dtype=int)
            if len(idx) == 0:
                raise ElicitError("features is empty: name at least one feature to plot")
        K = np.asarray(self.fit.K)[np.ix_(idx, idx)]
        if ax is None:
            size = min(12.0, 2.5 + 0.28 * len(idx))
            _, ax = plt.subplots(figsize=(size + 1.2, size))
        im = ax.imshow(K, vmin=0.0, vmax=1.0, cmap="viridis")
        labels = [self.feature_names[k] for k in idx]
        ax.set_xticks(range(len(idx)), labels, rotation=90, fontsize=8)
        ax.set_yticks(range(len(idx)), labels, fontsize=8)
        n_ans = len(self.active_answers())
        shown = "" if len(idx) == len(self.feature_names) else \
            f" ({len(idx)} of {len(self.feature_names)} features)"
        ax.set_title(f"K after {n_ans} answer{'s' if n_ans != 1 else ''}{shown}")
        ax.figure.colorbar(im, ax=ax, fraction=0.046, pad=0.04, label="K_ij")
        return ax

    def plot_gains(self, ax=None):
        """Expected information gain of each answered question, in answer order (undone
        answers as hollow markers). Returns the matplotlib Axes."""
        import matplotlib.pyplot as plt

        h = self.history
        if ax is None:
            _, ax = plt.subplots(figsize=(6, 3.5))
        x = np.arange(1, len(h) + 1)
        g = h["expected_gain"].astype(float).to_numpy()
        colours = {"similar": "tab:green", "dissimilar": "tab:red", "dont_know": "tab:gray"}
        for kind, colour in colours.items():
            for undone in (False, True):
                m = ((h["answer"] == kind) & (h["undone"] == undone)).to_numpy()
                if m.any():
                    ax.scatter(x[m], g[m], label=kind.replace("_", " ") if not undone else None,
                               facecolors="none" if undone else colour, edgecolors=colour)
        if len(h):
            ax.plot(x, g, color="0.6", lw=0.8, zorder=0)
            ax.legend(fontsize=8)
        ax.set_xlabel("answer number")
        ax.set_ylabel("expected gain")
        ax.set_title("Expected information gain of the questions asked")
        return ax


def _disjoint_greedy(pairs: np.ndarray, order: np.ndarray, k: int) -> list[int]:
    """Walk ``order`` (best first) taking pairs that share no feature with those taken; fill
    up with the best remaining pairs if that gives fewer than ``k``."""
    picked: list[int] = []
    used: set[int] = set()
    for t in order:
        if len(picked) == k:
            return picked
        a, b = int(pairs[t, 0]), int(pairs[t, 1])
        if a not in used and b not in used:
            picked.append(int(t))
            used.update((a, b))
    for t in order:
        if len(picked) == k:
            break
        if int(t) not in picked:
            picked.append(int(t))
    return picked


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
        got = _hash_array(k, arr)
        want = meta["array_hashes"].get(k)
        if got != want:
            shape = meta.get("shapes", {}).get(k)
            raise ElicitError(
                f"session file {path} was created for different data: {labels[k]} differs "
                f"(session: shape {tuple(shape) if shape else '?'}, sha256 {str(want)[:12]}; "
                f"given: shape {arr.shape}, sha256 {got[:12]}). Open it without data to use "
                "the arrays stored in the file, or create a new session for this data")
