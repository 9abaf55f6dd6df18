"""Expected information gain of a question (Afrabandpey et al. 2019, Sec. 3.2).

A *utility* is a small registered object with one scoring method, in the style of BoTorch's
acquisition functions: :class:`PairUtility` scores candidate questions (feature pairs) at one
MAP, given the round's :class:`UtilityScorer`; :class:`SampleUtility` scores candidate new
training samples at a posterior. Choosing among the scored candidates is the strategies' job
(:mod:`elicit.elicitation.strategies`). The registered utilities (:data:`UTILITIES`,
:func:`get_utility`, :func:`register_utility`):

=====================  ==========  ======================================================
name                   target      what it scores
=====================  ==========  ======================================================
``predictive-fast``    predictive  expected KL of the predictive, fast mode (below)
``predictive-exact``   predictive  the same, a refit per candidate and answer
``params-bald``        params      information about (gamma, xi), Laplace at the MAP
``sample-gain``        beta        ``0.5 log(1 + x' Sigma* x)`` of a new sample (Table 1)
=====================  ==========  ======================================================

The user-facing options ``utility="fast" | "exact"`` and ``target="predictive" | "params"``
(``Elicitor``, ``--utility``, ``--utility-target``) name the first three through
:data:`OPTIONS`, and :meth:`UtilityArgs.validate` is the one place they are checked.

Two *targets* say what the gain is about:

``predictive`` (default)
    the paper's: how much the answer moves the predictive distribution at the training
    inputs (below, and its two modes);
``params``
    how much the answer tells about the feedback parameters theta_f = (gamma, xi): the
    mutual information between the answer and theta_f under the Laplace approximation at
    the MAP (BALD, Houlsby et al. 2011; :func:`bald_gain`, :meth:`UtilityScorer.param_gain`).
    It is closed-form up to a one-dimensional quadrature, so every candidate is scored
    exactly (under the approximation) at once, and the modes do not apply.

The predictive utility and its ``fast`` and ``exact`` modes are computed by the round's
:class:`~elicit.elicitation.scorer.UtilityScorer` (:mod:`elicit.elicitation.scorer`, where
the modes are described); the params target's quadrature is
:func:`~elicit.elicitation.quadrature.bald_gain`.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import ClassVar, TypeVar

import numpy as np

from elicit.elicitation.quadrature import bald_gain  # noqa: F401  (re-exported)
from elicit.elicitation.scorer import (  # noqa: F401  (re-exported: the scoring pieces)
    Scores,
    UtilityScorer,
    WarmNewton,
    _scalar_step,
    answer_probability,
    kl_gauss,
)
from elicit.errors import ElicitError
from elicit.model.posterior import NIGPosterior

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
    def score(self, scorer: UtilityScorer, pairs: np.ndarray, refine: int = 10) -> Scores:
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
        """


@dataclass(frozen=True)
class SampleUtility(Utility):
    """A utility of new training samples (rows of inputs), scored at a posterior."""

    candidates: ClassVar[str] = "samples"

    @abstractmethod
    def score(self, posterior: NIGPosterior, X: np.ndarray) -> np.ndarray:
        """The gain of observing y at each row of ``X`` under ``posterior``."""


@dataclass(frozen=True)
class PredictiveFast(PairUtility):
    """Expected KL of the predictive, fast: Laplace screen, batched Newton, exact refinement
    of the best (the module docstring)."""

    def score(self, scorer: UtilityScorer, pairs: np.ndarray, refine: int = 10) -> Scores:
        pairs, w, s = scorer.prepare(pairs)
        u = scorer.screen(w, s)
        scorer.newton_stage(u, w, s)
        exact = np.zeros(len(pairs), bool)
        if refine > 0 and len(pairs):
            scorer.refine_best(pairs, w, s, u, exact, refine)
        return Scores(pairs, u, exact, s, scorer.computed_hessian)


@dataclass(frozen=True)
class PredictiveExact(PairUtility):
    """Expected KL of the predictive, exact: the paper's refit for each candidate and answer."""

    def score(self, scorer: UtilityScorer, pairs: np.ndarray, refine: int = 10) -> Scores:
        pairs, w, s = scorer.prepare(pairs)
        u = scorer.exact(pairs, s)
        return Scores(pairs, u, np.ones(len(pairs), bool), s, scorer.computed_hessian)


@dataclass(frozen=True)
class ParamsBald(PairUtility):
    """Information the answer gives about (gamma, xi), Laplace at the MAP (BALD)."""

    def score(self, scorer: UtilityScorer, pairs: np.ndarray, refine: int = 10) -> Scores:
        pairs, w, s = scorer.prepare(pairs)
        return Scores(pairs, scorer.param_gain(w), np.ones(len(pairs), bool), s,
                      scorer.hessian)


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
_utilities: dict[str, Utility] = {}
#: the registered utilities by name (read-only; add with :func:`register_utility`)
UTILITIES: Mapping[str, Utility] = MappingProxyType(_utilities)


def register_utility(utility: _U) -> _U:
    """Register ``utility`` under its name and return it.

    Raises
    ------
    ElicitError
        If it is not a :class:`Utility`, its name is empty, a mode name (``fast``,
        ``exact``) or already registered.
    """
    if not isinstance(utility, Utility):
        raise ElicitError(f"register_utility takes a PairUtility or SampleUtility object, got "
                          f"{type(utility).__name__}")
    name = utility.name
    if not isinstance(name, str) or not name.strip():
        raise ElicitError(f"a utility needs a non-empty name, got {name!r}")
    if name in MODES:
        raise ElicitError(f"{name!r} is a utility mode (utility='{name}'), not a free name; "
                          "register the utility under another name")
    if name in _utilities:
        raise ElicitError(f"a utility named {name!r} is already registered; choose another "
                          "name")
    _utilities[name] = utility
    return utility


def unregister_utility(name: str) -> None:
    """Remove the utility called ``name`` (a utility registered for a test, say)."""
    if name not in _utilities:
        raise ElicitError(f"no utility named {name!r} is registered")
    del _utilities[name]


def get_utility(name: str) -> Utility:
    """The registered utility called ``name``.

    Raises
    ------
    ElicitError
        One line listing the registered names, if ``name`` is not one of them.
    """
    if isinstance(name, str) and name in _utilities:
        return _utilities[name]
    raise ElicitError(f"unknown utility {name!r}; registered: {', '.join(_utilities)}")


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


# -- the user-facing options -----------------------------------------------------------------
@dataclass(frozen=True)
class UtilityArgs:
    """The utility settings of an elicitation, checked in one place (:meth:`validate`).

    The Elicitor, the sweeps and the command line build one; the check runs before any Stan
    program is built (a build takes minutes).

    Parameters
    ----------
    utility
        ``"fast"`` or ``"exact"`` (the mode of the ``target``), or the name of a registered
        :class:`PairUtility`.
    target
        ``"predictive"`` or ``"params"``; with a registered name it must be the default
        ``"predictive"`` or that utility's own target.
    refine
        How many candidates the fast mode re-scores exactly (>= 0).
    stan_file
        The custom Stan program in use, if any.
    """

    utility: str = "fast"
    target: str = "predictive"
    refine: int = 10
    stan_file: str | Path | None = None

    def validate(self) -> PairUtility:
        """Check the settings and return the utility they name.

        Raises
        ------
        ElicitError
            One line for an unknown target or utility, a utility that does not score pairs,
            a target that contradicts a named utility's, a negative ``refine``, or a utility
            that cannot serve a custom Stan file.
        """
        utility, target = self.utility, self.target
        if target not in TARGETS:
            raise ElicitError(f"utility target must be one of {', '.join(TARGETS)}, "
                              f"got {target!r}")
        if isinstance(utility, str) and utility in MODES:
            chosen = _utilities[OPTIONS[utility, target]]
        elif isinstance(utility, str) and utility in _utilities:
            chosen = _utilities[utility]
            if target not in ("predictive", chosen.target):
                raise ElicitError(f"utility {utility!r} is about {chosen.target!r}, not "
                                  f"{target!r}; leave the target out or use utility='fast' "
                                  "or 'exact'")
        else:
            others = [n for n, u in _utilities.items() if isinstance(u, PairUtility)]
            raise ElicitError(f"utility must be 'fast' or 'exact' (or a registered utility: "
                              f"{', '.join(others)}), got {utility!r}")
        if not isinstance(chosen, PairUtility):
            raise ElicitError(f"utility {chosen.name!r} scores {chosen.candidates}, not "
                              "questions about feature pairs; use 'fast' or 'exact'")
        refine = self.refine
        if (isinstance(refine, bool) or not isinstance(refine, (int, np.integer))
                or refine < 0):
            raise ElicitError(f"refine must be >= 0, got {refine!r}")
        if self.stan_file is not None and chosen.custom_stan_refusal is not None:
            raise ElicitError(chosen.custom_stan_refusal)
        return chosen
