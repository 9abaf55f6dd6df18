"""Answers, and the experts who give them: anything with the method each kind calls
(``answer(i, j)`` for a pair question, ``relevance(k)``, ``weight_sign(k)``). The simulated
experts here stand in for a human in the paper's experiments."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import numpy as np

from elicit.elicitation.kinds import get_kind, parse_questions, spell_questions
from elicit.elicitation.kinds.base import (  # noqa: F401  (re-exported: the answers' words)
    DONT_KNOW,
    Answer,
    words,
)
from elicit.errors import ElicitError

if TYPE_CHECKING:
    from elicit.elicitation.questions import Query


@runtime_checkable
class Expert(Protocol):
    """Anything that answers pairwise similarity questions about features."""

    def answer(self, i: int, j: int) -> Answer:
        """The answer to the pair question about features ``i`` and ``j`` (``i < j``)."""


def check_expert(expert: object, questions: Any) -> None:
    """Refuse, in one line, an ``expert`` who lacks the method of a kind ``questions`` asks."""
    kinds = parse_questions(questions)
    for name in kinds:
        kind = get_kind(name)
        if not callable(getattr(expert, kind.expert_method, None)):
            raise ElicitError(f"questions={spell_questions(kinds)!r} asks {kind.label}, and "
                              f"the expert ({type(expert).__name__}) has no "
                              f"{kind.expert_call} method to answer them; ask other questions "
                              f"or use an expert with {kind.expert_call}")


def ask(expert: object, query: Query) -> Answer:
    """``expert``'s answer to ``query`` (of any kind), checked to answer that kind."""
    return get_kind(query.kind).ask(expert, query)


class _LabelOracle:
    """Answers from one label per feature (``groups``): similar when two known labels agree."""

    groups: np.ndarray
    beta: np.ndarray | None
    #: whether each feature is relevant (and its pairs answerable)
    known: np.ndarray

    def answer(self, i: int, j: int) -> Answer:
        _check_feature((i, j), len(self.groups))
        if not (self.known[i] and self.known[j]):
            return Answer.DONT_KNOW
        return Answer.SIMILAR if self.groups[i] == self.groups[j] else Answer.DISSIMILAR

    def relevance(self, k: int) -> Answer:
        _check_feature(k, len(self.groups))
        return Answer.RELEVANT if self.known[k] else Answer.IRRELEVANT

    def weight_sign(self, k: int) -> int:
        """The sign of feature ``k``'s true weight (+1, -1, 0), from ``beta``."""
        if self.beta is None:
            raise ElicitError("this oracle knows no weights: give GroupOracle(groups, beta=...)")
        _check_feature(k, len(self.groups))
        return int(np.sign(self.beta[k]))


class GroupOracle(_LabelOracle):
    """Answers from known feature groups: same group is similar, different groups dissimilar.

    Parameters
    ----------
    groups
        Group label of each feature (length p), numbers or text. A negative label (or "") is
        "no group": any pair with such a feature is answered "don't know", and it is irrelevant.
    beta
        The true weights, if known: then :meth:`weight_sign` answers direction questions.
    """

    def __init__(self, groups: np.typing.ArrayLike, beta: np.typing.ArrayLike | None = None):
        self.groups = np.asarray(groups)
        if self.groups.ndim != 1:
            raise ElicitError("groups must be a 1-D array of one label per feature")
        self.beta = None if beta is None else SignOracle(beta).beta
        if self.beta is not None and len(self.beta) != len(self.groups):
            raise ElicitError(f"beta has {len(self.beta)} weights for {len(self.groups)} features")
        self.known = self.groups >= 0 if self.groups.dtype.kind in "biuf" else self.groups != ""


class SignOracle(_LabelOracle):
    """Answers from known regression weights: similar when the signs agree.

    Parameters
    ----------
    beta
        The true weight of each feature (length p). A pair with a zero weight is answered
        "don't know", and a feature is relevant when its weight is nonzero.
    """

    def __init__(self, beta: np.typing.ArrayLike) -> None:
        self.beta = np.asarray(beta, dtype=float)
        if self.beta.ndim != 1 or not np.all(np.isfinite(self.beta)):
            raise ElicitError("beta must be a 1-D array of one finite weight per feature")
        self.groups = np.sign(self.beta).astype(int)
        self.known = self.groups != 0


def _check_feature(k: int | tuple[int, int], p: int) -> None:
    if not all(isinstance(f, (int, np.integer)) and 0 <= f < p
               for f in (k if isinstance(k, tuple) else (k,))):
        raise ElicitError(f"feature index out of range 0..{p - 1}: {k}")
