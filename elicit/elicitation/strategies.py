"""Query strategies: which of the *allowed* questions to ask next (the paper's three,
Afrabandpey et al. 2019, Sec. 4, are below; a new one, and every random draw of the shipped
ones: ``docs/extending.md``). With several kinds, random draws from the round's pool
(:func:`round_pool`) so that 337 feature questions are not drowned by 56,616 pairs; a batch
shares no feature where possible (:func:`disjoint_greedy`: such pairs tell the model much the
same thing).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from itertools import islice
from typing import TYPE_CHECKING, TypeVar, cast

import numpy as np

from elicit.elicitation.questions import NO_FEATURE, Query
from elicit.elicitation.scorer import UtilityScorer
from elicit.elicitation.table import QuestionSet
from elicit.elicitation.utility import ScoringRound
from elicit.errors import ElicitError
from elicit.internal.checks import check_int
from elicit.internal.registry import Registry

if TYPE_CHECKING:
    from elicit.elicitation.elicitor import Elicitor

#: the paper's three strategies, in the order of their random-stream ids (the defaults)
STRATEGIES: tuple[str, ...] = ("random", "nonsequential", "sequential")

__all__ = ["STRATEGIES", "STRATEGY_REGISTRY", "Query", "Ranking",
           "Strategy", "answer_probabilities", "disjoint_greedy", "draw_pool",
           "get_strategy", "register_strategy", "round_pool", "unregister_strategy"]


@dataclass(frozen=True)
class Ranking:
    """Questions best first: their table indices, gains and exactness."""

    index: np.ndarray
    gain: np.ndarray
    exact: np.ndarray


@dataclass(frozen=True)
class Strategy(ABC):
    """A registered query strategy: which of the allowed questions to ask next.

    Attributes
    ----------
    name
        The registry key (``next_query(name, ...)``, ``--strategies``).
    label
        How figures and reports show it (``"Sequential"``).
    stream_id
        The fixed, unique id of its random stream in sweeps (``docs/extending.md``; the
        paper's: random 0, nonsequential 1, sequential 2).
    needs_ranking
        Whether it reads the no-feedback ranking, which is made before any answer.
    draws_pool
        Whether it scores a random pool of ``state.pool_size`` pairs.
    """

    name: str
    label: str
    stream_id: int
    needs_ranking: bool = False
    draws_pool: bool = False

    @abstractmethod
    def choose(self, state: Elicitor, allowed: QuestionSet, rng: np.random.Generator,
               k: int) -> list[Query]:
        """A list of 1 to ``k`` distinct questions to ask, best first, among the table indices
        ``allowed`` (a :class:`QuestionSet`, read like an array of increasing indices); ``1 <=
        k <= len(allowed)``."""


@dataclass(frozen=True)
class RandomStrategy(Strategy):
    """``k`` distinct allowed questions drawn uniformly (of several kinds: from the pool)."""

    def choose(self, state: Elicitor, allowed: QuestionSet, rng: np.random.Generator,
               k: int) -> list[Query]:
        among = round_pool(state, allowed, rng) if len(state.kinds) > 1 else allowed
        # with k = 1 this draws as rng.choice(n) does, so a batch of one asks the same question
        drawn = rng.choice(len(among), size=min(k, len(among)), replace=False)
        return [state.query(int(among[int(t)])) for t in drawn]


@dataclass(frozen=True)
class NonSequentialStrategy(Strategy):
    """The first ``k`` allowed questions of the no-feedback ranking."""

    def choose(self, state: Elicitor, allowed: QuestionSet, rng: np.random.Generator,
               k: int) -> list[Query]:
        ranking = state.nonsequential_ranking(rng)
        keep = allowed.contains(ranking.index)
        if not keep.any():
            raise ElicitError(f"every question of the non-sequential ranking has been asked (it "
                              f"ranks the {len(ranking.index)} questions of the first round's "
                              "pool); continue with another strategy")
        index, gain, exact = ranking.index[keep], ranking.gain[keep], ranking.exact[keep]
        picked = disjoint_greedy(state.table.rows(index), np.arange(len(index)), k)
        return [state.query(int(index[t]), gain[t], exact[t]) for t in picked]


@dataclass(frozen=True)
class SequentialStrategy(Strategy):
    """The best ``k`` questions of a fresh random pool, scored at the current MAP."""

    def choose(self, state: Elicitor, allowed: QuestionSet, rng: np.random.Generator,
               k: int) -> list[Query]:
        pool = round_pool(state, allowed, rng)
        # rank a batch on exact gains where possible: refine at least two per question
        scores = state.score(pool, refine=None if k == 1 else max(state.refine, 2 * k))
        picked = disjoint_greedy(scores.questions, scores.ranking(), k)
        return [state.query(int(pool[t]), scores.utility[t], scores.exact[t]) for t in picked]


_S = TypeVar("_S", bound=Strategy)
#: the registered strategies by name (a read-only mapping; add with :func:`register_strategy`)
STRATEGY_REGISTRY: Registry[Strategy] = Registry("strategy")


def register_strategy(strategy: _S) -> _S:
    """Register ``strategy`` under its name and return it; a one-line ElicitError if its name
    or stream id is invalid or taken (a shared stream would correlate two strategies)."""
    if not isinstance(strategy, Strategy):
        raise ElicitError(f"register_strategy takes a Strategy object, got "
                          f"{type(strategy).__name__}")
    name, sid = strategy.name, strategy.stream_id
    check_int(sid, f"the stream id of strategy {name!r} must be a non-negative integer, got "
              f"{sid!r}", 0)
    taken = {int(s.stream_id): s.name for s in STRATEGY_REGISTRY.values() if s.name != name}
    if int(sid) in taken:
        raise ElicitError(f"stream id {sid} is taken by strategy {taken[int(sid)]!r}; give "
                          f"{name!r} an unused one (taken: {sorted(taken)})")
    return cast(_S, STRATEGY_REGISTRY.add(name, strategy))


unregister_strategy = STRATEGY_REGISTRY.remove
get_strategy = STRATEGY_REGISTRY.lookup


register_strategy(RandomStrategy("random", "Random", stream_id=0))
register_strategy(NonSequentialStrategy("nonsequential", "Non-sequential", stream_id=1,
                                        needs_ranking=True))
register_strategy(SequentialStrategy("sequential", "Sequential", stream_id=2, draws_pool=True))


def draw_pool(allowed: QuestionSet | np.ndarray, size: int,
              rng: np.random.Generator) -> np.ndarray:
    """``min(size, len(allowed))`` of the ``allowed`` indices, drawn uniformly, increasing."""
    size = min(int(size), len(allowed))
    return np.asarray(allowed[np.sort(rng.choice(len(allowed), size=size, replace=False))],
                      dtype=np.int64)


def round_pool(state: Elicitor, allowed: QuestionSet, rng: np.random.Generator,
               ) -> np.ndarray:
    """The questions one round chooses among (increasing table indices): of each kind, a
    random pool of ``state.pool_size`` (``pool == "sample"``) or every allowed one."""
    parts = [draw_pool(members, state.pool_size, rng) if kind.pool == "sample"
             else members.indices() for kind, members in allowed.by_kind() if len(members)]
    return np.sort(np.concatenate(parts)) if parts else np.zeros(0, np.int64)


def answer_probabilities(state: Elicitor, questions: np.ndarray) -> np.ndarray:
    """The probability of the first answer to each of ``questions`` at the current MAP."""
    index = np.asarray(questions, dtype=np.int64).reshape(-1)
    round_ = ScoringRound(UtilityScorer(state.data, state.fit, state.engine))
    segs = state.table.segments
    return state.table.per_segment(
        index, np.empty(len(index)),
        lambda s, local: segs[s].kind.answer_probability(round_, segs[s].rows(local)))


def disjoint_greedy(questions: np.ndarray, order: np.ndarray, k: int) -> list[int]:
    """Walk ``order`` (best first) taking questions that share no feature with those taken,
    then fill up with the best remaining ones; row indices of ``questions``."""
    picked: list[int] = []
    used: set[int] = set()
    for t in order:
        if len(picked) == k:
            return picked
        a, b = int(questions[t, 0]), int(questions[t, 1])
        about = (a,) if b == NO_FEATURE else (a, b)
        if used.isdisjoint(about):
            picked.append(int(t))
            used.update(about)
    rest = (int(t) for t in order if int(t) not in picked)
    return picked + list(islice(rest, k - len(picked)))
