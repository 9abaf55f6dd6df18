"""The two kinds of question an elicitation asks, and how they are written down.

* A **pair question**, the paper's: "do features i and j affect the outcome in the same way?"
  (answers similar / dissimilar / don't know).
* A **feature question**: "does feature k affect the outcome?" (answers relevant /
  irrelevant / don't know). It needs a model with relevance classes (``model="relevance"``).

``questions="pairs" | "relevance" | "both"`` (:data:`QUESTIONS`) says which kinds an
elicitation asks; ``"pairs"`` is the paper's.

In arrays a question is a row ``(i, j)``: a pair with ``i < j``, or a feature question
``(k, NO_FEATURE)``. Public objects (:class:`Query`, the answer tuples ``(i, j, answer)``
of :meth:`~elicit.elicitation.elicitor.Elicitor.set_answers`) write the missing second
feature as ``None``; both spellings are accepted where a question is given.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np

from elicit.errors import ElicitError

#: which kinds of question an elicitation asks (``Elicitor(questions=...)``); "pairs" is the
#: paper's and the default
QUESTIONS: tuple[str, ...] = ("pairs", "relevance", "both")
#: the second entry of a feature question's row in a question array
NO_FEATURE = -1

Kind = Literal["pair", "feature"]


def check_questions(questions: str) -> str:
    """``questions`` if it is one of :data:`QUESTIONS`, else a one-line error."""
    if isinstance(questions, str) and questions in QUESTIONS:
        return questions
    raise ElicitError(f"questions must be one of {', '.join(QUESTIONS)}, got {questions!r}")


@dataclass(frozen=True)
class Query:
    """A question to ask, and its expected information gain.

    A pair question names features ``i`` and ``j``; a feature question names one feature,
    ``i``, and has ``j = None`` (:meth:`feature_question`).

    ``expected_gain`` is None for the random strategy; ``exact_gain`` is True when the gain is
    an exact refit value (or, for the ``params`` target, the Laplace-approximation value) and
    False for a fast-screen estimate.
    """

    i: int
    j: int | None
    expected_gain: float | None = None
    exact_gain: bool = False

    @classmethod
    def feature_question(cls, k: int, expected_gain: float | None = None,
                         exact_gain: bool = False) -> Query:
        """The question "does feature ``k`` affect the outcome?"."""
        return cls(int(k), None, expected_gain, exact_gain)

    @classmethod
    def of_row(cls, row, gain=None, exact=False) -> Query:
        """The query of a question row ``(i, j)`` or ``(k, NO_FEATURE)``."""
        i, j = int(row[0]), int(row[1])
        return cls(i, None if j == NO_FEATURE else j, None if gain is None else float(gain),
                   bool(exact))

    @property
    def kind(self) -> Kind:
        """``"pair"`` or ``"feature"``."""
        return "feature" if self.j is None else "pair"

    @property
    def feature(self) -> int:
        """The feature a feature question asks about."""
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
    """The row of the question ``(i, j)``: a pair sorted ``i < j``, a feature question
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


def kind_of(row) -> Kind:
    """The kind of the question row ``(i, j)`` / ``(k, NO_FEATURE)``."""
    return "feature" if row[1] == NO_FEATURE else "pair"


def _index(v) -> int:
    if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, np.integer)):
        raise TypeError
    return int(v)


def is_feature_row(rows: np.ndarray) -> np.ndarray:
    """Which rows of a question array are feature questions."""
    return np.asarray(rows).reshape(-1, 2)[:, 1] == NO_FEATURE


def feature_rows(features) -> np.ndarray:
    """Feature questions as rows ``(k, NO_FEATURE)`` of a question array."""
    k = np.asarray(features, dtype=int).reshape(-1)
    return np.column_stack([k, np.full(len(k), NO_FEATURE)])
