"""Answers, and the experts who give them.

Every kind of question (:mod:`elicit.elicitation.kinds`) defines its own answers: "do features
i and j affect the outcome in the same way?" is answered similar / dissimilar, "does feature k
affect the outcome?" relevant / irrelevant; "don't know" (:data:`DONT_KNOW`) answers every
kind. An :class:`Answer` is one of these words: a string that knows the kind it answers and
what it tells the model (:attr:`Answer.outcome`). ``Answer.SIMILAR`` names a registered answer
by its word, and ``Answer.parse`` reads an answer from its word, an alias or 1/0.

An expert is anything with the method each kind of question calls: ``answer(i, j) -> Answer``
for a pair question (:class:`Expert`), ``relevance(k) -> Answer`` for a feature question
(:class:`RelevanceExpert`). :func:`ask` puts a
:class:`~elicit.elicitation.questions.Query` of any kind to an expert, and
:func:`check_expert` says up front whether an expert can answer what an elicitation asks.
The simulated experts here stand in for a human in the paper's experiments.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import numpy as np

from elicit.errors import ElicitError

if TYPE_CHECKING:
    from elicit.elicitation.kinds.base import QuestionKind
    from elicit.elicitation.questions import Query

#: every answer by its word, in the order they were defined
_ANSWERS: dict[str, Answer] = {}
#: every alias (and word) of an answer -> the answer
_ALIASES: dict[str, Answer] = {}
#: keys no answer may take: the front ends' own (skip, undo, quit, next, help)
RESERVED_KEYS = ("k", "u", "q", "n", "h")


def _key(text: str) -> str:
    """An answer as typed, normalised: ``"Don't know"`` -> ``"dont_know"``."""
    return text.strip().lower().replace("'", "").replace(" ", "_").replace("-", "_")


def _shipped_kinds() -> None:
    # The shipped kinds define their answers when their modules load; the registry imports them.
    import elicit.elicitation.kinds  # noqa: F401


class _AnswerType(type):
    """``Answer.SIMILAR``: a defined answer by its word in capitals; ``for a in Answer``: every
    defined answer (the class reads like the enum it was)."""

    def __getattr__(cls, name: str) -> Answer:
        if name.startswith("_") or not name.isupper():
            raise AttributeError(name)
        if name.lower() not in _ANSWERS:
            _shipped_kinds()
        try:
            return _ANSWERS[name.lower()]
        except KeyError:
            raise AttributeError(f"no answer {name.lower()!r} is defined") from None

    def __iter__(cls) -> Iterator[Answer]:
        _shipped_kinds()
        return iter(list(_ANSWERS.values()))

    def __len__(cls) -> int:
        _shipped_kinds()
        return len(_ANSWERS)


class Answer(str, metaclass=_AnswerType):
    """An answer an expert can give: a word defined by a kind of question (:meth:`define`),
    or "don't know" (:data:`DONT_KNOW`), which answers every kind.

    An answer is its word (``Answer.SIMILAR == "similar"``); ``Answer("similar")`` is the
    defined answer of that word.

    Attributes
    ----------
    kind
        The name of the kind of question it answers (None for don't know).
    outcome
        What it tells the model: 1 or 0 (similar / dissimilar, relevant / irrelevant), None
        for don't know, which leaves the model unchanged.
    label
        How the front ends show it ("Similar").
    key
        Its key in the terminal and on the web page ("s").
    """

    kind: str | None
    outcome: int | None
    label: str
    key: str

    def __new__(cls, value: object) -> Answer:
        if isinstance(value, Answer):
            return value
        if isinstance(value, str) and value not in _ANSWERS:
            _shipped_kinds()
        if isinstance(value, str) and value in _ANSWERS:
            return _ANSWERS[value]
        raise ElicitError(f"{value!r} is not a defined answer; use one of "
                          f"{_quoted(list(_ANSWERS))}")

    @classmethod
    def define(cls, word: str, kind: str | None, outcome: int | None, label: str, key: str,
               aliases: Sequence[str] = ()) -> Answer:
        """Define the answer ``word`` of the kind of question named ``kind`` (a kind's module
        does, once; :mod:`elicit.elicitation.kinds`).

        Raises
        ------
        ElicitError
            If the word or one of its aliases is taken: an answer word says which kind of
            question it answers, wherever it is stored.
        """
        if not isinstance(word, str) or _key(word) != word or not word:
            raise ElicitError(f"an answer is a lower-case word without spaces, got {word!r}")
        if key in RESERVED_KEYS or len(key) != 1:
            raise ElicitError(f"the key of answer {word!r} is one character and none of "
                              f"{', '.join(RESERVED_KEYS)} (the front ends' skip, undo, quit, "
                              f"next and help), got {key!r}")
        for name in (word, key, *aliases):
            if _key(name) in _ALIASES:
                taken = _ALIASES[_key(name)]
                raise ElicitError(f"{name!r} already means {taken.value!r} (an answer of "
                                  f"{taken.kind or 'every kind'}); give {word!r} other words")
        ans = str.__new__(cls, word)
        ans.kind, ans.outcome, ans.label, ans.key = kind, outcome, label, key
        _ANSWERS[word] = ans
        for name in (word, key, *aliases):
            _ALIASES[_key(name)] = ans
        return ans

    @classmethod
    def forget(cls, answer: Answer) -> None:
        """Undo :meth:`define` (for a kind registered by a test)."""
        _ANSWERS.pop(answer.value, None)
        for name in [n for n, a in _ALIASES.items() if a is answer]:
            del _ALIASES[name]

    @property
    def value(self) -> str:
        """The word, as stored in session files and sweep records."""
        return str.__str__(self)

    @property
    def name(self) -> str:
        """The word in capitals: ``Answer.SIMILAR.name == "SIMILAR"``."""
        return self.value.upper()

    def __str__(self) -> str:
        return self.value

    def __repr__(self) -> str:
        return f"<Answer.{self.name}: {self.value!r}>"

    def __reduce__(self) -> tuple:
        # one object per word: unpickled (in a worker process, say) it is the defined answer
        return (Answer, (self.value,))

    def __copy__(self) -> Answer:
        return self

    def __deepcopy__(self, memo: dict) -> Answer:
        return self

    @classmethod
    def parse(cls, value: str | Answer | int | bool, kind: str | QuestionKind | None = None,
              ) -> Answer:
        """Accept an answer, its word, an alias or 1/0; reject anything else in one line.

        Aliases are the kinds' (``s``, ``same``, ``d``, ``different`` for the pair answers;
        ``r``, ``i``, ``not_relevant`` for the feature answers) and ``?``, ``don't know``,
        ``unknown`` for don't know. 1/0 are the outcomes of ``kind``'s answers (similar /
        dissimilar for pairs, relevant / irrelevant for features), of the first registered
        kind's when no kind is given.

        Parameters
        ----------
        value
            The answer.
        kind
            The kind of the question answered, by name (or a name it had in older records) or
            as the object: an answer to another kind of question is an error. None accepts
            every answer.
        """
        from elicit.elicitation.kinds import KINDS, get_kind

        k = None if kind is None else get_kind(kind)
        ans: Answer | None = None
        if isinstance(value, Answer):
            ans = value
        elif isinstance(value, (bool, int, np.integer)) and value in (0, 1):
            by = k if k is not None else next(iter(KINDS.values()))
            ans = next((a for a in by.answers if a.outcome == int(value)), None)
        elif isinstance(value, str):
            ans = _ALIASES.get(_key(value))
        if ans is None:
            raise ElicitError(f"invalid answer {value!r}: use {words(k)}")
        if k is not None and ans.kind not in (None, k.name):
            other = get_kind(ans.kind)
            raise ElicitError(f"{ans.value!r} answers {other.question} ({other.meaning}), not "
                              f"{k.question} ({k.meaning}): use {words(k)}")
        return ans


def _quoted(names: Sequence[str]) -> str:
    q = [f"'{n}'" for n in names]
    return q[0] if len(q) == 1 else ", ".join(q[:-1]) + " or " + q[-1]


def words(kind: QuestionKind | Sequence[QuestionKind] | None = None) -> str:
    """The answers of ``kind`` (or of several kinds, or of every kind for None) and don't
    know, for messages: ``'similar', 'dissimilar' or 'dont_know'``."""
    from elicit.elicitation.kinds import KINDS

    kinds = (list(KINDS.values()) if kind is None
             else [kind] if not isinstance(kind, Sequence) else list(kind))
    return _quoted([a.value for k in kinds for a in k.answers] + [DONT_KNOW.value])


#: "don't know": the answer every kind of question takes; the model is left unchanged
DONT_KNOW = Answer.define("dont_know", None, None, "Don't know", "?",
                          aliases=("do_not_know", "unknown"))


@runtime_checkable
class Expert(Protocol):
    """Anything that answers pairwise similarity questions about features."""

    def answer(self, i: int, j: int) -> Answer: ...


@runtime_checkable
class RelevanceExpert(Expert, Protocol):
    """An expert who also answers "does feature k affect the outcome?"."""

    def relevance(self, k: int) -> Answer: ...


def can_answer(expert: object, kind: str | QuestionKind) -> bool:
    """Whether ``expert`` has the method that questions of ``kind`` call."""
    from elicit.elicitation.kinds import get_kind

    return callable(getattr(expert, get_kind(kind).expert_method, None))


def check_expert(expert: object, questions: Any) -> None:
    """Refuse, in one line, an expert who cannot answer what ``questions`` asks.

    Parameters
    ----------
    expert
        The expert: it needs the method of every kind asked (``answer(i, j)`` for pairs,
        ``relevance(k)`` for feature questions).
    questions
        The kinds of question asked (:func:`~elicit.elicitation.kinds.parse_questions`:
        ``"pairs"``, ``"pairs,relevance"``, ``["relevance"]``, ...).
    """
    from elicit.elicitation.kinds import get_kind, parse_questions, spell_questions

    kinds = parse_questions(questions)
    for name in kinds:
        kind = get_kind(name)
        if not can_answer(expert, kind):
            raise ElicitError(f"questions={spell_questions(kinds)!r} asks {kind.label}, and "
                              f"the expert ({type(expert).__name__}) has no "
                              f"{kind.expert_call} method to answer them; ask other questions "
                              f"or use an expert with {kind.expert_call}")


def ask(expert: object, query: Query) -> Answer:
    """``expert``'s answer to ``query`` (a question of any kind), checked to answer that kind
    of question."""
    from elicit.elicitation.kinds import get_kind

    kind = get_kind(query.kind)
    if not can_answer(expert, kind):
        raise ElicitError(f"the expert ({type(expert).__name__}) cannot answer {kind.label}: "
                          f"it has no {kind.expert_call} method")
    return Answer.parse(getattr(expert, kind.expert_method)(*query.features), kind)


class GroupOracle:
    """Answers from known feature groups: same group is similar, different groups dissimilar.

    Parameters
    ----------
    groups
        Group label of each feature (length p). A negative label means "no group": any pair
        with such a feature is answered "don't know", and the feature is irrelevant (every
        feature with a group is relevant).
    beta
        The true weights, if known (synthetic problems): then :meth:`weight_sign` says
        which way each feature moves the outcome.
    """

    def __init__(self, groups, beta=None) -> None:
        self.groups = np.asarray(groups)
        if self.groups.ndim != 1:
            raise ElicitError("groups must be a 1-D array of one label per feature")
        self.beta = None if beta is None else np.asarray(beta, dtype=float)

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

    def weight_sign(self, k: int) -> int:
        """The sign of feature ``k``'s true weight (+1, -1, 0), from ``beta``."""
        if self.beta is None:
            raise ElicitError("this oracle knows no weights: give GroupOracle(groups, beta=...)")
        _check_feature(k, len(self.groups))
        return int(np.sign(self.beta[k]))


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

    def weight_sign(self, k: int) -> int:
        """The sign of feature ``k``'s weight (+1, -1, 0)."""
        _check_feature(k, len(self.beta))
        return int(self.groups[k])


def _check_feature(k: int, p: int) -> None:
    if not (0 <= k < p):
        raise ElicitError(f"feature index out of range 0..{p - 1}: {k}")
