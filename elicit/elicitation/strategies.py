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

Each strategy is a small registered object (:class:`Strategy`): its name, its display label,
whether it reads the no-feedback ranking, whether it draws a pool, and a fixed random-stream
id. Sweeps seed each strategy's questions by that id, so a strategy registered later never
re-seeds the stored results of the others. :func:`get_strategy` and
:func:`register_strategy` are the registry; :data:`STRATEGIES` names the paper's three, the
defaults of sweeps and sessions. A new strategy is a subclass with a ``choose`` method,
registered from anywhere (no edit in this package)::

    class FirstAllowed(Strategy):
        def choose(self, state, allowed, rng, k):
            return [Query(*map(int, state.candidates[t])) for t in allowed[:k]]

    register_strategy(FirstAllowed("first", "First allowed", stream_id=10))

The :class:`~elicit.elicitation.elicitor.Elicitor` owns the state they read (the data, the
current MAP, the engine, the utility settings, the cached non-sequential ranking) and decides
which pairs are allowed; a strategy chooses among them, and scores candidates only through
the state (``state.score``, ``state.nonsequential_ranking``): choosing is separate from
scoring. The sweeps of the paper and real-expert sessions both ask through :func:`choose`.

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

from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Protocol, TypeVar

import numpy as np

from elicit.elicitation.scorer import Scores
from elicit.engines.base import Engine
from elicit.errors import ElicitError
from elicit.model.result import MAPResult
from elicit.model.spec import ModelData

#: the paper's three strategies, in the order of their random-stream ids (the defaults)
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


@dataclass(frozen=True)
class Strategy(ABC):
    """A registered query strategy: which of the allowed pairs to ask next.

    Attributes
    ----------
    name
        The registry key (``next_query(name, ...)``, ``--strategies``).
    label
        How figures and reports show it (``"Sequential"``).
    stream_id
        The fixed id of its random stream: sweeps seed run r of a strategy with
        ``SeedSequence([seed, r, stream_id, 7])``. Unique among the registered strategies
        and never changed once results exist (the paper's: random 0, nonsequential 1,
        sequential 2).
    needs_ranking
        Whether it reads the no-feedback ranking (``state.nonsequential_ranking()``), which
        is made before any answer.
    draws_pool
        Whether it scores a random pool of ``state.pool_size`` pairs (``Elicitor.next_query``
        warns when a pool size the user chose exceeds the allowed pairs).
    """

    name: str
    label: str
    stream_id: int
    needs_ranking: bool = False
    draws_pool: bool = False

    @abstractmethod
    def choose(self, state: ElicitationState, allowed: np.ndarray, rng: np.random.Generator,
               k: int) -> list[Query]:
        """The ``k`` pairs to ask, best first (``1 <= k <= len(allowed)``).

        Parameters
        ----------
        state
            The elicitation state (candidates, data, MAP, scoring).
        allowed
            Increasing indices into ``state.candidates`` of the pairs that may be asked.
        rng
            The strategy's random stream; a seed must keep asking the same questions.
        k
            How many pairs.
        """


@dataclass(frozen=True)
class RandomStrategy(Strategy):
    """Uniformly random allowed pairs (:func:`random_queries`)."""

    def choose(self, state: ElicitationState, allowed: np.ndarray, rng: np.random.Generator,
               k: int) -> list[Query]:
        return random_queries(state.candidates, allowed, rng, k)


@dataclass(frozen=True)
class NonSequentialStrategy(Strategy):
    """The no-feedback ranking, asked in order (:func:`nonsequential_queries`)."""

    def choose(self, state: ElicitationState, allowed: np.ndarray, rng: np.random.Generator,
               k: int) -> list[Query]:
        return nonsequential_queries(state.candidates, state.nonsequential_ranking(), allowed,
                                     k)


@dataclass(frozen=True)
class SequentialStrategy(Strategy):
    """The best of a fresh random pool, scored at the current MAP (:func:`sequential_queries`)."""

    def choose(self, state: ElicitationState, allowed: np.ndarray, rng: np.random.Generator,
               k: int) -> list[Query]:
        return sequential_queries(state, allowed, rng, k)


_S = TypeVar("_S", bound=Strategy)
_strategies: dict[str, Strategy] = {}
#: the registered strategies by name (read-only; add with :func:`register_strategy`)
STRATEGY_REGISTRY: Mapping[str, Strategy] = MappingProxyType(_strategies)


def register_strategy(strategy: _S) -> _S:
    """Register ``strategy`` under its name and return it.

    Raises
    ------
    ElicitError
        If it is not a :class:`Strategy`, or its name is empty or taken, or its stream id is
        not a non-negative integer or is taken (a shared stream would correlate two
        strategies' questions; a changed one would re-seed stored results).
    """
    if not isinstance(strategy, Strategy):
        raise ElicitError(f"register_strategy takes a Strategy object, got "
                          f"{type(strategy).__name__}")
    name, sid = strategy.name, strategy.stream_id
    if not isinstance(name, str) or not name.strip():
        raise ElicitError(f"a strategy needs a non-empty name, got {name!r}")
    if name in _strategies:
        raise ElicitError(f"a strategy named {name!r} is already registered; choose another "
                          "name")
    if isinstance(sid, bool) or not isinstance(sid, (int, np.integer)) or sid < 0:
        raise ElicitError(f"the stream id of strategy {name!r} must be a non-negative "
                          f"integer, got {sid!r}")
    taken = {int(s.stream_id): s.name for s in _strategies.values()}
    if int(sid) in taken:
        raise ElicitError(f"stream id {sid} is taken by strategy {taken[int(sid)]!r}; give "
                          f"{name!r} an unused one (taken: {sorted(taken)})")
    _strategies[name] = strategy
    return strategy


def unregister_strategy(name: str) -> None:
    """Remove the strategy called ``name`` (a strategy registered for a test, say)."""
    if name not in _strategies:
        raise ElicitError(f"no strategy named {name!r} is registered")
    del _strategies[name]


def get_strategy(name: str) -> Strategy:
    """The registered strategy called ``name``.

    Raises
    ------
    ElicitError
        One line listing the registered names, if ``name`` is not one of them.
    """
    if isinstance(name, str) and name in _strategies:
        return _strategies[name]
    raise ElicitError(f"unknown strategy {name!r}; choose one of {', '.join(_strategies)}")


RANDOM = register_strategy(RandomStrategy("random", "Random", stream_id=0))
NONSEQUENTIAL = register_strategy(NonSequentialStrategy(
    "nonsequential", "Non-sequential", stream_id=1, needs_ranking=True))
SEQUENTIAL = register_strategy(SequentialStrategy(
    "sequential", "Sequential", stream_id=2, draws_pool=True))


def choose(strategy: str, state: ElicitationState, allowed: np.ndarray,
           rng: np.random.Generator, k: int = 1) -> list[Query]:
    """The pairs to ask next under ``strategy``, best first.

    Parameters
    ----------
    strategy
        The name of a registered strategy (:func:`get_strategy`): ``"random"``,
        ``"nonsequential"``, ``"sequential"`` or one registered later.
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
    chosen = get_strategy(strategy)
    allowed = np.asarray(allowed, dtype=np.int64)
    if len(allowed) == 0:
        raise ElicitError("no candidate pair is left to ask")
    k = min(int(k), len(allowed))
    return chosen.choose(state, allowed, rng, k)


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
