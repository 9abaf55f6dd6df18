"""The state of one elicitation, and asking through it.

One round is fit -> posterior -> utilities -> query -> answer -> refit. :class:`Elicitor`
holds the state of one elicitation (the data, the answers so far, the current MAP, the cached
non-sequential ranking); the strategies of :mod:`elicit.elicitation.strategies` decide which
question to ask next, among the questions not asked yet and not excluded by the caller (a
session excludes the questions the expert skipped).

Two kinds of question (:mod:`elicit.elicitation.questions`): pairs, "do features i and j
affect the outcome in the same way?", and, in a model with relevance classes
(``model="relevance"``), feature questions, "does feature k affect the outcome?".
``questions="pairs" | "relevance" | "both"`` says which are asked.

A question is never asked twice. A "don't know" answer is recorded, leaves the model unchanged
and removes the question from the candidates. A feature answer sets the feature's relevance
class in the model's data (:attr:`~elicit.model.spec.ModelData.relevance`) and refits; from
then on no pair with a feature called irrelevant is offered (the expert cannot judge how a
feature that does not matter affects the outcome), whether the pairs are all pairs or
candidates the caller gave.
"""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import cast

import numpy as np

from elicit.elicitation.answers import Answer
from elicit.elicitation.questions import (
    NO_FEATURE,
    Query,
    check_questions,
    feature_rows,
    is_feature_row,
    kind_of,
    question_key,
)
from elicit.elicitation.scorer import Scores, UtilityScorer
from elicit.elicitation.strategies import Ranking, choose, get_strategy, round_pool
from elicit.elicitation.utility import UtilityArgs, model_has_relevance
from elicit.engines import get_engine
from elicit.engines.base import Engine
from elicit.errors import ElicitError
from elicit.internal.threads import single_blas_thread
from elicit.model.posterior import NIGPosterior
from elicit.model.result import MAPResult
from elicit.model.spec import (
    Hyper,
    ModelData,
    all_pairs,
    validate_regression,
)
from elicit.prior.setup import fit_no_feedback

__all__ = ["Elicitor", "Query"]

#: the relevance classes of a feature (:attr:`~elicit.model.spec.ModelData.relevance`)
_RELEVANT, _IRRELEVANT, _UNJUDGED = 1, 0, -1
#: how many rounds in a row the base Hessian may be the one the last refit ended with before
#: it is computed afresh (see ``Elicitor._score``)
HESSIAN_REUSE = 10
#: the seed of the first round's pool that a mixed non-sequential ranking scores when no
#: random stream is given (a session ranks so, and must rank alike when it is reopened)
RANKING_POOL_SEED = 0


class Elicitor:
    """The state of one elicitation.

    Parameters
    ----------
    X, y, U
        Training inputs (n x p), targets (n,) and feature meta-features (p x d).
    hyper
        Model hyperparameters; ``threshold_mean="auto"`` is resolved at the no-feedback MAP.
        ``hyper.model`` names the model (:mod:`elicit.model.variants`); the known-coupling
        models couple the features of ``candidates``; feature questions need the relevance
        model (``model="relevance"``).
    engine
        ``"auto"``, ``"numpy"``, ``"cmdstan"``, ``"pystan"`` or an :class:`Engine`.
    stan_file
        A custom Stan program (cmdstan/pystan engines only).
    utility
        ``"fast"`` (screen + exact refinement of the best ``refine``) or ``"exact"``, or the
        name of a registered utility (:func:`~elicit.elicitation.utility.register_utility`).
    target
        What a question's gain is about: ``"predictive"`` (the paper's expected change of the
        predictive distribution) or ``"params"`` (the information about gamma and xi under
        the Laplace approximation; ``utility`` and ``refine`` then do not apply; pair
        questions only). See :mod:`elicit.elicitation.utility`; both are checked by
        :meth:`~elicit.elicitation.utility.UtilityArgs.validate`.
    pool_size
        Size of the random pool of pairs per round; default ``min(#pairs, 10 p)``. With
        feature questions a round's pool also holds every allowed feature question.
    candidates
        The pairs that may be asked (default: all p(p-1)/2 pairs).
    questions
        ``"pairs"`` (the paper's, the default), ``"relevance"`` (feature questions only) or
        ``"both"``.
    """

    def __init__(self, X, y, U, hyper: Hyper | None = None, *, engine: str | Engine = "auto",
                 stan_file: str | Path | None = None, utility: str = "fast",
                 refine: int = 10, pool_size: int | None = None,
                 candidates: np.ndarray | None = None, target: str = "predictive",
                 questions: str = "pairs") -> None:
        X, y, U = validate_regression(X, y, U)
        hyper = hyper or Hyper()
        # before the engine: a Stan build takes minutes
        self._utility = UtilityArgs(utility, target, refine, stan_file, questions,
                                    hyper.model).validate()
        p = X.shape[1]
        self.candidates = all_pairs(p) if candidates is None else _check_pairs(candidates, p)
        if len(self.candidates) == 0:
            raise ElicitError("there are no candidate pairs to ask about (need p >= 2)")
        #: which kinds of question are asked: "pairs", "relevance" or "both"
        self.questions = check_questions(questions)
        #: the features that feature questions may ask about (none with pairs only)
        self.features = np.arange(p) if questions != "pairs" else np.zeros(0, dtype=int)
        #: every question, as rows (:mod:`elicit.elicitation.questions`): the candidate pairs,
        #: then one ``(k, NO_FEATURE)`` row per feature question; the strategies' indices and
        #: the non-sequential ranking point into it
        self.question_rows = {"pairs": self.candidates,
                              "relevance": feature_rows(self.features),
                              "both": np.vstack([self.candidates,
                                                 feature_rows(self.features)])}[questions]
        default_pool = min(len(self.candidates), 10 * p)
        if pool_size is not None and pool_size < 1:
            raise ElicitError(f"pool_size must be positive, got {pool_size}")
        self.pool_size = default_pool if pool_size is None else int(pool_size)
        self._pool_explicit = pool_size is not None
        self.utility, self.refine, self.target = utility, int(refine), target
        self.engine = engine if isinstance(engine, Engine) else get_engine(
            engine, hyper.variant, stan_file)
        self._relevance = model_has_relevance(hyper.model)
        self._fit_initial(X, y, U, hyper)

    def _fit_initial(self, X, y, U, hyper: Hyper) -> None:
        self.base, self.initial_fit = fit_no_feedback(self.engine, X, y, U, hyper,
                                                      self.candidates)
        #: the answers in answer order: ``(i, j, answer)`` for a pair, ``(k, None, answer)``
        #: for a feature question
        self.history: list[tuple[int, int | None, Answer]] = []
        self.data = self.base
        self.fit = self.initial_fit
        self._index = {(int(i), int(j)): k for k, (i, j) in enumerate(self.question_rows)}
        self._asked = np.zeros(len(self.question_rows), bool)
        self._ranking: Ranking | None = None
        # Base Hessians at the current and at the no-feedback MAP, when a utility round has
        # computed them: the engine's next warm refit from that MAP starts from them.
        self._hessian: np.ndarray | None = None
        self._initial_hessian: np.ndarray | None = None
        #: rounds since the round's base Hessian was computed afresh
        self._hessian_age = 0

    # -- state ---------------------------------------------------------------------------
    @property
    def hyper(self) -> Hyper:
        return self.base.hyper

    @property
    def n_answers(self) -> int:
        return len(self.history)

    @property
    def relevance(self) -> np.ndarray | None:
        """The relevance class of each feature in the model's data (1 relevant, 0 irrelevant,
        -1 not judged); None for a model without relevance classes."""
        return self.data.relevance if self._relevance else None

    def unasked(self) -> np.ndarray:
        """The questions that may still be asked, as rows: not asked yet, and no pair with a
        feature called irrelevant. With pair questions only, the unasked candidate pairs."""
        return self.question_rows[self.open_mask()]

    def is_asked(self, i: int, j: int | None) -> bool:
        """Whether the question ``(i, j)`` (a pair, or ``(k, None)`` a feature) was asked."""
        return bool(self._asked[self._question_index(i, j)])

    def _question_index(self, i, j) -> int:
        key = question_key(i, j)
        if key in self._index:
            return self._index[key]
        if key[1] != NO_FEATURE:
            if self.questions == "relevance":
                raise ElicitError(f"({i}, {j}) is a pair question, and this elicitation asks "
                                  "feature questions only (questions='relevance')")
            raise ElicitError(f"({i}, {j}) is not a candidate pair")
        if self.questions == "pairs":
            raise ElicitError(f"({i}, {j}) is not a candidate pair (a feature question, "
                              "'does feature k affect the outcome?', is asked only with "
                              "questions='relevance' or 'both')")
        raise ElicitError(f"feature index out of range 0..{len(self.features) - 1}: {i}")

    def open_mask(self) -> np.ndarray:
        """Which questions may still be asked, as a mask over :attr:`question_rows`:
        unasked, and no pair with a feature the expert called irrelevant (:meth:`unasked`
        are its rows)."""
        ok = ~self._asked
        if self._relevance:
            # an array after ModelData.__post_init__
            irrelevant = cast(np.ndarray, self.data.relevance) == _IRRELEVANT
            if irrelevant.any():
                rows = self.question_rows
                pair = rows[:, 1] != NO_FEATURE
                ok &= ~(pair & (irrelevant[rows[:, 0]] | irrelevant[np.maximum(rows[:, 1], 0)]))
        return ok

    @property
    def _noun(self) -> str:
        return "pair" if self.questions == "pairs" else "question"

    # -- answers -------------------------------------------------------------------------
    @single_blas_thread
    def answer(self, i: int, j: int | None, answer: str | Answer) -> MAPResult:
        """Record an answer and refit (unless it is "don't know").

        Parameters
        ----------
        i, j
            The question: features ``i`` and ``j`` of a pair question, or feature ``i`` and
            ``j=None`` of a feature question.
        answer
            ``"similar"`` / ``"dissimilar"`` to a pair question, ``"relevant"`` /
            ``"irrelevant"`` to a feature question, ``"dont_know"`` to either (or their
            aliases, :meth:`~elicit.elicitation.answers.Answer.parse`).
        """
        kind = kind_of(question_key(i, j))
        ans = Answer.parse(answer, kind)
        k = self._question_index(i, j)
        if self._asked[k]:
            if kind == "feature":
                raise ElicitError(f"feature {i} was already answered; a question is asked once")
            raise ElicitError(f"pair ({i}, {j}) was already answered; a pair is asked once")
        self._asked[k] = True
        a, b = (int(v) for v in self.question_rows[k])
        self.history.append((a, None if kind == "feature" else b, ans))
        if ans.f is None and ans.relevance is None:
            return self.fit
        if ans.f is not None:
            self.data = self.data.with_feedback(np.vstack([self.data.pairs, [a, b]]),
                                                np.append(self.data.f, ans.f))
        else:
            classes = np.array(self.data.relevance)
            classes[a] = ans.relevance
            self.data = self.data.with_relevance(classes)
        # Warm from the MAP and the round's base Hessian there, as the utility's refits of
        # this answer started (after a feature answer that Hessian is the old classes': a
        # start, not the optimum's; FeatureScorer.start_hessian), so that the engine can
        # return the refit the round made.
        self.fit = self.engine.fit(self.data, init=self.fit, hessian=self._hessian)
        self._hessian = None
        return self.fit

    @single_blas_thread
    def set_answers(self, answers: Sequence[tuple], *,
                    asked: Iterable[tuple] | None = None) -> MAPResult:
        """Replace all answers (resume, undo): refit once from the no-feedback MAP.

        Parameters
        ----------
        answers
            ``(i, j, answer, ...)`` in answer order, ``j`` None for a feature question
            (further items, e.g. who answered, are ignored).
        asked
            The questions not to offer again. Default: the answered ones, and then a question
            may be answered only once. With several experts it is the current expert's
            questions, and a question may repeat in ``answers``: every expert's pair answer
            enters the likelihood as its own Bernoulli observation, and a feature takes the
            class its experts agree on (none, i.e. not judged, when they disagree).

        Raises
        ------
        ElicitError
            For an invalid question or answer, or (without ``asked``) a question answered
            twice; the state is then unchanged.
        """
        history: list[tuple[int, int | None, Answer]] = []
        pairs, fs = [], []
        votes: dict[int, set[int]] = {}
        seen: set[int] = set()
        for i, j, a, *_ in answers:
            kind = kind_of(question_key(i, j))
            ans = Answer.parse(a, kind)
            k = self._question_index(i, j)
            if asked is None and k in seen:
                what = f"feature {i}" if kind == "feature" else f"pair ({i}, {j})"
                raise ElicitError(f"{what} appears twice in the answers")
            seen.add(k)
            r, c = (int(v) for v in self.question_rows[k])
            history.append((r, None if kind == "feature" else c, ans))
            if ans.f is not None:
                pairs.append((r, c))
                fs.append(ans.f)
            elif ans.relevance is not None:
                votes.setdefault(r, set()).add(ans.relevance)
        if asked is None:
            self._asked[:] = False
            self._asked[list(seen)] = True
        else:
            self.set_asked(asked)
        self.history = history
        data = self.base.with_feedback(np.array(pairs, dtype=int).reshape(-1, 2),
                                       np.array(fs, dtype=int))
        if votes:
            classes = np.array(self.base.relevance)
            for feature, v in votes.items():
                classes[feature] = v.pop() if len(v) == 1 else _UNJUDGED
            data = data.with_relevance(classes)
        self.data = data
        if votes:
            self.fit = self.engine.fit(self.data, init=_without_hessian(self.initial_fit))
            self._hessian = None
        elif fs:
            self.fit = self.engine.fit(self.data, init=self.initial_fit,
                                       hessian=self._initial_hessian)
            self._hessian = None
        else:
            self.fit, self._hessian = self.initial_fit, self._initial_hessian
        return self.fit

    def set_asked(self, asked: Iterable[tuple]) -> None:
        """Mark which questions are not to be offered again (the current expert's: pairs
        ``(i, j)``, feature questions ``(k, None)``), without a refit: the fit depends on the
        answers, not on who is asked next."""
        index = [self._question_index(*q) for q in asked]
        self._asked[:] = False
        self._asked[index] = True

    def reset(self) -> None:
        """Forget every answer and the non-sequential ranking (back to the no-feedback MAP)."""
        self._asked[:] = False
        self.history = []
        self.data = self.base
        self.fit = self.initial_fit
        self._hessian = self._initial_hessian
        self._ranking = None

    # -- scoring and selection -----------------------------------------------------------
    def score(self, questions: np.ndarray, refine: int | None = None) -> Scores:
        """Expected information gain of ``questions`` at the current MAP.

        ``questions`` are rows: pairs ``(i, j)`` and, with feature questions, ``(k,
        NO_FEATURE)`` (:mod:`elicit.elicitation.questions`). ``refine`` overrides the number
        of candidates the fast mode re-scores exactly (of each kind).
        """
        return self._score(self.data, self.fit, questions, refine)

    @single_blas_thread
    def _score(self, data: ModelData, fit: MAPResult, questions: np.ndarray,
               refine: int | None = None) -> Scores:
        # The round's base Hessian: the one the refit that made this MAP ended with (the
        # previous round's, corrected by the refit's secant steps: within 0.5% of a fresh one
        # on the real Amazon problem, and the refinement's picks the same in 72 rounds) for
        # up to HESSIAN_REUSE rounds, then a fresh one (a tenth of a round's CPU at Amazon
        # size).
        reuse = (fit is self.fit and fit.warm_hessian is not None
                 and self._hessian_age < HESSIAN_REUSE)
        scorer = UtilityScorer(data, fit, self.engine,
                               hessian=fit.warm_hessian if reuse else None)
        sc = self._utility.score(scorer, questions, self.refine if refine is None else refine)
        # Keep the base Hessian the round used: the next warm refit from that MAP
        # starts from it.
        if sc.hessian is not None:
            if fit is self.fit:
                self._hessian = sc.hessian
                self._hessian_age = self._hessian_age + 1 if reuse else 0
            if fit is self.initial_fit:
                self._initial_hessian = sc.hessian
        return sc

    def draw_pool(self, rng: np.random.Generator) -> np.ndarray:
        """A round's pool of questions, as rows (capped, with a warning, at the pairs left):
        the pool the sequential strategy scores
        (:func:`~elicit.elicitation.strategies.round_pool`)."""
        allowed = self._allowed()
        self._warn_if_pool_capped(allowed)
        return self.question_rows[round_pool(self, allowed, rng)]

    def _warn_if_pool_capped(self, allowed: np.ndarray) -> None:
        # Only a pool size the user chose is worth a warning; the default is capped silently.
        if not self._pool_explicit or self.questions == "relevance":
            return
        n = len(allowed)
        if self.questions == "both":
            n -= int(is_feature_row(self.question_rows[allowed]).sum())
        if self.pool_size > n:
            warnings.warn(f"pool size {self.pool_size} is larger than the {n} unasked "
                          f"pairs; using {n}", stacklevel=3)

    def _allowed(self, exclude: Iterable[tuple] | None = None) -> np.ndarray:
        """Indices of the questions that may be asked: open (:meth:`unasked`) and not in
        ``exclude``."""
        ok = self.open_mask()
        if exclude is not None:
            for q in exclude:
                ok[self._question_index(*q)] = False
            if not ok.any():
                raise ElicitError(f"every unasked {self._noun} is excluded; nothing is left "
                                  "to ask")
        return np.flatnonzero(ok)

    def nonsequential_ranking(self, rng: np.random.Generator | None = None) -> Ranking:
        """The questions ranked by expected gain at the no-feedback MAP.

        With pair questions only, every candidate pair. With feature questions, the first
        round's pool (:func:`~elicit.elicitation.strategies.round_pool`: every feature
        question and ``pool_size`` pairs), drawn with ``rng`` (default: a fixed seed,
        :data:`RANKING_POOL_SEED`) among all questions. Computed once and cached until
        :meth:`reset`; it does not depend on the answers, so it can also be made after some
        (a resumed session does).
        """
        if self._ranking is None:
            if self.questions == "pairs":
                sc = self._score(self.base, self.initial_fit, self.candidates)
                self._ranking = Ranking.from_scores(sc, np.arange(len(self.candidates)))
            else:
                rng = np.random.default_rng(RANKING_POOL_SEED) if rng is None else rng
                pool = round_pool(self, np.arange(len(self.question_rows)), rng)
                sc = self._score(self.base, self.initial_fit, self.question_rows[pool])
                self._ranking = Ranking.from_scores(sc, pool)
        return self._ranking

    def next_query(self, strategy: str, rng: np.random.Generator, *,
                   exclude: Iterable[tuple] | None = None) -> Query:
        """The next question to ask under ``strategy``.

        Parameters
        ----------
        strategy
            The name of a registered strategy: ``"random"``, ``"nonsequential"``,
            ``"sequential"`` or one added with
            :func:`~elicit.elicitation.strategies.register_strategy`.
        rng
            The random stream of the round.
        exclude
            Questions not to ask now (for example those an expert skipped): pairs ``(i, j)``,
            feature questions ``(k, None)``.

        Returns
        -------
        Query
            A pair question (``q.kind == "pair"``, features ``q.i`` and ``q.j``) or a feature
            question (``q.kind == "feature"``, feature ``q.i``, ``q.j`` None).

        Raises
        ------
        ElicitError
            For an unknown strategy, when every question has been asked or excluded, or for a
            strategy that reads the no-feedback ranking (the non-sequential one) after
            answers given before the ranking was made (rank first with
            :meth:`nonsequential_ranking` to continue from answers).
        """
        allowed = self._allowed_for(strategy, exclude)
        if get_strategy(strategy).draws_pool:
            self._warn_if_pool_capped(allowed)
        return choose(strategy, self, allowed, rng)[0]

    def next_batch(self, strategy: str, rng: np.random.Generator, k: int, *,
                   exclude: Iterable[tuple] | None = None) -> list[Query]:
        """``k`` questions to ask together under ``strategy``, best first.

        The questions share no feature where possible (see
        :func:`~elicit.elicitation.strategies.disjoint_greedy`). With ``k = 1`` this is the
        question :meth:`next_query` asks, from the same random draws. Fewer than ``k``
        questions are returned when fewer are allowed. A pool larger than the allowed pairs
        is capped silently: a session's allowed pairs shrink with every answer and skip, and
        the expert need not hear about it. Parameters and errors as for :meth:`next_query`.
        """
        if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
            raise ElicitError(f"batch size must be a positive integer, got {k!r}")
        return choose(strategy, self, self._allowed_for(strategy, exclude), rng, int(k))

    def _allowed_for(self, strategy: str, exclude) -> np.ndarray:
        needs_ranking = get_strategy(strategy).needs_ranking   # an unknown name fails first
        if not self.open_mask().any():
            raise ElicitError(f"every candidate {self._noun} has been asked")
        allowed = self._allowed(exclude)
        if needs_ranking and self._ranking is None and self.n_answers:
            raise ElicitError("the non-sequential ranking is made before any answer; call "
                              "nonsequential_ranking() to rank at the no-feedback MAP anyway")
        return allowed

    # -- the posterior -------------------------------------------------------------------
    def posterior(self) -> NIGPosterior:
        """The NIG posterior of (beta, sigma^2) at the current MAP."""
        return NIGPosterior.from_map(self.data, self.fit)

    def predict(self, X_new: np.ndarray) -> np.ndarray:
        """Posterior predictive mean at the rows of ``X_new``."""
        return self.posterior().predict_mean(X_new)


def _check_pairs(pairs, p: int) -> np.ndarray:
    pairs = np.asarray(pairs)
    if pairs.ndim != 2 or pairs.shape[1] != 2:
        raise ElicitError(f"candidate pairs must have shape (k, 2), got {pairs.shape}")
    pairs = np.sort(pairs.astype(int), axis=1)
    if pairs.size and (pairs.min() < 0 or pairs.max() >= p):
        raise ElicitError(f"candidate pair indices must lie in 0..{p - 1}")
    if np.any(pairs[:, 0] == pairs[:, 1]):
        raise ElicitError("a candidate pair must join two different features")
    uniq = np.unique(pairs, axis=0)
    if len(uniq) != len(pairs):
        raise ElicitError("candidate pairs contain duplicates")
    return uniq


def _without_hessian(fit: MAPResult) -> MAPResult:
    """``fit`` as a warm start without its base Hessian (for data whose y-likelihood changed:
    other relevance classes)."""
    return dataclasses.replace(fit, warm_hessian=None)
