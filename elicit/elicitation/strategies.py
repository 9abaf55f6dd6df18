"""Query strategies: which pairs to ask next.

The paper's three strategies (Afrabandpey et al. 2019, Sec. 4), each choosing among the
*allowed* candidate pairs (not asked yet, not excluded by the caller):

``random``
    uniformly random allowed pairs;
``nonsequential``
    the expected information gain (:mod:`elicit.elicitation.utility`) of every candidate pair
    is computed once, at the no-feedback MAP, and the pairs are asked in that ranked order;
``sequential``
    a fresh random pool R_p of allowed pairs is scored at the current MAP, and the best is
    asked (pool size ``min(#pairs, 10 p)`` by default; the paper uses 400 on real data).

This module is the only place a strategy is written. The
:class:`~elicit.elicitation.elicitor.Elicitor` owns the state they read (the data, the current
MAP, the engine, the utility settings, the cached non-sequential ranking) and decides which
pairs are allowed; :func:`choose` picks among them. The sweeps of the paper and real-expert
sessions both ask through it.

Asking ``k`` questions at once (a batch) adds one rule, :func:`disjoint_greedy`: the ranked
pairs are walked best first and a pair is taken only if it shares no feature with a pair
already taken, then the best remaining pairs fill up the batch. Pairs that share a feature
have correlated meta-feature differences, so their answers tell the model much the same
thing. For a batch the fast utility refines the ``max(refine, 2k)`` best screened pairs
exactly, so the batch is ranked on exact gains where possible.

Random draws, the whole of each strategy's use of ``rng`` (a seed must keep asking the same
questions):

* random: ``rng.choice(n, size=k, replace=False)`` over the ``n`` allowed pairs in candidate
  order, asked in the order drawn;
* sequential: the pool ``sort(rng.choice(n, size=min(pool_size, n), replace=False))``;
* nonsequential: no draws.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Protocol

import numpy as np

from elicit.elicitation.utility import Scores
from elicit.engines.base import Engine
from elicit.errors import ElicitError
from elicit.model.result import MAPResult
from elicit.model.spec import ModelData

Strategy = Literal["random", "nonsequential", "sequential"]
STRATEGIES: tuple[str, ...] = ("random", "nonsequential", "sequential")


@dataclass(frozen=True)
class Query:
    """A question to ask: features ``i`` and ``j`` and its expected information gain.

    ``expected_gain`` is None for the random strategy; ``exact_gain`` is True when the gain is
    an exact refit value (or, for the ``params`` target, the Laplace-approximation value) and
    False for a fast-screen estimate.
    """

    i: int
    j: int
    expected_gain: float | None = None
    exact_gain: bool = False


@dataclass(frozen=True)
class Ranking:
    """Candidate pairs best first: their indices into the candidates, gains and exactness."""

    index: np.ndarray
    gain: np.ndarray
    exact: np.ndarray

    @classmethod
    def from_scores(cls, scores: Scores, index: np.ndarray) -> Ranking:
        """Rank scored pairs (``index`` maps the scored rows to candidate indices)."""
        order = scores.ranking()
        return cls(np.asarray(index)[order], scores.utility[order], scores.exact[order])


class ElicitationState(Protocol):
    """What a strategy reads of an elicitation (an
    :class:`~elicit.elicitation.elicitor.Elicitor` provides it)."""

    candidates: np.ndarray
    data: ModelData
    fit: MAPResult
    engine: Engine
    utility: str
    refine: int
    #: what the gains are about: "predictive" or "params" (:mod:`elicit.elicitation.utility`)
    target: str
    pool_size: int

    def score(self, pairs: np.ndarray, refine: int | None = None) -> Scores:
        """Expected gains of ``pairs`` at the current MAP (refining ``refine`` of them, by
        default the state's own ``refine``)."""
        ...

    def nonsequential_ranking(self) -> Ranking:
        """All candidates ranked at the no-feedback MAP (computed once, then cached)."""
        ...


def choose(strategy: str, state: ElicitationState, allowed: np.ndarray,
           rng: np.random.Generator, k: int = 1) -> list[Query]:
    """The pairs to ask next under ``strategy``, best first.

    Parameters
    ----------
    strategy
        ``"random"``, ``"nonsequential"`` or ``"sequential"``.
    state
        The elicitation state the strategy reads.
    allowed
        Increasing indices into ``state.candidates`` of the pairs that may be asked.
    rng
        The random stream (see the module docstring for what each strategy draws).
    k
        How many pairs; more than one are chosen feature-disjoint where possible
        (:func:`disjoint_greedy`). Capped at ``len(allowed)``.

    Returns
    -------
    list of Query
        ``min(k, len(allowed))`` pairs.
    """
    if strategy not in STRATEGIES:
        raise ElicitError(f"unknown strategy {strategy!r}; choose one of {', '.join(STRATEGIES)}")
    allowed = np.asarray(allowed, dtype=np.int64)
    if len(allowed) == 0:
        raise ElicitError("no candidate pair is left to ask")
    k = min(int(k), len(allowed))
    if strategy == "random":
        return random_queries(state.candidates, allowed, rng, k)
    if strategy == "sequential":
        return sequential_queries(state, allowed, rng, k)
    return nonsequential_queries(state.candidates, state.nonsequential_ranking(), allowed, k)


def random_queries(candidates: np.ndarray, allowed: np.ndarray, rng: np.random.Generator,
                   k: int) -> list[Query]:
    """``k`` distinct allowed pairs drawn uniformly, in the order drawn."""
    # With k = 1 this consumes rng exactly as rng.choice(n) does (NumPy's sampler without
    # replacement draws one bounded integer, as integers(0, n) does), so asking one question
    # at a time and asking a batch of one give the same question.
    drawn = rng.choice(len(allowed), size=k, replace=False)
    return [_query(candidates[allowed[t]]) for t in drawn]


def draw_pool(allowed: np.ndarray, size: int, rng: np.random.Generator) -> np.ndarray:
    """``min(size, len(allowed))`` of the ``allowed`` indices, uniformly without replacement,
    in increasing order (the sequential strategy's pool R_p)."""
    size = min(int(size), len(allowed))
    return allowed[np.sort(rng.choice(len(allowed), size=size, replace=False))]


def sequential_queries(state: ElicitationState, allowed: np.ndarray, rng: np.random.Generator,
                       k: int) -> list[Query]:
    """The best ``k`` pairs of a fresh random pool, scored at the current MAP."""
    pool = state.candidates[draw_pool(allowed, state.pool_size, rng)]
    # Rank a batch on exact gains where possible: refine at least two per question.
    scores = state.score(pool, refine=None if k == 1 else max(state.refine, 2 * k))
    picked = disjoint_greedy(scores.pairs, scores.ranking(), k)
    return [_query(scores.pairs[t], scores.utility[t], scores.exact[t]) for t in picked]


def nonsequential_queries(candidates: np.ndarray, ranking: Ranking, allowed: np.ndarray,
                          k: int) -> list[Query]:
    """The first ``k`` allowed pairs of the no-feedback ranking (feature-disjoint if k > 1)."""
    keep = np.isin(ranking.index, allowed)
    index, gain, exact = ranking.index[keep], ranking.gain[keep], ranking.exact[keep]
    pairs = candidates[index]
    picked = disjoint_greedy(pairs, np.arange(len(index)), k)
    return [_query(pairs[t], gain[t], exact[t]) for t in picked]


def disjoint_greedy(pairs: np.ndarray, order: np.ndarray, k: int) -> list[int]:
    """Walk ``order`` (best first) taking pairs that share no feature with those taken; fill
    up with the best remaining pairs if that gives fewer than ``k``. Returns row indices of
    ``pairs``; with ``k = 1`` simply ``order[0]``."""
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


def _query(pair, gain=None, exact=False) -> Query:
    return Query(int(pair[0]), int(pair[1]), None if gain is None else float(gain), bool(exact))
