"""Query strategies: which questions to ask next.

The paper's three strategies (Afrabandpey et al. 2019, Sec. 4), each choosing among the
*allowed* questions (not asked yet, not excluded by the caller, and no pair with a feature the
expert called irrelevant):

``random``
    uniformly random allowed questions;
``nonsequential``
    the expected information gain (:mod:`elicit.elicitation.utility`) of every candidate is
    computed once, at the no-feedback MAP, and the questions are asked in that ranked order;
``sequential``
    a fresh random pool of allowed questions is scored at the current MAP, and the best is
    asked (pool size ``min(#pairs, 10 p, 4000)`` by default; the paper uses 400 on real data).

Which questions a round chooses among depends on the kinds of question asked
(:mod:`elicit.elicitation.kinds`):

one kind (the paper: pairs)
    random draws among all allowed questions, sequential scores a random pool R_p of
    ``pool_size`` allowed pairs, non-sequential ranks every question;
several kinds
    a round's *mixed pool* (:func:`round_pool`) holds, of each kind, a random sample of
    ``pool_size`` allowed questions (a kind whose ``pool`` is ``"sample"``: pairs) or every
    allowed one (``"all"``: a kind about one feature): sequential scores it and asks the
    best, random draws uniformly from it (so that 337 feature questions are not drowned by
    56,616 pairs), non-sequential ranks the first round's pool once, at the no-feedback MAP,
    and asks down that ranking, skipping what is no longer allowed.

Each strategy is a small registered object (:class:`Strategy`): its name, its display label,
whether it reads the no-feedback ranking, whether it draws a pool, and a fixed random-stream
id. Sweeps seed each strategy's questions by that id, so a strategy registered later never
re-seeds the stored results of the others. :func:`get_strategy` and
:func:`register_strategy` are the registry; :data:`STRATEGIES` names the paper's three, the
defaults of sweeps and sessions. A new strategy is a subclass with a ``choose`` method,
registered from anywhere (no edit in this package)::

    class FirstAllowed(Strategy):
        def choose(self, state, allowed, rng, k):
            return [state.query(t) for t in allowed[:k]]

    register_strategy(FirstAllowed("first", "First allowed", stream_id=10))

The :class:`~elicit.elicitation.elicitor.Elicitor` owns the state they read (the data, the
current MAP, the engine, the utility settings, the cached non-sequential ranking) and decides
which questions are allowed; a strategy chooses among them, and scores candidates only
through the state (``state.score``, ``state.nonsequential_ranking``): choosing is separate
from scoring. The sweeps of the paper and real-expert sessions both ask through
:func:`choose`.

Asking ``k`` questions at once (a batch) adds one rule, :func:`disjoint_greedy`: the ranked
questions are walked best first and a question is taken only if it shares no feature with a
question already taken, then the best remaining ones fill up the batch. Pairs that share a
feature have correlated meta-feature differences, so their answers tell the model much the
same thing. For a batch the fast utility refines the ``max(refine, 2k)`` best screened
questions exactly, so the batch is ranked on exact gains where possible.

Random draws, the whole of each strategy's use of ``rng`` (a seed must keep asking the same
questions):

* the pool of a round: for each sampled kind in turn,
  ``sort(rng.choice(n, size=min(pool_size, n), replace=False))`` over its ``n`` allowed
  questions in table order (no draw when there are none);
* random: with one kind, ``rng.choice(n, size=k, replace=False)`` over the ``n`` allowed
  questions in table order, asked in the order drawn; with several the same over the round's
  mixed pool, drawn first;
* sequential: the pool;
* nonsequential: with one kind no draws; with several the first round's pool
  (:meth:`~elicit.elicitation.elicitor.Elicitor.nonsequential_ranking`).

The allowed questions are a :class:`~elicit.elicitation.table.QuestionSet`: table indices that
are counted and drawn from without being listed (all pairs of 10,000 features are 50 million),
with the same draws as from the list.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol, TypeVar, cast

import numpy as np

from elicit.elicitation.gains import Scores
from elicit.elicitation.questions import NO_FEATURE, Query
from elicit.elicitation.scorer import UtilityScorer
from elicit.elicitation.table import ArraySet, QuestionSet, QuestionTable
from elicit.elicitation.utility import ScoringRound
from elicit.engines.base import Engine
from elicit.errors import ElicitError
from elicit.internal.registry import Registry
from elicit.model.result import MAPResult
from elicit.model.spec import ModelData

if TYPE_CHECKING:
    from elicit.elicitation.kinds import QuestionKind

#: the paper's three strategies, in the order of their random-stream ids (the defaults)
STRATEGIES: tuple[str, ...] = ("random", "nonsequential", "sequential")

__all__ = ["STRATEGIES", "STRATEGY_REGISTRY", "ElicitationState", "Query", "Ranking",
           "Strategy", "answer_probabilities", "choose", "disjoint_greedy", "draw_pool",
           "get_strategy",
           "nonsequential_queries", "random_queries", "register_strategy", "round_pool",
           "sequential_queries", "unregister_strategy"]


@dataclass(frozen=True)
class Ranking:
    """Questions best first: their indices into the question table (``state.table``),
    gains and exactness."""

    index: np.ndarray
    gain: np.ndarray
    exact: np.ndarray

    @classmethod
    def from_scores(cls, scores: Scores, index: np.ndarray) -> Ranking:
        """Rank scored questions (``index`` maps the scored rows to question indices)."""
        order = scores.ranking()
        return cls(np.asarray(index)[order], scores.utility[order], scores.exact[order])


class ElicitationState(Protocol):
    """What a strategy reads of an elicitation (an
    :class:`~elicit.elicitation.elicitor.Elicitor` provides it)."""

    #: every question that may be asked, by index (:mod:`elicit.elicitation.table`)
    table: QuestionTable
    #: the kinds of question asked (:mod:`elicit.elicitation.kinds`)
    kinds: tuple[QuestionKind, ...]
    data: ModelData
    fit: MAPResult
    engine: Engine
    utility: str
    refine: int
    #: what the gains are about: "predictive" or "params" (:mod:`elicit.elicitation.utility`)
    target: str
    pool_size: int

    def query(self, index: int, gain: float | None = None, exact: bool = False) -> Query:
        """The question at table index ``index``."""
        ...

    def score(self, questions: np.ndarray, refine: int | None = None) -> Scores:
        """Expected gains of the questions ``questions`` (table indices) at the current MAP
        (refining ``refine`` of them, by default the state's own ``refine``)."""
        ...

    def nonsequential_ranking(self, rng: np.random.Generator | None = None) -> Ranking:
        """The candidates ranked at the no-feedback MAP (computed once, then cached; ``rng``
        draws the first round's pool of a mixed elicitation)."""
        ...


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

    A strategy that scores or ranks questions reads the kinds' API, whatever the kinds
    asked: ``state.score(index)`` (expected gains), ``state.query(index)`` (the question),
    and the kinds' :meth:`~elicit.elicitation.kinds.QuestionKind.answer_probability`
    through :func:`answer_probabilities`.
    """

    name: str
    label: str
    stream_id: int
    needs_ranking: bool = False
    draws_pool: bool = False

    @abstractmethod
    def choose(self, state: ElicitationState, allowed: QuestionSet, rng: np.random.Generator,
               k: int) -> list[Query]:
        """The ``k`` questions to ask, best first (``1 <= k <= len(allowed)``).

        Parameters
        ----------
        state
            The elicitation state (questions, data, MAP, scoring).
        allowed
            The questions that may be asked: increasing table indices
            (:class:`~elicit.elicitation.table.QuestionSet`, which reads like an array of
            them: ``len``, ``allowed[t]``, ``np.asarray``).
        rng
            The strategy's random stream; a seed must keep asking the same questions.
        k
            How many questions.
        """


@dataclass(frozen=True)
class RandomStrategy(Strategy):
    """Uniformly random allowed questions (:func:`random_queries`): among all allowed
    questions of the one kind asked, or, with several kinds, among the round's mixed pool
    (:func:`round_pool`)."""

    def choose(self, state: ElicitationState, allowed: QuestionSet, rng: np.random.Generator,
               k: int) -> list[Query]:
        among: QuestionSet | np.ndarray = allowed
        if len(state.kinds) > 1:
            among = round_pool(state, allowed, rng)
        return random_queries(state, among, rng, k)


@dataclass(frozen=True)
class NonSequentialStrategy(Strategy):
    """The no-feedback ranking, asked in order (:func:`nonsequential_queries`)."""

    def choose(self, state: ElicitationState, allowed: QuestionSet, rng: np.random.Generator,
               k: int) -> list[Query]:
        return nonsequential_queries(state, state.nonsequential_ranking(rng), allowed, k)


@dataclass(frozen=True)
class SequentialStrategy(Strategy):
    """The best of a fresh random pool, scored at the current MAP (:func:`sequential_queries`)."""

    def choose(self, state: ElicitationState, allowed: QuestionSet, rng: np.random.Generator,
               k: int) -> list[Query]:
        return sequential_queries(state, allowed, rng, k)


_S = TypeVar("_S", bound=Strategy)
#: the registered strategies by name (a read-only mapping; add with :func:`register_strategy`)
STRATEGY_REGISTRY: Registry[Strategy] = Registry("strategy")


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
    if isinstance(sid, bool) or not isinstance(sid, (int, np.integer)) or sid < 0:
        raise ElicitError(f"the stream id of strategy {name!r} must be a non-negative "
                          f"integer, got {sid!r}")
    taken = {int(s.stream_id): s.name for s in STRATEGY_REGISTRY.values() if s.name != name}
    if int(sid) in taken:
        raise ElicitError(f"stream id {sid} is taken by strategy {taken[int(sid)]!r}; give "
                          f"{name!r} an unused one (taken: {sorted(taken)})")
    # add returns its argument, typed as the registry's item type
    return cast(_S, STRATEGY_REGISTRY.add(name, strategy))


#: Remove the strategy called ``name`` (a strategy registered for a test, say).
unregister_strategy = STRATEGY_REGISTRY.remove
#: The registered strategy called ``name``; any other name is a one-line ElicitError that
#: lists the registered ones.
get_strategy = STRATEGY_REGISTRY.lookup


RANDOM = register_strategy(RandomStrategy("random", "Random", stream_id=0))
NONSEQUENTIAL = register_strategy(NonSequentialStrategy(
    "nonsequential", "Non-sequential", stream_id=1, needs_ranking=True))
SEQUENTIAL = register_strategy(SequentialStrategy(
    "sequential", "Sequential", stream_id=2, draws_pool=True))


def choose(strategy: str, state: ElicitationState, allowed: QuestionSet | np.ndarray,
           rng: np.random.Generator, k: int = 1) -> list[Query]:
    """The questions to ask next under ``strategy``, best first.

    Parameters
    ----------
    strategy
        The name of a registered strategy (:func:`get_strategy`): ``"random"``,
        ``"nonsequential"``, ``"sequential"`` or one registered later.
    state
        The elicitation state the strategy reads.
    allowed
        The questions that may be asked, as increasing table indices (a
        :class:`~elicit.elicitation.table.QuestionSet` or an array).
    rng
        The random stream (see the module docstring for what each strategy draws).
    k
        How many questions; more than one are chosen feature-disjoint where possible
        (:func:`disjoint_greedy`). Capped at ``len(allowed)``.

    Returns
    -------
    list of Query
        ``min(k, len(allowed))`` questions.
    """
    chosen = get_strategy(strategy)
    if not isinstance(allowed, QuestionSet):
        allowed = _as_set(state, np.asarray(allowed, dtype=np.int64))
    if len(allowed) == 0:
        raise ElicitError("no question is left to ask")
    k = min(int(k), len(allowed))
    return chosen.choose(state, allowed, rng, k)


def random_queries(state: ElicitationState, allowed: QuestionSet | np.ndarray,
                   rng: np.random.Generator, k: int) -> list[Query]:
    """``k`` distinct questions of ``allowed`` (table indices) drawn uniformly, in the order
    drawn."""
    # With k = 1 this consumes rng exactly as rng.choice(n) does (NumPy's sampler without
    # replacement draws one bounded integer, as integers(0, n) does), so asking one question
    # at a time and asking a batch of one give the same question.
    drawn = rng.choice(len(allowed), size=k, replace=False)
    return [state.query(int(allowed[int(t)])) for t in drawn]


def draw_pool(allowed: QuestionSet | np.ndarray, size: int,
              rng: np.random.Generator) -> np.ndarray:
    """``min(size, len(allowed))`` of the ``allowed`` indices, uniformly without replacement,
    in increasing order (the sequential strategy's pool R_p)."""
    size = min(int(size), len(allowed))
    return np.asarray(allowed[np.sort(rng.choice(len(allowed), size=size, replace=False))],
                      dtype=np.int64)


def round_pool(state: ElicitationState, allowed: QuestionSet, rng: np.random.Generator,
               ) -> np.ndarray:
    """The questions one round chooses among, as increasing table indices.

    Of each kind in the table's order: a random pool of ``state.pool_size`` of its allowed
    questions (:func:`draw_pool`; a kind whose ``pool`` is ``"sample"``, the paper's R_p of
    pairs; no draw when none is allowed) or every allowed one (``"all"``).
    """
    parts = []
    for kind, members in allowed.by_kind():
        if len(members) == 0:
            continue
        parts.append(draw_pool(members, state.pool_size, rng) if kind.pool == "sample"
                     else members.indices())
    return np.sort(np.concatenate(parts)) if parts else np.zeros(0, np.int64)


def answer_probabilities(state: ElicitationState, questions: np.ndarray) -> np.ndarray:
    """The model's probability of each question's first answer (similar, relevant, ...) at
    the current MAP, each from its kind
    (:meth:`~elicit.elicitation.kinds.QuestionKind.answer_probability`); ``questions`` are
    table indices."""
    index = np.asarray(questions, dtype=np.int64).reshape(-1)
    round_ = ScoringRound(UtilityScorer(state.data, state.fit, state.engine))
    seg = state.table.segment_of(index)
    out = np.empty(len(index))
    for s, segment in enumerate(state.table.segments):
        here = seg == s
        if here.any():
            out[here] = segment.kind.answer_probability(
                round_, state.table.rows(index[here]))
    return out


def sequential_queries(state: ElicitationState, allowed: QuestionSet,
                       rng: np.random.Generator, k: int) -> list[Query]:
    """The best ``k`` questions of a fresh random pool (:func:`round_pool`), scored at the
    current MAP."""
    pool = round_pool(state, allowed, rng)
    # Rank a batch on exact gains where possible: refine at least two per question.
    scores = state.score(pool, refine=None if k == 1 else max(state.refine, 2 * k))
    picked = disjoint_greedy(scores.questions, scores.ranking(), k)
    return [state.query(int(pool[t]), scores.utility[t], scores.exact[t]) for t in picked]


def nonsequential_queries(state: ElicitationState, ranking: Ranking,
                          allowed: QuestionSet, k: int) -> list[Query]:
    """The first ``k`` allowed questions of the no-feedback ranking (feature-disjoint if
    k > 1).

    Raises
    ------
    ElicitError
        When no question of the ranking is allowed any more (a mixed elicitation ranks only
        its first round's pool).
    """
    keep = allowed.contains(ranking.index)
    if not keep.any():
        raise ElicitError(f"every question of the non-sequential ranking has been asked (it "
                          f"ranks the {len(ranking.index)} questions of the first round's "
                          "pool); continue with another strategy")
    index, gain, exact = ranking.index[keep], ranking.gain[keep], ranking.exact[keep]
    picked = disjoint_greedy(state.table.rows(index), np.arange(len(index)), k)
    return [state.query(int(index[t]), gain[t], exact[t]) for t in picked]


def disjoint_greedy(questions: np.ndarray, order: np.ndarray, k: int) -> list[int]:
    """Walk ``order`` (best first) taking questions that share no feature with those taken
    (a pair is about two features, a feature question about one); fill up with the best
    remaining questions if that gives fewer than ``k``. Returns row indices of
    ``questions``; with ``k = 1`` simply ``order[0]``."""
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
    for t in order:
        if len(picked) == k:
            break
        if int(t) not in picked:
            picked.append(int(t))
    return picked


def _as_set(state: ElicitationState, index: np.ndarray) -> QuestionSet:
    """Table indices given as an array, as a :class:`QuestionSet` of the state's table."""
    seg = state.table.segment_of(index)
    return QuestionSet(state.table, [ArraySet(np.sort(index[seg == s]) - state.table.offsets[s])
                                     for s in range(len(state.table.segments))])
