"""The state of one elicitation (fit -> utilities -> query -> answer -> refit), and asking
through it. A question is never asked twice; a "don't know" is recorded and leaves the model
unchanged; any other answer enters the data as its kind says, and the model is refitted."""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Iterable, Sequence
from functools import cached_property
from pathlib import Path

import numpy as np

from elicit.elicitation.answers import Answer
from elicit.elicitation.gains import Scores
from elicit.elicitation.kinds import (
    PAPER_QUESTIONS,
    QuestionKind,
    get_kind,
    kind_for,
    parse_questions,
)
from elicit.elicitation.questions import NO_FEATURE, Query, question_key
from elicit.elicitation.scorer import UtilityScorer
from elicit.elicitation.settings import RoundSettings, given_settings
from elicit.elicitation.strategies import Ranking, get_strategy, round_pool
from elicit.elicitation.table import QuestionSet, QuestionTable, check_candidates, n_pairs
from elicit.engines import get_engine
from elicit.engines.base import Engine
from elicit.errors import ElicitError
from elicit.internal.checks import check_int
from elicit.internal.threads import single_blas_thread
from elicit.model.posterior import NIGPosterior
from elicit.model.result import MAPResult
from elicit.model.spec import Hyper, ModelData, all_pairs, validate_regression
from elicit.prior.setup import fit_no_feedback
from elicit.prior.tau2 import check_tau2

__all__ = ["AnsweredQuestion", "Elicitor", "Query"]

#: how many rounds in a row the base Hessian may be the one the last refit ended with
HESSIAN_REUSE = 10
#: the seed of a mixed non-sequential ranking's pool when no random stream is given (a
#: session ranks so, and must rank alike when it is reopened)
RANKING_POOL_SEED = 0
#: the largest default pool: a pool of m holds one of the best 0.1% with probability
#: 1 - 0.999^m (98% at m = 4000), while a round costs time in proportion to m
POOL_CAP = 4000


class AnsweredQuestion(tuple):
    """An entry of :attr:`Elicitor.history`: ``(i, j, answer)``, with :attr:`kind`."""

    kind: str

    def __new__(cls, i: int, j: int | None, answer: Answer, kind: str) -> AnsweredQuestion:
        new = super().__new__(cls, (i, j, answer))
        new.kind = kind
        return new

    def __reduce__(self) -> tuple:
        return (AnsweredQuestion, (*self, self.kind))


def _kept(fit: MAPResult, n: int) -> MAPResult:
    """``fit``, said when it did not converge: the next questions are scored at it."""
    if not fit.converged:
        warnings.warn(f"the refit after answer {n} did not converge ({fit.message}); the "
                      "next questions are scored at its last point", stacklevel=4)
    return fit


class Elicitor:
    """The state of one elicitation.

    Parameters
    ----------
    X, y, U
        Training inputs (n x p), targets (n,) and feature meta-features (p x d).
    hyper
        Model hyperparameters (``threshold_mean="auto"``: resolved at the no-feedback MAP);
        ``hyper.model`` names the model unless ``settings`` names one (neither: the model
        the questions need).
    settings
        The round's settings (:class:`~elicit.elicitation.settings.RoundSettings`) instead of
        the keywords below (not both); its ``strategy`` and ``seed`` are not used here.
    engine, stan_file, utility, refine, target, pool_size, questions
        The settings as keywords (``target``: ``utility_target``); ``engine`` may also be an
        :class:`Engine` (with ``settings``: used instead of building ``settings.engine``).
    candidates
        The pairs that may be asked (default: all p(p-1)/2 pairs, which are then not listed).
    """

    #: the answers in answer order
    history: list[AnsweredQuestion]
    data: ModelData
    fit: MAPResult
    _asked: set[int]
    _hessian: np.ndarray | None
    _ranking: Ranking | None

    def __init__(self, X: np.typing.ArrayLike, y: np.typing.ArrayLike, U: np.typing.ArrayLike,
                 hyper: Hyper | None = None, *, settings: RoundSettings | None = None,
                 engine: str | Engine = "auto", stan_file: str | Path | None = None,
                 utility: str = "fast", refine: int = 10, pool_size: int | None = None,
                 candidates: np.typing.ArrayLike | None = None, target: str = "predictive",
                 questions: object = PAPER_QUESTIONS) -> None:
        X, y, U = validate_regression(X, y, U)
        if hyper is not None and not isinstance(hyper, Hyper):
            raise ElicitError(f"hyper must be an elicit.Hyper, got {type(hyper).__name__}")
        settings = given_settings(settings, engine=engine, stan_file=stan_file, utility=utility,
                                  refine=refine, pool_size=pool_size, target=target,
                                  questions=questions)
        if settings.model is None and hyper is not None:  # else the questions' model
            settings = dataclasses.replace(settings, model=hyper.model)
        hyper = hyper or Hyper()
        # validated before the engine: a Stan build takes minutes
        self.settings: RoundSettings = settings.validate()
        hyper = dataclasses.replace(hyper, model=str(self.settings.model))
        self.questions: tuple[str, ...] = parse_questions(self.settings.questions)
        self.kinds: tuple[QuestionKind, ...] = tuple(get_kind(n) for n in self.questions)
        self._utility = self.settings.utility_args().validate()
        p = X.shape[1]
        self._candidates = None if candidates is None else check_candidates(candidates, p)
        if p < 2 or (self._candidates is not None and len(self._candidates) == 0):
            raise ElicitError("need at least 2 features" if p < 2 else "candidates holds no pair")
        self.table = QuestionTable([k.segment(p, self._candidates) for k in self.kinds])
        n_candidates = n_pairs(p) if self._candidates is None else len(self._candidates)
        pool_size = self.settings.pool_size
        self.pool_size = (min(n_candidates, 10 * p, POOL_CAP) if pool_size is None else pool_size)
        self._pool_explicit = pool_size is not None
        self.utility, self.refine = self.settings.utility, self.settings.refine
        self.target = self.settings.utility_target
        if isinstance(engine, Engine) and stan_file is not None:
            raise ElicitError("stan_file goes with an engine's name; an Engine object runs its "
                              "own program (give the file to the engine)")
        self.engine = engine if isinstance(engine, Engine) else get_engine(
            self.settings.engine, hyper.variant, self.settings.stan_file)
        self.base, self.initial_fit = fit_no_feedback(self.engine, X, y, U, hyper, self._candidates)
        # base Hessians at the current and the no-feedback MAP, for the next warm refit
        self._initial_hessian: np.ndarray | None = None
        self._hessian_age = 0
        self._first: tuple | None = None   # the start's, while set_tau2 replaced its tau2
        self.reset()

    @property
    def hyper(self) -> Hyper:
        return self.base.hyper

    @property
    def n_answers(self) -> int:
        return len(self.history)

    @cached_property
    def candidates(self) -> np.ndarray:
        """The candidate pairs (k x 2): the ones given, else all pairs (listed when asked for)."""
        return all_pairs(self.base.p) if self._candidates is None else self._candidates

    @property
    def noun(self) -> str:
        """How the questions are counted: the kind's noun when one kind is asked."""
        return self.kinds[0].noun if len(self.kinds) == 1 else "question"

    @property
    def relevance(self) -> np.ndarray | None:
        """Each feature's relevance class (1, 0, -1 not judged); None without relevance classes."""
        return self.data.relevance if self.data.model.relevance else None

    def query(self, index: int, gain: float | None = None, exact: bool = False) -> Query:
        """The question at table ``index`` as a :class:`Query`, with its ``gain`` and ``exact``."""
        return Query.of_row(self.table.rows([index])[0], gain, exact,
                            self.table.kind_of(index).name)

    def open_questions(self, exclude: Iterable | None = None) -> QuestionSet:
        """The questions not asked, not in ``exclude``, about no feature another kind closed."""
        removed = set(self._asked)
        if exclude is not None:
            removed.update(self._question_index(q) for q in exclude)
        closes = [k.closes(self.data) for k in self.kinds]
        closed = []
        for kind in self.kinds:
            masks = [c for k, c in zip(self.kinds, closes) if k is not kind and c is not None]
            closed.append(np.logical_or.reduce(masks) if masks else None)
        return self.table.open_set(np.fromiter(removed, dtype=np.int64, count=len(removed)), closed)

    def unasked(self) -> np.ndarray:
        """The questions that may still be asked, as rows (:meth:`open_questions`)."""
        return self.table.rows(self.open_questions().indices())

    def is_asked(self, i: int, j: int | None, kind: str | None = None) -> bool:
        """Whether the question ``(i, j)`` (of ``kind`` where two kinds could ask it) was asked."""
        return self._question_index((kind, i, j) if kind else (i, j)) in self._asked

    def _question_index(self, question) -> int:
        """The table index of ``question``: ``(i, j)``, ``(kind, i, j)`` or a :class:`Query`."""
        kind, i, j = _unpack(question)
        row = question_key(i, j)
        k = kind_for(*row, among=self.kinds, kind=kind)
        t = int(self.table.locate(k, np.array([row]))[0])
        if t < 0:
            raise ElicitError(self.table.segments[self.table.kinds.index(k)].missing(row))
        return t

    def _entry(self, kind, i, j, answer) -> tuple[QuestionKind, int, tuple[int, int],
                                                  AnsweredQuestion]:
        """The kind, table index, row and history entry of an answer to ``(i, j)``."""
        row = question_key(i, j)
        said = answer if isinstance(answer, Answer) else None
        if isinstance(answer, str):
            try:
                said = Answer.parse(answer)
            except ElicitError:
                pass  # parsed again once the kind is known, for the kind's own message
        k = kind_for(*row, said, among=self.kinds, kind=kind)
        ans = Answer.parse(answer, k)
        t = self._question_index((k.name, *row))
        return k, t, row, AnsweredQuestion(row[0], None if k.arity == 1 else row[1], ans, k.name)

    @single_blas_thread
    def answer(self, i: int, j: int | None, answer: str | Answer,
               kind: str | None = None) -> MAPResult:
        """Record an answer to ``(i, j)`` (``j`` None: one feature); refit unless "don't know".
        ``kind`` names the question's kind where the answer does not (``"dont_know"`` to a
        feature question when several feature kinds are asked)."""
        k, t, row, entry = self._entry(kind, i, j, answer)
        if t in self._asked:
            what = f"feature {i}" if k.arity == 1 else f"pair ({i}, {j})"
            raise ElicitError(f"{what} was already answered; a question is asked once")
        if refit := entry[2].outcome is not None:
            # fitted before anything is recorded: after an engine error the answer can be
            # given again. Warm as the round's refits of this answer started.
            data = k.add(self.data, row, entry[2])
            self.fit = self.engine.fit(data, init=self.fit, hessian=self._hessian)
            self.data, self._hessian = data, None
        self._asked.add(t)
        self.history.append(entry)
        return _kept(self.fit, len(self.history)) if refit else self.fit

    @single_blas_thread
    def set_answers(self, answers: Sequence[tuple], *,
                    asked: Iterable[tuple] | None = None) -> MAPResult:
        """Replace all answers (resume, undo): refit once from the no-feedback MAP. An invalid
        question or answer, or (without ``asked``) a question answered twice, is an ElicitError
        that leaves the state unchanged.

        Parameters
        ----------
        answers
            ``(i, j, answer, ...)`` in answer order, or ``(kind, i, j, answer, ...)`` (further
            items are ignored).
        asked
            The questions not to offer again; default: the answered ones, each answerable
            once. With several experts, the current expert's (a question may then repeat).
        """
        history: list[AnsweredQuestion] = []
        given: dict[str, tuple[list, list]] = {k.name: ([], []) for k in self.kinds}
        seen: set[int] = set()
        for item in answers:
            kind, i, j = _unpack(item)
            k, t, row, entry = self._entry(kind, i, j,
                                           item[3] if isinstance(item[0], str) else item[2])
            if asked is None and t in seen:
                what = f"feature {i}" if k.arity == 1 else f"pair ({i}, {j})"
                raise ElicitError(f"{what} appears twice in the answers")
            seen.add(t)
            history.append(entry)
            if entry[2].outcome is not None:
                given[k.name][0].append(row)
                given[k.name][1].append(entry[2])
        index = seen if asked is None else {self._question_index(q) for q in asked}
        data = self.base
        for k in self.kinds:
            data = k.enter(data, *given[k.name])
        fit, hessian = self.initial_fit, self._initial_hessian
        if refit := any(given[k.name][0] for k in self.kinds):
            if any(k.resets(data.hyper.model) and given[k.name][0] for k in self.kinds):
                # the likelihood of y changed: the start's base Hessian does not apply
                fit, hessian = dataclasses.replace(fit, warm_hessian=None), None
            # fitted before anything is replaced: an engine error leaves the state whole
            fit, hessian = self.engine.fit(data, init=fit, hessian=hessian), None
        self._asked, self.history, self.data = index, history, data
        self.fit, self._hessian = fit, hessian
        return _kept(fit, len(history)) if refit else fit

    def set_asked(self, asked: Iterable) -> None:
        """Set the questions not to offer again to ``asked`` (items as in ``exclude``), no refit."""
        self._asked = {self._question_index(q) for q in asked}

    def set_tau2(self, tau2: float) -> MAPResult:
        """Refit with another fixed tau2 and the same answers; :meth:`reset` restores the first."""
        if self.hyper.variant != "fixed":
            raise ElicitError("set_tau2 needs a fixed tau2 (variant 'fixed'): this one learns it")
        first = self._first = self._first or (self.base, self.initial_fit, self._initial_hessian)
        now, asked = (self.base, self.initial_fit, self._initial_hessian), self._asked
        try:
            self.base = base = dataclasses.replace(first[0], hyper=dataclasses.replace(
                self.hyper, tau2=float(check_tau2(tau2, modes=()))))
            self.initial_fit, self._initial_hessian = self.engine.fit(base, init=first[1]), None
            self.set_answers([(a.kind, *a) for a in self.history])  # no change if it fails
        except BaseException:
            # an engine error leaves the state whole: the old tau2 with its fit
            self.base, self.initial_fit, self._initial_hessian = now
            raise
        self._asked = asked
        return self.fit

    def reset(self) -> None:
        """Forget every answer and the non-sequential ranking (back to the no-feedback MAP)."""
        if self._first:
            self.base, self.initial_fit, self._initial_hessian = self._first
        self._asked = set()
        self.history = []
        self.data = self.base
        self.fit = self.initial_fit
        self._hessian = self._initial_hessian
        self._ranking = None

    def score(self, questions: np.ndarray, refine: int | None = None) -> Scores:
        """Expected information gain of ``questions`` (table indices, or rows) at the MAP."""
        return self._score(self.data, self.fit, questions, refine)

    @single_blas_thread
    def _score(self, data: ModelData, fit: MAPResult, questions: np.ndarray,
               refine: int | None = None) -> Scores:
        questions = np.asarray(questions)
        kinds = None
        if questions.ndim == 1:
            index = questions.astype(np.int64)
            # every round scores hundreds of indices: one vectorised test, not a Python loop
            out = (index < 0) | (index >= len(self.table)) | (index != questions)
            if len(bad := questions[out]):
                raise ElicitError(f"question index {bad[0]} is out of range: this elicitor has "
                                  f"{len(self.table)} questions")
            questions = self.table.rows(index)
            names = np.array([s.kind.name for s in self.table.segments], dtype=object)
            kinds = names[self.table.segment_of(index)]
        elif len(bad := questions[(questions[:, 0] < 0) | (questions[:, 1] < NO_FEATURE)
                                  | (questions >= self.base.p).any(axis=1)]):
            raise ElicitError(f"question row {bad[0].tolist()} is out of range: this elicitor has "
                              f"p = {self.base.p} features (0 to {self.base.p - 1}; a "
                              "one-feature question's row is (k, -1))")
        # the base Hessian the refit that made this MAP ended with (within 0.5% of a fresh one
        # on Amazon) for up to HESSIAN_REUSE rounds, then a fresh one
        reuse = (fit is self.fit and fit.warm_hessian is not None
                 and self._hessian_age < HESSIAN_REUSE)
        scorer = UtilityScorer(data, fit, self.engine, hessian=fit.warm_hessian if reuse else None)
        sc = self._utility.score(scorer, questions, self.refine if refine is None else refine,
                                 kinds)
        # the next warm refit from that MAP starts from the round's base Hessian
        if sc.hessian is not None:
            if fit is self.fit:
                self._hessian = sc.hessian
                self._hessian_age = self._hessian_age + 1 if reuse else 0
            if fit is self.initial_fit:
                self._initial_hessian = sc.hessian
        return sc

    def draw_pool(self, rng: np.random.Generator) -> np.ndarray:
        """The pool of questions the sequential strategy scores, drawn with ``rng``, as rows."""
        allowed = self.open_questions()
        self._warn_if_pool_capped(allowed)
        return self.table.rows(round_pool(self, allowed, rng))

    def _warn_if_pool_capped(self, allowed: QuestionSet, level: int = 3) -> None:
        # the default pool size is capped silently
        if not self._pool_explicit:
            return
        for kind, members in allowed.by_kind():
            if kind.pool == "sample" and self.pool_size > (n := len(members)):
                warnings.warn(f"pool size {self.pool_size} is larger than the {n} unasked "
                              f"{kind.plural}; using {n}", stacklevel=level)

    def nonsequential_ranking(self, rng: np.random.Generator | None = None) -> Ranking:
        """The questions ranked by expected gain at the no-feedback MAP (cached). It does not
        depend on the answers, so it can also be made after some (a resumed session does);
        ``rng`` (default: seeded by ``RANKING_POOL_SEED``) draws the pool of several kinds."""
        if self._ranking is None:
            if len(self.kinds) == 1:
                pool = np.arange(len(self.table), dtype=np.int64)
            else:
                rng = np.random.default_rng(RANKING_POOL_SEED) if rng is None else rng
                pool = round_pool(self, self.table.everything(), rng)
            sc = self._score(self.base, self.initial_fit, pool)
            order = sc.ranking()
            self._ranking = Ranking(pool[order], sc.utility[order], sc.exact[order])
        return self._ranking

    def next_query(self, strategy: str, rng: np.random.Generator, *,
                   exclude: Iterable | None = None) -> Query:
        """The next question under the registered ``strategy``, drawn with the round's ``rng``;
        ``exclude``: questions not to ask now (``(i, j)``, ``(kind, i, j)`` or Query objects).
        A one-line ElicitError for an unknown strategy, nothing left to ask, the non-sequential
        ranking after answers given before it was made, or a choice other than open questions."""
        return self._choose(strategy, rng, 1, exclude, warn=True)[0]

    def next_batch(self, strategy: str, rng: np.random.Generator, k: int, *,
                   exclude: Iterable | None = None) -> list[Query]:
        """``k`` questions to ask together (ranked by gain, they share no feature where
        possible); k = 1 is :meth:`next_query` (parameters and errors as there)."""
        return self._choose(strategy, rng, k, exclude, warn=False)

    def _choose(self, strategy: str, rng: object, k: int, exclude, warn: bool) -> list[Query]:
        check_int(k, f"batch size must be a positive integer, got {k!r}", 1)
        if not isinstance(rng, np.random.Generator):   # a seed: 'int' has no choice, deep inside
            raise ElicitError(f"rng must be a numpy Generator (numpy.random.default_rng(seed)), "
                              f"got {rng!r}")
        chosen = get_strategy(strategy)     # an unknown name fails first
        allowed = self.open_questions()     # built once when nothing is excluded
        if len(allowed) == 0:
            raise ElicitError(f"every candidate {self.noun} has been asked")
        if exclude is not None and len(allowed := self.open_questions(exclude)) == 0:
            raise ElicitError(f"every unasked {self.noun} is excluded; nothing is left to ask")
        if chosen.needs_ranking and self._ranking is None and self.n_answers:
            raise ElicitError("the non-sequential ranking is made before any answer; call "
                              "nonsequential_ranking() to rank at the no-feedback MAP anyway")
        if warn and chosen.draws_pool:     # a session's batches say nothing (the terminal)
            self._warn_if_pool_capped(allowed, 4)    # at next_query's caller
        k = min(int(k), len(allowed))
        # a strategy of one's own may return anything: 1 to k distinct open ones (by table index)
        if not isinstance(picked := chosen.choose(self, allowed, rng, k), (list, tuple)) \
                or not 1 <= len(picked) <= k:
            got = (f"{len(picked)} questions" if isinstance(picked, (list, tuple))
                   else type(picked).__name__)
            raise ElicitError(f"strategy {strategy!r} chose {got}, not "
                              + ("1" if k == 1 else f"a list of 1 to {k}"))
        seen: set[int] = set()     # (j, i) or another gain is the same question
        for q in picked:
            try:
                t = self._question_index(q) if isinstance(q, Query) else -1
                ok = t >= 0 and t not in seen and bool(allowed.contains(np.array([t]))[0])
            except ElicitError:     # a question this elicitation does not ask
                ok = False
            if not ok:
                what = (q.kind, q.i, q.j) if isinstance(q, Query) else q
                raise ElicitError(f"strategy {strategy!r} chose {what!r}, which is not an open "
                                  "question (asked, excluded, closed or chosen twice); a "
                                  "strategy chooses among the allowed ones")
            seen.add(t)
        return list(picked)

    def posterior(self) -> NIGPosterior:
        """The NIG posterior of (beta, sigma^2) at the current MAP."""
        return NIGPosterior.from_map(self.data, self.fit)

    def predict(self, X_new: np.ndarray) -> np.ndarray:
        """Posterior predictive mean at the rows of ``X_new``."""
        return self.posterior().predict_mean(X_new)


def _unpack(question) -> tuple[str | None, object, object]:
    """``(kind or None, i, j)`` of a Query, ``(i, j, ...)`` or ``(kind, i, j, ...)``."""
    if isinstance(question, Query):
        return question.kind, question.i, question.j
    if len(question) >= 3 and isinstance(question[0], str):
        return question[0], question[1], question[2]
    return None, question[0], question[1]
