"""The state of a session: its file, its model kept in step with the file (also when another
process writes to it), and the read-only questions; ``Session`` adds the question flow."""

from __future__ import annotations

import contextlib
import dataclasses
import os
import sqlite3
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np
import pandas as pd

from elicit.elicitation.elicitor import Elicitor
from elicit.elicitation.kinds import get_kind, spell_questions
from elicit.elicitation.settings import RoundSettings
from elicit.engines.base import Engine
from elicit.errors import ElicitError
from elicit.internal.text import listing
from elicit.model.posterior import NIGPosterior
from elicit.model.result import MAPResult
from elicit.model.spec import Hyper
from elicit.model.variants import get_model
from elicit.prior.setup import coupled_features
from elicit.session import record, store
from elicit.session.opening import SessionReader
from elicit.session.questions import public_j

if TYPE_CHECKING:
    from elicit.estimator import ElicitRegressor

S = TypeVar("S", bound="SessionState")


@dataclass(frozen=True)
class Snapshot:
    """The model and the answers of a session at one state of the file
    (:meth:`SessionState.snapshot`): what is read from one snapshot belongs together.

    Attributes
    ----------
    fit, posterior
        The MAP (gamma, xi, tau2, K); the NIG posterior at it (None unless asked for).
    answers
        The active answers of every expert, ``(kind, i, j, answer, expert)`` in answer order
        (as stored: ``j`` is :data:`~elicit.session.store.FEATURE_J` for a feature question).
    relevance, p_relevant
        Each feature's relevance class (1 relevant, 0 irrelevant, -1 not judged) and
        probability of affecting the outcome at the MAP (:func:`_p_relevant`; None unless
        asked for); None for a model without relevance classes.
    direction
        The signs s of the prior mean delta s of beta; None for a model without a direction mean.
    """

    fit: MAPResult
    posterior: NIGPosterior | None
    answers: list[tuple[str, int, int, str, str]]
    relevance: np.ndarray | None = None
    p_relevant: np.ndarray | None = None
    direction: np.ndarray | None = None


class SessionState(SessionReader):
    """A session file with its model kept in step (the base of
    :class:`~elicit.session.session.Session`)."""

    builds_model = True

    def __init__(self, path: Path, conn: sqlite3.Connection, meta: dict[str, Any],
                 X: np.ndarray, y: np.ndarray, U: np.ndarray, texts: dict[int, list[str]],
                 engine: str | Engine | None = None, elicitor: Elicitor | None = None,
                 expert: str = "") -> None:
        super().__init__(path, conn, meta, X, y, U, texts, expert)
        # The level added back to predictions: the centre Session.create subtracted (format
        # 2) plus the y_offset given by the caller (format 1 stored only the latter).
        self.y_offset: float = (float(meta.get("y_offset", 0.0)) + float(meta.get("y_centre", 0.0)))
        self._x_centre = None if meta.get("x_centre") is None else np.asarray(meta["x_centre"])
        self._x_scale = None if meta.get("x_scale") is None else np.asarray(meta["x_scale"])
        if elicitor is None:
            st = self.settings
            # The pool the session was made with, so that a later default does not change it.
            pool = st["pool_size"] if st["pool_size"] is not None else \
                meta.get("resolved", {}).get("pool_size")
            # the strategy is the session's to use (a file may name one registered later)
            rs = dataclasses.replace(self.round_settings, model=None, pool_size=pool, strategy=None)
            if isinstance(engine, str):
                rs = dataclasses.replace(rs, engine=engine)
            elicitor = Elicitor(
                self._model_X(X), y - float(meta.get("y_centre", 0.0)), U,
                Hyper(**st["hyper"]), settings=rs,
                engine=engine if isinstance(engine, Engine) else "auto",
                candidates=self.candidates())
        self.elicitor = elicitor
        self._data_version = -1
        self._active: list[tuple[str, int, int, str, str]] = []
        self._asked_for: str | None = None
        self._sync(expert, force=True)

    @property
    def round_settings(self) -> RoundSettings:
        """The round's settings the file stores (the model: the stored hyperparameters')."""
        st = self.settings
        return RoundSettings.from_json({
            **st, "model": st["hyper"].get("model"), "questions": spell_questions(self.questions)})

    @classmethod
    def open(cls: type[S], path: str | os.PathLike, X=None, y=None, meta_features=None, *,
             engine: str | Engine | None = None, expert: str | None = None,
             read_only: bool = False) -> S:
        """Open an existing session and rebuild its model from the recorded answers.

        Parameters
        ----------
        path
            The session file (an older format is migrated in place, in one transaction).
        X, y, meta_features
            Optional: the data you expect; each one given must match the stored array.
        engine
            Override the stored engine setting (e.g. ``"numpy"`` where CmdStan is missing).
        expert
            The default expert of this object's calls (default: the unnamed expert).
        read_only
            Never write to the file: a read-only file or folder is fine, an older format is
            read as if migrated, and asking, answering or undoing is refused.

        Raises
        ------
        ElicitError
            A missing, damaged or non-session file, a read-only one (unless ``read_only``),
            a newer format, or data that differ from the session's (never written to).
        """
        return cls._open(path, X, y, meta_features, engine=engine,
                         expert=record.check_expert(expert), read_only=read_only)

    @staticmethod
    def _scaled(X: np.ndarray, centre, scale) -> np.ndarray:
        return X if centre is None else (X - np.asarray(centre)) / np.asarray(scale)

    def _model_X(self, X: np.ndarray) -> np.ndarray:
        return self._scaled(X, self._x_centre, self._x_scale)

    @contextlib.contextmanager
    def unless_busy(self) -> Iterator[bool]:
        """Hold the session's lock if no other thread holds it (yields True), else yield False
        at once: for a front end that must not wait for the model."""
        got = self._lock.acquire(blocking=False)
        try:
            yield got
        finally:
            if got:
                self._lock.release()

    def _sync(self, expert: str, force: bool = False, wrote: bool = False,
              saving: bool = False) -> None:
        """Refit when the active answers changed, mark the questions ``expert`` answered;
        refuse a replaced file (``saving``: a write, whose message says nothing was saved).
        ``PRAGMA data_version`` changes only when *another* connection commits: the usual
        case is one tiny query."""
        store.check_same_file(self.conn, writing=saving or wrote)
        v = record.data_version(self.conn)
        if v != self._data_version or force or wrote:
            self._data_version = -1  # until refitted: a failed refit is tried at the next call
            # Re-read, not patched: another process may have committed before our write.
            active = record.active_answers(self.conn)
            if force or active != self._active:
                self.elicitor.set_answers(active, asked=_asked_by(active, expert))
                self._active, self._asked_for = active, expert
            self._data_version = v
        if self._asked_for != expert:
            self.elicitor.set_asked(_asked_by(self._active, expert))
            self._asked_for = expert

    def snapshot(self, posterior: bool = False, p_relevant: bool = False) -> Snapshot:
        """The current MAP and active answers (with the posterior, the features' p(relevant) if
        asked for), read at one state of the file."""
        with self._lock:
            self._sync(self.expert)
            el = self.elicitor
            post = el.posterior() if posterior else None
            rel = None if el.relevance is None else np.array(el.relevance)
            prob = _p_relevant(el) if p_relevant and rel is not None else None
            signs = el.data.direction_signs if el.data.model.direction else None
            return Snapshot(el.fit, post, list(self._active), rel, prob, signs)

    def _read(self, query, *args):
        """``query(conn, *args)`` of :mod:`elicit.session.record` at the current state."""
        with self._lock:
            self._sync(self.expert)
            return query(self.conn, *args)

    @property
    def fit(self) -> MAPResult:
        """The current MAP (gamma, xi, tau2, K)."""
        return self.snapshot().fit

    @property
    def n_pairs(self) -> int:
        return len(self.elicitor.table)  # the model's own table: listed once

    @property
    def relevance(self) -> np.ndarray | None:
        """Each feature's relevance class in the current model (1 relevant, 0 irrelevant, -1
        not judged or disputed); None for a model without relevance classes."""
        return self.snapshot().relevance

    def is_done(self, expert: str | None = None) -> bool:
        """True when no question of any kind is left to ask ``expert`` (answered or closed)."""
        with self._lock:
            self._sync(self._who(expert))
            return len(self.elicitor.open_questions()) == 0

    def active_answers(self) -> list[tuple[int, int | None, str]]:
        """The answers the model uses, of every expert: (i, j, answer) in answer order."""
        return [(i, public_j(j), a) for _, i, j, a, _ in self.snapshot().answers]

    def posterior(self) -> NIGPosterior:
        """The NIG posterior of (beta, sigma^2) at the current MAP (beta in the model's
        units: for a standardised session, per standard deviation of each column)."""
        post = self.snapshot(posterior=True).posterior
        assert post is not None
        return post

    def predict(self, X_new) -> np.ndarray:
        """Posterior predictive mean at the rows of ``X_new``, on y's original scale.

        A DataFrame is matched to the features by column name, an array taken in feature
        order; give data preprocessed like the session's ``X`` (with ``standardize=True``,
        in the original units).
        """
        if isinstance(X_new, pd.DataFrame):
            cols = [str(c) for c in X_new.columns]
            if parts := [f"{what} column(s) {listing(found)}" for what, found in (
                    ("missing", [n for n in self.feature_names if n not in set(cols)]),
                    ("unknown", [c for c in cols if c not in set(self.feature_names)])) if found]:
                raise ElicitError(f"X_new does not match the session's features: "
                                  f"{'; '.join(parts)}")
            X_new = X_new.set_axis(cols, axis=1)[self.feature_names]
        try:
            X_new = np.asarray(X_new, dtype=float)
        except (TypeError, ValueError) as e:
            raise ElicitError(f"X_new must be numeric: {e}") from None
        with self._lock:
            self._sync(self.expert)
            return self.elicitor.predict(self._model_X(X_new)) + self.y_offset

    def to_estimator(self, **params: Any) -> ElicitRegressor:
        """The session's model as a fitted scikit-learn regressor, ``params`` set (its MAP
        and ``predict`` are the session's; direction answers are an :class:`ElicitError`:
        ``docs/session.md``, "scikit-learn")."""
        from elicit.estimator import ElicitRegressor  # scikit-learn: imported when asked for

        snap = self.snapshot()
        if snap.direction is not None and snap.direction.any():
            raise ElicitError("to_estimator() cannot carry direction answers (ElicitRegressor "
                              "has no prior mean of beta): use the session's predict()")
        active = [(i, j, a) for k, i, j, a, _ in snap.answers if get_kind(k).arity == 2]
        if snap.relevance is not None:
            for key, c in (("relevant", 1), ("irrelevant", 0)):
                params.setdefault(key, [self.feature_names[k]
                                        for k in np.flatnonzero(snap.relevance == c)])
        if get_model(self.elicitor.hyper.model).known_coupling and "coupled" not in params:
            J = np.flatnonzero(coupled_features(len(self.feature_names), self.elicitor.candidates))
            params["coupled"] = [self.feature_names[k] for k in J]
        est = ElicitRegressor.from_answers(
            self.U, active, feature_names=self.feature_names,
            hyper=self.elicitor.hyper, engine=self.elicitor.engine, **params)
        y_centre = float(self.meta.get("y_centre", 0.0))
        est.fit(pd.DataFrame(self._model_X(self.X), columns=self.feature_names), self.y - y_centre)
        p = len(self.feature_names)
        # back from the session's preprocessing to the units its predict takes
        est.set_units(np.zeros(p) if self._x_centre is None else np.asarray(self._x_centre),
                      np.ones(p) if self._x_scale is None else np.asarray(self._x_scale),
                      self.y_offset)
        # a refit (clone, cross_val_score) gets data in those units: preprocess as the session
        refit = dict(fit_intercept=True, standardize=self._x_scale is not None)
        return est.set_params(**{k: v for k, v in refit.items() if k not in params})


def _p_relevant(el: Elicitor) -> np.ndarray:
    """p(relevant) at the elicitor's MAP: 1 or 0 for a judged feature, else s(zeta + log BF_k)
    (:class:`~elicit.elicitation.features.FeatureScorer`)."""
    from elicit.elicitation.features import FeatureScorer
    from elicit.elicitation.scorer import UtilityScorer

    classes = np.asarray(el.data.relevance)
    p = FeatureScorer(UtilityScorer(el.data, el.fit, el.engine)).p_relevant(np.arange(el.data.p))
    return np.where(classes == 1, 1.0, np.where(classes == 0, 0.0, p))


def _asked_by(active: Sequence[tuple], expert: str) -> list[tuple[str, int, int]]:
    """The questions ``(kind, i, j)`` of ``expert``'s active answers."""
    return [(k, i, j) for k, i, j, _, e in active if e == expert]
