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
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import numpy as np


class Covariance(Protocol):
    """Which features the kernel couples."""

    #: short name (shown by ``elicit models``)
    name: str
    #: whether K depends on the data's coupled set J (``ModelData.coupled``); such models set
    #: J up from the candidate pairs and take the extra Stan data ``coupled``
    uses_coupled_set: bool

    def mask(self, coupled: np.ndarray | None) -> np.ndarray | None:
        """The coupled set the kernel applies, a boolean mask of the p features, given the
        data's ``coupled`` (``None``: K is the full kernel)."""
        ...


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


#: the paper's covariance
FULL = FullKernel()
#: coupling among the features the expert can judge only
KNOWN_COUPLING = KnownCoupling()
