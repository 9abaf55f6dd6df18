"""Experts answer "do features i and j affect the outcome in the same way?".

An expert is anything with an ``answer(i, j) -> Answer`` method (:class:`Expert`). The
simulated experts here stand in for a human in the paper's experiments.
"""

from __future__ import annotations

from enum import Enum
from typing import Protocol, runtime_checkable

import numpy as np

from elicit.errors import ElicitError


class Answer(str, Enum):
    """The three answers an expert can give."""

    SIMILAR = "similar"
    DISSIMILAR = "dissimilar"
    DONT_KNOW = "dont_know"

    @classmethod
    def parse(cls, value: str | Answer | int | bool) -> Answer:
        """Accept the enum, its value, or 1/0 (similar/dissimilar); reject anything else."""
        if isinstance(value, Answer):
            return value
        if isinstance(value, (bool, int, np.integer)) and value in (0, 1):
            return cls.SIMILAR if int(value) == 1 else cls.DISSIMILAR
        if isinstance(value, str):
            key = value.strip().lower().replace("'", "").replace(" ", "_").replace("-", "_")
            aliases = {"similar": cls.SIMILAR, "s": cls.SIMILAR, "same": cls.SIMILAR,
                       "dissimilar": cls.DISSIMILAR, "d": cls.DISSIMILAR,
                       "different": cls.DISSIMILAR, "dont_know": cls.DONT_KNOW,
                       "do_not_know": cls.DONT_KNOW, "?": cls.DONT_KNOW,
                       "unknown": cls.DONT_KNOW}
            if key in aliases:
                return aliases[key]
        raise ElicitError(f"invalid answer {value!r}: use 'similar', 'dissimilar' or 'dont_know'")

    @property
    def f(self) -> int | None:
        """The model's Bernoulli outcome: 1 similar, 0 dissimilar, None for don't know."""
        return {Answer.SIMILAR: 1, Answer.DISSIMILAR: 0}.get(self)


@runtime_checkable
class Expert(Protocol):
    """Anything that answers pairwise similarity questions about features."""

    def answer(self, i: int, j: int) -> Answer: ...


class GroupOracle:
    """Answers from known feature groups: same group is similar, different groups dissimilar.

    Parameters
    ----------
    groups
        Group label of each feature (length p). A negative label means "no group", and any
        pair with such a feature is answered "don't know".
    """

    def __init__(self, groups) -> None:
        self.groups = np.asarray(groups)
        if self.groups.ndim != 1:
            raise ElicitError("groups must be a 1-D array of one label per feature")

    def answer(self, i: int, j: int) -> Answer:
        p = len(self.groups)
        if not (0 <= i < p and 0 <= j < p):
            raise ElicitError(f"feature index out of range 0..{p - 1}: ({i}, {j})")
        gi, gj = self.groups[i], self.groups[j]
        if gi < 0 or gj < 0:
            return Answer.DONT_KNOW
        return Answer.SIMILAR if gi == gj else Answer.DISSIMILAR


class SignOracle:
    """Answers from known regression weights: similar when the signs agree.

    Parameters
    ----------
    beta
        The true weight of each feature (length p). A pair with a zero weight is answered
        "don't know" (the feature has no effect to compare).
    """

    def __init__(self, beta) -> None:
        self.beta = np.asarray(beta, dtype=float)
        if self.beta.ndim != 1:
            raise ElicitError("beta must be a 1-D array of one weight per feature")
        self.groups = np.sign(self.beta).astype(int)

    def answer(self, i: int, j: int) -> Answer:
        p = len(self.beta)
        if not (0 <= i < p and 0 <= j < p):
            raise ElicitError(f"feature index out of range 0..{p - 1}: ({i}, {j})")
        si, sj = self.groups[i], self.groups[j]
        if si == 0 or sj == 0:
            return Answer.DONT_KNOW
        return Answer.SIMILAR if si == sj else Answer.DISSIMILAR
