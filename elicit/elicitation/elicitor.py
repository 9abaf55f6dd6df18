"""The state of one elicitation, and asking through it.

One round is fit -> posterior -> utilities -> query -> answer -> refit. :class:`Elicitor`
holds the state of one elicitation (the data, the answers so far, the current MAP, the cached
non-sequential ranking); the strategies of :mod:`elicit.elicitation.strategies` decide which
pair to ask next, among the candidate pairs not asked yet and not excluded by the caller (a
session excludes the pairs the expert skipped).

A pair is never asked twice. A "don't know" answer is recorded, leaves the model unchanged and
removes the pair from the candidates.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable, Sequence
from pathlib import Path

import numpy as np

from elicit.elicitation.answers import Answer
from elicit.elicitation.scorer import Scores, UtilityScorer
from elicit.elicitation.strategies import Query, Ranking, choose, draw_pool, get_strategy
from elicit.elicitation.utility import UtilityArgs
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


class Elicitor:
    """The state of one elicitation.

    Parameters
    ----------
    X, y, U
        Training inputs (n x p), targets (n,) and feature meta-features (p x d).
    hyper
        Model hyperparameters; ``threshold_mean="auto"`` is resolved at the no-feedback MAP.
        ``hyper.model`` names the model (:mod:`elicit.model.variants`); the known-coupling
        models couple the features of ``candidates``.
    engine
        ``"auto"``, ``"numpy"``, ``"cmdstan"``, ``"pystan"`` or an :class:`Engine`.
    stan_file
        A custom Stan program (cmdstan/pystan engines only).
    utility
        ``"fast"`` (screen + exact refinement of the best ``refine``) or ``"exact"``, or the
        name of a registered pair utility (:func:`~elicit.elicitation.utility.register_utility`).
    target
        What a question's gain is about: ``"predictive"`` (the paper's expected change of the
        predictive distribution) or ``"params"`` (the information about gamma and xi under
        the Laplace approximation; ``utility`` and ``refine`` then do not apply). See
        :mod:`elicit.elicitation.utility`; both are checked by
        :meth:`~elicit.elicitation.utility.UtilityArgs.validate`.
    pool_size
        Size of the random candidate pool per sequential round; default ``min(#pairs, 10 p)``.
    candidates
        The pairs that may be asked (default: all p(p-1)/2 pairs).
    """

    def __init__(self, X, y, U, hyper: Hyper | None = None, *, engine: str | Engine = "auto",
                 stan_file: str | Path | None = None, utility: str = "fast",
                 refine: int = 10, pool_size: int | None = None,
                 candidates: np.ndarray | None = None, target: str = "predictive") -> None:
        X, y, U = validate_regression(X, y, U)
        hyper = hyper or Hyper()
        # before the engine: a Stan build takes minutes
        self._utility = UtilityArgs(utility, target, refine, stan_file).validate()
        p = X.shape[1]
        self.candidates = all_pairs(p) if candidates is None else _check_pairs(candidates, p)
        if len(self.candidates) == 0:
            raise ElicitError("there are no candidate pairs to ask about (need p >= 2)")
        default_pool = min(len(self.candidates), 10 * p)
        if pool_size is not None and pool_size < 1:
            raise ElicitError(f"pool_size must be positive, got {pool_size}")
        self.pool_size = default_pool if pool_size is None else int(pool_size)
        self._pool_explicit = pool_size is not None
        self.utility, self.refine, self.target = utility, int(refine), target
        self.engine = engine if isinstance(engine, Engine) else get_engine(
            engine, hyper.variant, stan_file)
        self._fit_initial(X, y, U, hyper)

    def _fit_initial(self, X, y, U, hyper: Hyper) -> None:
        self.base, self.initial_fit = fit_no_feedback(self.engine, X, y, U, hyper,
                                                      self.candidates)
        self.history: list[tuple[int, int, Answer]] = []
        self.data = self.base
        self.fit = self.initial_fit
        self._index = {(int(i), int(j)): k for k, (i, j) in enumerate(self.candidates)}
        self._asked = np.zeros(len(self.candidates), bool)
        self._ranking: Ranking | None = None
        # Base Hessians at the current and at the no-feedback MAP, when a utility round has
        # computed them: the engine's next warm refit from that MAP starts from them.
        self._hessian: np.ndarray | None = None
        self._initial_hessian: np.ndarray | None = None

    # -- state ---------------------------------------------------------------------------
    @property
    def hyper(self) -> Hyper:
        return self.base.hyper

    @property
    def n_answers(self) -> int:
        return len(self.history)

    def unasked(self) -> np.ndarray:
        """Candidate pairs not asked yet."""
        return self.candidates[~self._asked]

    def is_asked(self, i: int, j: int) -> bool:
        return bool(self._asked[self._pair_index(i, j)])

    def _pair_index(self, i: int, j: int) -> int:
        key = (min(int(i), int(j)), max(int(i), int(j)))
        if key not in self._index:
            raise ElicitError(f"({i}, {j}) is not a candidate pair")
        return self._index[key]

    # -- answers -------------------------------------------------------------------------
    @single_blas_thread
    def answer(self, i: int, j: int, answer: str | Answer) -> MAPResult:
        """Record an answer about pair (i, j) and refit (unless it is "don't know")."""
        ans = Answer.parse(answer)
        k = self._pair_index(i, j)
        if self._asked[k]:
            raise ElicitError(f"pair ({i}, {j}) was already answered; a pair is asked once")
        self._asked[k] = True
        i, j = self.candidates[k]
        self.history.append((int(i), int(j), ans))
        if ans.f is not None:
            self.data = self.data.with_feedback(np.vstack([self.data.pairs, [i, j]]),
                                                np.append(self.data.f, ans.f))
            self.fit = self.engine.fit(self.data, init=self.fit, hessian=self._hessian)
            self._hessian = None
        return self.fit

    @single_blas_thread
    def set_answers(self, answers: Sequence[tuple], *,
                    asked: Iterable[tuple[int, int]] | None = None) -> MAPResult:
        """Replace all answers (resume, undo): refit once from the no-feedback MAP.

        Parameters
        ----------
        answers
            ``(i, j, answer, ...)`` in answer order (further items, e.g. who answered, are
            ignored).
        asked
            The pairs not to offer again. Default: the answered pairs, and then a pair may be
            answered only once. With several experts it is the current expert's pairs, and a
            pair may repeat in ``answers``: every expert's answer enters the likelihood as its
            own Bernoulli observation.
        """
        self.history = []
        pairs, fs = [], []
        seen: set[int] = set()
        for i, j, a, *_ in answers:
            ans = Answer.parse(a)
            k = self._pair_index(i, j)
            if asked is None and k in seen:
                raise ElicitError(f"pair ({i}, {j}) appears twice in the answers")
            seen.add(k)
            i, j = self.candidates[k]
            self.history.append((int(i), int(j), ans))
            if ans.f is not None:
                pairs.append((i, j))
                fs.append(ans.f)
        if asked is None:
            self._asked[:] = False
            self._asked[list(seen)] = True
        else:
            self.set_asked(asked)
        self.data = self.base.with_feedback(np.array(pairs, dtype=int).reshape(-1, 2),
                                            np.array(fs, dtype=int))
        if fs:
            self.fit = self.engine.fit(self.data, init=self.initial_fit,
                                       hessian=self._initial_hessian)
            self._hessian = None
        else:
            self.fit, self._hessian = self.initial_fit, self._initial_hessian
        return self.fit

    def set_asked(self, asked: Iterable[tuple[int, int]]) -> None:
        """Mark which pairs are not to be offered again (the current expert's), without a
        refit: the fit depends on the answers, not on who is asked next."""
        self._asked[:] = False
        for i, j in asked:
            self._asked[self._pair_index(i, j)] = True

    def reset(self) -> None:
        """Forget every answer and the non-sequential ranking (back to the no-feedback MAP)."""
        self._asked[:] = False
        self.history = []
        self.data = self.base
        self.fit = self.initial_fit
        self._hessian = self._initial_hessian
        self._ranking = None

    # -- scoring and selection -----------------------------------------------------------
    def score(self, pairs: np.ndarray, refine: int | None = None) -> Scores:
        """Expected information gain of ``pairs`` at the current MAP.

        ``refine`` overrides the number of candidates the fast mode re-scores exactly.
        """
        return self._score(self.data, self.fit, pairs, refine)

    @single_blas_thread
    def _score(self, data: ModelData, fit: MAPResult, pairs: np.ndarray,
               refine: int | None = None) -> Scores:
        sc = self._utility.score(UtilityScorer(data, fit, self.engine), pairs,
                                 self.refine if refine is None else refine)
        # Keep the base Hessian the round computed: the next warm refit from that MAP
        # starts from it.
        if sc.hessian is not None:
            if fit is self.fit:
                self._hessian = sc.hessian
            if fit is self.initial_fit:
                self._initial_hessian = sc.hessian
        return sc

    def draw_pool(self, rng: np.random.Generator) -> np.ndarray:
        """A random pool of unasked pairs (capped, with a warning, at what is left): the pool
        the sequential strategy scores."""
        allowed = self._allowed()
        self._warn_if_pool_capped(len(allowed))
        return self.candidates[draw_pool(allowed, self.pool_size, rng)]

    def _warn_if_pool_capped(self, n_allowed: int) -> None:
        # Only a pool size the user chose is worth a warning; the default is capped silently.
        if self._pool_explicit and self.pool_size > n_allowed:
            warnings.warn(f"pool size {self.pool_size} is larger than the {n_allowed} unasked "
                          f"pairs; using {n_allowed}", stacklevel=3)

    def _allowed(self, exclude: Iterable[tuple[int, int]] | None = None) -> np.ndarray:
        """Indices of the candidate pairs that may be asked: unasked and not in ``exclude``."""
        ok = ~self._asked
        if exclude is not None:
            for i, j in exclude:
                ok[self._pair_index(i, j)] = False
            if not ok.any():
                raise ElicitError("every unasked pair is excluded; nothing is left to ask")
        return np.flatnonzero(ok)

    def nonsequential_ranking(self) -> Ranking:
        """Every candidate pair ranked by expected gain at the no-feedback MAP.

        Computed once and cached until :meth:`reset`; it does not depend on the answers, so it
        can also be made after some (a resumed session does).
        """
        if self._ranking is None:
            sc = self._score(self.base, self.initial_fit, self.candidates)
            self._ranking = Ranking.from_scores(sc, np.arange(len(self.candidates)))
        return self._ranking

    def next_query(self, strategy: str, rng: np.random.Generator, *,
                   exclude: Iterable[tuple[int, int]] | None = None) -> Query:
        """The next pair to ask under ``strategy``.

        Parameters
        ----------
        strategy
            The name of a registered strategy: ``"random"``, ``"nonsequential"``,
            ``"sequential"`` or one added with
            :func:`~elicit.elicitation.strategies.register_strategy`.
        rng
            The random stream of the round.
        exclude
            Pairs ``(i, j)`` not to ask now (for example the pairs an expert skipped).

        Raises
        ------
        ElicitError
            For an unknown strategy, when every pair has been asked or excluded, or for a
            strategy that reads the no-feedback ranking (the non-sequential one) after
            answers given before the ranking was made (rank first with
            :meth:`nonsequential_ranking` to continue from answers).
        """
        allowed = self._allowed_for(strategy, exclude)
        if get_strategy(strategy).draws_pool:
            self._warn_if_pool_capped(len(allowed))
        return choose(strategy, self, allowed, rng)[0]

    def next_batch(self, strategy: str, rng: np.random.Generator, k: int, *,
                   exclude: Iterable[tuple[int, int]] | None = None) -> list[Query]:
        """``k`` pairs to ask together under ``strategy``, best first.

        The pairs share no feature where possible (see
        :func:`~elicit.elicitation.strategies.disjoint_greedy`). With ``k = 1`` this is the
        question :meth:`next_query` asks, from the same random draws. Fewer than ``k`` pairs
        are returned when fewer are allowed. A pool larger than the allowed pairs is capped
        silently: a session's allowed pairs shrink with every answer and skip, and the expert
        need not hear about it. Parameters and errors as for :meth:`next_query`.
        """
        if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
            raise ElicitError(f"batch size must be a positive integer, got {k!r}")
        return choose(strategy, self, self._allowed_for(strategy, exclude), rng, int(k))

    def _allowed_for(self, strategy: str, exclude) -> np.ndarray:
        needs_ranking = get_strategy(strategy).needs_ranking   # an unknown name fails first
        if not (~self._asked).any():
            raise ElicitError("every candidate pair has been asked")
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
