"""What an elicitation asks: ``questions=`` read into registered kinds, and a question's kind."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from elicit.elicitation.kinds.base import KINDS, Answer, QuestionKind, get_kind, groups
from elicit.errors import ElicitError


def kind_for(i: int, j: int | None, answer: object = None,
             among: Iterable[str | QuestionKind] | None = None,
             kind: str | QuestionKind | None = None) -> QuestionKind:
    """The kind of the question ``(i, j)`` among ``among`` (default: all): ``kind`` if given,
    else the one of that arity that ``answer`` answers, else the only one of that arity."""
    arity = 1 if j is None or int(j) < 0 else 2
    shown = f"({i}, None)" if arity == 1 else f"({i}, {j})"
    names = list(KINDS) if among is None else [get_kind(k).name for k in among]
    if kind is not None:
        k = get_kind(kind)
        if k.name not in names:
            raise ElicitError(f"this elicitation asks no {k.label} "
                              f"(questions={spell_questions(names)!r})")
        if k.arity != arity:
            raise ElicitError(f"{shown} is not a question of kind {k.name!r}, which is about "
                              f"{k.arity} feature(s)")
        return k
    fit = [KINDS[n] for n in names if KINDS[n].arity == arity]
    said = None if answer is None else Answer.parse(answer).kind  # type: ignore[arg-type]
    chosen = next((k for k in fit if k.name == said), fit[0] if len(fit) == 1 else None)
    if chosen is not None:
        return chosen
    what = "a pair" if arity == 2 else "one feature"
    if not fit:
        raise ElicitError(f"{shown} is a question about {what}, which this elicitation does "
                          f"not ask (questions={spell_questions(names)!r})")
    if said is not None:  # an answer of a kind about another number of features
        raise ElicitError(f"{shown} is a question about {what}, and {answer!s:.40} answers "
                          f"{KINDS[said].label}, about {KINDS[said].arity} feature(s)")
    raise ElicitError(f"{shown} is a question about {what}, which kinds "
                      f"{', '.join(k.name for k in fit)} ask; say which: (kind, i, j)")


def parse_questions(questions: object) -> tuple[str, ...]:
    """The kinds ``questions`` names (``"pairs,relevance"``, ``"all"``, ``"both"``, or a list
    of names or kinds), in registration order; a one-line ElicitError if none or unknown."""
    if isinstance(questions, str):
        items: list[Any] = [s.strip() for s in questions.split(",") if questions.strip(", ")]
    elif isinstance(questions, Iterable):
        items = list(questions)
    else:
        items = [questions]
    names: list[str] = []
    for item in items:
        if isinstance(item, QuestionKind):
            got: tuple[str, ...] = (get_kind(item.name).name,)
        elif item == "all":
            got = tuple(KINDS)
        elif isinstance(item, str) and item in groups():
            got = groups()[item]
        elif isinstance(item, str) and item in KINDS:
            got = (item,)
        else:
            hint = "".join(f", or {g} (= {','.join(m)})" for g, m in groups().items())
            raise ElicitError(f"unknown question kind {item!r} in questions={questions!r}; "
                              f"name kinds from {', '.join(KINDS)} (comma-separated), "
                              f"or all{hint}")
        for n in got:
            if n in names:
                raise ElicitError(f"question kind {n!r} is named twice in "
                                  f"questions={questions!r}; name each kind once")
            names.append(n)
    if not names:
        raise ElicitError(f"questions={questions!r} names no kind of question; name kinds "
                          f"from {', '.join(KINDS)}, or all")
    return tuple(sorted(names, key=list(KINDS).index))


def spell_questions(questions: object) -> str:
    """The kinds of ``questions`` as sweep folders record them: a group's name, or a list."""
    names = parse_questions(questions)
    return next((g for g, members in groups().items() if members == names), ",".join(names))


def kinds_of(questions: object) -> tuple[QuestionKind, ...]:
    """The kind objects of :func:`parse_questions`."""
    return tuple(KINDS[n] for n in parse_questions(questions))


def model_for(questions: object) -> str | None:
    """The model the kinds of ``questions`` need when none is named (None: any)."""
    model = None
    for kind in kinds_of(questions):
        model = kind.model_with(model)
    return model
