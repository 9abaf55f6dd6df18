"""Real-expert elicitation sessions, persisted in one SQLite file after every answer
(``docs/session.md``). Round r's random stream is ``default_rng(SeedSequence([seed, r]))``, r
the number of queries recorded so far, so a resumed session asks the same next question."""

from __future__ import annotations

import dataclasses
import os
import re
import sqlite3
import uuid
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from elicit.elicitation.answers import Answer
from elicit.elicitation.elicitor import Elicitor
from elicit.elicitation.kinds import PAPER_QUESTIONS, model_for, parse_questions
from elicit.elicitation.settings import RoundSettings, given_settings
from elicit.elicitation.strategies import Query, get_strategy
from elicit.engines.base import Engine
from elicit.errors import ElicitError, EngineError
from elicit.internal.checks import check_bool, check_int
from elicit.internal.threads import single_blas_thread
from elicit.model.spec import Hyper
from elicit.session import export, figures, record, store
from elicit.session.inputs import check_comment, prepare
from elicit.session.questions import AnswerRecord, SessionQuery, public_j, question_pairs
from elicit.session.record import MAX_BATCH, MAX_ID, AnsweredElsewhere, UnknownQuery, check_expert
from elicit.session.state import SessionState
from elicit.session.store import SessionReplaced

#: rounds in a row a question choice may lose to other processes before it gives up
LOST_ROUNDS = 20
#: A start kernel whose median K_ij over the questions' pairs is below ``K_IDENTITY``
#: (practically the identity) or above ``K_ONES`` (practically all ones) gets a note.
K_IDENTITY, K_ONES = 1e-6, 0.999

__all__ = ["AnswerRecord", "AnsweredElsewhere", "Session", "SessionQuery", "SessionReplaced",
           "UnknownQuery"]


class Session(SessionState):
    """An elicitation session with real experts, persisted in one SQLite file.

    Do not call the constructor; use :meth:`create` or :meth:`open`. A session is also a
    context manager that closes the file. One lock serialises all use of the file and the
    model, so the web server's threads can share a session.

    Attributes
    ----------
    path, feature_names, settings
        The session file; the p feature names; the settings stored in the file.
    expert
        The default expert of this object's calls (``''``: the unnamed expert).
    elicitor
        The underlying :class:`~elicit.elicitation.elicitor.Elicitor` (read it, do not answer
        through it).
    target_description, summary, excluded
        How the outcome is named to the expert; the notes made when the session was created;
        the features left out of the questions (``{name: reason}``).
    """

    @classmethod
    def create(cls, X: np.typing.ArrayLike, y: np.typing.ArrayLike,
               meta_features: np.typing.ArrayLike | None = None,
               feature_names: Sequence[str] | None = None, *, path: str | os.PathLike,
               hyper: Hyper | None = None, engine: str | Engine = "auto", utility: str = "fast",
               refine: int = 10, strategy: str | None = None, pool_size: int | None = None,
               seed: int = 0, y_offset: float = 0.0, description: str = "",
               texts: Mapping[str, Sequence[str]] | Sequence[Sequence[str]] | None = None,
               standardize: bool = False, target_description: str | None = None,
               expert: str | None = None, meta_source: str | None = None, overwrite: bool = False,
               utility_target: str = "predictive", questions: object = PAPER_QUESTIONS,
               settings: RoundSettings | None = None) -> Session:
        """Create a new session file and return the open session.

        Parameters
        ----------
        X, y
            Training inputs (n x p) and targets (n,): arrays, or a DataFrame (its columns
            name the features) and a Series (aligned to ``X``'s rows by index).
        meta_features
            The meta-features U (p x d), a DataFrame indexed by feature name matched by name;
            None: how the columns of ``X`` correlate.
        feature_names
            One unique, non-empty name per feature (default: ``X``'s columns or x0, x1, ...).
        path, overwrite
            The session file to write; replace an existing one.
        hyper, engine, utility, refine, pool_size, utility_target
            As for :class:`~elicit.elicitation.elicitor.Elicitor` (``utility_target``:
            ``"predictive"`` or ``"params"``); without ``hyper``, the model the kinds asked
            need, else the paper's.
        strategy, seed
            A registered strategy (default ``"sequential"``); the seed of the query random
            stream (see the module docstring).
        texts
            Example snippets per feature: a dict name -> list of strings, or p lists.
        y_offset
            Added to predictions on top of y's mean (when ``y`` was already centred).
        description, target_description
            Free text stored in the file; how the question names the outcome (default
            ``"the outcome 'NAME'"`` for a named Series ``y``, else ``"the outcome"``).
        standardize
            Centre and scale X's columns inside the model (predict takes the original units).
        expert, meta_source
            The default expert of the returned session object; where the meta-features came
            from (shown in the summary).
        questions
            The kinds of question asked (:func:`~elicit.elicitation.kinds.parse_questions`),
            e.g. ``"pairs"`` (the default), ``"relevance"`` or ``"all"``.
        settings
            The round's settings as one :class:`~elicit.elicitation.settings.RoundSettings`
            instead of those keywords (give one or the other; :attr:`round_settings`).

        Raises
        ------
        ElicitError
            On invalid data, names or settings, or an existing file without ``overwrite``.
        """
        path = Path(path)
        who = check_expert(expert)
        overwrite, standardize = check_bool(overwrite, "overwrite"), check_bool(standardize,
                                                                               "standardize")
        settings = given_settings(settings, engine=engine, utility=utility, refine=refine,
                                  pool_size=pool_size, target=utility_target,
                                  questions=questions, strategy=strategy, seed=seed)
        if settings.stan_file is not None:
            raise ElicitError("a session runs the shipped Stan program; leave "
                              "settings.stan_file None")
        if hyper is not None and settings.model is not None and hyper.model != settings.model:
            raise ElicitError(f"hyper names model {hyper.model!r} and settings model "
                              f"{settings.model!r}; name it once")
        kinds = parse_questions(settings.questions)
        needs = settings.model or model_for(kinds)
        if hyper is None and needs is not None:
            hyper = Hyper(model=needs)
        strategy = "sequential" if settings.strategy is None else settings.strategy
        pr = prepare(X, y, meta_features, feature_names, texts, hyper, strategy,
                     settings.seed, y_offset, standardize, target_description, meta_source)
        store.check_new_path(path, overwrite)
        settings = dataclasses.replace(settings, strategy=strategy)
        cands = question_pairs(pr.U, [pr.names.index(n) for n in pr.excluded])
        dropped = len(pr.names) * (len(pr.names) - 1) // 2 - len(cands)
        if dropped:
            pr.summary.append(f"{len(cands)} pairs can be asked about; {dropped} are not "
                              "(a feature left out, or identical meta-features)")
        # Build the model once before writing anything: bad settings fail here, not on open.
        probe = Elicitor(cls._scaled(pr.X, pr.x_centre, pr.x_scale), pr.y - pr.y_centre,
                         pr.U, pr.hyper, settings=dataclasses.replace(settings, model=None),
                         engine=engine if isinstance(engine, Engine) else "auto",
                         candidates=cands)
        # every round setting as the probe checked it; the model is the stored hyperparameters'
        stored = {"hyper": dataclasses.asdict(pr.hyper),
                  **{k: v for k, v in probe.settings.to_json().items()
                     if k not in ("model", "stan_file", "stan_file_sha256")},
                  "engine": engine.name if isinstance(engine, Engine) else settings.engine,
                  "questions": list(kinds)}
        pr.summary.extend(kernel_note(probe.fit.K, cands))
        meta = _new_meta(pr, stored, probe, y_offset, description)
        store.create_file(path, meta, pr.X, pr.y, pr.U, pr.texts, overwrite)
        return cls._open(path, engine=engine, elicitor=probe, expert=who)

    def stop_hint(self, expert: str | None = None) -> str | None:
        """A hint that the expert may stop, or None: once their last :data:`STOP_WINDOW` answered
        questions were each worth less than :data:`STOP_FRACTION` (:func:`worth`)."""
        with self._lock:
            return record.read_stop_hint(self.conn, self._who(expert))

    def pending(self, expert: str | None = None) -> list[SessionQuery]:
        """The expert's queries shown and not yet answered or skipped, oldest first."""
        with self._lock:
            who = self._who(expert)
            self._sync(who)
            return record.read_pending(self.conn, self.feature_names, self.uid, who)

    def next_query(self, expert: str | None = None) -> SessionQuery:
        """The question to ask the expert now, recorded before it is returned (every call
        returns it until it is answered); an error when every question is answered."""
        return self.batch(1, expert)[0]

    def batch(self, k: int, expert: str | None = None) -> list[SessionQuery]:
        """``k`` (at most :data:`MAX_BATCH`) questions to ask together, by the session's strategy
        (ranked by gain: feature-disjoint where possible); an open batch is returned as it is."""
        check_int(k, f"batch size must be a positive integer, got {k!r}", 1)
        if k > MAX_BATCH:
            raise ElicitError(f"batch size {k} is too large: ask at most {MAX_BATCH} questions "
                              "at a time")
        with self._lock:
            who = self._who(expert)
            # Another process may answer what was just chosen: choose again. Each lost round
            # is an answer of theirs (a count of the questions left raced with their commit).
            for _ in range(LOST_ROUNDS):
                self._sync(who, saving=True)
                record.cancel_answered_pending(self.conn)
                if pend := record.read_pending(self.conn, self.feature_names, self.uid, who):
                    return pend
                left = len(self.elicitor.open_questions())
                noun, by = self.question_noun, record.by_expert(who)
                if left == 0:
                    raise ElicitError(f"every one of the {self.n_pairs} {noun}s has been "
                                      f"answered{by}; nothing is left to ask (undo an answer "
                                      "to revise it)")
                if k > left:
                    raise ElicitError(f"batch size {k} is larger than the {left} {noun}(s) "
                                      f"left to ask{by}; ask for {left} or fewer")
                record.add_queries(self.conn, self._choose(int(k), who), who)
                self._sync(who, wrote=True)
        raise ElicitError("could not record a new question: other programs keep answering "
                          "this session at the same moment; try again")

    def keep_first_question(self) -> None:
        """Choose a new session's first question now, while the model is loaded, and keep it
        in the file, not shown: the first ``elicit ask`` shows it before its model loads
        (:func:`~elicit.session.record.first_question`). Nothing once a question was asked."""
        with self._lock:  # the model as opened: a file written since holds a query
            if not record.n_queries(self.conn):
                record.keep_first(self.conn, self.meta, self._choose(1, "")[0])

    @single_blas_thread
    def _choose(self, k: int, expert: str) -> list[Query]:
        """The next ``k`` questions by the stored strategy, the expert's skips excluded."""
        el, c = self.elicitor, self.conn
        skipped = record.skipped_questions(c, expert)
        # When everything left was skipped, the skipped questions come back.
        exclude = skipped if skipped and len(el.open_questions(skipped)) else None
        rng = np.random.default_rng(np.random.SeedSequence([self.settings["seed"],
                                                            record.n_queries(c)]))
        strategy = self.settings["strategy"]
        if get_strategy(strategy).needs_ranking:
            el.nonsequential_ranking()  # made at the no-feedback MAP, also after answers
        return el.next_batch(strategy, rng, k, exclude=exclude)

    def answer(self, query: SessionQuery | int, answer: str | Answer,
               comment: str | None = None, expert: str | None = None,
               on_saved: Callable[[], object] = lambda: None) -> AnswerRecord:
        """Record the expert's answer to a pending query, durably, then refit the model.

        Parameters
        ----------
        query
            A query from :meth:`next_query` / :meth:`batch`, or its id.
        answer
            One of the answers (or keys) of the question's kind, e.g. ``"similar"`` (``s``),
            ``"relevant"`` (``r``) or ``"dont_know"`` (``?``).
        comment, expert
            Optional free text stored with the answer; who answers (default: the query's
            expert, else this object's default).
        on_saved
            Called once the answer is committed, before the refit (which may take seconds);
            should it raise, the answer stays saved, the refit runs, then its error propagates.

        Returns
        -------
        AnswerRecord
            Returned only once the answer is committed.

        Raises
        ------
        AnsweredElsewhere
            The expert already answered the question elsewhere (another tab, window or
            process); the query is withdrawn.
        ElicitError
            An invalid answer or comment, a query not asked in this session or to another
            expert, or one skipped or withdrawn.
        EngineError
            The answer is saved, but the model could not be refitted (the message says so).
        """
        ans = Answer.parse(answer, self.kinds[0] if len(self.kinds) == 1 else None)
        comment = check_comment(comment)
        with self._lock:
            qid, who = _id_and_expert(query, self, expert)
            self._sync(who, saving=True)
            aid = None
            try:
                aid, i, j, at, kind = record.answer_query(self.conn, qid, ans.value, comment,
                                                          self.feature_names, who)
            except sqlite3.IntegrityError as e:
                # Unreachable after the checks; should the indexes refuse, unblock the session.
                record.cancel_query(self.conn, qid, f"refused by the file: {e}")
                raise AnsweredElsewhere(f"query {qid} was already answered elsewhere (the "
                                        f"session file refused a second answer: {e}); ask "
                                        "for the next query") from None
            else:  # saved: the caller's own errors are not the file's refusal
                on_saved()
            finally:
                # Committed (or withdrawn). Only now refit; a crash from here loses nothing.
                self._refit(who, f"answer {aid} ({ans.value}) is saved, but " if aid else "")
            return AnswerRecord(aid, qid, i, public_j(j), ans, comment, at, who, kind)

    def _refit(self, who: str, done: str) -> None:
        """Refit after a commit; a failure's message starts with what was committed (``done``)."""
        try:
            self._sync(who, wrote=True)
        except EngineError as e:
            raise EngineError(f"{done}the model could not be refitted: {e}") from None

    def skip(self, query: SessionQuery | int, expert: str | None = None) -> None:
        """Skip a pending query: not asked again before the expert's next answer or undo."""
        with self._lock:
            qid, who = _id_and_expert(query, self, expert)
            record.skip_query(self.conn, qid, self.feature_names, who)
            self._sync(who, wrote=True)

    def undo(self, expert: str | None = None, answer_id: int | None = None) -> AnswerRecord:
        """Undo the expert's last active answer (kept in the file with ``undone_at`` set) and
        refit; their open queries are withdrawn and the undone question is asked next.
        ``answer_id``: the answer the caller showed as the last (a page of the web app).

        Raises
        ------
        ElicitError
            If the expert has no answer to undo, or their last is not ``answer_id``.
        EngineError
            The undo is saved, but the model could not be refitted (the message says so).
        """
        with self._lock:
            who = self._who(expert)
            aid, qid, i, j, a, comment, at, kind = record.undo_last(self.conn, who, answer_id)
            self._refit(who, f"answer {aid} ({a}) is undone, but ")
            return AnswerRecord(int(aid), int(qid), int(i), public_j(j), Answer(a), comment, at,
                                who, kind)

    # records, exports and plots: functions of a session in their own modules
    history = property(export.history)
    queries = property(export.queries)
    events = property(export.events)
    agreement = export.agreement
    to_inferencedata = export.to_inferencedata
    export_prior = export.export_prior
    plot_K = figures.plot_K
    plot_gains = figures.plot_gains


def kernel_note(K: np.ndarray, pairs: np.ndarray) -> list[str]:
    """``[note]`` when the start kernel's median K_ij over ``pairs`` is practically 0 or 1."""
    k = np.asarray(K)[pairs[:, 0], pairs[:, 1]]
    med = float(np.median(k))
    if med < K_IDENTITY:
        return [f"note: at the start K is practically the identity for most pairs (median "
                f"K_ij {med:.2g}, largest {float(np.max(k)):.2g}): the meta-features differ "
                "so much between features that answers can hardly change the model; give "
                "meta-features on a common scale, or none for the default "
                "(docs/metafeatures.md)"]
    if med > K_ONES:
        return [f"note: at the start K is practically all ones for most pairs (median K_ij "
                f"{med:.4g}, smallest {float(np.min(k)):.4g}): the meta-features are so close "
                "together that every feature's weight is tied to the others; give "
                "meta-features on a larger scale, or none for the default "
                "(docs/metafeatures.md)"]
    return []


def _id_and_expert(query: SessionQuery | int | str, session: Session,
                   expert: str | None) -> tuple[int, str]:
    """The id of a query (a :class:`SessionQuery` of ``session`` or an id) and who answers
    it: ``expert``, else the query's, else the session's default."""
    if isinstance(query, SessionQuery):
        if query.session_uid != session.uid:
            raise ElicitError(f"{query} belongs to another session, not to {session.path}")
        return query.id, session._who(query.expert if expert is None else expert)
    if (isinstance(query, (int, np.integer)) and not isinstance(query, bool)) or (
            isinstance(query, str) and re.fullmatch(r"\s*[0-9]+\s*", query)):
        qid = int(query)
        if not 1 <= qid <= MAX_ID:
            # refused before anything else: SQLite cannot even look such a number up
            raise record.unknown_query(qid)
        return qid, session._who(expert)
    raise ElicitError(f"expected a query from next_query() (or its id), got {query!r}")


def _new_meta(pr, settings: dict[str, Any], probe: Elicitor, y_offset: float,
              description: str) -> dict[str, Any]:
    """The ``meta`` table of a new session file (``resolved``: as the model resolved them)."""
    from importlib.metadata import PackageNotFoundError, version

    from elicit.internal.provenance import code_version  # the release names no commit

    try:
        elicit_version = version("elicit")
    except PackageNotFoundError:
        elicit_version = "unknown"
    combined, per = store.data_hashes(pr.X, pr.y, pr.U)
    return {
        "format_version": store.FORMAT_VERSION, "application": "elicit-session",
        "created": store.now(), "session_uid": uuid.uuid4().hex,
        "elicit_version": elicit_version, "code": code_version(), "data_hash": combined,
        "array_hashes": per,
        "shapes": {"X": list(pr.X.shape), "y": list(pr.y.shape), "U": list(pr.U.shape)},
        "feature_names": pr.names, "settings": settings,
        "resolved": {"engine": probe.engine.name, "threshold_mean": probe.hyper.threshold_mean,
                     "pool_size": probe.pool_size, "n_pairs": len(probe.candidates)},
        "y_offset": float(y_offset), "y_centre": pr.y_centre, "x_centre": pr.x_centre,
        "x_scale": pr.x_scale, "excluded_features": pr.excluded,
        "target_description": pr.target_description, "summary": pr.summary,
        "description": str(description),
    }
