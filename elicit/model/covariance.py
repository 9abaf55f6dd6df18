"""The prior covariance K of beta: which features the kernel couples.

Every covariance here is the paper's Gaussian kernel over the meta-features
(:func:`elicit.model.kernel.kernel`) restricted to a *coupled set* J of features::

    K_ij = k_ij   if i and j are both in J,     K_ij = delta_ij   otherwise,

i.e. ``K = blockdiag(K_gamma[J, J], I)`` up to a permutation (a principal block of a kernel
matrix plus an identity block, so K stays positive semi-definite). A covariance object says
which J applies to a fit (:meth:`Covariance.mask`): the paper's :data:`FULL` couples every
feature, :data:`KNOWN_COUPLING` only the features of the data's coupled set (by default those
that occur in the candidate pairs, :func:`elicit.prior.setup.coupled_features`). The kernel,
its batched form and every derivative read that mask alone, so a new coupling rule is one new
object here. (A kernel of another functional form would also need its derivatives in
:class:`~elicit.model.density.Marginal`.)

A covariance may also scale each feature (:meth:`Covariance.scales`): the prior covariance of
beta is then ``sigma2 tau2 diag(h) K diag(h)``, so K stays the prior *correlation*.
:data:`RELEVANCE` takes the scales from the expert's relevance answers (the data's
``relevance`` classes) and one parameter, zeta (:class:`RelevanceScales`). Every formula of the
paper's marginal holds with X replaced by ``X diag(h)``; only the derivative in zeta is new.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import numpy as np
from scipy.special import expit


class Covariance(Protocol):
    """Which features the kernel couples."""

    # Read-only properties, not plain attributes: the implementations are frozen dataclasses,
    # whose fields a Protocol must not require to be settable.
    @property
    def name(self) -> str:
        """Short name (shown by ``elicit models``)."""
        ...

    @property
    def uses_coupled_set(self) -> bool:
        """Whether K depends on the data's coupled set J (``ModelData.coupled``); such models
        set J up from the candidate pairs and take the extra Stan data ``coupled``."""
        ...

    def mask(self, coupled: np.ndarray | None) -> np.ndarray | None:
        """The coupled set the kernel applies, a boolean mask of the p features, given the
        data's ``coupled`` (``None``: K is the full kernel)."""
        ...

    # A covariance that scales the features also has ``has_scales = True`` and a method
    # ``scales(classes, zeta) -> Scales`` (see :class:`RelevanceScales` and
    # :class:`ScaledCovariance`); the model then has the parameter block zeta. Covariances
    # without them (the default) leave h = 1.


@dataclass(frozen=True)
class FullKernel:
    """The paper's covariance: one gamma couples every pair of features."""

    name: str = "full kernel"
    uses_coupled_set: bool = False

    def mask(self, coupled: np.ndarray | None) -> None:
        return None


@dataclass(frozen=True)
class KnownCoupling:
    """Only the features of the coupled set J are coupled: ``K = blockdiag(K_gamma on J, I)``."""

    name: str = "known coupling"
    uses_coupled_set: bool = True

    def mask(self, coupled: np.ndarray | None) -> np.ndarray | None:
        # None also when J holds every feature, so that a known-coupling fit with all pairs
        # as candidates runs exactly the paper's arithmetic.
        if coupled is None or coupled.all():
            return None
        return coupled


# -- relevance: per-feature scales ---------------------------------------------------------------

#: relevance classes of a feature (``ModelData.relevance``): the expert called it relevant,
#: irrelevant, or has not judged it (not asked, or "don't know")
RELEVANT, IRRELEVANT, UNASKED = 1, 0, -1

#: lambda of a feature the expert called irrelevant (its prior sd is 0.1 of a relevant one's).
#: Small enough that the posterior mean of such a feature's weight is near zero, not zero, so
#: that a wrong "irrelevant" costs some accuracy instead of forcing the weight to 0. Measured
#: (the lead's prototype, Amazon, seed 3, runs 0-5): 0.01 with a learned share of the unasked
#: features gives 1.78 after 100 answers; the yardstick of perfect relevance uses 1e-4 and is
#: within 0.01 of 0.01 there.
IRRELEVANT_SCALE = 0.01


@dataclass(frozen=True)
class Scales:
    """Per-feature scales h = sqrt(lambda) at one zeta, and how they move with zeta.

    Only the features in ``unasked`` depend on zeta, all through the same lambda_u(zeta), so
    the derivatives are two numbers.

    Attributes
    ----------
    h
        The scales (p,).
    unasked
        Boolean mask (p,) of the features whose scale depends on zeta.
    dlog_h, d2h_over_h
        ``d log h_u / d zeta`` and ``(d^2 h_u / d zeta^2) / h_u`` of an unasked feature.
    """

    h: np.ndarray
    unasked: np.ndarray
    dlog_h: float
    d2h_over_h: float


def unasked_lambda(zeta, eps: float = IRRELEVANT_SCALE):
    """lambda_u(zeta) = s + (1 - s) eps, s = logistic(zeta) (elementwise), and its first two
    derivatives in zeta."""
    s = expit(zeta)
    ds = s * (1.0 - s)
    return s + (1.0 - s) * eps, ds * (1.0 - eps), ds * (1.0 - 2.0 * s) * (1.0 - eps)


@dataclass(frozen=True)
class RelevanceScales:
    """Relevance: the prior variance of feature j is ``tau2 lambda_j`` with

    * ``lambda_j = 1`` if the expert called j relevant,
    * ``lambda_j = eps`` (:data:`IRRELEVANT_SCALE`) if irrelevant,
    * ``lambda_j = lambda_u(zeta) = s(zeta) + (1 - s(zeta)) eps`` otherwise,

    ``s`` the logistic function. zeta is the logit of the share of relevant features among the
    unjudged ones, and lambda_u the variance of a feature that is relevant (scale 1) with
    probability s(zeta) and irrelevant (scale eps) otherwise: a spike-and-slab collapsed to its
    variance. K couples every feature (the paper's kernel).
    """

    name: str = "relevance scales"
    uses_coupled_set: bool = False
    has_scales: bool = True
    irrelevant_scale: float = IRRELEVANT_SCALE

    def mask(self, coupled: np.ndarray | None) -> None:
        return None

    def lambdas(self, classes: np.ndarray, zeta) -> np.ndarray:
        """lambda of every feature (p,) at one zeta, or (C, p) for a stack of zetas (C,)."""
        eps = self.irrelevant_scale
        lam_u = unasked_lambda(zeta, eps)[0]
        fixed = np.where(classes == RELEVANT, 1.0, eps)
        unasked = classes == UNASKED
        if np.ndim(zeta) == 0:
            return np.where(unasked, lam_u, fixed)
        return np.where(unasked[None, :], np.asarray(lam_u)[:, None], fixed[None, :])

    def scales(self, classes: np.ndarray, zeta: float) -> Scales:
        """The scales h and their derivatives in zeta (:class:`Scales`) at one zeta."""
        lam_u, dl, d2l = unasked_lambda(float(zeta), self.irrelevant_scale)
        # h = sqrt(lambda): h'/h = lambda'/(2 lambda), h''/h = lambda''/(2 lambda) - (h'/h)^2
        dlog_h = 0.5 * dl / lam_u
        return Scales(np.sqrt(self.lambdas(classes, float(zeta))), classes == UNASKED,
                      float(dlog_h), float(0.5 * d2l / lam_u - dlog_h**2))


class ScaledCovariance(Covariance, Protocol):
    """What the code reads of a covariance that scales the features (:func:`has_scales`):
    the members :class:`RelevanceScales` provides. Type-level only: callers ``cast`` a
    covariance to it after checking :func:`has_scales` (``ModelVariant.relevance``)."""

    @property
    def has_scales(self) -> bool: ...

    @property
    def irrelevant_scale(self) -> float: ...

    def lambdas(self, classes: np.ndarray, zeta) -> np.ndarray: ...

    def scales(self, classes: np.ndarray, zeta: float) -> Scales: ...


#: the paper's covariance
FULL = FullKernel()
#: coupling among the features the expert can judge only
KNOWN_COUPLING = KnownCoupling()
#: the relevance model's covariance
RELEVANCE = RelevanceScales()


def has_scales(covariance: Covariance) -> bool:
    """Whether ``covariance`` scales the features (and the model has the block zeta)."""
    return bool(getattr(covariance, "has_scales", False))
