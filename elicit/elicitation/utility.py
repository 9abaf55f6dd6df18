"""The utility of an elicitation (Afrabandpey et al. 2019, Sec. 3.2), chosen from its options
among the registered utilities (:mod:`elicit.elicitation.gains`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from elicit.elicitation.features import FeatureScorer
from elicit.elicitation.gains import (  # noqa: F401  (re-exported: the registered utilities)
    _RELEVANCE_NOTE,
    MODES,
    PREDICTIVE_EXACT,
    PREDICTIVE_FAST,
    SAMPLE_GAIN,
    TARGETS,
    UTILITIES,
    PairUtility,
    Scores,
    Utility,
    get_utility,
    kl_gauss,
    register_utility,
    unregister_utility,
)
from elicit.elicitation.kinds import (
    KINDS,
    PAPER_QUESTIONS,
    QuestionKind,
    kind_for,
    kinds_of,
    model_for,
    spell_questions,
)
from elicit.errors import ElicitError
from elicit.internal.checks import check_int
from elicit.model.variants import PAPER, get_model

if TYPE_CHECKING:
    from elicit.elicitation.scorer import UtilityScorer


class ScoringRound:
    """One round's scoring pieces, shared by the kinds it scores."""

    def __init__(self, scorer: UtilityScorer) -> None:
        self.scorer = scorer

    @cached_property
    def relevance(self) -> FeatureScorer | None:
        """The relevance model's pieces; None for a model without relevance classes."""
        return FeatureScorer(self.scorer) if self.scorer.data.model.relevance else None


@dataclass(frozen=True)
class QuestionUtility:
    """The registered utility of each kind an elicitation asks, scored in the kinds'
    ``order``, each told the best exact gain of those before it."""

    parts: tuple[tuple[QuestionKind, Utility], ...]

    @property
    def kinds(self) -> tuple[str, ...]:
        return tuple(k.name for k, _ in self.parts)

    @property
    def only(self) -> Utility:
        """The utility of the one kind scored (pair questions, in the paper)."""
        if len(self.parts) != 1:
            raise ElicitError(f"this utility scores {len(self.parts)} kinds of question")
        return self.parts[0][1]

    def score(self, scorer: UtilityScorer, questions: np.ndarray, refine: int = 10,
              kinds: Sequence[str] | np.ndarray | None = None) -> Scores:
        """Expected utilities of the rows ``questions`` (``kinds``: each row's; default: arity)."""
        rows = np.asarray(questions, dtype=int).reshape(-1, 2)
        if kinds is None:
            kinds = [kind_for(i, j, among=self.kinds).name for i, j in rows]
        kind_of = np.asarray(kinds, dtype=object).reshape(-1)
        round_ = ScoringRound(scorer)
        u = np.zeros(len(rows))
        exact = np.zeros(len(rows), bool)
        p = np.zeros(len(rows))
        reach = -np.inf
        for kind, utility in self.parts:
            mask = kind_of == kind.name
            if not mask.any():
                continue
            part = _checked(kind.score(utility, round_, rows[mask], refine, reach), utility,
                            int(mask.sum()))
            u[mask], exact[mask], p[mask] = part.utility, part.exact, part.p_answer
            if part.exact.any():
                reach = max(reach, float(np.max(part.utility[part.exact])))
        return Scores(rows, u, exact, p, scorer.computed_hessian)


def _checked(part: object, utility: Utility, n: int) -> Scores:
    """``part``, the scores of ``n`` questions, else one line: a utility may return anything."""
    got = type(part).__name__
    if isinstance(part, Scores) and all(isinstance(a, np.ndarray) and a.shape == (n,)
                                        for a in (part.utility, part.exact, part.p_answer)):
        bad = ~np.isfinite(part.utility)
        if part.exact.dtype == bool and not bad.any():
            return part
        got = f"the gain {part.utility[bad][0]}" if bad.any() else f"{part.exact.dtype} flags"
    raise ElicitError(f"utility {utility.name!r} returned {got}, not Scores with a finite "
                      f"utility, a boolean exact flag and a p_answer for each of {n} questions")


@dataclass(frozen=True)
class UtilityArgs:
    """The utility settings of an elicitation, checked (:meth:`validate`) before any Stan
    program is built.

    Parameters
    ----------
    utility
        ``"fast"`` or ``"exact"``, or the name of a registered utility of a kind asked (the
        other kinds then take the ``fast`` mode's).
    target
        ``"predictive"`` or ``"params"`` (with a registered name: that utility's own).
    refine
        How many candidates the fast mode re-scores exactly (>= 0).
    stan_file, questions, model
        As :class:`~elicit.elicitation.settings.RoundSettings` has them.
    """

    utility: str = "fast"
    target: str = "predictive"
    refine: int = 10
    stan_file: str | Path | None = None
    questions: object = PAPER_QUESTIONS
    model: str = PAPER

    def validate(self) -> QuestionUtility:
        """The utility that scores the questions; a one-line ElicitError for anything the
        kinds asked, the model or a custom Stan file cannot take."""
        utility, target = self.utility, self.target
        if target not in TARGETS:
            raise ElicitError(f"utility target must be one of {', '.join(TARGETS)}, "
                              f"got {target!r}")
        kinds = kinds_of(self.questions)
        spelled = spell_questions(kinds)
        get_model(self.model)
        for kind in kinds:
            if (why := kind.model_refusal(self.model)) is not None:
                raise ElicitError(f"questions={spelled!r} asks {kind.label}, which {why}: use "
                                  f"model={model_for(kinds)!r} (the model is {self.model!r})")
        chosen: Utility | None = None
        if isinstance(utility, str) and utility in MODES:
            mode = utility
        elif isinstance(utility, str) and utility in UTILITIES:
            chosen, mode = UTILITIES[utility], "fast"
            if target not in ("predictive", chosen.target):
                raise ElicitError(f"utility {utility!r} is about {chosen.target!r}, not "
                                  f"{target!r}; leave the target out or use utility='fast' "
                                  "or 'exact'")
        else:
            others = [n for n, u in UTILITIES.items() if any(k.takes(u) for k in KINDS.values())]
            raise ElicitError(f"utility must be 'fast' or 'exact' (or a registered utility: "
                              f"{', '.join(others)}), got {utility!r}")
        if chosen is not None and not any(k.takes(chosen) for k in kinds):
            if not (takers := [k for k in KINDS.values() if k.takes(chosen)]):
                raise ElicitError(f"utility {chosen.name!r} scores {chosen.candidates}, not "
                                  "questions of any kind; use 'fast' or 'exact'")
            raise ElicitError(f"utility {chosen.name!r} scores "
                              f"{' and '.join(k.label for k in takers)}, which "
                              f"questions={spelled!r} does not ask; ask them "
                              f"(questions={spell_questions([*kinds, *takers])!r}) or use "
                              "'fast' or 'exact'")
        parts = []
        for kind in sorted(kinds, key=lambda k: k.order):
            if chosen is not None and kind.takes(chosen):
                parts.append((kind, chosen))
                continue
            if (name := kind.utilities.get((mode, target))) is None:
                other = [t for m, t in kind.utilities if m == mode]
                raise ElicitError(f"the {target!r} utility target does not score {kind.label}; "
                                  + (f"use target={other[0]!r} with questions={spelled!r}" if other
                                     else f"their kind has no {mode!r} utility (it has "
                                     f"{', '.join(map('/'.join, kind.utilities)) or 'none'})"))
            parts.append((kind, UTILITIES.lookup(name)))
        check_int(self.refine, f"refine must be a non-negative integer, got {self.refine!r}", 0)
        if self.stan_file is not None:
            for _, u in parts:
                if u.custom_stan_refusal is not None:
                    raise ElicitError(u.custom_stan_refusal)
            if get_model(self.model).relevance:
                raise ElicitError(_RELEVANCE_NOTE)
        return QuestionUtility(tuple(parts))
