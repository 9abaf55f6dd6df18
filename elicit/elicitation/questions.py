"""A question, and how it is written down.

A question is of one registered kind (:mod:`elicit.elicitation.kinds`): the paper's pair
question "do features i and j affect the outcome in the same way?", the feature question
"does feature k affect the outcome?", or one registered later. ``questions=`` says which kinds
an elicitation asks (:func:`~elicit.elicitation.kinds.parse_questions`).

In arrays a question is a row ``(i, j)``: a pair with ``i < j``, or a question about one
feature ``(k, NO_FEATURE)``. Public objects (:class:`Query`, the answer tuples ``(i, j,
answer)`` of :meth:`~elicit.elicitation.elicitor.Elicitor.set_answers`) write the missing
second feature as ``None``; both spellings are accepted where a question is given. A
:class:`Query` also names its kind, which tells two kinds about one feature apart.
:data:`NO_FEATURE` is the question table's (:mod:`elicit.elicitation.table`, below the
kinds).
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

    A pair question names features ``i`` and ``j``; a question about one feature names
    ``i`` and has ``j = None`` (:meth:`feature_question`). ``kind`` is the name of its
    registered kind; left out, it is the kind of the question's arity when only one is
    registered (``"pairs"`` for two features, ``"relevance"`` for one).

    ``expected_gain`` is None for the random strategy; ``exact_gain`` is True when the gain is
    an exact refit value (or, for the ``params`` target, the Laplace-approximation value) and
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
        """The question about feature ``k`` (by default "does feature ``k`` affect the
        outcome?")."""
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
    """The row of the question ``(i, j)``: a pair sorted ``i < j``, a one-feature question
    ``(k, NO_FEATURE)`` for ``j`` None or :data:`NO_FEATURE`. Indices must be integers (a
    one-line error otherwise); whether the question may be asked is the caller's check."""
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

