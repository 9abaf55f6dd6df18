"""Expected information gain of a question (Afrabandpey et al. 2019, Sec. 3.2).

A *utility* is a small registered object with one scoring method, in the style of BoTorch's
acquisition functions: :class:`PairUtility` scores pair questions at one MAP, given the
round's :class:`~elicit.elicitation.scorer.UtilityScorer`; :class:`FeatureUtility` scores
feature questions ("does feature k affect the outcome?") in a model with relevance classes,
given the round's :class:`~elicit.elicitation.features.FeatureScorer`;
:class:`SampleUtility` scores candidate new training samples at a posterior. Choosing among
the scored candidates is the strategies' job (:mod:`elicit.elicitation.strategies`). The
registered utilities (:data:`UTILITIES`, :func:`get_utility`, :func:`register_utility`):

=====================  ==========  ======================================================
name                   target      what it scores
=====================  ==========  ======================================================
``predictive-fast``    predictive  pairs: expected KL of the predictive, fast mode
``predictive-exact``   predictive  the same, a refit per candidate and answer
``params-bald``        params      pairs: information about (gamma, xi), Laplace at the MAP
``relevance-fast``     predictive  features: expected KL of the predictive, rank-two screen
                                   and warm refits of the best
``relevance-exact``    predictive  the same, a refit per candidate and answer
``sample-gain``        beta        ``0.5 log(1 + x' Sigma* x)`` of a new sample (Table 1)
=====================  ==========  ======================================================

The user-facing options ``utility="fast" | "exact"``, ``target="predictive" | "params"`` and
``questions=`` (``Elicitor``, ``--utility``, ``--utility-target``, ``--questions``) name them:
each kind of question asked (:mod:`elicit.elicitation.kinds`) names its utility of each mode
and target (:attr:`~elicit.elicitation.kinds.QuestionKind.utilities`), and
:meth:`UtilityArgs.validate` is the one place they are checked. It returns a
:class:`QuestionUtility`: the utilities of the kinds asked, on one scale; in a model with
relevance classes a pair's gain is weighted by the chance that the expert can answer it
(:mod:`elicit.elicitation.features`).

Two *targets* say what the gain is about:

``predictive`` (default)
    the paper's: how much the answer moves the predictive distribution at the training
    inputs (below, and its two modes); the one target of feature questions;
``params``
    how much the answer tells about the feedback parameters theta_f = (gamma, xi): the
    mutual information between the answer and theta_f under the Laplace approximation at
    the MAP (BALD, Houlsby et al. 2011; :func:`bald_gain`, :meth:`UtilityScorer.param_gain`).
    It is closed-form up to a one-dimensional quadrature, so every candidate is scored
    exactly (under the approximation) at once, and the modes do not apply.

The predictive utility of pairs and its ``fast`` and ``exact`` modes are computed by the
round's :class:`~elicit.elicitation.scorer.UtilityScorer` (:mod:`elicit.elicitation.scorer`,
where the modes are described), that of feature questions by its
:class:`~elicit.elicitation.features.FeatureScorer`; the params target's quadrature is
:func:`~elicit.elicitation.quadrature.bald_gain`.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

import numpy as np

from elicit.elicitation.kinds import (
    KINDS,
    PAPER_QUESTIONS,
    QuestionKind,
    get_kind,
    kind_for,
    kinds_of,
    spell_questions,
)
from elicit.elicitation.quadrature import bald_gain  # noqa: F401  (re-exported)
from elicit.elicitation.questions import NO_FEATURE, feature_rows  # noqa: F401
from elicit.elicitation.scorer import (  # noqa: F401  (re-exported: the scoring pieces)
    MODES,
    TARGETS,
    UTILITIES,
    Scores,
    Utility,
    UtilityScorer,
    WarmNewton,
    _scalar_step,
    answer_probability,
    get_utility,
    kl_gauss,
    register_utility,
    unregister_utility,
)
from elicit.errors import ElicitError
from elicit.model.posterior import NIGPosterior
from elicit.model.variants import PAPER, get_model

if TYPE_CHECKING:
    from elicit.elicitation.features import FeatureScorer



# -- the registered utilities ----------------------------------------------------------------
@dataclass(frozen=True)
class PairUtility(Utility):
    """A utility of questions about feature pairs, scored at one MAP."""

    candidates: ClassVar[str] = "pair questions"

    @abstractmethod
    def score(self, scorer: UtilityScorer, pairs: np.ndarray, refine: int = 10,
              weight: np.ndarray | None = None) -> Scores:
        """Expected utilities of ``pairs`` (k x 2) at the scorer's MAP.

        Parameters
        ----------
        scorer
            The round: data, MAP, engine, the model's link and the scoring pieces.
        pairs
            The candidate pairs.
        refine
            How many candidates an approximate utility may re-score exactly (the others
            ignore it).
        weight
            The probability that each pair can be answered at all (in the relevance model,
            :mod:`elicit.elicitation.features`): a pair's gain is its weight times the gain
            of an answer. None: every pair can be (the paper's models).
        """

    def score_beside(self, scorer: UtilityScorer, pairs: np.ndarray, refine: int,
                     weight: np.ndarray | None, reach: float) -> Scores:
        """:meth:`score` of pairs asked beside other questions, the best of which has the
        exact gain ``reach``: a utility that refines approximate gains need not refine pairs
        that cannot reach it (they keep their approximate gains). By default :meth:`score`.
        """
        return self.score(scorer, pairs, refine, weight)


@dataclass(frozen=True)
class SampleUtility(Utility):
    """A utility of new training samples (rows of inputs), scored at a posterior."""

    candidates: ClassVar[str] = "samples"

    @abstractmethod
    def score(self, posterior: NIGPosterior, X: np.ndarray) -> np.ndarray:
        """The gain of observing y at each row of ``X`` under ``posterior``."""


@dataclass(frozen=True)
class FeatureUtility(Utility):
    """A utility of feature questions ("does feature k affect the outcome?"), scored at one
    MAP of a model with relevance classes (:mod:`elicit.elicitation.features`)."""

    candidates: ClassVar[str] = "feature questions"

    @abstractmethod
    def score(self, scorer: FeatureScorer, features: np.ndarray, refine: int = 10) -> Scores:
        """Expected utilities of asking about ``features`` (feature indices) at the MAP.

        Parameters
        ----------
        scorer
            The round's feature pieces (screen, exact refits, p(relevant)).
        features
            The candidate features.
        refine
            How many candidates an approximate utility may re-score exactly.
        """


@dataclass(frozen=True)
class PredictiveFast(PairUtility):
    """Expected KL of the predictive, fast: Laplace screen, batched Newton, exact refinement
    of the best (the module docstring)."""

    def score(self, scorer: UtilityScorer, pairs: np.ndarray, refine: int = 10,
              weight: np.ndarray | None = None) -> Scores:
        return self.score_beside(scorer, pairs, refine, weight, -np.inf)

    def score_beside(self, scorer: UtilityScorer, pairs: np.ndarray, refine: int,
                     weight: np.ndarray | None, reach: float) -> Scores:
        pairs, w, s = scorer.prepare(pairs)
        u = scorer.screen(w, s)
        if weight is not None:
            u = weight * u
        exact = np.zeros(len(pairs), bool)
        scorer.newton_stage(u, w, s, weight, exact, pairs, remember=max(1, refine))
        # The refinement looks at the candidates whose screened gain is within
        # (1 + certainty_margin)^2 of the best: when even the best is that far below what
        # another question reaches exactly, no pair is chosen, and refining them would be
        # wasted (on Amazon and Yelp, runs 0-2 and 30 rounds, the best pair's exact gain is
        # a median 0.5% and at most 19% of the best feature's).
        if (refine > 0 and len(pairs)
                and np.max(u) * (1.0 + scorer.certainty_margin) ** 2 >= reach):
            scorer.refine_best(pairs, w, s, u, exact, refine, weight)
        return Scores(pairs, u, exact, s, scorer.computed_hessian)


@dataclass(frozen=True)
class PredictiveExact(PairUtility):
    """Expected KL of the predictive, exact: the paper's refit for each candidate and answer."""

    def score(self, scorer: UtilityScorer, pairs: np.ndarray, refine: int = 10,
              weight: np.ndarray | None = None) -> Scores:
        pairs, w, s = scorer.prepare(pairs)
        u = scorer.exact(pairs, s)
        if weight is not None:
            u = weight * u
        return Scores(pairs, u, np.ones(len(pairs), bool), s, scorer.computed_hessian)


@dataclass(frozen=True)
class ParamsBald(PairUtility):
    """Information the answer gives about (gamma, xi), Laplace at the MAP (BALD)."""

    def score(self, scorer: UtilityScorer, pairs: np.ndarray, refine: int = 10,
              weight: np.ndarray | None = None) -> Scores:
        pairs, w, s = scorer.prepare(pairs)
        u = scorer.param_gain(w)
        if weight is not None:
            u = weight * u
        return Scores(pairs, u, np.ones(len(pairs), bool), s, scorer.hessian)


@dataclass(frozen=True)
class RelevanceFast(FeatureUtility):
    """Expected KL of the predictive after a feature answer, fast: the zeta-line screen of
    every candidate, the best re-scored by warm refits until the winner is certain (at most
    ``refine``)."""

    def score(self, scorer: FeatureScorer, features: np.ndarray, refine: int = 10) -> Scores:
        features = np.asarray(features, dtype=int).reshape(-1)
        u, p = scorer.zeta_screen(features)
        exact = np.zeros(len(features), bool)
        if refine > 0 and len(features):
            scorer.refine_best(features, p, u, exact, refine)
        return Scores(feature_rows(features), u, exact, p)


@dataclass(frozen=True)
class RelevanceExact(FeatureUtility):
    """Expected KL of the predictive after a feature answer, exact: a warm refit for each
    candidate and answer."""

    def score(self, scorer: FeatureScorer, features: np.ndarray, refine: int = 10) -> Scores:
        features = np.asarray(features, dtype=int).reshape(-1)
        p = scorer.p_relevant(features)
        return Scores(feature_rows(features), scorer.exact(features, p),
                      np.ones(len(features), bool), p)


@dataclass(frozen=True)
class SampleGain(SampleUtility):
    """``0.5 log(1 + x' Sigma* x)``: the information a new observation at x gives about beta.

    The mutual information between y at x and beta, given sigma^2, under
    ``beta ~ N(mu*, sigma^2 Sigma*)`` and unit-variance-scaled noise (sigma^2 cancels): the
    gain by which Table 1's ``act`` method adds training samples.
    """

    def score(self, posterior: NIGPosterior, X: np.ndarray) -> np.ndarray:
        quad = np.einsum("ij,ij->i", X @ posterior.Sigma, X)
        return 0.5 * np.log1p(np.maximum(quad, 0.0))


_HESSIAN_NOTE = ("uses the shipped model's analytic Hessian, which a custom Stan file does "
                 "not have; ")
PREDICTIVE_FAST = register_utility(PredictiveFast(
    "predictive-fast", "predictive",
    "the fast utility screen " + _HESSIAN_NOTE
    + "use exact utilities (--utility exact, or utility='exact' in Python)"))
PREDICTIVE_EXACT = register_utility(PredictiveExact("predictive-exact", "predictive"))
PARAMS_BALD = register_utility(ParamsBald(
    "params-bald", "params",
    "the params utility target " + _HESSIAN_NOTE
    + "use the predictive target with exact utilities"))
SAMPLE_GAIN = register_utility(SampleGain("sample-gain", "beta"))
_RELEVANCE_NOTE = ("feature questions and the relevance model's pair weights are scored with "
                   "the shipped relevance model's analytic marginal, which a custom Stan file "
                   "does not have; use the shipped programs (no stan_file)")
RELEVANCE_FAST = register_utility(RelevanceFast("relevance-fast", "predictive",
                                                _RELEVANCE_NOTE))
RELEVANCE_EXACT = register_utility(RelevanceExact("relevance-exact", "predictive",
                                                  _RELEVANCE_NOTE))


def model_has_relevance(model: str) -> bool:
    """Whether the named model has relevance classes (and so can take feature questions)."""
    return bool(get_model(model).relevance)


class ScoringRound:
    """One round's scoring pieces, shared by the kinds of question it scores: the round's
    :class:`~elicit.elicitation.scorer.UtilityScorer` and, in a model with relevance classes,
    its :class:`~elicit.elicitation.features.FeatureScorer` (made when first asked for)."""

    def __init__(self, scorer: UtilityScorer) -> None:
        self.scorer = scorer

    @cached_property
    def relevance(self) -> FeatureScorer | None:
        """The relevance model's pieces (p(relevant), a pair's chance of being answerable);
        None for a model without relevance classes."""
        if not model_has_relevance(self.scorer.data.hyper.model):
            return None
        # the relevance model's numerics: imported when asked for
        from elicit.elicitation.features import FeatureScorer

        return FeatureScorer(self.scorer)


@dataclass(frozen=True)
class QuestionUtility:
    """The one utility of an elicitation: the registered utility of each kind of question it
    asks, all on one scale (the expected KL of the predictive, or the params target's
    information), compared directly.

    Not registered itself: :meth:`UtilityArgs.validate` builds it from the kinds' utilities
    (:attr:`~elicit.elicitation.kinds.QuestionKind.utilities`). The kinds are scored in
    their order (:attr:`~elicit.elicitation.kinds.QuestionKind.order`), each told the best
    exact gain of those before it.
    """

    parts: tuple[tuple[QuestionKind, Utility], ...]

    @property
    def name(self) -> str:
        return " + ".join(u.name for _, u in self.parts)

    @property
    def kinds(self) -> tuple[str, ...]:
        """The names of the kinds it scores."""
        return tuple(k.name for k, _ in self.parts)

    def part(self, kind: str | QuestionKind) -> Utility:
        """The utility that scores ``kind``."""
        name = get_kind(kind).name
        for k, u in self.parts:
            if k.name == name:
                return u
        raise ElicitError(f"this utility scores no {get_kind(kind).label}")

    @property
    def only(self) -> Utility:
        """The utility of the one kind scored (pair questions, in the paper)."""
        if len(self.parts) != 1:
            raise ElicitError(f"this utility scores {len(self.parts)} kinds of question")
        return self.parts[0][1]

    def score(self, scorer: UtilityScorer, questions: np.ndarray, refine: int = 10,
              kinds: Sequence[str] | np.ndarray | None = None) -> Scores:
        """Expected utilities of the question rows ``questions`` (pairs ``(i, j)``, questions
        about one feature ``(k, NO_FEATURE)``), each kind refining up to ``refine`` of its own.

        ``kinds`` names the kind of each row; by default it is told by the row's arity (one
        kind per arity must be scored then).
        """
        rows = np.asarray(questions, dtype=int).reshape(-1, 2)
        if kinds is None:
            kinds = [kind_for(i, j, among=self.kinds).name for i, j in rows]
        kind_of = np.asarray(kinds, dtype=object).reshape(-1)
        if len(kind_of) != len(rows):
            raise ElicitError(f"{len(kind_of)} kinds for {len(rows)} questions")
        unknown = set(kind_of.tolist()) - set(self.kinds)
        if unknown:
            raise ElicitError(f"this utility scores no {get_kind(sorted(unknown)[0]).label}")
        round_ = ScoringRound(scorer)
        u = np.zeros(len(rows))
        exact = np.zeros(len(rows), bool)
        p = np.zeros(len(rows))
        # what a kind scored later must reach to be chosen (PairUtility.score_beside)
        reach = -np.inf
        for kind, utility in self.parts:
            mask = kind_of == kind.name
            if not mask.any():
                continue
            part = kind.score(utility, round_, rows[mask], refine, reach)
            u[mask], exact[mask], p[mask] = part.utility, part.exact, part.p_answer
            if part.exact.any():
                reach = max(reach, float(np.max(part.utility[part.exact])))
        return Scores(rows, u, exact, p, scorer.computed_hessian)


@dataclass(frozen=True)
class UtilityArgs:
    """The utility settings of an elicitation, checked in one place (:meth:`validate`).

    The Elicitor, the sweeps and the command line build one; the check runs before any Stan
    program is built (a build takes minutes).

    Parameters
    ----------
    utility
        ``"fast"`` or ``"exact"`` (the mode of the ``target``: each kind of question's own
        utility of that mode), or the name of a registered utility of a kind asked (the
        other kinds then take the ``fast`` mode's).
    target
        ``"predictive"`` or ``"params"``; with a registered name it must be the default
        ``"predictive"`` or that utility's own target.
    refine
        How many candidates the fast mode re-scores exactly (>= 0).
    stan_file
        The custom Stan program in use, if any.
    questions
        The kinds of question asked (:func:`~elicit.elicitation.kinds.parse_questions`):
        ``"pairs"`` (the paper), ``"relevance"``, ``"pairs,relevance"``, ...
    model
        The named model (:mod:`elicit.model.variants`); a kind may need one (feature questions
        need relevance classes: ``"relevance"``).
    """

    utility: str = "fast"
    target: str = "predictive"
    refine: int = 10
    stan_file: str | Path | None = None
    questions: object = PAPER_QUESTIONS
    model: str = PAPER

    def validate(self) -> QuestionUtility:
        """Check the settings and return the utility that scores the questions.

        Raises
        ------
        ElicitError
            One line for an unknown target, utility, kind of question or model, a model a
            kind asked cannot take, a utility that scores no kind asked, a target that
            contradicts a named utility's or that a kind asked has no utility of, a negative
            ``refine``, or a utility that cannot serve a custom Stan file.
        """
        utility, target = self.utility, self.target
        if target not in TARGETS:
            raise ElicitError(f"utility target must be one of {', '.join(TARGETS)}, "
                              f"got {target!r}")
        kinds = kinds_of(self.questions)
        spelled = spell_questions(kinds)
        get_model(self.model)
        for kind in kinds:
            why = kind.model_refusal(self.model)
            if why is not None:
                raise ElicitError(f"questions={spelled!r} asks {kind.label}, which {why}")
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
            others = [n for n, u in UTILITIES.items()
                      if any(k.takes(u) for k in KINDS.values())]
            raise ElicitError(f"utility must be 'fast' or 'exact' (or a registered utility: "
                              f"{', '.join(others)}), got {utility!r}")
        if chosen is not None and not any(k.takes(chosen) for k in kinds):
            takers = [k for k in KINDS.values() if k.takes(chosen)]
            if not takers:
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
            name = kind.utilities.get((mode, target))
            if name is None:
                raise ElicitError(f"the {target!r} utility target does not score "
                                  f"{kind.label}; use target='predictive' with "
                                  f"questions={spelled!r}")
            parts.append((kind, UTILITIES[name]))
        refine = self.refine
        if (isinstance(refine, bool) or not isinstance(refine, (int, np.integer))
                or refine < 0):
            raise ElicitError(f"refine must be >= 0, got {refine!r}")
        if self.stan_file is not None:
            for _, u in parts:
                if u.custom_stan_refusal is not None:
                    raise ElicitError(u.custom_stan_refusal)
            if model_has_relevance(self.model):
                raise ElicitError(_RELEVANCE_NOTE)
        return QuestionUtility(tuple(parts))
