"""The marginals at the last few points, kept for everyone who asks for one again.

:class:`MarginalCache` and its process-wide instance :data:`marginal_cache`, which
:meth:`Marginal.from_data <elicit.model.marginal.Marginal.from_data>` and
:meth:`~elicit.model.marginal.Marginal.of_fit` consult first; :func:`marginal_bytes`, the
memory of one marginal, bounds what it keeps. The cache reads of a marginal only what
:class:`Cached` names (so that it needs no import of the marginal's module, which imports it).
"""

from __future__ import annotations

from typing import Protocol, cast

import numpy as np

from elicit.internal.cache import LRUCache, arrays_key
from elicit.model.covariance import Scales
from elicit.model.form import data_structure
from elicit.model.spec import ModelData
from elicit.model.tall import is_tall
from elicit.model.theta import data_scales


class Cached(Protocol):
    """What :class:`MarginalCache` reads of a marginal (:class:`~elicit.model.marginal.Marginal`):
    the arrays and parameters it was computed from."""

    X_data: np.ndarray
    y: np.ndarray
    U: np.ndarray
    coupled: np.ndarray | None
    scales: Scales | None
    h: np.ndarray | None
    s: np.ndarray | None
    gamma: np.ndarray
    tau2: float
    zeta: float | None
    delta: float | None


class MarginalCache:
    """The marginals at the last few points, shared by everyone who asks for one.

    A query round computes the marginal at the current MAP (for the Hessian and the screen),
    every warm refit of the round starts there, the refits' last points are where the
    predictive of each hypothetical answer is read, the refit after the expert's answer is
    one of them, and the posterior after it (the test MSE, the next round) is the marginal
    at that point again. :meth:`~elicit.model.marginal.Marginal.from_data` looks each point
    up here first, so each of those is computed once; the derived quantities a marginal
    caches (G, R, the Hessian's directions) come along.

    Entries are keyed by the data arrays (X, y, U: their identity and a checksum,
    :func:`~elicit.internal.cache.arrays_key`, so an array modified in place never serves a
    stale value), the hyperparameters of the y-likelihood, the kernel's mask, the
    relevance classes and the exact bytes of (gamma, tau2[, zeta]): two points that differ
    in the last bit are two entries. A marginal holds a few p x p arrays, so the cache holds
    at most ``max_bytes`` of them by the size :func:`marginal_bytes` estimates (none above
    it: at p = 10,000 one kernel alone is 800 MB, but a marginal on the structured path holds
    no p x p array).
    """

    def __init__(self, size: int = 8, max_bytes: float = 256e6) -> None:
        self.size, self.max_bytes = int(size), float(max_bytes)
        self._cache = LRUCache(self.size)

    @staticmethod
    def key(data: ModelData, gamma: np.ndarray, tau2: float, zeta: float | None,
            delta: float | None = None) -> tuple:
        """The key of ``data``'s marginal at (gamma, tau2[, zeta][, delta])."""
        h = data.hyper
        mask = data.kernel_mask
        key: tuple = (arrays_key(data.X, data.y, data.U), float(h.a_sigma),
                      float(h.b_sigma), float(tau2), np.asarray(gamma, dtype=float).tobytes(),
                      b"" if mask is None else np.packbits(mask).tobytes())
        if data.model.relevance:
            # a relevance model's points have a zeta; relevance is an array after
            # ModelData.__post_init__
            key += (h.model, float(cast(float, zeta)),
                    cast(np.ndarray, data.relevance).tobytes())
        if data.model.direction:
            # the signs read the relevance classes too (a relevant feature's neighbours)
            key += (h.model, float(cast(float, delta)), data.direction_signs.tobytes())
        return key

    def entries_for(self, data: ModelData) -> int:
        """How many marginals of ``data``'s size the cache keeps."""
        st = data_structure(data)
        one = marginal_bytes(data.n, data.p, data.d, None if st is None else len(st.cols))
        return min(self.size, int(self.max_bytes // one))

    def remember(self, data: ModelData, mg: Cached, key: tuple | None = None) -> None:
        """Store ``mg``, a marginal of ``data`` (of its X, y, U and kernel mask, and with the
        relevance model, of its classes' scales at ``mg.zeta``); ``key``: its :meth:`key`, if
        the caller has it."""
        keep = self.entries_for(data)
        if keep == 0:
            return
        if mg.X_data is not data.X or mg.y is not data.y or mg.U is not data.U:
            return
        mask, mine = data.kernel_mask, mg.coupled
        if not (mask is None and mine is None
                or mask is not None and mine is not None and np.array_equal(mine, mask)):
            return  # a marginal of another kernel
        if data.model.relevance:
            # mg.zeta is set exactly when mg has scales (from_data), and data_scales of a
            # relevance model at a zeta returns scales
            if mg.zeta is None or not np.array_equal(cast(np.ndarray, mg.h),
                                                     cast(Scales, data_scales(data, mg.zeta)).h):
                return  # a marginal of other scales
        elif mg.scales is not None:
            return
        if data.model.direction:
            if mg.s is None or not np.array_equal(mg.s, data.direction_signs):
                return  # a marginal of another prior mean
        elif mg.s is not None:
            return
        if key is None:
            key = self.key(data, mg.gamma, mg.tau2, mg.zeta, mg.delta)
        self._cache.put(key, mg, pin=(data.X, data.y, data.U), limit=keep)

    def lookup(self, data: ModelData, gamma: np.ndarray, tau2: float,
               zeta: float | None = None, delta: float | None = None,
               key: tuple | None = None) -> Cached | None:
        """The marginal of ``data`` at (gamma, tau2[, zeta][, delta]) if it is stored, else
        None (``key``: its :meth:`key`, if the caller has it)."""
        if self.entries_for(data) == 0:
            return None
        if key is None:
            key = self.key(data, gamma, tau2, zeta, delta)
        return self._cache.get(key, refresh=True)

    def clear(self) -> None:
        self._cache.clear()


def marginal_bytes(n: int, p: int, d: int, support: int | None = None) -> float:
    """Rough memory of a :class:`~elicit.model.marginal.Marginal` with its derived
    quantities: K, X K and R (p x p and n x p each), the n x n factors, and the Hessian's
    directions (d x n x n, twice).
    On the structured path (``support``: the number of columns the sparse part of X touches)
    the p x p arrays are the blocks of K and R on those columns instead; in the p x p form
    (more rows than features, off the structured path) the n x n factors are p x p."""
    square = 2 * p * p if support is None else 2 * support * support
    m = p if support is None and is_tall(n, p) else n
    return 8.0 * (square + 2 * n * p + 6 * m * m + 2 * (d + 3) * m * m)


#: the process-wide cache of marginals (see :class:`MarginalCache`)
marginal_cache = MarginalCache()
