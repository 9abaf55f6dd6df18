"""A question (:class:`Query`): in arrays a row ``(i, j)``, ``i < j``, or ``(k, NO_FEATURE)``
about one feature; public objects write the missing second feature as ``None``."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from elicit.elicitation.kinds import get_kind, kind_for
from elicit.elicitation.table import NO_FEATURE
from elicit.errors import ElicitError


@dataclass(frozen=True)
class Query:
    """A question to ask (``j = None``: about one feature), and its expected information gain
    (None for the random strategy; ``exact_gain`` False for a screen's estimate). ``kind``
    left out: the only kind of the question's arity."""

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
    def of_row(cls, row, gain=None, exact=False, kind: str = "") -> Query:
        """The query of a question row ``(i, j)`` or ``(k, NO_FEATURE)``."""
        i, j = int(row[0]), int(row[1])
        return cls(i, None if j == NO_FEATURE else j, None if gain is None else float(gain),
                   bool(exact), kind)

    @property
    def features(self) -> tuple[int, ...]:
        return (self.i,) if self.j is None else (self.i, self.j)

    @property
    def row(self) -> tuple[int, int]:
        return (self.i, NO_FEATURE if self.j is None else self.j)


def question_key(i, j=None) -> tuple[int, int]:
    """The row of the question ``(i, j)``: a pair sorted ``i < j``, or ``(k, NO_FEATURE)``."""
    if any(isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, np.integer))
           for v in ((i,) if j is None else (i, j))):
        raise ElicitError(f"a question is (i, j) for a pair or (k, None) for a feature, with "
                          f"integer feature indices; got ({i!r}, {j!r})")
    a, b = int(i), NO_FEATURE if j is None else int(j)
    return (a, NO_FEATURE) if b == NO_FEATURE else (min(a, b), max(a, b))
