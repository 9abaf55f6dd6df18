"""A toy kind of question registered from outside the package, for tests: "does more of
feature k mean a higher outcome?", answered increases / decreases (keys + and -).

It is a second kind about one feature beside the relevance questions, so two kinds share the
rows ``(k, None)`` and must be told apart by name everywhere. Its answers do not enter the
model (the model has no part for them: :meth:`SignKind.add` returns the data as it is); its
utility, :class:`SignEntropy`, is the entropy of the sign of beta_k under the posterior at the
MAP, and its expert method is ``sign(k)`` (:class:`SignExpert`). :func:`registered` registers
the answers, the utility and the kind, and removes them again.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
from scipy.special import entr, ndtr

from elicit.elicitation.answers import Answer, SignOracle
from elicit.elicitation.kinds import QuestionKind, register_kind, unregister_kind
from elicit.elicitation.table import FeatureSegment
from elicit.elicitation.utility import Scores, Utility, register_utility, unregister_utility
from elicit.model.posterior import NIGPosterior

NAME = "toy-sign"


def p_increases(data, fit, features: np.ndarray) -> np.ndarray:
    """P(beta_k > 0) under the Student-t posterior of beta at the MAP, approximated by a
    normal with the posterior's mean and variance."""
    post = NIGPosterior.from_map(data, fit)
    sd = np.sqrt(post.b_star / (post.a_star - 1.0) * np.diag(post.Sigma))
    return ndtr(post.mu / sd)[np.asarray(features, dtype=int)]


@dataclass(frozen=True)
class SignEntropy(Utility):
    """How unsure the model is of the sign of beta_k: the binary entropy of P(beta_k > 0)."""

    candidates: ClassVar[str] = "sign questions"

    def score(self, round_, rows: np.ndarray, refine: int = 10) -> Scores:
        p = p_increases(round_.scorer.data, round_.scorer.fit, rows[:, 0])
        return Scores(rows, entr(p) + entr(1.0 - p), np.ones(len(rows), bool), p)


@dataclass(frozen=True, eq=False)
class SignKind(QuestionKind):
    """The toy kind (see the module docstring)."""

    def segment(self, p, candidates):
        return FeatureSegment(self, p)

    def add(self, data, row, answer):
        return data

    def enter(self, data, rows, answers):
        return data

    def takes(self, utility):
        return isinstance(utility, SignEntropy)

    def score(self, utility, round_, rows, refine, reach):
        return utility.score(round_, rows, refine)

    def answer_probability(self, round_, rows):
        return p_increases(round_.scorer.data, round_.scorer.fit, np.asarray(rows)[:, 0])


class SignExpert(SignOracle):
    """The sign oracle of the tests, which also says which way each feature moves y."""

    def sign(self, k: int) -> Answer:
        s = self.groups[k]
        return Answer("dont_know") if s == 0 else Answer("increases" if s > 0 else "decreases")


@contextlib.contextmanager
def registered() -> Iterator[QuestionKind]:
    """The toy kind, registered for the block (with its answers and utility)."""
    up = Answer.define("increases", NAME, 1, "Increases", "+", aliases=("up",))
    try:
        down = Answer.define("decreases", NAME, 0, "Decreases", "-", aliases=("down",))
    except BaseException:
        Answer.forget(up)
        raise
    utility = register_utility(SignEntropy("toy-sign-entropy", "predictive"))
    kind = register_kind(SignKind(
        NAME, 1, (up, down), "sign", "sign questions", "a sign question",
        "does more of feature k mean a higher outcome?", "Does more {0} raise {target}?",
        utilities={("fast", "predictive"): utility.name, ("exact", "predictive"): utility.name},
        plural="sign questions", comment_example="+ the more, the better", order=2))
    try:
        yield kind
    finally:
        unregister_kind(NAME)
        unregister_utility(utility.name)
