"""The prior covariance K of beta: which features the kernel couples, and how it scales them.

Every covariance here is the paper's Gaussian kernel restricted to a *coupled set* J
(:meth:`Covariance.mask`): ``K_ij = k_ij`` if i and j are both in J, ``delta_ij`` otherwise,
so K stays positive semi-definite. :data:`FULL` couples every feature, :data:`KNOWN_COUPLING`
the data's coupled set. A covariance may also scale each feature: the prior covariance of
beta is then ``sigma2 tau2 diag(h) K diag(h)`` (:data:`RELEVANCE`: h from the relevance
answers and one parameter zeta), and the marginal holds with ``X diag(h)`` in place of X.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import numpy as np
from scipy.special import expit

from elicit.internal.cache import LRUCache, arrays_key


class Covariance(Protocol):
    """Which features the kernel couples; one that also scales them has ``has_scales = True`` and
    the members of :class:`RelevanceScales`."""

    # properties: a Protocol must not require a frozen dataclass's fields to be settable
    @property
    def name(self) -> str:
        """Short name (shown by ``elicit models``)."""

    @property
    def uses_coupled_set(self) -> bool:
        """Whether K depends on the data's coupled set J (``ModelData.coupled``)."""

    def mask(self, coupled: np.ndarray | None) -> np.ndarray | None:
        """The coupled set the kernel applies given the data's ``coupled`` (``None``: all)."""


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
        # None also when J holds every feature: exactly the paper's arithmetic
        if coupled is None or coupled.all():
            return None
        return coupled


#: relevance classes of a feature (``ModelData.relevance``): the expert called it relevant,
#: irrelevant, or has not judged it (not asked, or "don't know")
RELEVANT, IRRELEVANT, UNASKED = 1, 0, -1

#: lambda of a feature the expert called irrelevant (prior sd 0.1 of a relevant one's): its
#: weight's posterior mean is near zero, not zero, so a wrong "irrelevant" costs some accuracy
#: instead of forcing the weight to 0; the yardstick's irrelevant keywords take it too. From
#: 0.001 to 0.3 on three corpora (docs/realdata.md, "How far 40 answers can go"), the MSE after
#: 40 answers moves by less than its standard error (0.02) up to 0.03, and on Amazon rises above.
IRRELEVANT_SCALE = 0.01


#: How far a relevance answer reaches (:class:`RelevanceScales`): an unjudged feature's logit
#: moves by ``SPREAD`` times its neighbours' kernel-weighted mean answer, the bandwidth
#: ``BANDWIDTH`` times the median squared meta-feature distance, shrunk toward 0 as if
#: ``SHRINK`` neighbours at distance 0 had answered "don't know". Chosen by how well 40
#: keywords' answers rank the others' relevance to the LASSO expert (Amazon and Yelp, PPMI-10:
#: AUC 0.63 / 0.58 at 0.1, 0.61 / 0.57 at 0.25, 0.57 / 0.55 at 0.5).
SPREAD = 2.0
BANDWIDTH = 0.1
SHRINK = 1.0


@dataclass(frozen=True)
class Scales:
    """Per-feature scales ``h = sqrt(lambda)`` (p,) at one zeta, with
    ``dlog_h = d log h_j / d zeta`` and ``d2h_over_h = (d^2 h_j / d zeta^2) / h_j`` (0 outside
    ``unasked``)."""

    h: np.ndarray
    unasked: np.ndarray
    dlog_h: np.ndarray
    d2h_over_h: np.ndarray


def unasked_lambda(logit, eps: float = IRRELEVANT_SCALE, derivatives: bool = True):
    """lambda_u = s + (1 - s) eps, s = logistic(logit) (elementwise), and (if ``derivatives``)
    its first two derivatives in the logit."""
    s = expit(logit)
    if not derivatives:
        return s + (1.0 - s) * eps
    ds = s * (1.0 - s)
    return s + (1.0 - s) * eps, ds * (1.0 - eps), ds * (1.0 - 2.0 * s) * (1.0 - eps)


#: the neighbour weights of a few meta-feature matrices (keyed by identity and content)
_NEIGHBOURS = LRUCache(4)


@dataclass(frozen=True)
class RelevanceScales(FullKernel):
    """Relevance: the prior variance of feature j is ``tau2 lambda_j``, ``lambda_j`` 1 if the
    expert called j relevant, eps (:data:`IRRELEVANT_SCALE`) if irrelevant, else
    ``s_j + (1 - s_j) eps`` with ``s_j = logistic(zeta + spread a_j)``: zeta the logit of the
    share of relevant features among the unjudged ones, ``a_j`` (:meth:`signal`) the answers
    about j's neighbours in meta-feature space. lambda_j is a spike-and-slab collapsed to its
    variance; K couples every feature."""

    name: str = "relevance scales"
    has_scales: bool = True
    irrelevant_scale: float = IRRELEVANT_SCALE
    spread: float = SPREAD
    bandwidth: float = BANDWIDTH
    shrink: float = SHRINK

    def neighbours(self, U: np.ndarray) -> np.ndarray:
        """The neighbour weights W (p x p, zero diagonal):
        ``exp(-|u_j - u_k|^2 / (2 bandwidth D))``, D the median squared distance."""
        key = (arrays_key(U), self.bandwidth)
        W = _NEIGHBOURS.get(key)
        if W is None:
            sq = np.einsum("ij,ij->i", U, U)
            D = np.maximum(sq[:, None] + sq[None, :] - 2.0 * (U @ U.T), 0.0)
            off = D[np.triu_indices(len(U), 1)]
            # most pairs may coincide (one-hot meta-features): then the nonzero ones' median
            med = float(np.median(off) or np.median(off[off > 0])) if (off > 0).any() else 0.0
            W = np.exp(-0.5 * D / (self.bandwidth * med)) if med > 0 else np.zeros_like(D)
            np.fill_diagonal(W, 0.0)
            W.setflags(write=False)
            _NEIGHBOURS.put(key, W, pin=U)
        return W

    def signal(self, classes: np.ndarray, U: np.ndarray) -> np.ndarray:
        """``a_j = sum_k W_jk c_k / (shrink + sum_k W_jk)`` over the judged features k (c_k +1
        relevant, -1 irrelevant); zeros with no answer."""
        judged = classes != UNASKED
        if self.spread == 0.0 or not judged.any():
            return np.zeros(len(classes))
        W = self.neighbours(U)[:, judged]
        c = np.where(classes[judged] == RELEVANT, 1.0, -1.0)
        return (W @ c) / (self.shrink + W.sum(axis=1))

    def logits(self, zeta, signal: np.ndarray) -> np.ndarray:
        """The logit of each feature's share (p,), or (C, p) for a stack of zetas (C,)."""
        if np.ndim(zeta) == 0:
            return float(zeta) + self.spread * signal
        return np.asarray(zeta)[:, None] + self.spread * signal[None, :]

    def lambdas(self, classes: np.ndarray, zeta, signal: np.ndarray,
                lam_u: np.ndarray | None = None) -> np.ndarray:
        """lambda of every feature (p,) at one zeta, or (C, p) for a stack of zetas (C,);
        ``lam_u``: the unjudged features' (:func:`unasked_lambda`) where already computed."""
        eps = self.irrelevant_scale
        lam_u = unasked_lambda(self.logits(zeta, signal), eps, False) if lam_u is None else lam_u
        fixed = np.where(classes == RELEVANT, 1.0, eps)
        return np.where(classes == UNASKED, lam_u, fixed)

    def scales(self, classes: np.ndarray, zeta: float, signal: np.ndarray) -> Scales:
        """The scales h and their derivatives in zeta (:class:`Scales`) at one zeta."""
        lam, dl, d2l = unasked_lambda(self.logits(float(zeta), signal), self.irrelevant_scale)
        unasked = classes == UNASKED
        # h = sqrt(lambda): h'/h = lambda'/(2 lambda), h''/h = lambda''/(2 lambda) - (h'/h)^2
        dlog_h = np.where(unasked, 0.5 * dl / lam, 0.0)
        d2h = np.where(unasked, 0.5 * d2l / lam - dlog_h**2, 0.0)
        return Scales(np.sqrt(self.lambdas(classes, zeta, signal, lam)), unasked, dlog_h, d2h)


FULL = FullKernel()
KNOWN_COUPLING = KnownCoupling()
RELEVANCE = RelevanceScales()


def has_scales(covariance: Covariance) -> bool:
    """Whether ``covariance`` scales the features (and the model has the block zeta)."""
    return bool(getattr(covariance, "has_scales", False))
