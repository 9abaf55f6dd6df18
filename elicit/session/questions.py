"""Which questions a session may ask, and how a question is named.

A session asks pair questions ("do features i and j affect the outcome in the same way?")
and, with ``questions="relevance"`` or ``"both"``, feature questions ("does feature i affect
the outcome?"). In the session file and in the record's rows a feature question is ``(i,
FEATURE_J)``; the objects a session hands out (:class:`~elicit.session.session.SessionQuery`,
:class:`~elicit.session.session.AnswerRecord`) write it with ``j = None``, as the Elicitor's
:class:`~elicit.elicitation.questions.Query` does.

Every expert's answers enter one feedback likelihood:
:meth:`~elicit.elicitation.elicitor.Elicitor.set_answers` with ``asked=`` the current
expert's pairs accepts a pair answered by several experts.

:func:`question_pairs` says which pairs may be asked at all: pairs between features left out
of the questions (constant or duplicate columns) and pairs whose meta-features are identical
(the kernel gives them K_ij = 1 whatever gamma is, so no answer about them can change the
model) are not asked.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np

from elicit.errors import ElicitError
from elicit.model.spec import all_pairs
from elicit.session.store import FEATURE_J


def question_pairs(U: np.ndarray, excluded: Iterable[int] = ()) -> np.ndarray:
    """The candidate pairs of a session: pairs of features not ``excluded`` whose rows of
    ``U`` differ.

    Raises
    ------
    ElicitError
        When no pair is left (fewer than two features to ask about, or all their
        meta-features identical).
    """
    p = U.shape[0]
    keep = np.setdiff1d(np.arange(p), np.fromiter(excluded, dtype=int))
    if len(keep) < 2:
        raise ElicitError(f"only {len(keep)} of the {p} features can be asked about (the "
                          "others are constant or duplicate columns); need at least 2")
    pairs = all_pairs(p)
    pairs = pairs[np.isin(pairs[:, 0], keep) & np.isin(pairs[:, 1], keep)]
    differ = np.any(U[pairs[:, 0]] != U[pairs[:, 1]], axis=1)
    if not differ.any():
        raise ElicitError(f"all {len(keep)} features to ask about have identical "
                          "meta-features (identical rows of U), so no answer could change "
                          "the model; give meta-features that differ between features")
    return pairs[differ]


def public_j(j: int | None) -> int | None:
    """The second feature of a question as a session hands it out: None for a feature
    question (stored as :data:`~elicit.session.store.FEATURE_J`)."""
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
    if len(named) == 1:
        return f"feature {named[0]!r}"
    return f"{named[0]!r} vs {named[1]!r}"
