"""A question (:class:`Query`), and how it is written down.

In arrays a question is a row ``(i, j)``: a pair with ``i < j``, or ``(k, NO_FEATURE)`` about
one feature. Public objects (:class:`Query`, the answer tuples ``(i, j, answer)``) write the
missing second feature as ``None``; both spellings are accepted where a question is given.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from elicit.elicitation.kinds import get_kind, kind_for
from elicit.elicitation.table import NO_FEATURE
from elicit.errors import ElicitError


@dataclass(frozen=True)
class Query:
    """A question to ask, and its expected information gain.

    A pair question names features ``i`` and ``j``; a question about one feature has
    ``j = None``. ``kind`` is the name of its registered kind; left out, the only kind of the
    question's arity. ``expected_gain`` is None for the random strategy; ``exact_gain`` is
    False for a fast-screen estimate.
    """

    i: int
    j: int | None
    expected_gain: float | None = None
    exact_gain: bool = False
    kind: str = ""

    def __post_init__(self) -> None:
        kind = get_kind(self.kind) if self.kind else kind_for(self.i, self.j)
        if kind.arity != len(self.features):
            raise ElicitError(f"a question of kind {kind.name!r} is about {kind.arity} "
                              f"feature(s), not ({self.i}, {self.j})")
        object.__setattr__(self, "kind", kind.name)

    @classmethod
    def feature_question(cls, k: int, expected_gain: float | None = None,
                         exact_gain: bool = False, kind: str = "") -> Query:
        """The question about feature ``k``."""
        return cls(int(k), None, expected_gain, exact_gain, kind)

    @classmethod
    def of_row(cls, row, gain=None, exact=False, kind: str = "") -> Query:
        """The query of a question row ``(i, j)`` or ``(k, NO_FEATURE)``."""
        i, j = int(row[0]), int(row[1])
        return cls(i, None if j == NO_FEATURE else j, None if gain is None else float(gain),
                   bool(exact), kind)

    @property
    def feature(self) -> int:
        """The feature a question about one feature asks about."""
        if self.j is not None:
            raise ElicitError(f"({self.i}, {self.j}) is a pair question; it names two features")
        return self.i

    @property
    def features(self) -> tuple[int, ...]:
        """The features the question is about: one or two."""
        return (self.i,) if self.j is None else (self.i, self.j)

    @property
    def row(self) -> tuple[int, int]:
        """The question as a row of a question array."""
        return (self.i, NO_FEATURE if self.j is None else self.j)


def question_key(i, j=None) -> tuple[int, int]:
    """The row of the question ``(i, j)``: a pair sorted ``i < j``, or ``(k, NO_FEATURE)`` for
    ``j`` None or :data:`NO_FEATURE`; a one-line error for non-integer indices."""
    try:
        a = _index(i)
        b = NO_FEATURE if j is None else _index(j)
    except TypeError:
        raise ElicitError(f"a question is (i, j) for a pair or (k, None) for a feature, with "
                          f"integer feature indices; got ({i!r}, {j!r})") from None
    if b == NO_FEATURE:
        return (a, NO_FEATURE)
    return (min(a, b), max(a, b))


def _index(v) -> int:
    if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, np.integer)):
        raise TypeError
    return int(v)

