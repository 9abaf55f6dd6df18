"""The question table of an elicitation: every question it may ask, in a fixed order (one
:class:`Segment` per kind), without writing the questions down: all p(p-1)/2 pairs are
ranked in closed form (:func:`pair_rank`; at p = 10,000 the rows would take 0.8 GB). The open
questions are a :class:`QuestionSet`, counted, selected by position and tested for membership
without being listed, so a round costs O(answers) instead of O(p^2).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING

import numpy as np

from elicit.errors import ElicitError

if TYPE_CHECKING:
    from elicit.elicitation.kinds.base import QuestionKind

#: the second entry of a one-feature question's row in a question array
NO_FEATURE = -1


def feature_rows(features) -> np.ndarray:
    k = np.asarray(features, dtype=int).reshape(-1)
    return np.column_stack([k, np.full(len(k), NO_FEATURE)])


def n_pairs(p: int) -> int:
    return p * (p - 1) // 2


def _start(i: np.ndarray, p: int) -> np.ndarray:
    """The index of pair (i, i + 1): the pairs of the rows before i."""
    return i * (2 * p - i - 1) // 2


def pair_rank(i: np.ndarray, j: np.ndarray, p: int) -> np.ndarray:
    """The index of pair (i, j), i < j, among all pairs of p features ordered by i, then j."""
    i = np.asarray(i, dtype=np.int64)
    return _start(i, p) + (np.asarray(j, dtype=np.int64) - i - 1)


def pair_unrank(k: np.ndarray, p: int) -> tuple[np.ndarray, np.ndarray]:
    """The pairs (i, j) of the indices ``k`` (the inverse of :func:`pair_rank`)."""
    k = np.asarray(k, dtype=np.int64)
    b = 2 * p - 1
    # the root of start(i) = k, then corrected by one where the float root missed
    i = np.floor((b - np.sqrt(np.maximum(b * b - 8.0 * k, 0.0))) / 2.0).astype(np.int64)
    i = np.clip(i, 0, max(p - 2, 0))
    for _ in range(2):
        i = np.where(_start(i, p) > k, i - 1, i)
        i = np.where((i + 1 <= p - 2) & (_start(i + 1, p) <= k), i + 1, i)
    return i, k - _start(i, p) + i + 1


def _find(members: np.ndarray, values: np.ndarray) -> np.ndarray:
    """The position of each of ``values`` in the increasing array ``members``; -1 if absent."""
    if not len(members):
        return np.full(np.shape(values), -1, dtype=np.int64)
    at = np.searchsorted(members, values)
    return np.where(members[np.minimum(at, len(members) - 1)] == values, at, -1)


class LocalSet(ABC):
    """Increasing indices of one segment's questions, listed only on request."""

    @abstractmethod
    def __len__(self) -> int: ...

    @abstractmethod
    def select(self, pos: np.ndarray) -> np.ndarray:
        """The members at the positions ``pos`` (0-based, in increasing order of members)."""

    @abstractmethod
    def contains(self, local: np.ndarray) -> np.ndarray:
        """Which of the indices ``local`` are members."""

    def indices(self) -> np.ndarray:
        """Every member, increasing."""
        return self.select(np.arange(len(self), dtype=np.int64))


class ArraySet(LocalSet):
    """Members listed in an increasing array (segments whose questions are stored)."""

    def __init__(self, members: np.ndarray) -> None:
        self.members = np.asarray(members, dtype=np.int64)

    def __len__(self) -> int:
        return len(self.members)

    def select(self, pos: np.ndarray) -> np.ndarray:
        return self.members[pos]

    def contains(self, local: np.ndarray) -> np.ndarray:
        return _find(self.members, np.asarray(local, dtype=np.int64)) >= 0


class PairsAmong(LocalSet):
    """All pairs of the features ``open`` but the positions ``removed`` among them, as indices
    among all pairs of ``p`` features: with removed positions R the member at position q is
    pair ``q + #{s: R[s] - s <= q}`` of ``open``."""

    def __init__(self, p: int, open_: np.ndarray, removed: np.ndarray) -> None:
        self.p, self.open = p, np.asarray(open_, dtype=np.int64)
        self.m = len(self.open)
        self.removed = np.asarray(removed, dtype=np.int64)
        self._shift = self.removed - np.arange(len(self.removed), dtype=np.int64)

    def __len__(self) -> int:
        return n_pairs(self.m) - len(self.removed)

    def select(self, pos: np.ndarray) -> np.ndarray:
        pos = np.asarray(pos, dtype=np.int64)
        r = pos + np.searchsorted(self._shift, pos, side="right")
        a, b = pair_unrank(r, self.m)
        return pair_rank(self.open[a], self.open[b], self.p)

    def contains(self, local: np.ndarray) -> np.ndarray:
        i, j = pair_unrank(np.asarray(local, dtype=np.int64), self.p)
        a, b = _find(self.open, i), _find(self.open, j)
        r = pair_rank(np.maximum(a, 0), np.maximum(b, 0), self.m)
        return (a >= 0) & (b >= 0) & ~ArraySet(self.removed).contains(r)


class QuestionSet:
    """Increasing table indices, one :class:`LocalSet` per segment, that read like an array."""

    def __init__(self, table: QuestionTable, parts: Sequence[LocalSet]) -> None:
        self.table = table
        self.parts = list(parts)
        self._ends = np.cumsum([len(s) for s in self.parts], dtype=np.int64)

    def __len__(self) -> int:
        return int(self._ends[-1]) if len(self._ends) else 0

    def _select(self, pos: np.ndarray) -> np.ndarray:
        pos = np.asarray(pos, dtype=np.int64)
        n = len(self)
        if pos.size and (pos.min() < -n or pos.max() >= n):
            raise IndexError(f"position out of range for {n} questions")
        pos = np.where(pos < 0, pos + n, pos)
        seg = np.searchsorted(self._ends, pos, side="right")
        out = np.empty(pos.shape, dtype=np.int64)
        for s, part in enumerate(self.parts):
            here = seg == s
            if here.any():
                before = int(self._ends[s - 1]) if s else 0
                out[here] = part.select(pos[here] - before) + self.table.offsets[s]
        return out

    def __getitem__(self, key):
        if isinstance(key, slice):
            return self._select(np.arange(len(self), dtype=np.int64)[key])
        if isinstance(key, (int, np.integer)) and not isinstance(key, bool):
            return int(self._select(np.array([key]))[0])
        return self._select(np.asarray(key))

    def __array__(self, dtype=None, copy=None) -> np.ndarray:
        out = self.indices()
        return out if dtype is None else out.astype(dtype)

    def __iter__(self) -> Iterator[int]:
        return iter(self.indices().tolist())

    def tolist(self) -> list[int]:
        return self.indices().tolist()

    def indices(self) -> np.ndarray:
        """Every member, increasing (listed: for small sets)."""
        parts = [s.indices() + off for s, off in zip(self.parts, self.table.offsets)]
        return np.concatenate(parts).astype(np.int64) if parts else np.zeros(0, np.int64)

    def contains(self, index: np.ndarray) -> np.ndarray:
        index = np.asarray(index, dtype=np.int64)
        return self.table.per_segment(index, np.zeros(index.shape, bool),
                                      lambda s, local: self.parts[s].contains(local))

    def by_kind(self) -> list[tuple[QuestionKind, QuestionSet]]:
        empty: list[LocalSet] = [ArraySet(np.zeros(0, np.int64)) for _ in self.parts]
        return [(seg.kind, QuestionSet(self.table, [*empty[:s], part, *empty[s + 1:]]))
                for s, (seg, part) in enumerate(zip(self.table.segments, self.parts))]


class Segment(ABC):
    """The questions of one kind in an elicitation's table."""

    def __init__(self, kind: QuestionKind, p: int) -> None:
        self.kind, self.p = kind, p

    @abstractmethod
    def __len__(self) -> int: ...

    @abstractmethod
    def rows(self, local: np.ndarray) -> np.ndarray:
        """The rows of the questions ``local`` (k x 2)."""

    @abstractmethod
    def locate(self, rows: np.ndarray) -> np.ndarray:
        """The local index of each row (pairs ``i < j``), -1 where there is no such question."""

    def members(self, closed: np.ndarray | None, removed: np.ndarray) -> LocalSet:
        """The questions not ``removed`` (local indices) and about no ``closed`` feature."""
        ok = np.ones(len(self), bool)
        ok[np.asarray(removed, dtype=np.int64)] = False
        if closed is not None and closed.any():
            ok &= ~closed[self.features(self.rows(np.arange(len(self))))].any(axis=1)
        return ArraySet(np.flatnonzero(ok))

    @abstractmethod
    def missing(self, row: tuple[int, int]) -> str:
        """Why the question ``row`` is not in the segment (for a one-line error)."""

    def features(self, rows: np.ndarray) -> np.ndarray:
        """The features each question is about, a column per feature of the kind's arity."""
        return np.asarray(rows, dtype=np.int64).reshape(-1, 2)[:, :self.kind.arity]


class PairSegment(Segment):
    """Pair questions: all p(p-1)/2 pairs in closed form, or the given sorted candidates."""

    def __init__(self, kind: QuestionKind, p: int, candidates: np.ndarray | None) -> None:
        super().__init__(kind, p)
        self.candidates = None if candidates is None else np.asarray(candidates, np.int64)
        if self.candidates is not None:
            # the rows are sorted by (i, j), so their keys i p + j are increasing
            self._keys = self.candidates[:, 0] * p + self.candidates[:, 1]

    def __len__(self) -> int:
        return n_pairs(self.p) if self.candidates is None else len(self.candidates)

    def rows(self, local: np.ndarray) -> np.ndarray:
        local = np.asarray(local, dtype=np.int64)
        if self.candidates is not None:
            return self.candidates[local]
        return np.column_stack(pair_unrank(local, self.p)).reshape(-1, 2)

    def locate(self, rows: np.ndarray) -> np.ndarray:
        rows = np.asarray(rows, dtype=np.int64).reshape(-1, 2)
        i, j = rows[:, 0], rows[:, 1]
        ok = (0 <= i) & (i < j) & (j < self.p)
        if self.candidates is None:
            return np.where(ok, pair_rank(np.where(ok, i, 0), np.where(ok, j, 1), self.p), -1)
        return np.where(ok, _find(self._keys, i * self.p + j), -1)

    def members(self, closed: np.ndarray | None, removed: np.ndarray) -> LocalSet:
        if self.candidates is not None:
            return super().members(closed, removed)
        removed = np.asarray(removed, dtype=np.int64)
        open_ = (np.arange(self.p, dtype=np.int64) if closed is None
                 else np.flatnonzero(~closed).astype(np.int64))
        # the removed pairs among the open features, as positions among their pairs
        inside = PairsAmong(self.p, open_, np.zeros(0, np.int64)).contains(removed)
        i, j = pair_unrank(removed[inside], self.p)
        pos = pair_rank(np.searchsorted(open_, i), np.searchsorted(open_, j), len(open_))
        return PairsAmong(self.p, open_, np.unique(pos))

    def missing(self, row: tuple[int, int]) -> str:
        return f"({row[0]}, {row[1]}) is not a candidate pair"


class FeatureSegment(Segment):
    """Questions about one feature: one per feature, in feature order."""

    def __len__(self) -> int:
        return self.p

    def rows(self, local: np.ndarray) -> np.ndarray:
        return feature_rows(local)

    def locate(self, rows: np.ndarray) -> np.ndarray:
        rows = np.asarray(rows, dtype=np.int64).reshape(-1, 2)
        ok = (rows[:, 1] == NO_FEATURE) & (0 <= rows[:, 0]) & (rows[:, 0] < self.p)
        return np.where(ok, rows[:, 0], -1)

    def missing(self, row: tuple[int, int]) -> str:
        return f"feature index out of range 0..{self.p - 1}: {row[0]}"


class QuestionTable:
    """Every question of an elicitation: one segment per kind asked, in the kinds' order."""

    def __init__(self, segments: Sequence[Segment]) -> None:
        self.segments = tuple(segments)
        self.kinds = tuple(s.kind for s in self.segments)
        sizes = [len(s) for s in self.segments]
        self.offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)[:-1]
        self._end = int(sum(sizes))

    def __len__(self) -> int:
        return self._end

    def segment_of(self, index: np.ndarray) -> np.ndarray:
        return np.searchsorted(self.offsets, np.asarray(index, dtype=np.int64), side="right") - 1

    def kind_of(self, index: int) -> QuestionKind:
        return self.segments[int(self.segment_of(np.array([index]))[0])].kind

    def per_segment(self, index: np.ndarray, out: np.ndarray,
                    fill: Callable[[int, np.ndarray], np.ndarray]) -> np.ndarray:
        """``out`` with ``fill(s, local indices)`` where ``index`` is in segment s."""
        seg = self.segment_of(index)
        for s in range(len(self.segments)):
            here = seg == s
            if here.any():
                out[here] = fill(s, index[here] - self.offsets[s])
        return out

    def rows(self, index: np.ndarray | Sequence[int]) -> np.ndarray:
        index = np.asarray(index, dtype=np.int64).reshape(-1)
        return self.per_segment(index, np.empty((len(index), 2), dtype=np.int64),
                                lambda s, local: self.segments[s].rows(local))

    def locate(self, kind: QuestionKind, rows: np.ndarray) -> np.ndarray:
        """The table index of ``kind``'s questions ``rows``; -1 where there is none."""
        s = self.kinds.index(kind)
        local = self.segments[s].locate(rows)
        return np.where(local >= 0, local + self.offsets[s], -1)

    def open_set(self, removed: np.ndarray, closed: Sequence[np.ndarray | None]) -> QuestionSet:
        """The questions not ``removed`` and about no feature ``closed`` (a mask per segment)."""
        removed = np.unique(np.asarray(removed, dtype=np.int64))
        seg = self.segment_of(removed)
        return QuestionSet(self, [
            segment.members(closed[s], removed[seg == s] - self.offsets[s])
            for s, segment in enumerate(self.segments)])

    def everything(self) -> QuestionSet:
        return self.open_set(np.zeros(0, np.int64), [None] * len(self.segments))


def check_candidates(pairs, p: int) -> np.ndarray:
    """The candidate pairs a caller gives, checked against ``p`` features and sorted."""
    pairs = np.asarray(pairs)
    if pairs.ndim != 2 or pairs.shape[1] != 2:
        raise ElicitError(f"candidate pairs must have shape (k, 2), got {pairs.shape}")
    if len(bad := pairs[pairs.astype(int) != pairs]):
        raise ElicitError(f"candidate pair indices must be integers, got {bad[0]}")
    pairs = np.sort(pairs.astype(int), axis=1)
    if pairs.size and (pairs.min() < 0 or pairs.max() >= p):
        raise ElicitError(f"candidate pair indices must lie in 0..{p - 1}")
    if np.any(pairs[:, 0] == pairs[:, 1]):
        raise ElicitError("a candidate pair must join two different features")
    keys = np.sort(pairs[:, 0] * p + pairs[:, 1])  # one integer per pair, ordered as (i, j)
    if np.any(keys[1:] == keys[:-1]):
        raise ElicitError("candidate pairs contain duplicates")
    return np.column_stack(np.divmod(keys, p))
