"""Opening a session file safely: the checks made before anything is written to it, reading
its meta data, arrays and snippets, and migrating an older format (the file itself:
:mod:`elicit.session.store`); :class:`SessionReader`, the opened file's words and record
without the model (``elicit history`` loads neither the model, scipy nor pandas), which
:class:`~elicit.session.state.SessionState` extends with the model kept in step."""

from __future__ import annotations

import contextlib
import dataclasses
import io
import json
import os
import sqlite3
import threading
from functools import cached_property
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from elicit.elicitation.answers import DONT_KNOW
from elicit.elicitation.kinds import (
    BEFORE_KINDS,
    KINDS,
    PAPER_QUESTIONS,
    QuestionKind,
    get_kind,
    kinds_of,
    parse_questions,
    spell_questions,
)
from elicit.elicitation.table import QuestionTable
from elicit.errors import ElicitError
from elicit.internal.checks import check_int
from elicit.session import record
from elicit.session.questions import feature_index, question_pairs
from elicit.session.store import (
    FEATURE_J,
    FORMAT_VERSION,
    MIGRATE_1_TO_2,
    MIGRATE_TO_4,
    TABLES,
    connect,
    data_hashes,
    hash_array,
    now,
    set_durable,
    statements,
    write,
)

_SQLITE_MAGIC = b"SQLite format 3\x00"


def open_file(path: Path, given: dict[str, Any] | None = None, read_only: bool = False,
              model: bool = True) -> tuple[sqlite3.Connection, dict[str, Any],
                                           dict[str, np.ndarray], dict[int, list[str]]]:
    """Check and read a session file, make its connection durable, migrate an older format.

    Nothing is written to a file that fails a check, nor to one whose data differs from the
    arrays ``given`` (``{"X": ..., "y": ..., "U": ...}``, None for those not to check).
    ``read_only``: nothing is ever written; an older format is migrated in a copy in memory.
    ``model``: the reader will build the model (its hyperparameters' names are checked).
    Returns the connection, the meta data, the arrays and the snippets per feature.
    """
    _inspect_file(path)
    (finish_cut_write if read_only else check_writable)(path)
    try:
        conn = _wal_file_in_memory(path) if read_only else None
        conn = conn or connect(path, read_only)
    except sqlite3.Error as e:
        raise ElicitError(f"cannot open session file {path}: {e}") from None
    try:
        meta, arrays, texts = _read_file(conn, path, read_only, model)
        if given and any(v is not None for v in given.values()):
            _check_same_data(path, meta, given)
        if not read_only:
            set_durable(conn, path)
        if meta["format_version"] < FORMAT_VERSION:
            conn, meta = _migrated_copy(conn, path) if read_only else (conn, _migrate(conn, path))
    except BaseException:
        conn.close()
        raise
    return conn, meta, arrays, texts


def _unfinished(path: Path, suffix: str) -> bool:
    """A non-empty ``-journal`` or ``-wal`` beside ``path``, in one look (a commit deletes it)."""
    try:
        return os.stat(f"{path}{suffix}").st_size > 0
    except FileNotFoundError:
        return False


def finish_cut_write(path: Path) -> None:
    """Before a read-only open: let SQLite undo a write that was cut short (a "hot" journal),
    when the file and its folder may be written (a read-only connection would refuse it)."""
    if not _unfinished(path, "-journal"):
        return
    try:
        check_writable(path)
    except ElicitError:
        return
    # Any read rolls a hot journal back; a live writer's is left alone. An error is left to
    # open_file, which reports what is wrong with the file.
    with contextlib.closing(connect(path)) as conn, contextlib.suppress(sqlite3.Error):
        conn.execute("SELECT COUNT(*) FROM sqlite_master").fetchone()


def _wal_file_in_memory(path: Path) -> sqlite3.Connection | None:
    """A format-1 file (WAL mode) with no write pending, read into memory; None for any
    other file. (A read-only connection to a WAL file would leave a ``-shm`` file behind.)"""
    if not hasattr(sqlite3.Connection, "deserialize") or _unfinished(path, "-wal"):
        return None  # Python 3.10, or answers in the -wal file: SQLite must read them
    with open(path, "rb") as fh:
        data = bytearray(fh.read())
    if data[18:20] != b"\x02\x02":
        return None
    data[18:20] = b"\x01\x01"  # the header's journal mode: rollback, as a copy in memory has
    conn = sqlite3.connect(":memory:", isolation_level=None, check_same_thread=False)
    conn.deserialize(bytes(data))  # type: ignore[attr-defined]  # Python 3.11+, checked above
    conn.execute("PRAGMA query_only = ON")
    return conn


def _migrated_copy(conn: sqlite3.Connection, path: Path
                   ) -> tuple[sqlite3.Connection, dict[str, Any]]:
    """An older file migrated in a read-only copy in memory (closes ``conn``)."""
    mem = sqlite3.connect(":memory:", isolation_level=None, check_same_thread=False)
    try:
        conn.backup(mem)
        conn.close()
        meta = _migrate(mem, path)
        mem.execute("PRAGMA query_only = ON")
    except BaseException:
        mem.close()
        raise
    return mem, meta


def check_writable(path: Path) -> None:
    """Refuse a file or folder that cannot be written (a commit creates a journal beside it)."""
    where = path.parent
    if not os.access(path, os.W_OK):
        raise ElicitError(f"session file {path} is read-only, and elicit saves every answer "
                          f"into it; make it writable (chmod u+w {path}) or copy it to a "
                          "folder you can write to")
    if not os.access(where, os.W_OK):
        raise ElicitError(f"session file {path} is in a read-only folder ({where}): elicit "
                          "needs to create a journal file beside it while it saves an "
                          "answer; copy the session to a folder you can write to")


def _inspect_file(path: Path) -> None:
    """Refuse a missing, empty, non-SQLite or visibly truncated file before SQLite reads it."""
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
    # The header's page count counts only when the change counter (bytes 24-27) matches its
    # copy (92-95, SQLite's rule); a non-empty -wal or -journal is a write cut short, left to
    # SQLite's recovery.
    pending = any(_unfinished(path, s) for s in ("-wal", "-journal"))
    if n_pages and header[24:28] == header[92:96] and size < n_pages * page_size and not pending:
        raise _damaged(path, f"is truncated: its header promises {n_pages * page_size} bytes "
                             f"but the file has {size}")


def _damaged(path: Path, what: str) -> ElicitError:
    """The refusal of a damaged file: ``what`` is wrong with it, and nothing was written."""
    return ElicitError(f"session file {path} {what}; it was left untouched (restore it from a "
                       "backup)")


def _read_file(conn: sqlite3.Connection, path: Path, read_only: bool = False,
               model: bool = True):
    """Validate the file's structure and record; read its meta, arrays and texts."""
    try:
        check = conn.execute("PRAGMA quick_check").fetchall()
        if [r[0] for r in check] != ["ok"]:
            detail = "; ".join(str(r[0]) for r in check[:3])
            raise _damaged(path, f"is corrupted ({detail})")
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
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
        fv = check_int(meta["format_version"],
                       f"session file {path} is corrupted (format_version "
                       f"{meta['format_version']!r})", 1)
        if fv > FORMAT_VERSION:
            raise ElicitError(f"session file {path} was written by a newer elicit (format "
                              f"version {fv}; this elicit reads up to {FORMAT_VERSION}). "
                              "Upgrade elicit to open it; the file was left untouched")
        if missing := [t for t in TABLES if t not in tables]:
            raise ElicitError(f"session file {path} is corrupted or incomplete: missing "
                              f"table(s) {', '.join(missing)}")
        for key in ("feature_names", "settings", "data_hash", "array_hashes"):
            if key not in meta:
                raise ElicitError(f"session file {path} is corrupted: meta has no {key!r}")
        _check_settings(path, meta["settings"], model)
        blobs = dict(conn.execute("SELECT name, npy FROM arrays").fetchall())
        arrays = {}
        for name in ("X", "y", "U"):
            if name not in blobs:
                raise ElicitError(f"session file {path} is corrupted: array {name} is missing")
            try:
                arrays[name] = np.load(io.BytesIO(blobs[name]), allow_pickle=False)
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
        _check_record(conn, path, int(arrays["X"].shape[1]) if arrays["X"].ndim == 2 else 0,
                      meta["settings"].get("questions", PAPER_QUESTIONS), fv)
    except sqlite3.DatabaseError as e:
        msg = str(e)
        if read_only and "readonly" in msg:
            raise ElicitError(f"session file {path} has an unfinished write (its journal "
                              f"{path.name}-journal is beside it) that only a program allowed "
                              "to write the file can finish; make it and its folder writable "
                              "and open it once, or copy both files to a folder you can write "
                              "to") from None
        if "readonly" in msg or "unable to open" in msg:
            raise ElicitError(f"session file {path} cannot be opened for writing ({msg}): "
                              "make it and its folder writable, or copy the session to a "
                              "folder you can write to") from None
        raise _damaged(path, f"is corrupted or truncated ({msg})") from None
    if len(meta["feature_names"]) != arrays["X"].shape[1]:
        raise ElicitError(f"session file {path} is corrupted: {len(meta['feature_names'])} "
                          f"feature names for {arrays['X'].shape[1]} features")
    excluded = meta.get("excluded_features", {})  # read as names, and printed as text
    for key, ok in (("excluded_features", isinstance(excluded, dict)
                     and set(excluded) <= set(meta["feature_names"])),
                    ("description", isinstance(meta.get("description", ""), str))):
        if not ok:
            raise _damaged(path, f"is corrupted: meta {key} is not what elicit writes")
    return meta, arrays, texts


#: the settings a session's model is built from (files of every format have them)
_SETTINGS = ("hyper", "engine", "utility", "refine", "strategy", "pool_size", "seed")


def _check_settings(path: Path, settings: object, model: bool = True) -> None:
    """Refuse meta ``settings`` no model can be built from (an edited or damaged file; the
    names of the hyperparameters are checked only for a reader that builds the ``model``)."""
    if not isinstance(settings, dict):
        got = {list: "an array", str: "a string", type(None): "null", bool: "a boolean"}.get(
            type(settings), "a number")
        raise _damaged(path, f"is damaged: its meta 'settings' is {got}, not a JSON object")
    missing = [k for k in _SETTINGS if k not in settings]
    hyper = settings.get("hyper")
    unknown: list[str] | None = [] if isinstance(hyper, dict) else None
    if isinstance(hyper, dict) and model:
        from elicit.model.spec import Hyper  # the model and scipy: for a reader that builds it

        unknown = sorted(set(hyper) - {f.name for f in dataclasses.fields(Hyper)})
    if missing or unknown is None or unknown:
        what = (f"has no {', '.join(map(repr, missing))}" if missing else
                "'hyper' is not a JSON object" if unknown is None else
                f"'hyper' names unknown setting(s) {', '.join(map(repr, unknown))}")
        raise _damaged(path, f"is damaged: its meta 'settings' {what}")


def _first_kind_outside(conn: sqlite3.Connection, table: str, kind_sql: str,
                        params: tuple, names: list[str]) -> tuple | None:
    """(id, kind) of the first row of ``table`` whose kind is not in ``names``, or None."""
    return conn.execute(
        f"SELECT id, {kind_sql} AS k FROM {table} WHERE k NOT IN "
        f"({', '.join('?' * len(names))}) ORDER BY id LIMIT 1",
        (*params, *names)).fetchone()


def _check_record(conn: sqlite3.Connection, path: Path, p: int, questions: object,
                  version: int) -> None:
    """Refuse a record naming no question or answer of the session, or a kind it does not ask
    (``questions``); a file of format ``version`` < 4 is read as it will be migrated."""
    old = _old_kinds()
    kind_sql, params = (("kind", ()) if version >= 4 else (_OLD_KIND_SQL, (old["one"], old["two"])))
    for table, label in (("queries", "query"), ("answers", "answer")):
        if (unknown := _first_kind_outside(conn, table, kind_sql, params, list(KINDS))) is not None:
            raise ElicitError(f"session file {path} holds {label} {unknown[0]} of the kind of "
                              f"question {unknown[1]!r}, which this elicit does not know; "
                              "import the module that registers that kind before opening it "
                              "(the file was left untouched)")
    # A question is about a pair (i < j) or one feature (j = FEATURE_J) as its kind says, and
    # an answer is one its question's kind allows.
    for table, label in (("queries", "query"), ("answers", "answer")):
        for kind in KINDS.values():
            pair = kind.arity == 2
            answers = [a.value for a in kind.answers] + [DONT_KNOW.value]
            words = answers if table == "answers" else []
            said = f" AND answer IN ({', '.join('?' * len(words))})" if words else ""
            bad = conn.execute(
                f"SELECT id, i, j FROM {table} WHERE {kind_sql} = ? AND NOT (typeof(i) = "
                f"'integer' AND typeof(j) = 'integer' AND 0 <= i AND i < ? AND "
                f"{'i < j AND j < ?' if pair else 'j = ?'}{said}) ORDER BY id LIMIT 1",
                (*params, kind.name, p, p if pair else FEATURE_J, *words)).fetchone()
            if bad is not None:
                form = "i < j" if pair else f"(i, {FEATURE_J})"
                raise _damaged(path, f"is damaged: {label} {bad[0]} is about features "
                                     f"({bad[1]!r}, {bad[2]!r}), but the session has {p} features "
                                     f"(0..{p - 1}) and {kind.question} is written {form} and "
                                     f"answered {', '.join(answers)}")
    asked = parse_questions(questions)
    for table, label in (("answers", "answer"), ("queries", "query")):
        if (bad := _first_kind_outside(conn, table, kind_sql, params, list(asked))) is not None:
            raise _damaged(path, f"is damaged: {label} {bad[0]} is one of the "
                                 f"{get_kind(bad[1]).label}, but the session asks "
                                 f"questions={spell_questions(asked)!r}")


#: a row's kind in a file of format 3 or older, told by its j (the parameters: _old_kinds)
_OLD_KIND_SQL = f"(CASE WHEN j = {FEATURE_J} THEN ? ELSE ? END)"


def _old_kinds() -> dict[str, str]:
    """The kinds of a format-3-or-older file's one-feature (``one``) and pair (``two``) rows."""
    return {("one" if k.arity == 1 else "two"): k.name for k in kinds_of(BEFORE_KINDS)}


def _migrate(conn: sqlite3.Connection, path: Path) -> dict[str, Any]:
    """Bring an older file to the current format in one transaction; returns its meta (the
    version is re-read inside the write lock: two programs migrate one old file once)."""
    # The rebuild drops the queries table that answers refer to; SQLite checks foreign keys
    # per statement and changes that setting only outside a transaction.
    keys = int(conn.execute("PRAGMA foreign_keys").fetchone()[0])
    conn.execute("PRAGMA foreign_keys = OFF")
    try:
        with write(conn):
            fv = json.loads(conn.execute("SELECT value FROM meta WHERE key = 'format_version'"
                                         ).fetchone()[0])
            if fv < FORMAT_VERSION:
                if fv == 1:
                    for stmt in statements(MIGRATE_1_TO_2):
                        conn.execute(stmt)
                if fv <= 3:
                    for stmt in statements(MIGRATE_TO_4):
                        conn.execute(stmt, _old_kinds() if ":one" in stmt else ())
                    settings = json.loads(conn.execute(
                        "SELECT value FROM meta WHERE key = 'settings'").fetchone()[0])
                    # files without the setting ask pairs
                    settings["questions"] = list(parse_questions(
                        settings.get("questions", PAPER_QUESTIONS)))
                    conn.execute("UPDATE meta SET value = ? WHERE key = 'settings'",
                                 (json.dumps(settings),))
                if conn.execute("PRAGMA foreign_key_check").fetchone() is not None:
                    raise _damaged(path, "is damaged: an answer refers to a query it does not "
                                         "hold")
                conn.execute("UPDATE meta SET value = ? WHERE key = 'format_version'",
                             (json.dumps(FORMAT_VERSION),))
                conn.execute(f"PRAGMA user_version = {FORMAT_VERSION}")
                record.log_event(conn, "migrate", None, now(), "",
                                 detail={"from": fv, "to": FORMAT_VERSION})
    finally:
        conn.execute(f"PRAGMA foreign_keys = {'ON' if keys else 'OFF'}")
    return {k: json.loads(v) for k, v in conn.execute("SELECT key, value FROM meta")}


def _check_same_data(path: Path, meta: dict, given: dict[str, Any]) -> None:
    """Refuse to open a session with data that differs from the stored data."""
    labels = {"X": "X", "y": "y", "U": "meta_features"}
    try:
        full = {k: np.asarray(v, dtype=float) if v is not None else None for k, v in given.items()}
    except (TypeError, ValueError) as e:
        raise ElicitError(f"the data given to check {path} against is not numeric: {e}") from None
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


R = TypeVar("R", bound="SessionReader")

#: the columns of :meth:`SessionReader.history_rows`
HISTORY_COLUMNS = ("answer_id", "query_id", "expert", "kind", "i", "j", "feature_i", "feature_j",
                   "answer", "comment", "expected_gain", "shown_at", "answered_at", "undone",
                   "undone_at")


class SessionReader:
    """A session file's words and record, without its model (:func:`read`)."""

    #: whether this reader builds the model (its hyperparameters' names are checked)
    builds_model = False

    def __init__(self, path: Path, conn: sqlite3.Connection, meta: dict[str, Any],
                 X: np.ndarray, y: np.ndarray, U: np.ndarray, texts: dict[int, list[str]],
                 expert: str = "") -> None:
        self.path, self._conn, self._lock = path, conn, threading.RLock()
        self.meta = meta
        self.settings: dict[str, Any] = meta["settings"]
        self.feature_names: list[str] = list(meta["feature_names"])
        self.uid: str = meta["session_uid"]
        self.description: str = meta.get("description", "")
        self.target_description: str = meta.get("target_description") or "the outcome"
        self.summary: list[str] = list(meta.get("summary", []))
        self.excluded: dict[str, str] = dict(meta.get("excluded_features", {}))
        self.X, self.y, self.U = X, y, U
        self.expert = expert
        self._texts = texts
        #: why no question shows example snippets (None when some feature has one)
        self.no_snippets_note = None if any(map(texts.get, range(len(self.feature_names)))) \
            else "no example snippets in this session: none were given when it was created"
        #: the names of the kinds of question the session asks (files made before feature
        #: questions ask pairs)
        self.questions: tuple[str, ...] = parse_questions(
            self.settings.get("questions", PAPER_QUESTIONS))

    @classmethod
    def _open(cls: type[R], path, X=None, y=None, meta_features=None, *, expert: str = "",
              read_only: bool = False, **model: Any) -> R:
        path = Path(path)
        conn, meta, arrays, texts = open_file(
            path, {"X": X, "y": y, "U": meta_features}, read_only, cls.builds_model)
        try:
            record.cancel_answered_pending(conn)
            return cls(path, conn, meta, arrays["X"], arrays["y"], arrays["U"], texts,
                       expert=expert, **model)
        except BaseException:
            conn.close()
            raise

    def close(self) -> None:
        """Close the file (idempotent). Everything was already committed."""
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None  # type: ignore[assignment]

    def __enter__(self: R) -> R:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __repr__(self) -> str:
        pr = self.progress()
        return (f"<Session {str(self.path)!r}: {len(self.feature_names)} features, "
                f"{pr['answered']} of {pr['questions']} {self.question_noun}s answered>")

    @property
    def conn(self) -> sqlite3.Connection:
        if self._conn is None:
            raise ElicitError(f"session {self.path} is closed")
        return self._conn

    def _who(self, expert: str | None) -> str:
        return self.expert if expert is None else record.check_expert(expert)

    def _read(self, query, *args):
        """``query(conn, *args)`` of :mod:`elicit.session.record` at the current state."""
        with self._lock:
            return query(self.conn, *args)

    def candidates(self) -> np.ndarray | None:
        """The candidate pairs the session was made with (None: every pair, format 1)."""
        if "excluded_features" not in self.meta:
            return None  # format-1 files have no exclusions: every pair stays a candidate
        return question_pairs(self.U, [self.feature_names.index(n) for n in self.excluded])

    @cached_property
    def n_pairs(self) -> int:
        """How many questions of every kind may be asked (each expert answers each once; the
        question table is listed without a fit, once: the file fixes it)."""
        p, candidates = len(self.feature_names), self.candidates()
        return len(QuestionTable([k.segment(p, candidates) for k in self.kinds]))

    @property
    def notes(self) -> list[str]:
        """The summary's ``note:`` lines, shown beside the question."""
        return [line for line in self.summary if line.startswith("note:")]

    @property
    def kinds(self) -> tuple[QuestionKind, ...]:
        """The kinds of question the session asks."""
        return tuple(get_kind(n) for n in self.questions)

    @property
    def question_noun(self) -> str:
        """The kind's noun (``"pair"``) when one kind is asked, else ``"question"``."""
        return self.kinds[0].noun if len(self.kinds) == 1 else "question"

    def progress(self, expert: str | None = None) -> dict[str, int]:
        """Counts of one expert's record (see :func:`elicit.session.record.progress`)."""
        return self._read(record.progress, self.n_pairs, self._who(expert))

    def experts(self) -> list[str]:
        """The experts who were asked at least one question, in order of appearance."""
        return self._read(record.experts)

    def texts(self, feature: int | str) -> list[str]:
        """The example snippets stored for a feature (by index or name)."""
        return list(self._texts.get(feature_index(self.feature_names, feature), []))

    def history_rows(self) -> list[tuple]:
        """Every answer (undone ones too) as :data:`HISTORY_COLUMNS`, oldest first."""
        return self._read(record.history_rows, self.feature_names)


def read(path: str | os.PathLike, expert: str | None = None) -> SessionReader:
    """Open a session file read-only without its model (the checks of
    :meth:`~elicit.session.session.Session.open`, but for the hyperparameters' names)."""
    return SessionReader._open(path, read_only=True, expert=record.check_expert(expert))
