"""Which pairs a session may ask about.

Every expert's answers enter one feedback likelihood:
:meth:`~elicit.elicitation.elicitor.Elicitor.set_answers` with ``asked=`` the current
expert's pairs accepts a pair answered by several experts.

:func:`question_pairs` says which pairs may be asked at all: pairs between features left out
of the questions (constant or duplicate columns) and pairs whose meta-features are identical
(the kernel gives them K_ij = 1 whatever gamma is, so no answer about them can change the
model) are not asked.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from elicit.errors import ElicitError
from elicit.model.spec import all_pairs


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
