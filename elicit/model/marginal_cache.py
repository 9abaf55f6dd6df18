"""The marginals at the last few points (:data:`marginal_cache`), which
:class:`~elicit.model.marginal.Marginal` consults first.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

import numpy as np

from elicit.internal.cache import LRUCache, arrays_key
from elicit.model.covariance import Scales
from elicit.model.form import data_structure
from elicit.model.spec import ModelData
from elicit.model.tall import is_tall
from elicit.model.theta import data_scales

if TYPE_CHECKING:  # the marginal's module imports this one
    from elicit.model.marginal import Marginal


class MarginalCache:
    """The marginals at the last few points, shared by everyone who asks for one: a query round's
    refits start at the current MAP, and the refit after the answer and the posterior after it
    are one of their points again, each computed once.

    Entries are keyed by the data arrays (:func:`~elicit.internal.cache.arrays_key`: an array
    modified in place never serves a stale value), the hyperparameters, the kernel's mask, the
    answers the model reads and the exact bytes of the point; at most ``max_bytes`` of them are
    kept, by :func:`marginal_bytes` (at p = 10,000 one kernel is 800 MB)."""

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
            # a relevance model's points have a zeta; relevance is an array
            key += (h.model, float(cast(float, zeta)), cast(np.ndarray, data.relevance).tobytes())
        if data.model.direction:
            # the signs read the relevance classes too (a relevant feature's neighbours)
            key += (h.model, float(cast(float, delta)), data.direction_signs.tobytes())
        return key

    def entries_for(self, data: ModelData) -> int:
        """How many marginals of ``data``'s size the cache keeps."""
        st = data_structure(data)
        one = marginal_bytes(data.n, data.p, data.d, None if st is None else len(st.cols))
        return min(self.size, int(self.max_bytes // one))

    def remember(self, data: ModelData, mg: Marginal, key: tuple | None = None,
                 scaled: bool = False) -> None:
        """Store ``mg`` if ``data``'s marginal (``scaled``: made with its scales); ``key``: mg's."""
        keep = self.entries_for(data)
        if keep == 0 or mg.X_data is not data.X or mg.y is not data.y or mg.U is not data.U:
            return
        mask, mine = data.kernel_mask, mg.coupled
        if not (mask is None and mine is None
                or mask is not None and mine is not None and np.array_equal(mine, mask)):
            return  # a marginal of another kernel
        if data.model.relevance:
            # mg.zeta is set exactly when mg has scales (from_data)
            if mg.zeta is None or not (scaled or np.array_equal(
                    cast(np.ndarray, mg.h), cast(Scales, data_scales(data, mg.zeta)).h)):
                return  # a marginal of other scales
        elif mg.scales is not None:
            return
        if data.model.direction:
            if mg.s is None or not np.array_equal(mg.s, data.direction_signs):
                return  # a marginal of another prior mean
        elif mg.s is not None:
            return
        key = self.key(data, mg.gamma, mg.tau2, mg.zeta, mg.delta) if key is None else key
        self._cache.put(key, mg, pin=(data.X, data.y, data.U), limit=keep)

    def lookup(self, data: ModelData, gamma: np.ndarray, tau2: float,
               zeta: float | None = None, delta: float | None = None,
               key: tuple | None = None) -> Marginal | None:
        """The marginal of ``data`` at (gamma, tau2[, zeta][, delta]) if stored, else None."""
        if self.entries_for(data) == 0:
            return None
        key = self.key(data, gamma, tau2, zeta, delta) if key is None else key
        return self._cache.get(key, refresh=True)

    def clear(self) -> None:
        self._cache.clear()


def marginal_bytes(n: int, p: int, d: int, support: int | None = None) -> float:
    """Rough memory of a marginal: K, X K and R (on the structured path their blocks on the
    ``support`` columns), the n x n factors and the Hessian's directions (p x p in the p x p
    form)."""
    square = 2 * p * p if support is None else 2 * support * support
    m = p if support is None and is_tall(n, p) else n
    return 8.0 * (square + 2 * n * p + 6 * m * m + 2 * (d + 3) * m * m)


#: the process-wide cache of marginals (see :class:`MarginalCache`)
marginal_cache = MarginalCache()
