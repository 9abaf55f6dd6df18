"""Real-expert elicitation sessions, persisted in one SQLite file after every answer.

A :class:`Session` wraps an :class:`~elicit.elicitation.elicitor.Elicitor` with a durable
record of everything the expert saw and said (the file and all its SQL are in
:mod:`elicit.session.store`; its format is described there and in ``docs/session.md``). The
other modules of this package hold what is built on a session: :mod:`~elicit.session.export`
(the learned prior as netCDF or JSON, the record as tables), :mod:`~elicit.session.plots`,
:mod:`~elicit.session.terminal` and :mod:`~elicit.session.web` (the expert's two front ends)
and :mod:`~elicit.session.inputs` (where the data of a new session comes from).

Durability. An answer is written in one transaction (check the query is still pending, insert
the answer, mark the query answered, log the event) and committed *before* the model is
refitted and before the next query is chosen, so a crash or kill at any point loses no
committed answer and never leaves half of one.

Determinism. The model state is a pure function of the active answers: after every answer,
undo or resume the MAP is refitted with :meth:`Elicitor.set_answers` from the no-feedback MAP.
The random stream of round r is ``default_rng(SeedSequence([seed, r]))`` with r the number of
queries recorded so far, so a resumed session asks the same next question as one that never
stopped. Questions are chosen by the strategies of :mod:`elicit.elicitation.strategies`, with
the pairs skipped since the last answer or undo excluded.
"""

from __future__ import annotations

import dataclasses
import os
import sqlite3
import threading
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from elicit.elicitation.answers import Answer
from elicit.elicitation.elicitor import Elicitor
from elicit.elicitation.strategies import Query
from elicit.engines.base import Engine, MAPResult
from elicit.errors import ElicitError
from elicit.internal.threads import single_blas_thread
from elicit.model.posterior import NIGPosterior
from elicit.model.spec import Hyper
from elicit.session import export, plots, store
from elicit.session.inputs import check_comment, check_inputs, feature_index


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


class Session:
    """An elicitation session with a real expert, persisted in one SQLite file.

    Do not call the constructor; use :meth:`create` or :meth:`open`. A session is also a
    context manager that closes the file. One lock serialises all use of the file and the
    model, so the web server's threads can share a session.

    Attributes
    ----------
    path
        The session file.
    feature_names
        The p feature names.
    elicitor
        The underlying :class:`~elicit.elicitation.elicitor.Elicitor` (read it, do not answer
        through it).
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
        self.elicitor = elicitor if elicitor is not None else Elicitor(
            X, y, U, Hyper(**st["hyper"]), engine=engine if engine is not None else st["engine"],
            utility=st["utility"], refine=st["refine"], pool_size=st["pool_size"])
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
            Model and utility settings, as for :class:`~elicit.elicitation.elicitor.Elicitor`.
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
        X, y, U, names, hyper, snippets = check_inputs(
            X, y, meta_features, feature_names, texts, hyper, strategy, seed, y_offset)
        store.check_new_path(path, overwrite)
        settings = {"hyper": dataclasses.asdict(hyper),
                    "engine": engine.name if isinstance(engine, Engine) else str(engine),
                    "utility": utility, "refine": int(refine), "strategy": strategy,
                    "pool_size": pool_size, "seed": int(seed)}
        # Build the model once before writing anything: bad settings fail here, not on open.
        probe = Elicitor(X, y, U, hyper, engine=engine, utility=utility, refine=refine,
                         pool_size=pool_size)
        meta = _new_meta(X, y, U, names, settings, probe, y_offset, description)
        store.create_file(path, meta, X, y, U, snippets, overwrite)
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
        conn, meta, arrays, texts = store.open_file(path, {"X": X, "y": y, "U": meta_features})
        try:
            return cls(path, conn, meta, arrays["X"], arrays["y"], arrays["U"], texts,
                       engine=engine, elicitor=elicitor)
        except BaseException:
            conn.close()
            raise

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
    def _sync(self, force: bool = False, wrote: bool = False) -> None:
        """Refit when the active answers changed: after our own write (``wrote``) or a commit
        made by another connection (another tab's server, another process).

        ``PRAGMA data_version`` changes only when *another* connection commits, so the usual
        case costs one tiny query. The refit always starts from the no-feedback MAP: the
        state is then a pure function of the active answers, which makes a resumed session
        identical to an uninterrupted one.
        """
        v = store.data_version(self.conn)
        if v == self._data_version and not (force or wrote):
            return
        self._data_version = v
        # Re-read the answers from the file rather than patching the in-memory list: another
        # process may have committed between our last sync and our write.
        active = store.active_answers(self.conn)
        if force or active != self._active:
            self.elicitor.set_answers(active)
            self._active = active

    def _snapshot(self, posterior: bool = False):
        """``(fit, posterior or None, active answers)``, all read at one state of the file."""
        with self._lock:
            self._sync()
            post = self.elicitor.posterior() if posterior else None
            return self.elicitor.fit, post, list(self._active)

    def _read(self, query, *args):
        """``query(conn, *args)`` of :mod:`elicit.session.store` at the file's current state."""
        with self._lock:
            self._sync()
            return query(self.conn, *args)

    @property
    def fit(self) -> MAPResult:
        """The current MAP (gamma, xi, tau2, K)."""
        return self._snapshot()[0]

    def revision(self) -> int:
        """A number that grows with every recorded event (query, answer, skip, undo)."""
        with self._lock:
            return store.last_event(self.conn)

    @property
    def n_pairs(self) -> int:
        return len(self.elicitor.candidates)

    def progress(self) -> dict[str, int]:
        """Counts: ``answered`` (active answers), ``pairs``, ``left``, ``skipped``, ``undone``,
        ``pending``, ``similar``, ``dissimilar``, ``dont_know``."""
        return self._read(store.progress, self.n_pairs)

    @property
    def done(self) -> bool:
        """True when every candidate pair has an active answer."""
        with self._lock:
            self._sync()
            return len(self.elicitor.unasked()) == 0

    def texts(self, feature: int | str) -> list[str]:
        """The example snippets stored for a feature (by index or name)."""
        return list(self._texts.get(feature_index(self.feature_names, feature), []))

    # -- queries -------------------------------------------------------------------------
    def pending(self) -> list[SessionQuery]:
        """Queries shown and not yet answered or skipped, oldest first."""
        return self._read(_pending, self.feature_names, self.uid)

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
        return self.batch(1)[0]

    def batch(self, k: int) -> list[SessionQuery]:
        """``k`` questions to ask together, chosen greedily by expected gain.

        Diversity rule (:func:`~elicit.elicitation.strategies.disjoint_greedy`): the pairs are
        ranked by expected gain and walked best first; a pair is taken only if it shares no
        feature with a pair already taken. If fewer than ``k`` feature-disjoint pairs exist,
        the best remaining pairs fill the batch. The fast utility refines the
        ``max(refine, 2k)`` best screened pairs exactly so the batch is ranked on exact gains
        where possible.

        An open batch (pending queries) is returned as it is: a batch is finished (answered or
        skipped) before a new one is chosen.
        """
        if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
            raise ElicitError(f"batch size must be a positive integer, got {k!r}")
        with self._lock:
            self._sync()
            pend = _pending(self.conn, self.feature_names, self.uid)
            if pend:
                return pend
            store.add_queries(self.conn, self._choose(int(k)))
            # Another process may have written meanwhile (its pending queries win).
            self._sync(wrote=True)
            return _pending(self.conn, self.feature_names, self.uid)

    @single_blas_thread
    def _choose(self, k: int) -> list[Query]:
        """The next ``k`` questions: the stored strategy, skipped pairs excluded."""
        el, c = self.elicitor, self.conn
        unasked = el.unasked()
        if len(unasked) == 0:
            raise ElicitError(f"every one of the {self.n_pairs} pairs has been answered; "
                              "nothing is left to ask (undo an answer to revise it)")
        skipped = store.skipped_pairs(c, store.epoch(c))
        left = {(int(i), int(j)) for i, j in unasked}
        # When everything left was skipped, the skipped pairs come back.
        exclude = skipped if left - skipped else None
        rng = np.random.default_rng(np.random.SeedSequence([self.settings["seed"],
                                                            store.n_queries(c)]))
        strategy = self.settings["strategy"]
        if strategy == "nonsequential":
            el.nonsequential_ranking()  # made at the no-feedback MAP, also after answers
        return el.next_batch(strategy, rng, k, exclude=exclude)

    # -- answers -------------------------------------------------------------------------
    def _open_query_row(self, qid: int, action: str):
        """The query's row if it is pending; else an error saying what became of it."""
        return store.open_query_row(self.conn, qid, action, self.feature_names)

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
        comment = check_comment(comment)
        with self._lock:
            qid = _query_id(query, self)
            self._sync()
            now = store.now()
            try:
                with store.write(self.conn):
                    # The check runs inside the write transaction: no other writer can slip
                    # in between it and the insert. UNIQUE(query_id) backs it up.
                    row = self._open_query_row(qid, "answer")
                    i, j = int(row[1]), int(row[2])
                    aid = store.insert_answer(self.conn, qid, i, j, ans.value, comment, now)
            except sqlite3.IntegrityError as e:
                raise ElicitError(f"query {qid} was already answered (the session file "
                                  f"refused a second answer: {e})") from None
            # Committed. Only now refit; a crash from here on loses nothing.
            self._sync(wrote=True)
            return AnswerRecord(aid, qid, i, j, ans, comment, now)

    def skip(self, query: SessionQuery | int) -> None:
        """Skip a pending query. Not an answer: the pair is not asked again until the next
        answer or undo, and may come back after that."""
        with self._lock:
            qid = _query_id(query, self)
            self._sync()
            with store.write(self.conn):
                self._open_query_row(qid, "skip")
                store.mark_skipped(self.conn, qid)
            self._sync(wrote=True)

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
            aid, qid, i, j, a, comment, at = store.undo_last(self.conn, store.now())
            self._sync(wrote=True)
            return AnswerRecord(int(aid), int(qid), int(i), int(j), Answer(a), comment, at)

    # -- the model -----------------------------------------------------------------------
    def active_answers(self) -> list[tuple[int, int, str]]:
        """The answers the model uses: (i, j, answer) in answer order."""
        return self._snapshot()[2]

    def posterior(self) -> NIGPosterior:
        """The NIG posterior of (beta, sigma^2) at the current MAP."""
        return self._snapshot(posterior=True)[1]

    def predict(self, X_new) -> np.ndarray:
        """Posterior predictive mean at the rows of ``X_new`` (plus the stored ``y_offset``).

        ``X_new`` must be preprocessed like the session's ``X`` (e.g. standardised with the
        training statistics).
        """
        X_new = np.asarray(X_new, dtype=float) if not isinstance(X_new, np.ndarray) else X_new
        with self._lock:
            self._sync()
            return self.elicitor.predict(X_new) + self.y_offset

    # -- records, exports and plots: functions of a session in their own modules -----------
    history = property(export.history)
    queries = property(export.queries)
    events = property(export.events)
    to_inferencedata = export.to_inferencedata
    prior_dict = export.prior_dict
    export_prior = export.export_prior
    plot_features = plots.plot_features
    plot_K = plots.plot_K
    plot_gains = plots.plot_gains


def _query_id(query: SessionQuery | int | str, session: Session) -> int:
    """The id of a query given as a :class:`SessionQuery` of ``session`` or as an id."""
    if isinstance(query, SessionQuery):
        if query.session_uid != session.uid:
            raise ElicitError(f"{query} belongs to another session, not to {session.path}")
        return query.id
    if isinstance(query, (int, np.integer)) and not isinstance(query, bool):
        return int(query)
    if isinstance(query, str) and query.strip().isdigit():
        return int(query.strip())
    raise ElicitError(f"expected a query from next_query() (or its id), got {query!r}")


def _pending(conn: sqlite3.Connection, names: list[str], uid: str) -> list[SessionQuery]:
    return [SessionQuery(int(q), int(i), int(j), (names[i], names[j]),
                         None if gain is None else float(gain), bool(exact), uid)
            for q, i, j, gain, exact in store.pending_queries(conn)]


def _new_meta(X: np.ndarray, y: np.ndarray, U: np.ndarray, names: list[str],
              settings: dict[str, Any], probe: Elicitor, y_offset: float,
              description: str) -> dict[str, Any]:
    """The ``meta`` table of a new session file (the keys are listed in
    :mod:`elicit.session.store`); ``resolved`` records the settings as the model resolved
    them (``engine="auto"`` to the engine found, the threshold mean, the pool size)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        elicit_version = version("elicit")
    except PackageNotFoundError:
        elicit_version = "unknown"
    combined, per = store.data_hashes(X, y, U)
    return {
        "format_version": store.FORMAT_VERSION, "application": "elicit-session",
        "created": store.now(), "session_uid": uuid.uuid4().hex,
        "elicit_version": elicit_version, "data_hash": combined, "array_hashes": per,
        "shapes": {"X": list(X.shape), "y": list(y.shape), "U": list(U.shape)},
        "feature_names": names, "settings": settings,
        "resolved": {"engine": probe.engine.name, "threshold_mean": probe.hyper.threshold_mean,
                     "pool_size": probe.pool_size},
        "y_offset": float(y_offset), "description": str(description),
    }
