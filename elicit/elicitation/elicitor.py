"""Choosing questions: the elicitation state and the query strategies.

One round is fit -> posterior -> utilities -> query -> answer -> refit. :class:`Elicitor`
holds the state of one elicitation (the data, the answers so far, the current MAP) and the
strategies decide which pair to ask next:

``random``
    a uniformly random unasked pair;
``nonsequential``
    utilities computed once, at the no-feedback MAP, over all candidate pairs, then asked in
    ranked order;
``sequential``
    re-scored after every answer over a fresh random pool R_p of unasked pairs (default size
    ``min(#pairs, 10 p)``; the paper uses 400 on real data).

A pair is never asked twice. A "don't know" answer is recorded, leaves the model unchanged and
removes the pair from the candidates.
"""

from __future__ import annotations

import dataclasses
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from elicit.elicitation.answers import Answer
from elicit.elicitation.strategies import STRATEGIES, Strategy
from elicit.elicitation.utility import Scores, UtilityScorer
from elicit.engines import get_engine
from elicit.engines.base import Engine, MAPResult
from elicit.errors import ElicitError
from elicit.internal.threads import single_blas_thread
from elicit.model.posterior import NIGPosterior
from elicit.model.spec import (
    Hyper,
    ModelData,
    all_pairs,
    auto_threshold_mean,
    validate_regression,
)


@dataclass(frozen=True)
class Query:
    """A question to ask: features ``i`` and ``j`` and its expected information gain."""

    i: int
    j: int
    expected_gain: float | None = None


class Elicitor:
    """The state of one elicitation.

    Parameters
    ----------
    X, y, U
        Training inputs (n x p), targets (n,) and feature meta-features (p x d).
    hyper
        Model hyperparameters; ``threshold_mean="auto"`` is resolved at the no-feedback MAP.
    engine
        ``"auto"``, ``"numpy"``, ``"cmdstan"``, ``"pystan"`` or an :class:`Engine`.
    stan_file
        A custom Stan program (cmdstan/pystan engines only).
    utility
        ``"fast"`` (screen + exact refinement of the best ``refine``) or ``"exact"``.
    pool_size
        Size of the random candidate pool per sequential round; default ``min(#pairs, 10 p)``.
    candidates
        The pairs that may be asked (default: all p(p-1)/2 pairs).
    """

    def __init__(self, X, y, U, hyper: Hyper | None = None, *, engine: str | Engine = "auto",
                 stan_file: str | Path | None = None, utility: str = "fast",
                 refine: int = 10, pool_size: int | None = None,
                 candidates: np.ndarray | None = None) -> None:
        X, y, U = validate_regression(X, y, U)
        hyper = hyper or Hyper()
        if utility not in ("fast", "exact"):
            raise ElicitError(f"utility must be 'fast' or 'exact', got {utility!r}")
        if refine < 0:
            raise ElicitError(f"refine must be >= 0, got {refine}")
        p = X.shape[1]
        self.candidates = all_pairs(p) if candidates is None else _check_pairs(candidates, p)
        if len(self.candidates) == 0:
            raise ElicitError("there are no candidate pairs to ask about (need p >= 2)")
        default_pool = min(len(self.candidates), 10 * p)
        if pool_size is not None and pool_size < 1:
            raise ElicitError(f"pool_size must be positive, got {pool_size}")
        self.pool_size = default_pool if pool_size is None else int(pool_size)
        self._pool_explicit = pool_size is not None
        self.utility, self.refine = utility, int(refine)
        self.engine = engine if isinstance(engine, Engine) else get_engine(
            engine, hyper.variant, stan_file)
        if stan_file is not None and utility == "fast":
            raise ElicitError("the fast utility screen uses the shipped model's analytic "
                              "Hessian, which a custom Stan file does not have; use exact "
                              "utilities (--utility exact, or utility='exact' in Python)")
        self._fit_initial(X, y, U, hyper)

    def _fit_initial(self, X, y, U, hyper: Hyper) -> None:
        self.base, self.initial_fit = fit_no_feedback(self.engine, X, y, U, hyper,
                                                      self.candidates)
        self.history: list[tuple[int, int, Answer]] = []
        self.data = self.base
        self.fit = self.initial_fit
        self._index = {(int(i), int(j)): k for k, (i, j) in enumerate(self.candidates)}
        self._asked = np.zeros(len(self.candidates), bool)
        self._ranking: np.ndarray | None = None
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
    def set_answers(self, answers: list[tuple[int, int, str | Answer]]) -> MAPResult:
        """Replace all answers (resume, undo): refit once from the no-feedback MAP."""
        self._asked[:] = False
        self.history = []
        pairs, fs = [], []
        for i, j, a in answers:
            ans = Answer.parse(a)
            k = self._pair_index(i, j)
            if self._asked[k]:
                raise ElicitError(f"pair ({i}, {j}) appears twice in the answers")
            self._asked[k] = True
            i, j = self.candidates[k]
            self.history.append((int(i), int(j), ans))
            if ans.f is not None:
                pairs.append((i, j))
                fs.append(ans.f)
        self.data = self.base.with_feedback(np.array(pairs, dtype=int).reshape(-1, 2),
                                            np.array(fs, dtype=int))
        if fs:
            self.fit = self.engine.fit(self.data, init=self.initial_fit,
                                       hessian=self._initial_hessian)
            self._hessian = None
        else:
            self.fit, self._hessian = self.initial_fit, self._initial_hessian
        return self.fit

    def reset(self) -> None:
        """Forget every answer and the non-sequential ranking (back to the no-feedback MAP)."""
        self._asked[:] = False
        self.history = []
        self.data = self.base
        self.fit = self.initial_fit
        self._hessian = self._initial_hessian
        self._ranking = None

    # -- scoring and selection -----------------------------------------------------------
    @single_blas_thread
    def score(self, pairs: np.ndarray) -> Scores:
        """Expected information gain of ``pairs`` at the current MAP."""
        sc = UtilityScorer(self.data, self.fit, self.engine).score(pairs, self.utility,
                                                                  self.refine)
        if sc.hessian is not None:
            self._hessian = sc.hessian
            if self.fit is self.initial_fit:
                self._initial_hessian = sc.hessian
        return sc

    def draw_pool(self, rng: np.random.Generator) -> np.ndarray:
        """A random pool of unasked pairs (capped, with a warning, at what is left)."""
        left = np.flatnonzero(~self._asked)
        size = self.pool_size
        if size > len(left):
            if self._pool_explicit:
                warnings.warn(f"pool size {size} is larger than the {len(left)} unasked pairs; "
                              f"using {len(left)}", stacklevel=2)
            size = len(left)
        return self.candidates[np.sort(rng.choice(left, size=size, replace=False))]

    def next_query(self, strategy: Strategy, rng: np.random.Generator) -> Query:
        """The next pair to ask under ``strategy``."""
        if not (~self._asked).any():
            raise ElicitError("every candidate pair has been asked")
        if strategy == "random":
            k = int(rng.choice(np.flatnonzero(~self._asked)))
            i, j = self.candidates[k]
            return Query(int(i), int(j))
        if strategy == "sequential":
            pool = self.draw_pool(rng)
            sc = self.score(pool)
            b = sc.best
            return Query(int(pool[b, 0]), int(pool[b, 1]), float(sc.utility[b]))
        if strategy == "nonsequential":
            if self._ranking is None:
                if self.n_answers:
                    raise ElicitError("the non-sequential ranking is made before any answer")
                sc = self.score(self.candidates)
                order = sc.ranking()
                self._ranking = np.column_stack([order, sc.utility[order]])
            for k, u in self._ranking:
                if not self._asked[int(k)]:
                    i, j = self.candidates[int(k)]
                    return Query(int(i), int(j), float(u))
        raise ElicitError(f"unknown strategy {strategy!r}; choose one of {', '.join(STRATEGIES)}")

    # -- the posterior -------------------------------------------------------------------
    def posterior(self) -> NIGPosterior:
        """The NIG posterior of (beta, sigma^2) at the current MAP."""
        return NIGPosterior.from_map(self.data, self.fit)

    def predict(self, X_new: np.ndarray) -> np.ndarray:
        """Posterior predictive mean at the rows of ``X_new``."""
        return self.posterior().predict(X_new).mean


@single_blas_thread
def fit_no_feedback(engine: Engine, X, y, U, hyper: Hyper, candidates: np.ndarray,
                    ) -> tuple[ModelData, MAPResult]:
    """The no-feedback model: its data (threshold prior resolved) and its MAP.

    ``threshold_mean="auto"`` is the authors' rule: the mean of ``gamma0 . w`` over the
    candidate pairs at the no-feedback MAP ``gamma0``
    (:func:`~elicit.model.spec.auto_threshold_mean`). With no feedback xi is independent of
    everything else, so gamma0 does not depend on the placeholder mean 1 of the first fit, and
    the second fit only moves xi.
    """
    if hyper.threshold_mean != "auto":
        data = ModelData(X, y, U, hyper)
        return data, engine.fit(data)
    probe = ModelData(X, y, U, hyper.with_threshold_mean(1.0))
    fit0 = engine.fit(probe)
    data = ModelData(X, y, U, hyper.with_threshold_mean(
        auto_threshold_mean(U, fit0.gamma, candidates)))
    fit = engine.fit(data, init=fit0)
    # The Hessian that refit used belongs to the placeholder threshold prior: later refits
    # from this MAP must not be preconditioned with it.
    return data, dataclasses.replace(fit, warm_hessian=None)


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
