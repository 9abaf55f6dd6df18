"""A kind of question (:class:`QuestionKind`), its answers (:class:`Answer`), and their
registries. Code outside a kind's own module never names a kind; answers and kinds name each
other, so both live here."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np

from elicit.elicitation.table import FeatureSegment, PairSegment, Segment
from elicit.errors import ElicitError
from elicit.internal.registry import Registry

if TYPE_CHECKING:
    from elicit.elicitation.gains import Scores, Utility
    from elicit.elicitation.questions import Query
    from elicit.elicitation.utility import ScoringRound
    from elicit.model.spec import ModelData

#: every answer by its word, in the order they were defined
_ANSWERS: dict[str, Answer] = {}
#: every alias (and word) of an answer -> the answer
_ALIASES: dict[str, Answer] = {}
#: every kind's name and older names -> its name
_NAMES: dict[str, str] = {}
#: keys no answer may take: the front ends' own (skip, undo, quit, next, help, comment box)
RESERVED_KEYS = ("k", "u", "q", "n", "h", "c")


def _key(text: str) -> str:
    """An answer as typed, normalised: ``"Don't know"`` -> ``"dont_know"``."""
    return text.strip().lower().replace("'", "").replace(" ", "_").replace("-", "_")


class _AnswerType(type):
    """``Answer.SIMILAR``: an answer by its word in capitals; ``for a in Answer``: every one."""

    def __getattr__(cls, name: str) -> Answer:
        if name.startswith("_") or not name.isupper():
            raise AttributeError(name)
        try:
            return _ANSWERS[name.lower()]
        except KeyError:
            raise AttributeError(f"no answer {name.lower()!r} is defined") from None

    def __iter__(cls) -> Iterator[Answer]:
        return iter(list(_ANSWERS.values()))


class Answer(str, metaclass=_AnswerType):
    """An answer: a word a kind defines (:meth:`define`), or "don't know", which answers every
    kind. ``Answer.SIMILAR == "similar"``; ``kind`` and ``outcome`` (1 or 0) are None for don't
    know; ``label`` and ``key`` are how the front ends show it."""

    kind: str | None
    outcome: int | None
    label: str
    key: str

    def __new__(cls, value: object) -> Answer:
        if isinstance(value, Answer):
            return value
        if isinstance(value, str) and value in _ANSWERS:
            return _ANSWERS[value]
        raise ElicitError(f"{value!r} is not a defined answer; use one of "
                          f"{_quoted(list(_ANSWERS))}")

    @classmethod
    def define(cls, word: str, kind: str | None, outcome: int | None, label: str, key: str,
               aliases: Sequence[str] = ()) -> Answer:
        """Define the answer ``word`` of the kind named ``kind``; a word, key or alias taken (or
        a reserved key) is an error, but for a ``kind`` not registered (a retry) it is redefined."""
        if not isinstance(word, str) or _key(word) != word or not word:
            raise ElicitError(f"an answer is a lower-case word without spaces, got {word!r}")
        if key in RESERVED_KEYS or len(key) != 1:
            raise ElicitError(f"the key of answer {word!r} is one character and none of "
                              f"{', '.join(RESERVED_KEYS)} (the front ends' skip, undo, quit, "
                              f"next, help and comment), got {key!r}")
        if kind not in (None, *_NAMES) and kind == getattr(_ANSWERS.get(word), "kind", None):
            cls.forget(_ANSWERS[word])  # a retry
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
        # one object per word, also unpickled in a worker or copied (copy, deepcopy)
        return (Answer, (self.value,))

    @classmethod
    def parse(cls, value: str | Answer | int | bool, kind: str | QuestionKind | None = None,
              ) -> Answer:
        """Accept an answer, its word, an alias (``s``, ``same``, ``?``, ...) or 1/0 (the
        outcomes of ``kind``'s answers if it takes numbers, else of the first kind's); reject
        anything else, or an answer to another ``kind`` than the one given, in one line."""
        k = None if kind is None else get_kind(kind)
        ans: Answer | None = None
        if isinstance(value, Answer):
            ans = value
        elif isinstance(value, (bool, np.bool_, int, np.integer)) and value in (0, 1):
            by = k if k is not None else next(iter(KINDS.values()))
            ans = next((a for a in by.answers if a.outcome == value), None) if by.numbers else None
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
    """The answers of ``kind`` (several; None: all) and don't know, for messages."""
    kinds = (list(KINDS.values()) if kind is None
             else [kind] if not isinstance(kind, Sequence) else list(kind))
    return _quoted([a.value for k in kinds for a in k.answers] + [DONT_KNOW.value])


#: "don't know": the answer every kind of question takes; the model is left unchanged
DONT_KNOW = Answer.define("dont_know", None, None, "Don't know", "?",
                          aliases=("do_not_know", "unknown"))

#: how a round's pool takes a kind's open questions: ``pool_size`` of them, or all
POOLS = ("sample", "all")


@dataclass(frozen=True, eq=False)
class QuestionKind(ABC):
    """A registered kind of question (``docs/extending.md`` has an example).

    Attributes
    ----------
    name
        The registry key: what ``questions=`` names and the records store.
    arity
        2 (a pair ``(i, j)``, ``i < j``) or 1 (a feature ``k``, written ``(k, None)``).
    answers
        The answers other than "don't know", the first one meaning outcome 1.
    expert_method
        The method of a simulated expert that answers it (``answer`` for ``answer(i, j)``).
    label, question, meaning
        For messages: ``"pair questions"``, ``"a pair question"``, ``"do features i and j
        affect the outcome in the same way?"``.
    text
        The question as the expert reads it: a format string of the feature names (``{0}``,
        ``{1}``) and ``{target}``.
    utilities, aliases
        ``(mode, target) -> registered utility``; names the kind had in older records.
    noun, plural, comment_example
        How the front ends count its questions alone (``"pair"``) and in a summary, and the
        terminal's example of an answer with a comment.
    pool
        :data:`POOLS`.
    order
        Kinds are scored in increasing order within a round; a later kind may skip refining
        the questions that cannot beat the best exact gain of the earlier ones.
    model
        The model used when this kind is asked and no model is named (None: the paper's).
    resets_hessian
        Whether an answer changes the likelihood of y (the old base Hessian does not apply).
    closes_others
        Whether its answers can close the other kinds' questions (:meth:`closes`): then the
        count of questions answered does not say when an expert is done.
    numbers
        Whether 1 and 0 answer it (its answers' outcomes).
    """

    name: str
    arity: int
    answers: tuple[Answer, ...]
    expert_method: str
    label: str
    question: str
    meaning: str
    text: str
    utilities: Mapping[tuple[str, str], str] = field(default_factory=dict)
    aliases: tuple[str, ...] = ()
    noun: str = "question"
    plural: str = "questions"
    comment_example: str = ""
    pool: str = "all"
    order: int = 0
    model: str | None = None
    resets_hessian: bool = False
    closes_others: bool = False
    numbers: bool = True

    def __post_init__(self) -> None:
        if self.arity not in (1, 2):
            raise ElicitError(f"a question is about one feature or a pair, so the arity of "
                              f"kind {self.name!r} is 1 or 2, got {self.arity!r}")
        if self.pool not in POOLS:
            raise ElicitError(f"the pool of kind {self.name!r} is one of {', '.join(POOLS)}, "
                              f"got {self.pool!r}")
        if not self.answers or any(not isinstance(a, Answer) or a.kind != self.name
                                   or _ANSWERS.get(a.value) is not a for a in self.answers):
            raise ElicitError(f"kind {self.name!r} needs its answers, defined with "
                              f"Answer.define(word, {self.name!r}, ...)")

    def __repr__(self) -> str:
        return f"<question kind {self.name!r}>"

    @property
    def expert_call(self) -> str:
        """The expert's method as it is called: ``answer(i, j)``, ``relevance(k)``."""
        return f"{self.expert_method}({'i, j' if self.arity == 2 else 'k'})"

    @property
    def keys(self) -> dict[str, Answer]:
        """The answer keys of the front ends, don't know included (``{"s": SIMILAR, ...}``)."""
        return {a.key: a for a in (*self.answers, DONT_KNOW)}

    def render(self, names: Sequence[str], target: str) -> str:
        """The question about the features ``names`` as the expert reads it."""
        return self.text.format(*names, target=target)

    def segment(self, p: int, candidates: np.ndarray | None) -> Segment:
        """The questions of this kind for ``p`` features (``candidates``: the pairs allowed)."""
        return PairSegment(self, p, candidates) if self.arity == 2 else FeatureSegment(self, p)

    def closes(self, data: ModelData) -> np.ndarray | None:
        """A mask of the features this kind's answers closed to the other kinds (None: none)."""
        return None

    def model_with(self, model: str | None) -> str | None:
        """The model when none is named, given the one the kinds before it need."""
        return model if model is not None else self.model

    def model_refusal(self, model: str) -> str | None:
        """Why ``model`` cannot take these questions ("need ...", to which the model is added)."""
        return None

    def resets(self, model: str) -> bool:
        """Whether an answer changes the likelihood of y of the model named ``model``."""
        return self.resets_hessian

    def add(self, data: ModelData, row: tuple[int, int], answer: Answer) -> ModelData:
        """``data`` with one more answer to the question ``row``."""
        return self.enter(data, [row], [answer])

    @abstractmethod
    def enter(self, data: ModelData, rows: Sequence[tuple[int, int]],
              answers: Sequence[Answer]) -> ModelData:
        """``data`` (without answers of this kind) with all of them, of every expert."""

    def ask(self, expert: Any, query: Query) -> Answer:
        """The simulated ``expert``'s answer to ``query``, checked to answer this kind."""
        return Answer.parse(self._method_of(expert)(*query.features), self)

    def _method_of(self, expert: Any) -> Callable[..., Any]:
        method = getattr(expert, self.expert_method, None)
        if not callable(method):
            raise ElicitError(f"the expert ({type(expert).__name__}) cannot answer "
                              f"{self.label}: it has no {self.expert_call} method")
        return method

    def takes(self, utility: Utility) -> bool:
        """Whether the registered ``utility`` scores this kind."""
        return False

    @abstractmethod
    def score(self, utility: Utility, round: ScoringRound, rows: np.ndarray, refine: int,
              reach: float) -> Scores:
        """The expected gains of ``rows``; ``reach``: the best exact gain of the kinds before."""

    @abstractmethod
    def answer_probability(self, round: ScoringRound, rows: np.ndarray) -> np.ndarray:
        """The probability of the first answer (outcome 1) to each question at the MAP."""


K = TypeVar("K", bound=QuestionKind)
#: the registered kinds by name, in registration order (the order of every question table)
KINDS: Registry[QuestionKind] = Registry("question kind")
#: names that stand for several kinds in ``questions=`` (``"both"``)
_GROUPS: dict[str, tuple[str, ...]] = {}


def agreed(data: ModelData, name: str, rows: Sequence[tuple[int, int]], answers: Sequence[Answer],
           value: Callable[[Answer], int], disagree: int | None) -> ModelData:
    """``data`` with its per-feature ``name`` (``relevance``, ``direction``) where the answers
    about a feature agree on its ``value``, else ``disagree`` (no answers: ``data`` itself)."""
    if not rows:
        return data
    votes: dict[int, set[int]] = {}
    for (k, _), a in zip(rows, answers):
        votes.setdefault(int(k), set()).add(value(a))
    out = np.array(getattr(data, name))
    for k, v in votes.items():
        if len(v) == 1:
            out[k] = v.pop()
        elif disagree is not None:
            out[k] = disagree
    return getattr(data, f"with_{name}")(out)


def register_kind(kind: K) -> K:
    """Register ``kind`` under its name and return it; an ElicitError if a name (its own or an
    alias) is invalid or taken, or a method does not take its abstract method's arguments."""
    if not isinstance(kind, QuestionKind):
        raise ElicitError(f"register_kind takes a QuestionKind object, got "
                          f"{type(kind).__name__}")
    if taken := [n for n in (kind.name, *kind.aliases)
                 if n in _NAMES or n in _GROUPS or n == "all"]:
        raise ElicitError(f"a question kind named {taken[0]!r} is already registered; choose "
                          "another name")
    KINDS.add(kind.name, kind)
    for n in (kind.name, *kind.aliases):
        _NAMES[n] = kind.name
    return kind


def unregister_kind(name: str) -> None:
    """Remove the kind called ``name`` and its answers (a kind registered for a test, say)."""
    kind = get_kind(name)
    KINDS.remove(kind.name)
    for n in [n for n, v in _NAMES.items() if v == kind.name]:
        del _NAMES[n]
    for a in kind.answers:
        Answer.forget(a)


def register_group(name: str, kinds: Sequence[str]) -> None:
    """Let ``name`` stand for the kinds ``kinds`` in ``questions=`` (the shipped ``both``)."""
    if name in _NAMES or name in _GROUPS:
        raise ElicitError(f"{name!r} already names question kinds")
    _GROUPS[name] = tuple(get_kind(k).name for k in kinds)


def get_kind(kind: str | QuestionKind) -> QuestionKind:
    """The registered kind called ``kind`` (or an older name), or the kind itself."""
    if isinstance(kind, QuestionKind):
        return kind
    if isinstance(kind, str) and kind in _NAMES:
        return KINDS[_NAMES[kind]]
    return KINDS.lookup(kind)


def groups() -> dict[str, tuple[str, ...]]:
    """The names that stand for several kinds in ``questions=`` (:func:`register_group`)."""
    return dict(_GROUPS)
