"""Which questions a session may ask, and how a question is named. The file stores a feature
question as ``(i, FEATURE_J)``; :class:`SessionQuery` and :class:`AnswerRecord` write it with
``j = None``, as the Elicitor's :class:`~elicit.elicitation.questions.Query` does."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np

from elicit.elicitation.answers import Answer
from elicit.elicitation.kinds import QuestionKind, get_kind, kind_for
from elicit.errors import ElicitError
from elicit.session.store import FEATURE_J


def question_pairs(U: np.ndarray, excluded: Iterable[int] = ()) -> np.ndarray:
    """The candidate pairs of a session: pairs of features not ``excluded`` (constant or
    duplicate columns) whose rows of ``U`` differ (else K_ij = 1 whatever gamma is).

    Raises
    ------
    ElicitError
        When no pair is left.
    """
    p = U.shape[0]
    keep = np.setdiff1d(np.arange(p), np.fromiter(excluded, dtype=int))
    if len(keep) < 2:
        raise ElicitError(f"only {len(keep)} of the {p} features can be asked about (the "
                          "others are constant or duplicate columns); need at least 2")
    i, j = np.triu_indices(len(keep), 1)  # the kept features' pairs, by i then j (sorted)
    # rows of U told apart by a label each, not compared pair by pair (2e6 pairs x d values)
    row = np.unique(U[keep], axis=0, return_inverse=True)[1].reshape(-1)
    differ = row[i] != row[j]
    if not differ.any():
        raise ElicitError(f"all {len(keep)} features to ask about have identical "
                          "meta-features (identical rows of U), so no answer could change "
                          "the model; give meta-features that differ between features")
    return np.column_stack([keep[i[differ]], keep[j[differ]]])


def feature_index(names: list[str], feature: int | str) -> int:
    """The index of a feature given by name or index."""
    if isinstance(feature, str):
        try:
            return names.index(feature)
        except ValueError:
            raise ElicitError(f"unknown feature name {feature!r}") from None
    if isinstance(feature, (int, np.integer)) and 0 <= int(feature) < len(names):
        return int(feature)
    raise ElicitError(f"feature index {feature!r} out of range 0..{len(names) - 1}")


def public_j(j: int | None) -> int | None:
    """The second feature of a question as a session hands it out (None: a feature question)."""
    return None if j is None or int(j) == FEATURE_J else int(j)


def stored_j(j: int | None) -> int:
    """The second feature of a question as the session file stores it."""
    return FEATURE_J if j is None else int(j)


def question_names(names: Sequence[str], i: int, j: int | None) -> tuple[str, ...]:
    """The names of the features a question is about: two for a pair, one for a feature."""
    j = public_j(j)
    return (names[i],) if j is None else (names[i], names[j])


def question_label(names: Sequence[str], i: int, j: int | None) -> str:
    """A question in messages: ``'price' vs 'quality'``, or ``feature 'price'``."""
    named = question_names(names, i, j)
    return f"feature {named[0]!r}" if len(named) == 1 else " vs ".join(map(repr, named))


@dataclass(frozen=True)
class SessionQuery:
    """A question of any kind recorded in a session.

    Attributes
    ----------
    id, session_uid
        The query's row id in the session file (what :meth:`Session.answer` checks); the
        session it belongs to.
    i, j, names
        Feature indices, ``i < j``, of a pair question (``j`` None for a question about one
        feature) and their names.
    expected_gain, exact_gain
        Expected information gain when the query was chosen (None for the random strategy);
        True if it is an exact refit value, False for a fast-screen estimate.
    expert
        The expert the query was asked to (``''``: the unnamed expert).
    worth
        Its expected gain as a fraction of the best so far (:func:`worth`; None without gains).
    kind
        The name of the question's kind (:mod:`elicit.elicitation.kinds`).
    """

    id: int
    i: int
    j: int | None
    names: tuple[str, ...]
    # not compared: another machine's BLAS moves the same question's gain by a few ulps
    expected_gain: float | None = field(compare=False)
    exact_gain: bool
    session_uid: str
    expert: str = ""
    worth: float | None = field(default=None, compare=False)
    kind: str = ""

    def __post_init__(self) -> None:
        object.__setattr__(self, "kind", get_kind(self.kind).name if self.kind
                           else kind_for(self.i, self.j).name)

    @property
    def question_kind(self) -> QuestionKind:
        """The kind of the question, as the registered object."""
        return get_kind(self.kind)

    @property
    def features(self) -> tuple[int, ...]:
        """The features the question is about: two for a pair, one for a feature question."""
        return (self.i,) if self.j is None else (self.i, self.j)

    def __str__(self) -> str:
        worth = "" if self.worth is None else f", worth {self.worth:.0%} of the best so far"
        asked = (" vs ".join(map(repr, self.names)) if self.j is not None
                 else self.question_kind.render([repr(self.names[0])], "the outcome"))
        return f"query {self.id}: {asked[:1].lower()}{asked[1:].rstrip('?')}{worth}"


@dataclass(frozen=True)
class AnswerRecord:
    """A committed answer (returned by :meth:`Session.answer` once it is durable); ``j`` is
    None for an answer to a question about one feature, ``kind`` the question's kind."""

    id: int
    query_id: int
    i: int
    j: int | None
    answer: Answer
    comment: str | None
    answered_at: str
    expert: str = ""
    kind: str = ""
