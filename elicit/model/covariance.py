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
:class:`~elicit.model.marginal.Marginal`.)

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

from elicit.internal.cache import LRUCache, arrays_key


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


#: How far a relevance answer reaches (the relevance model's propagation, see
#: :class:`RelevanceScales`): the logit of an unjudged feature's share moves by ``SPREAD``
#: times the kernel-weighted mean answer of its neighbours, the kernel's bandwidth
#: ``BANDWIDTH`` times the median squared meta-feature distance, shrunk toward 0 as if
#: ``SHRINK`` neighbours at distance 0 had answered "don't know". Chosen by how well the
#: weighted answers of 40 random keywords rank the other keywords' relevance to the LASSO
#: expert (Amazon and Yelp, PPMI-10 meta-features, seed 3, runs 0-5): AUC 0.63 and 0.58 at
#: 0.1, 0.61 / 0.57 at 0.25, 0.57 / 0.55 at 0.5 (with every other keyword answered 0.76 and
#: 0.64 at 0.1); a linear logistic classifier over the meta-features reached only 0.57.
SPREAD = 2.0
BANDWIDTH = 0.1
SHRINK = 1.0


@dataclass(frozen=True)
class Scales:
    """Per-feature scales h = sqrt(lambda) at one zeta, and how they move with zeta.

    Only the features in ``unasked`` depend on zeta, each through its own logit
    ``zeta + spread s_j`` (:class:`RelevanceScales`), so the derivatives are per feature.

    Attributes
    ----------
    h
        The scales (p,).
    unasked
        Boolean mask (p,) of the features whose scale depends on zeta.
    dlog_h, d2h_over_h
        ``d log h_j / d zeta`` and ``(d^2 h_j / d zeta^2) / h_j`` of each feature (p,; 0 for
        the judged ones).
    """

    h: np.ndarray
    unasked: np.ndarray
    dlog_h: np.ndarray
    d2h_over_h: np.ndarray


def unasked_lambda(logit, eps: float = IRRELEVANT_SCALE):
    """lambda_u = s + (1 - s) eps, s = logistic(logit) (elementwise), and its first two
    derivatives in the logit."""
    s = expit(logit)
    ds = s * (1.0 - s)
    return s + (1.0 - s) * eps, ds * (1.0 - eps), ds * (1.0 - 2.0 * s) * (1.0 - eps)


#: the neighbour weights of a few meta-feature matrices (keyed by identity and content)
_NEIGHBOURS = LRUCache(4)


@dataclass(frozen=True)
class RelevanceScales:
    """Relevance: the prior variance of feature j is ``tau2 lambda_j`` with

    * ``lambda_j = 1`` if the expert called j relevant,
    * ``lambda_j = eps`` (:data:`IRRELEVANT_SCALE`) if irrelevant,
    * ``lambda_j = s_j + (1 - s_j) eps`` otherwise, with ``s_j = logistic(zeta + spread a_j)``
      the probability that j is relevant: zeta the logit of the share of relevant features
      among the unjudged ones, and ``a_j`` (:meth:`signal`) the kernel-weighted mean of the
      answers about j's neighbours in meta-feature space (+1 relevant, -1 irrelevant),
      so that an answer about one keyword moves its neighbours. lambda_j is the variance of
      a feature that is relevant (scale 1) with probability s_j and irrelevant (scale eps)
      otherwise: a spike-and-slab collapsed to its variance. K couples every feature (the
      paper's kernel).

    ``spread`` 0 gives every unjudged feature one share (the scalar relevance model of
    earlier versions).
    """

    name: str = "relevance scales"
    uses_coupled_set: bool = False
    has_scales: bool = True
    irrelevant_scale: float = IRRELEVANT_SCALE
    spread: float = SPREAD
    bandwidth: float = BANDWIDTH
    shrink: float = SHRINK

    def mask(self, coupled: np.ndarray | None) -> None:
        return None

    def neighbours(self, U: np.ndarray) -> np.ndarray:
        """The weights W (p x p, zero diagonal) of the neighbours in meta-feature space:
        ``exp(-|u_j - u_k|^2 / (2 bandwidth D))``, D the median squared distance."""
        key = (arrays_key(U), self.bandwidth)
        W = _NEIGHBOURS.get(key)
        if W is None:
            sq = np.einsum("ij,ij->i", U, U)
            D = np.maximum(sq[:, None] + sq[None, :] - 2.0 * (U @ U.T), 0.0)
            off = D[np.triu_indices(len(U), 1)]
            med = float(np.median(off)) if off.size else 0.0
            W = np.exp(-0.5 * D / (self.bandwidth * med)) if med > 0 else np.zeros_like(D)
            np.fill_diagonal(W, 0.0)
            W.setflags(write=False)
            _NEIGHBOURS.put(key, W, pin=U)
        return W

    def signal(self, classes: np.ndarray, U: np.ndarray) -> np.ndarray:
        """``a_j``: the weighted mean answer about j's neighbours, shrunk toward 0 (p,):
        ``sum_k W_jk c_k / (shrink + sum_k W_jk)`` over the judged features k (c_k = +1
        relevant, -1 irrelevant). All zeros with no answer."""
        judged = classes != UNASKED
        if self.spread == 0.0 or not judged.any():
            return np.zeros(len(classes))
        W = self.neighbours(U)[:, judged]
        c = np.where(classes[judged] == RELEVANT, 1.0, -1.0)
        return (W @ c) / (self.shrink + W.sum(axis=1))

    def logits(self, classes: np.ndarray, zeta, signal: np.ndarray) -> np.ndarray:
        """The logit of each feature's share (p,), or (C, p) for a stack of zetas (C,)."""
        if np.ndim(zeta) == 0:
            return float(zeta) + self.spread * signal
        return np.asarray(zeta)[:, None] + self.spread * signal[None, :]

    def lambdas(self, classes: np.ndarray, zeta, signal: np.ndarray) -> np.ndarray:
        """lambda of every feature (p,) at one zeta, or (C, p) for a stack of zetas (C,)."""
        eps = self.irrelevant_scale
        lam_u = unasked_lambda(self.logits(classes, zeta, signal), eps)[0]
        fixed = np.where(classes == RELEVANT, 1.0, eps)
        return np.where(classes == UNASKED, lam_u, fixed)

    def scales(self, classes: np.ndarray, zeta: float, signal: np.ndarray) -> Scales:
        """The scales h and their derivatives in zeta (:class:`Scales`) at one zeta."""
        lam, dl, d2l = unasked_lambda(self.logits(classes, float(zeta), signal),
                                      self.irrelevant_scale)
        unasked = classes == UNASKED
        # h = sqrt(lambda): h'/h = lambda'/(2 lambda), h''/h = lambda''/(2 lambda) - (h'/h)^2
        dlog_h = np.where(unasked, 0.5 * dl / lam, 0.0)
        d2h = np.where(unasked, 0.5 * d2l / lam - dlog_h**2, 0.0)
        return Scales(np.sqrt(self.lambdas(classes, float(zeta), signal)), unasked, dlog_h,
                      d2h)


class ScaledCovariance(Covariance, Protocol):
    """What the code reads of a covariance that scales the features (:func:`has_scales`):
    the members :class:`RelevanceScales` provides. Type-level only: callers ``cast`` a
    covariance to it after checking :func:`has_scales` (``ModelVariant.relevance``)."""

    @property
    def has_scales(self) -> bool: ...

    @property
    def irrelevant_scale(self) -> float: ...

    @property
    def spread(self) -> float: ...

    @property
    def shrink(self) -> float: ...

    def neighbours(self, U: np.ndarray) -> np.ndarray: ...

    def signal(self, classes: np.ndarray, U: np.ndarray) -> np.ndarray: ...

    def logits(self, classes: np.ndarray, zeta, signal: np.ndarray) -> np.ndarray: ...

    def lambdas(self, classes: np.ndarray, zeta, signal: np.ndarray) -> np.ndarray: ...

    def scales(self, classes: np.ndarray, zeta: float, signal: np.ndarray) -> Scales: ...


#: the paper's covariance
FULL = FullKernel()
#: coupling among the features the expert can judge only
KNOWN_COUPLING = KnownCoupling()
#: the relevance model's covariance
RELEVANCE = RelevanceScales()


def has_scales(covariance: Covariance) -> bool:
    """Whether ``covariance`` scales the features (and the model has the block zeta)."""
    return bool(getattr(covariance, "has_scales", False))
