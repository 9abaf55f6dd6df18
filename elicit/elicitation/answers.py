"""Answers, and the experts who give them.

Two kinds of question (:mod:`elicit.elicitation.questions`) have their own answers:

* "do features i and j affect the outcome in the same way?": similar / dissimilar;
* "does feature k affect the outcome?": relevant / irrelevant;

and "don't know" answers either. An expert is anything with an ``answer(i, j) -> Answer``
method (:class:`Expert`); one that also has ``relevance(k) -> Answer``
(:class:`RelevanceExpert`) answers feature questions too. :func:`ask` puts a
:class:`~elicit.elicitation.questions.Query` of either kind to an expert, and
:func:`check_expert` says up front whether an expert can answer what an elicitation asks.
The simulated experts here stand in for a human in the paper's experiments.
"""

from __future__ import annotations

from enum import Enum
from typing import Protocol, runtime_checkable

import numpy as np

from elicit.elicitation.questions import Kind, Query, check_questions
from elicit.errors import ElicitError

#: what each kind of question may be answered (the words of the messages)
_WORDS = {"pair": "'similar', 'dissimilar' or 'dont_know'",
          "feature": "'relevant', 'irrelevant' or 'dont_know'",
          None: "'similar', 'dissimilar', 'relevant', 'irrelevant' or 'dont_know'"}
#: how each kind of question is put, for messages
_QUESTION = {"pair": "a pair question (do features i and j affect the outcome in the same "
                     "way?)",
             "feature": "a feature question (does feature k affect the outcome?)"}


class Answer(str, Enum):
    """The answers an expert can give: similar / dissimilar to a pair question, relevant /
    irrelevant to a feature question, don't know to either."""

    SIMILAR = "similar"
    DISSIMILAR = "dissimilar"
    DONT_KNOW = "dont_know"
    RELEVANT = "relevant"
    IRRELEVANT = "irrelevant"

    @classmethod
    def parse(cls, value: str | Answer | int | bool, kind: Kind | None = None) -> Answer:
        """Accept the enum, its value, an alias or 1/0; reject anything else in one line.

        Aliases: ``s``, ``same`` (similar); ``d``, ``different`` (dissimilar); ``r``
        (relevant); ``i``, ``not_relevant`` (irrelevant); ``?``, ``don't know``, ``unknown``
        (don't know). 1/0 mean similar/dissimilar, or relevant/irrelevant when ``kind`` is
        ``"feature"``.

        Parameters
        ----------
        value
            The answer.
        kind
            The kind of the question answered (``"pair"`` or ``"feature"``): an answer to
            the other kind is an error. None accepts every answer.
        """
        if kind not in (None, "pair", "feature"):
            raise ElicitError(f"a question is of kind 'pair' or 'feature', got {kind!r}")
        ans: Answer | None = None
        if isinstance(value, Answer):
            ans = value
        elif isinstance(value, (bool, int, np.integer)) and value in (0, 1):
            if kind == "feature":
                ans = cls.RELEVANT if int(value) == 1 else cls.IRRELEVANT
            else:
                ans = cls.SIMILAR if int(value) == 1 else cls.DISSIMILAR
        elif isinstance(value, str):
            key = value.strip().lower().replace("'", "").replace(" ", "_").replace("-", "_")
            ans = _ALIASES.get(key)
        if ans is None:
            raise ElicitError(f"invalid answer {value!r}: use {_WORDS[kind]}")
        if kind is not None and ans.kind not in (None, kind):
            raise ElicitError(f"{ans.value!r} answers {_QUESTION[ans.kind]}, not "
                              f"{_QUESTION[kind]}: use {_WORDS[kind]}")
        return ans

    @property
    def kind(self) -> Kind | None:
        """The kind of question this answers: ``"pair"``, ``"feature"``, or None for don't
        know (which answers either)."""
        if self in (Answer.SIMILAR, Answer.DISSIMILAR):
            return "pair"
        if self in (Answer.RELEVANT, Answer.IRRELEVANT):
            return "feature"
        return None

    @property
    def f(self) -> int | None:
        """The model's Bernoulli outcome of a pair answer: 1 similar, 0 dissimilar, None
        otherwise."""
        return {Answer.SIMILAR: 1, Answer.DISSIMILAR: 0}.get(self)

    @property
    def relevance(self) -> int | None:
        """The relevance class of a feature answer: 1 relevant, 0 irrelevant, None
        otherwise."""
        return {Answer.RELEVANT: 1, Answer.IRRELEVANT: 0}.get(self)


_ALIASES = {"similar": Answer.SIMILAR, "s": Answer.SIMILAR, "same": Answer.SIMILAR,
            "dissimilar": Answer.DISSIMILAR, "d": Answer.DISSIMILAR,
            "different": Answer.DISSIMILAR, "dont_know": Answer.DONT_KNOW,
            "do_not_know": Answer.DONT_KNOW, "?": Answer.DONT_KNOW,
            "unknown": Answer.DONT_KNOW, "relevant": Answer.RELEVANT, "r": Answer.RELEVANT,
            "irrelevant": Answer.IRRELEVANT, "i": Answer.IRRELEVANT,
            "not_relevant": Answer.IRRELEVANT}


@runtime_checkable
class Expert(Protocol):
    """Anything that answers pairwise similarity questions about features."""

    def answer(self, i: int, j: int) -> Answer: ...


@runtime_checkable
class RelevanceExpert(Expert, Protocol):
    """An expert who also answers "does feature k affect the outcome?"."""

    def relevance(self, k: int) -> Answer: ...


def can_answer_features(expert: object) -> bool:
    """Whether ``expert`` answers feature questions (has a ``relevance(k)`` method)."""
    return callable(getattr(expert, "relevance", None))


def check_expert(expert: object, questions: str) -> None:
    """Refuse, in one line, an expert who cannot answer what ``questions`` asks.

    Parameters
    ----------
    expert
        The expert: an :class:`Expert`, and a :class:`RelevanceExpert` when ``questions``
        is ``"relevance"`` or ``"both"``.
    questions
        One of ``"pairs"``, ``"relevance"``, ``"both"``
        (:data:`~elicit.elicitation.questions.QUESTIONS`).
    """
    check_questions(questions)
    if questions != "pairs" and not can_answer_features(expert):
        raise ElicitError(f"questions={questions!r} asks feature questions, and the expert "
                          f"({type(expert).__name__}) has no relevance(k) method to answer "
                          "them; use questions='pairs' or an expert with relevance(k)")
    if questions != "relevance" and not callable(getattr(expert, "answer", None)):
        raise ElicitError(f"questions={questions!r} asks pair questions, and the expert "
                          f"({type(expert).__name__}) has no answer(i, j) method to answer "
                          "them")


def ask(expert: Expert, query: Query) -> Answer:
    """``expert``'s answer to ``query`` (a pair question or a feature question), checked to
    answer that kind of question."""
    if query.kind == "feature":
        if not can_answer_features(expert):
            raise ElicitError(f"the expert ({type(expert).__name__}) cannot answer feature "
                              "questions: it has no relevance(k) method")
        raw = expert.relevance(query.feature)  # type: ignore[attr-defined]
    else:
        raw = expert.answer(query.i, query.j)  # type: ignore[arg-type]
    return Answer.parse(raw, query.kind)


class GroupOracle:
    """Answers from known feature groups: same group is similar, different groups dissimilar.

    Parameters
    ----------
    groups
        Group label of each feature (length p). A negative label means "no group": any pair
        with such a feature is answered "don't know", and the feature is irrelevant (every
        feature with a group is relevant).
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

    def relevance(self, k: int) -> Answer:
        """Relevant when feature ``k`` has a group (a non-negative label)."""
        _check_feature(k, len(self.groups))
        return Answer.RELEVANT if self.groups[k] >= 0 else Answer.IRRELEVANT


class SignOracle:
    """Answers from known regression weights: similar when the signs agree.

    Parameters
    ----------
    beta
        The true weight of each feature (length p). A pair with a zero weight is answered
        "don't know" (the feature has no effect to compare), and a feature is relevant when
        its weight is nonzero.
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

    def relevance(self, k: int) -> Answer:
        """Relevant when feature ``k``'s weight is nonzero."""
        _check_feature(k, len(self.beta))
        return Answer.RELEVANT if self.groups[k] != 0 else Answer.IRRELEVANT


def _check_feature(k: int, p: int) -> None:
    if not (0 <= k < p):
        raise ElicitError(f"feature index out of range 0..{p - 1}: {k}")
