"""The registered utilities: what asking a question (or observing a new sample) is expected
to teach (Afrabandpey et al. 2019, Sec. 3.2), each registered at the end of this module."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, ClassVar, TypeVar, cast

import numpy as np

from elicit.elicitation.table import feature_rows
from elicit.errors import ElicitError
from elicit.internal.registry import Registry

if TYPE_CHECKING:
    from elicit.elicitation.features import FeatureScorer
    from elicit.elicitation.scorer import UtilityScorer
    from elicit.model.posterior import NIGPosterior


#: the user-facing utility modes (``Elicitor(utility=...)``, ``--utility``)
MODES: tuple[str, ...] = ("fast", "exact")
#: the user-facing utility targets (``Elicitor(target=...)``, ``--utility-target``)
TARGETS: tuple[str, ...] = ("predictive", "params")


@dataclass(frozen=True)
class Utility(ABC):
    """A registered expected utility. Subclass :class:`PairUtility`, :class:`FeatureUtility`
    or :class:`SampleUtility` and register an instance (:func:`register_utility`).

    Attributes
    ----------
    name
        The registry key; also accepted as ``Elicitor(utility=name)``.
    target
        What the gain is about (for example ``"predictive"`` or ``"params"``).
    custom_stan_refusal
        The one-line error if the utility does not work with a custom Stan file, else None.
    """

    name: str
    target: str
    custom_stan_refusal: str | None = None

    #: what the candidates are: "pair questions", "feature questions" or "samples"
    candidates: ClassVar[str] = ""


_U = TypeVar("_U", bound=Utility)
#: the registered utilities by name (a read-only mapping; add with :func:`register_utility`)
UTILITIES: Registry[Utility] = Registry("utility")


def register_utility(utility: _U) -> _U:
    """Register ``utility`` under its name and return it; an ElicitError if the name is invalid,
    taken or a mode's (``"fast"``, ...), or ``score`` does not take the abstract one's arguments."""
    if not isinstance(utility, Utility):
        raise ElicitError(f"register_utility takes a PairUtility, FeatureUtility or "
                          f"SampleUtility object, got {type(utility).__name__}")
    if utility.name in MODES:
        raise ElicitError(f"{utility.name!r} is a utility mode (utility='{utility.name}'), not "
                          "a free name; register the utility under another name")
    return cast(_U, UTILITIES.add(utility.name, utility))


unregister_utility = UTILITIES.remove
get_utility = UTILITIES.lookup


def kl_gauss(m1: np.ndarray, v1: np.ndarray, m0: np.ndarray, v0: np.ndarray) -> np.ndarray:
    """KL(N(m1, v1) || N(m0, v0)) summed over the first axis (the training inputs)."""
    return 0.5 * np.sum(np.log(v0 / v1) + (v1 + (m1 - m0) ** 2) / v0 - 1.0, axis=0)


@dataclass
class Scores:
    """Expected utilities of candidate questions (rows ``(i, j)`` or ``(k, NO_FEATURE)``):
    exact where ``exact``; ``p_answer``, the probability of the first answer at the MAP;
    ``hessian``, the base Hessian at the MAP if this round computed it (for the next refit).
    """

    questions: np.ndarray
    utility: np.ndarray
    exact: np.ndarray
    p_answer: np.ndarray
    hessian: np.ndarray | None = field(default=None, repr=False)

    @property
    def best(self) -> int:
        return int(self.ranking()[0])  # a screen's estimate must not outrank an exact score

    def ranking(self) -> np.ndarray:
        """Candidate indices, best first: exact scores first, then the screen's order."""
        return np.lexsort((-self.utility, ~self.exact))


@dataclass(frozen=True)
class PairUtility(Utility):
    """A utility of questions about feature pairs, scored at one MAP."""

    candidates: ClassVar[str] = "pair questions"

    @abstractmethod
    def score(self, scorer: UtilityScorer, pairs: np.ndarray, refine: int = 10,
              weight: np.ndarray | None = None) -> Scores:
        """Expected utilities of the candidate ``pairs`` (k x 2) at the MAP of the round's
        ``scorer``, an approximate utility re-scoring at most ``refine`` exactly; ``weight``,
        the probability that each pair can be answered at all (relevance model; None: 1),
        multiplies its gain."""

    def score_beside(self, scorer: UtilityScorer, pairs: np.ndarray, refine: int,
                     weight: np.ndarray | None, reach: float) -> Scores:
        """:meth:`score` beside other questions whose best exact gain is ``reach``."""
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
    """A utility of feature questions, scored at one MAP of a model with relevance classes."""

    candidates: ClassVar[str] = "feature questions"

    @abstractmethod
    def score(self, scorer: FeatureScorer, features: np.ndarray, refine: int = 10) -> Scores:
        """Expected utilities of ``features`` at the MAP, re-scoring at most ``refine`` exactly."""


@dataclass(frozen=True)
class PredictiveFast(PairUtility):
    """Expected KL of the predictive, fast (:mod:`elicit.elicitation.scorer`)."""

    def score(self, scorer: UtilityScorer, pairs: np.ndarray, refine: int = 10,
              weight: np.ndarray | None = None) -> Scores:
        return self.score_beside(scorer, pairs, refine, weight, -np.inf)

    def score_beside(self, scorer: UtilityScorer, pairs: np.ndarray, refine: int,
                     weight: np.ndarray | None, reach: float) -> Scores:
        pairs, w, s = scorer.prepare(pairs)
        u = scorer.screen(w, s) if weight is None else weight * scorer.screen(w, s)
        exact = np.zeros(len(pairs), bool)
        scorer.newton_stage(u, w, s, weight, exact, pairs, remember=max(1, refine))
        # no pair can be chosen when even the best screened gain is (1 + certainty_margin)^2
        # below what another kind reaches exactly (on Amazon and Yelp: at most 19% of it)
        if (refine > 0 and len(pairs)
                and np.max(u) * (1.0 + scorer.certainty_margin) ** 2 >= reach):
            scorer.refine_best(pairs, s, u, exact, refine, weight)
        return Scores(pairs, u, exact, s, scorer.computed_hessian)


@dataclass(frozen=True)
class PredictiveExact(PairUtility):
    """Expected KL of the predictive, exact: the paper's refit for each candidate and answer;
    with ``params``, the information the answer gives about (gamma, xi), Laplace at the MAP
    (BALD)."""

    params: bool = False

    def score(self, scorer: UtilityScorer, pairs: np.ndarray, refine: int = 10,
              weight: np.ndarray | None = None) -> Scores:
        pairs, w, s = scorer.prepare(pairs)
        u = scorer.param_gain(w) if self.params else scorer.exact(pairs, s)
        u = u if weight is None else weight * u
        # param_gain computed the base Hessian; exact refits computed it where they needed it
        return Scores(pairs, u, np.ones(len(pairs), bool), s, scorer.computed_hessian)


@dataclass(frozen=True)
class RelevanceGain(FeatureUtility):
    """Expected KL of the predictive after a feature answer: the zeta-line screen's best
    re-scored by refits, or (``every``) a refit for each."""

    every: bool = False

    def score(self, scorer: FeatureScorer, features: np.ndarray, refine: int = 10) -> Scores:
        features = np.asarray(features, dtype=int).reshape(-1)
        if self.every:
            p = scorer.p_relevant(features)
            return Scores(feature_rows(features), scorer.exact(features, p),
                          np.ones(len(features), bool), p)
        u, p = scorer.zeta_screen(features)
        exact = np.zeros(len(features), bool)
        if refine > 0 and len(features):
            scorer.refine_best(features, p, u, exact, refine)
        return Scores(feature_rows(features), u, exact, p)


@dataclass(frozen=True)
class SampleGain(SampleUtility):
    """``0.5 log(1 + x' Sigma* x)``: the mutual information between y at x and beta given
    sigma^2, under ``beta ~ N(mu*, sigma^2 Sigma*)``; Table 1's ``act``."""

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
register_utility(PredictiveExact(
    "params-bald", "params",
    "the params utility target " + _HESSIAN_NOTE
    + "use the predictive target with exact utilities", params=True))
SAMPLE_GAIN = register_utility(SampleGain("sample-gain", "beta"))
_RELEVANCE_NOTE = ("feature questions and the relevance model's pair weights are scored with "
                   "the shipped relevance model's analytic marginal, which a custom Stan file "
                   "does not have; use the shipped programs (no stan_file)")
register_utility(RelevanceGain("relevance-fast", "predictive", _RELEVANCE_NOTE))
register_utility(RelevanceGain("relevance-exact", "predictive", _RELEVANCE_NOTE, every=True))
