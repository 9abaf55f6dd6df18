"""A kind of question, as one registered object, its answers, and the registries of both.

A :class:`QuestionKind` says everything elicit needs to know about one kind of question: how
its questions are written (``arity``: a pair of features or one feature) and held in an
elicitation's question table (:meth:`QuestionKind.segment`); its answers (words, aliases, what
each tells the model; "don't know" is shared by every kind); which method of a simulated
expert answers it (``expert_method``); how its answers enter the model's data
(:meth:`QuestionKind.add`, :meth:`QuestionKind.enter`); which registered utilities score its
expected gain (``utilities``, :meth:`QuestionKind.score`); which models can take it
(:meth:`QuestionKind.model_refusal`); its pool in a round (``pool``); and how the terminal, the
web page and the reports show it.

Code outside a kind's own module never names a kind: it iterates over the kinds of the
elicitation at hand. :data:`KINDS` is the registry (:func:`register_kind`,
:func:`get_kind`); what an elicitation asks (``questions=``) is read by
:mod:`elicit.elicitation.kinds.asked`.

Each kind defines its answers (:meth:`Answer.define`; :data:`DONT_KNOW` answers every kind).
Answers and kinds name each other, so both live here, below the shipped kinds, which the
package loads with this module: imported from outside, every kind and answer is registered.
The experts who give answers are :mod:`elicit.elicitation.answers`'.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np

from elicit.errors import ElicitError
from elicit.internal.registry import Registry

if TYPE_CHECKING:
    from elicit.elicitation.gains import Scores, Utility
    from elicit.elicitation.questions import Query
    from elicit.elicitation.table import Segment
    from elicit.elicitation.utility import ScoringRound
    from elicit.model.spec import ModelData

#: every answer by its word, in the order they were defined
_ANSWERS: dict[str, Answer] = {}
#: every alias (and word) of an answer -> the answer
_ALIASES: dict[str, Answer] = {}
#: keys no answer may take: the front ends' own (skip, undo, quit, next, help)
RESERVED_KEYS = ("k", "u", "q", "n", "h")


def _key(text: str) -> str:
    """An answer as typed, normalised: ``"Don't know"`` -> ``"dont_know"``."""
    return text.strip().lower().replace("'", "").replace(" ", "_").replace("-", "_")


class _AnswerType(type):
    """``Answer.SIMILAR``: a defined answer by its word in capitals; ``for a in Answer``: every
    defined answer (the class reads like the enum it was)."""

    def __getattr__(cls, name: str) -> Answer:
        if name.startswith("_") or not name.isupper():
            raise AttributeError(name)
        try:
            return _ANSWERS[name.lower()]
        except KeyError:
            raise AttributeError(f"no answer {name.lower()!r} is defined") from None

    def __iter__(cls) -> Iterator[Answer]:
        return iter(list(_ANSWERS.values()))

    def __len__(cls) -> int:
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
    kinds = (list(KINDS.values()) if kind is None
             else [kind] if not isinstance(kind, Sequence) else list(kind))
    return _quoted([a.value for k in kinds for a in k.answers] + [DONT_KNOW.value])


#: "don't know": the answer every kind of question takes; the model is left unchanged
DONT_KNOW = Answer.define("dont_know", None, None, "Don't know", "?",
                          aliases=("do_not_know", "unknown"))

#: how a round's pool takes a kind's open questions: ``"sample"`` draws ``pool_size`` of them
#: (the paper's pool of pairs), ``"all"`` takes every one (a kind with one question per
#: feature)
POOLS = ("sample", "all")


@dataclass(frozen=True, eq=False)
class QuestionKind(ABC):
    """A registered kind of question. Subclass it, define the answers
    (:meth:`Answer.define <elicit.elicitation.answers.Answer.define>`) and register an
    instance (:func:`register_kind`); ``docs/extending.md`` has an example.

    Attributes
    ----------
    name
        The registry key: what ``questions=`` and ``--questions`` name, and what session
        files and sweep records store.
    arity
        How many features a question is about: 2 (a pair ``(i, j)``, ``i < j``) or 1 (a
        feature ``k``, written ``(k, None)``).
    answers
        The answers other than "don't know", the first one meaning outcome 1.
    expert_method
        The method of a simulated expert that answers it (``answer`` for ``answer(i, j)``).
    label
        The kind in messages and reports, plural: ``"pair questions"``.
    question
        One question in messages: ``"a pair question"``.
    meaning
        What it asks, for messages: ``"do features i and j affect the outcome in the same
        way?"``.
    text
        The question as the expert reads it: a format string of the feature names
        (``{0}``, ``{1}``) and ``{target}``, the session's description of the outcome.
    utilities
        ``(mode, target) -> registered utility``: the utility that scores the kind under
        ``utility="fast" | "exact"`` and each target it has
        (:class:`~elicit.elicitation.utility.UtilityArgs`).
    aliases
        Names the kind had in older records (sweep parts wrote ``"pair"``).
    noun
        How the front ends count the questions of an elicitation of this kind alone
        (``"pair"``); several kinds are counted as questions.
    plural
        How many of them there are, in a summary: ``"45 pairs"``.
    comment_example
        The terminal's example of an answer with a comment (``"s both praise it"``).
    pool
        :data:`POOLS`: ``"sample"`` (a random pool of ``pool_size`` per round) or ``"all"``.
    order
        Kinds are scored in increasing order within a round; a kind scored later may skip
        refining the questions that cannot beat the best exact gain of the earlier ones.
    model
        The model a sweep or session uses when this kind is asked and no model is named
        (None: the paper's).
    resets_hessian
        Whether an answer changes the likelihood of y, so that a refit cannot start from the
        base Hessian of the start (:meth:`~elicit.elicitation.elicitor.Elicitor.set_answers`).
    closes_others
        Whether its answers can close the other kinds' questions (:meth:`closes`): then the
        count of questions answered does not say when an expert is done.
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

    def __post_init__(self) -> None:
        if self.arity not in (1, 2):
            raise ElicitError(f"a question is about one feature or a pair, so the arity of "
                              f"kind {self.name!r} is 1 or 2, got {self.arity!r}")
        if self.pool not in POOLS:
            raise ElicitError(f"the pool of kind {self.name!r} is one of {', '.join(POOLS)}, "
                              f"got {self.pool!r}")
        if not self.answers or any(not isinstance(a, Answer) or a.kind != self.name
                                   for a in self.answers):
            raise ElicitError(f"kind {self.name!r} needs its answers, defined with "
                              f"Answer.define(word, {self.name!r}, ...)")

    def __repr__(self) -> str:
        return f"<question kind {self.name!r}>"

    # -- what it is --------------------------------------------------------------------------
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

    # -- the elicitation's table -------------------------------------------------------------
    @abstractmethod
    def segment(self, p: int, candidates: np.ndarray | None) -> Segment:
        """The questions of this kind an elicitation of ``p`` features may ask; ``candidates``
        are the pairs the caller allows (None: every pair), for a kind about pairs."""

    def closes(self, data: ModelData) -> np.ndarray | None:
        """The features about which the other kinds ask nothing more, after this kind's
        answers in ``data`` (a mask; None: none). Relevance closes the features called
        irrelevant: nobody can say how a feature that does not matter affects the outcome."""
        return None

    # -- answers and the model --------------------------------------------------------------
    def model_with(self, model: str | None) -> str | None:
        """The model an elicitation that asks this kind uses when none is named, given the
        one the kinds before it need (``model``; None: any): theirs, else :attr:`model`."""
        return model if model is not None else self.model

    def model_refusal(self, model: str) -> str | None:
        """Why the model named ``model`` cannot take these questions, completing "asks
        <label>, which ..." (None: it can)."""
        return None

    def resets(self, model: str) -> bool:
        """Whether an answer of this kind changes the likelihood of y of the model named
        ``model`` (:attr:`resets_hessian`; pairs do in a model with relevance classes)."""
        return self.resets_hessian

    def add(self, data: ModelData, row: tuple[int, int], answer: Answer) -> ModelData:
        """``data`` with one more answer (one of :attr:`answers`) to the question ``row``: by
        default :meth:`enter` of that answer alone, right for a kind whose answer sets one
        value per feature (relevance, direction); a kind whose answers add up (pairs)
        overrides it."""
        return self.enter(data, [row], [answer])

    @abstractmethod
    def enter(self, data: ModelData, rows: Sequence[tuple[int, int]],
              answers: Sequence[Answer]) -> ModelData:
        """``data`` (without answers of this kind) with all of them: ``rows`` and ``answers``
        in answer order, of every expert (a question may repeat)."""

    def ask(self, expert: Any, query: Query) -> Answer:
        """The simulated ``expert``'s answer to ``query``, through :attr:`expert_method`,
        checked to answer this kind."""
        return Answer.parse(self._method_of(expert)(*query.features), self)

    def _method_of(self, expert: Any) -> Callable[..., Any]:
        """``expert``'s :attr:`expert_method`; a one-line error if it has none."""
        method = getattr(expert, self.expert_method, None)
        if not callable(method):
            raise ElicitError(f"the expert ({type(expert).__name__}) cannot answer "
                              f"{self.label}: it has no {self.expert_call} method")
        return method

    # -- scoring -------------------------------------------------------------------------------
    def takes(self, utility: Utility) -> bool:
        """Whether the registered ``utility`` scores this kind."""
        return False

    @abstractmethod
    def score(self, utility: Utility, round: ScoringRound, rows: np.ndarray, refine: int,
              reach: float) -> Scores:
        """The expected gains of the questions ``rows`` in this round under ``utility``.
        ``reach`` is the best exact gain among the kinds scored before (-inf: none)."""

    @abstractmethod
    def answer_probability(self, round: ScoringRound, rows: np.ndarray) -> np.ndarray:
        """The model's probability of the first answer (outcome 1) to each question ``rows``
        at the round's MAP."""


K = TypeVar("K", bound=QuestionKind)
#: the registered kinds by name, in registration order (the order of every question table)
KINDS: Registry[QuestionKind] = Registry("question kind")
#: names that stand for several kinds in ``questions=`` (``"both"``, the shipped pair)
_GROUPS: dict[str, tuple[str, ...]] = {}
#: every kind's name and older names -> its name
_NAMES: dict[str, str] = {}


def agreed(values: np.ndarray, rows: Sequence[tuple[int, int]], answers: Sequence[Answer],
           value: Callable[[Answer], int], disagree: int) -> np.ndarray:
    """A copy of ``values`` (one per feature) where each feature asked about in ``rows`` has
    the ``value`` every answer about it gives, or ``disagree`` where the answers (several
    experts') disagree: what a kind about one feature enters into the model's data
    (:meth:`QuestionKind.enter`)."""
    votes: dict[int, set[int]] = {}
    for (k, _), a in zip(rows, answers):
        votes.setdefault(int(k), set()).add(value(a))
    out = np.array(values)
    for k, v in votes.items():
        out[k] = v.pop() if len(v) == 1 else disagree
    return out


def register_kind(kind: K) -> K:
    """Register ``kind`` under its name and return it.

    Raises
    ------
    ElicitError
        If it is not a :class:`QuestionKind`, or its name or an alias is empty or taken.
    """
    if not isinstance(kind, QuestionKind):
        raise ElicitError(f"register_kind takes a QuestionKind object, got "
                          f"{type(kind).__name__}")
    taken = [n for n in (kind.name, *kind.aliases) if n in _NAMES or n in _GROUPS
             or n == "all"]
    if taken:
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
    """The registered kind called ``kind`` (or a name it had in older records), or the kind
    itself.

    Raises
    ------
    ElicitError
        One line listing the registered kinds, for an unknown name.
    """
    if isinstance(kind, QuestionKind):
        return kind
    if isinstance(kind, str) and kind in _NAMES:
        return KINDS[_NAMES[kind]]
    return KINDS.lookup(kind)


def groups() -> dict[str, tuple[str, ...]]:
    """The names that stand for several kinds in ``questions=`` (:func:`register_group`)."""
    return dict(_GROUPS)
