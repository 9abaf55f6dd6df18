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
``questions="pairs" | "relevance" | "both"`` (``Elicitor``, ``--utility``,
``--utility-target``, ``--questions``) name them through :data:`OPTIONS` and
:data:`FEATURE_OPTIONS`, and :meth:`UtilityArgs.validate` is the one place they are checked.
In the paper's models (pair questions only) it returns the named :class:`PairUtility`; in a
model with relevance classes, a :class:`QuestionUtility`: the pair and feature utilities of
the mode on one scale, a pair's gain weighted by the chance that the expert can answer it
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

from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, ClassVar, TypeVar, cast

import numpy as np

from elicit.elicitation.quadrature import bald_gain  # noqa: F401  (re-exported)
from elicit.elicitation.questions import check_questions, feature_rows, is_feature_row
from elicit.elicitation.scorer import (  # noqa: F401  (re-exported: the scoring pieces)
    Scores,
    UtilityScorer,
    WarmNewton,
    _scalar_step,
    answer_probability,
    kl_gauss,
)
from elicit.errors import ElicitError
from elicit.internal.registry import Registry
from elicit.model.posterior import NIGPosterior
from elicit.model.variants import PAPER, get_model

if TYPE_CHECKING:
    from elicit.elicitation.features import FeatureScorer

#: the user-facing utility modes (``Elicitor(utility=...)``, ``--utility``)
MODES: tuple[str, ...] = ("fast", "exact")
#: the user-facing utility targets (``Elicitor(target=...)``, ``--utility-target``)
TARGETS: tuple[str, ...] = ("predictive", "params")
#: the one place the user-facing options meet the registered utilities:
#: (mode, target) -> the name in :data:`UTILITIES` (the params target has no modes)
OPTIONS: Mapping[tuple[str, str], str] = MappingProxyType({
    ("fast", "predictive"): "predictive-fast",
    ("exact", "predictive"): "predictive-exact",
    ("fast", "params"): "params-bald",
    ("exact", "params"): "params-bald",
})


# -- the registered utilities ----------------------------------------------------------------
@dataclass(frozen=True)
class Utility(ABC):
    """A registered expected utility: what asking a candidate is expected to teach.

    Subclass :class:`PairUtility` (questions about feature pairs, what an
    :class:`~elicit.elicitation.elicitor.Elicitor` asks) or :class:`SampleUtility` (new
    training samples), give the instance a unique ``name`` and register it
    (:func:`register_utility`).

    Attributes
    ----------
    name
        The registry key; also accepted as ``Elicitor(utility=name)``.
    target
        What the gain is about (for example ``"predictive"`` or ``"params"``).
    custom_stan_refusal
        None when the utility works with a custom Stan file; otherwise the one-line error
        that says why not and what to use instead (the fast screen and the parameter gain
        use the shipped model's analytic Hessian).
    """

    name: str
    target: str
    custom_stan_refusal: str | None = None

    #: what the candidates are: "pairs" or "samples"
    candidates: ClassVar[str] = ""


@dataclass(frozen=True)
class PairUtility(Utility):
    """A utility of questions about feature pairs, scored at one MAP."""

    candidates: ClassVar[str] = "pairs"

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

    candidates: ClassVar[str] = "features"

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
_U = TypeVar("_U", bound=Utility)
#: the registered utilities by name (a read-only mapping; add with :func:`register_utility`)
UTILITIES: Registry[Utility] = Registry("utility")


def register_utility(utility: _U) -> _U:
    """Register ``utility`` under its name and return it.

    Raises
    ------
    ElicitError
        If it is not a :class:`Utility`, its name is empty, a mode name (``fast``,
        ``exact``) or already registered.
    """
    if not isinstance(utility, Utility):
        raise ElicitError(f"register_utility takes a PairUtility, FeatureUtility or "
                          f"SampleUtility object, got {type(utility).__name__}")
    if utility.name in MODES:
        raise ElicitError(f"{utility.name!r} is a utility mode (utility='{utility.name}'), not "
                          "a free name; register the utility under another name")
    # add returns its argument, typed as the registry's item type
    return cast(_U, UTILITIES.add(utility.name, utility))


def unregister_utility(name: str) -> None:
    """Remove the utility called ``name`` (a utility registered for a test, say)."""
    UTILITIES.remove(name)


def get_utility(name: str) -> Utility:
    """The registered utility called ``name``.

    Raises
    ------
    ElicitError
        One line listing the registered names, if ``name`` is not one of them.
    """
    return UTILITIES.lookup(name)


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


@dataclass(frozen=True)
class QuestionUtility:
    """The one utility of an elicitation in a model with relevance classes: pair and feature
    questions on one scale (the expected KL of the predictive), compared directly.

    Not registered itself: it composes a registered :class:`PairUtility` (``pairs``; None
    when no pair is asked) and a registered :class:`FeatureUtility` (``features``; None when
    no feature question is asked). A pair's gain is weighted by the probability that the
    expert can answer it, ``r_i r_j``
    (:meth:`~elicit.elicitation.features.FeatureScorer.answerable`).
    :meth:`UtilityArgs.validate` builds it.
    """

    pairs: PairUtility | None
    features: FeatureUtility | None

    @property
    def name(self) -> str:
        return " + ".join(u.name for u in (self.pairs, self.features) if u is not None)

    def score(self, scorer: UtilityScorer, questions: np.ndarray, refine: int = 10) -> Scores:
        """Expected utilities of the question rows ``questions`` (pairs ``(i, j)``, feature
        questions ``(k, NO_FEATURE)``), each kind refining up to ``refine`` of its own."""
        # the feature pieces need the relevance model's numerics: imported when asked for
        from elicit.elicitation.features import FeatureScorer

        rows = np.asarray(questions, dtype=int).reshape(-1, 2)
        feature = is_feature_row(rows)
        fs = FeatureScorer(scorer)
        u = np.zeros(len(rows))
        exact = np.zeros(len(rows), bool)
        p = np.zeros(len(rows))
        # the feature questions first: the best exact gain among them is what a pair must
        # reach to be chosen (PairUtility.score_beside)
        features = self._features(fs, rows[feature, 0], refine)
        reach = (float(np.max(features.utility[features.exact]))
                 if features is not None and features.exact.any() else -np.inf)
        for mask, part in ((feature, features),
                           (~feature, self._pairs(scorer, fs, rows[~feature], refine, reach))):
            if part is not None:
                u[mask], exact[mask], p[mask] = part.utility, part.exact, part.p_answer
        return Scores(rows, u, exact, p, scorer.computed_hessian)

    def _features(self, fs: FeatureScorer, features: np.ndarray, refine: int) -> Scores | None:
        if len(features) == 0:
            return None
        if self.features is None:
            raise ElicitError("this utility scores no feature questions")
        return self.features.score(fs, features, refine)

    def _pairs(self, scorer: UtilityScorer, fs: FeatureScorer, pairs: np.ndarray,
               refine: int, reach: float) -> Scores | None:
        if len(pairs) == 0:
            return None
        if self.pairs is None:
            raise ElicitError("this utility scores no pair questions")
        return self.pairs.score_beside(scorer, pairs, refine, fs.answerable(pairs), reach)


# -- the user-facing options -----------------------------------------------------------------
#: the feature utility of each mode (``utility="fast" | "exact"`` with feature questions)
FEATURE_OPTIONS: Mapping[str, str] = MappingProxyType({"fast": "relevance-fast",
                                                       "exact": "relevance-exact"})


def model_has_relevance(model: str) -> bool:
    """Whether the named model has relevance classes (and so can take feature questions)."""
    return bool(getattr(get_model(model), "relevance", False))


@dataclass(frozen=True)
class UtilityArgs:
    """The utility settings of an elicitation, checked in one place (:meth:`validate`).

    The Elicitor, the sweeps and the command line build one; the check runs before any Stan
    program is built (a build takes minutes).

    Parameters
    ----------
    utility
        ``"fast"`` or ``"exact"`` (the mode of the ``target``), or the name of a registered
        :class:`PairUtility` or :class:`FeatureUtility` (the other kind, if asked, then takes
        the ``fast`` mode's).
    target
        ``"predictive"`` or ``"params"``; with a registered name it must be the default
        ``"predictive"`` or that utility's own target.
    refine
        How many candidates the fast mode re-scores exactly (>= 0).
    stan_file
        The custom Stan program in use, if any.
    questions
        Which questions are asked: ``"pairs"`` (the paper), ``"relevance"`` or ``"both"``
        (:data:`~elicit.elicitation.questions.QUESTIONS`).
    model
        The named model (:mod:`elicit.model.variants`); feature questions need one with
        relevance classes (``"relevance"``).
    """

    utility: str = "fast"
    target: str = "predictive"
    refine: int = 10
    stan_file: str | Path | None = None
    questions: str = "pairs"
    model: str = PAPER

    def validate(self) -> PairUtility | QuestionUtility:
        """Check the settings and return the utility that scores the questions.

        That is the named :class:`PairUtility` for pair questions in a model without
        relevance classes (the paper's case), else a :class:`QuestionUtility` of the pair and
        feature utilities the settings name.

        Raises
        ------
        ElicitError
            One line for an unknown target, utility, question kind or model, a utility that
            does not score the questions asked, a target that contradicts a named utility's,
            feature questions without a relevance model or with the params target, a
            negative ``refine``, or a utility that cannot serve a custom Stan file.
        """
        utility, target, questions = self.utility, self.target, self.questions
        if target not in TARGETS:
            raise ElicitError(f"utility target must be one of {', '.join(TARGETS)}, "
                              f"got {target!r}")
        check_questions(questions)
        relevance = model_has_relevance(self.model)
        if questions != "pairs" and not relevance:
            raise ElicitError(f"questions={questions!r} asks feature questions, which need a "
                              f"model with relevance classes: use model='relevance' (the "
                              f"model is {self.model!r})")
        if questions != "pairs" and target != "predictive":
            raise ElicitError(f"the {target!r} utility target scores pair questions only; use "
                              f"target='predictive' with questions={questions!r}")
        if isinstance(utility, str) and utility in MODES:
            chosen = UTILITIES[OPTIONS[utility, target]]
        elif isinstance(utility, str) and utility in UTILITIES:
            chosen = UTILITIES[utility]
            if target not in ("predictive", chosen.target):
                raise ElicitError(f"utility {utility!r} is about {chosen.target!r}, not "
                                  f"{target!r}; leave the target out or use utility='fast' "
                                  "or 'exact'")
        else:
            others = [n for n, u in UTILITIES.items()
                      if isinstance(u, (PairUtility, FeatureUtility))]
            raise ElicitError(f"utility must be 'fast' or 'exact' (or a registered utility: "
                              f"{', '.join(others)}), got {utility!r}")
        if isinstance(chosen, FeatureUtility):
            if questions == "pairs":
                raise ElicitError(f"utility {chosen.name!r} scores feature questions; ask "
                                  "them with questions='relevance' or 'both', or use 'fast' "
                                  "or 'exact'")
        elif not isinstance(chosen, PairUtility):
            raise ElicitError(f"utility {chosen.name!r} scores {chosen.candidates}, not "
                              "questions about feature pairs; use 'fast' or 'exact'")
        elif questions == "relevance" and utility not in MODES:
            raise ElicitError(f"utility {chosen.name!r} scores pair questions, and "
                              "questions='relevance' asks none; use 'fast' or 'exact', or a "
                              "feature utility (relevance-fast, relevance-exact)")
        refine = self.refine
        if (isinstance(refine, bool) or not isinstance(refine, (int, np.integer))
                or refine < 0):
            raise ElicitError(f"refine must be >= 0, got {refine!r}")
        if self.stan_file is not None and chosen.custom_stan_refusal is not None:
            raise ElicitError(chosen.custom_stan_refusal)
        if not relevance:
            assert isinstance(chosen, PairUtility)
            return chosen
        if self.stan_file is not None:
            raise ElicitError(_RELEVANCE_NOTE)
        mode = utility if utility in MODES else "fast"
        pairs = (None if questions == "relevance" else
                 chosen if isinstance(chosen, PairUtility) else UTILITIES[OPTIONS[mode, target]])
        features = (None if questions == "pairs" else
                    chosen if isinstance(chosen, FeatureUtility)
                    else UTILITIES[FEATURE_OPTIONS[mode]])
        return QuestionUtility(pairs, features)  # type: ignore[arg-type]
