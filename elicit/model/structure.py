"""Sparse-plus-offset inputs: ``X = S + 1 b'`` with S sparse, found exactly in the data.

Bag-of-words inputs standardised with the statistics of a larger set of reviews (the real
pipeline's default, :func:`elicit.data.prepare_run`) map every column's zero count to one
value, ``-mean/sd``: X is a sparse matrix S plus a rank-one offset ``1 b'``, and with a full
vocabulary (thousands of keywords, a few dozen per review) S holds well under 1% of the
entries. :func:`offset_sparse` finds that structure exactly: ``b_j`` is the value that occurs
most often in column j and S keeps the differences ``X_ij - b_j`` where ``X_ij != b_j``.

:class:`~elicit.model.density.Marginal` then works with S and b instead of X where it pays
(:func:`structure_of`): ``X K X'`` needs K only on the columns S touches plus ``K b``, and
the kernel is never held as a p x p array (:func:`elicit.model.kernel.kernel_apply`). Small
problems keep their dense BLAS path.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from elicit.internal.cache import LRUCache, arrays_key
from elicit.model.tall import is_tall

#: The structured path is used from this many features on (below, dense BLAS on p x p arrays
#: is fast and small).
STRUCTURED_MIN_P = 1000
#: ... with at most this share of S's entries nonzero (a full review vocabulary: ~0.3%) ...
STRUCTURED_MAX_DENSITY = 0.05
#: ... and at most this many meta-features: the Hessian multiplies K by
#: ``(d + 1)(d + 2) / 2`` columns (66 at d = 10, 231 at d = 20), which for larger d costs
#: more than it saves (word-count meta-features with d = n = 100 keep the dense path, whose
#: Hessian runs over each column's support).
STRUCTURED_MAX_D = 20


@dataclass(frozen=True)
class OffsetSparse:
    """``X = S + 1 b'``: the offset ``b`` (p,), the columns ``cols`` where S has a nonzero
    (sorted) and S on those columns, ``S_cols`` (n x len(cols), compressed sparse columns)."""

    b: np.ndarray
    cols: np.ndarray
    S_cols: sp.csc_matrix

    @property
    def shape(self) -> tuple[int, int]:
        return (self.S_cols.shape[0], len(self.b))

    @property
    def density(self) -> float:
        """The share of S's entries that are nonzero."""
        n, p = self.shape
        return self.S_cols.nnz / float(n * p)

    def dense(self) -> np.ndarray:
        """``S + 1 b'`` as a dense array (the check of the decomposition)."""
        n, p = self.shape
        X = np.broadcast_to(self.b, (n, p)).copy()
        X[:, self.cols] += self.S_cols.toarray()
        return X


def column_modes(X: np.ndarray) -> np.ndarray:
    """The most frequent value of each column of ``X`` (ties: the smallest)."""
    n = X.shape[0]
    Xs = np.sort(X, axis=0)
    rows = np.arange(n)[:, None]
    new = np.ones_like(Xs, dtype=bool)
    new[1:] = Xs[1:] != Xs[:-1]
    # the row where the run of equal values containing each entry starts, and so each run's
    # length at its last entry; the first longest run is the mode
    start = np.maximum.accumulate(np.where(new, rows, 0), axis=0)
    length = rows - start
    return Xs[np.argmax(length, axis=0), np.arange(X.shape[1])]


def offset_sparse(X: np.ndarray) -> OffsetSparse:
    """The decomposition ``X = S + 1 b'`` with ``b`` the column modes (module docstring)."""
    X = np.asarray(X, dtype=float)
    b = column_modes(X)
    mask = X != b
    cols = np.flatnonzero(mask.any(axis=0))
    Xc = X[:, cols]
    S = np.where(mask[:, cols], Xc - b[cols], 0.0)
    return OffsetSparse(b, cols, sp.csc_matrix(S))


def pays(n: int, p: int, d: int, structure: OffsetSparse) -> bool:
    """Whether the structured path pays for data of this size and sparsity (see the
    module's thresholds)."""
    return (p >= STRUCTURED_MIN_P and d <= STRUCTURED_MAX_D
            and structure.density <= STRUCTURED_MAX_DENSITY)


_found = LRUCache(4)
_lock = threading.Lock()


def structure_of(X: np.ndarray, d: int) -> OffsetSparse | None:
    """The sparse-plus-offset structure of ``X`` if the structured path pays for it (with
    ``d`` meta-features), else None. Found once per array (keyed by its identity and a
    checksum of its bytes, so that an array changed in place is looked at again)."""
    n, p = X.shape
    # with more rows than features the p x p form (elicit.model.tall) holds no n x n array,
    # which the structured path does
    if p < STRUCTURED_MIN_P or d > STRUCTURED_MAX_D or is_tall(n, p):
        return None
    key = arrays_key(X)
    with _lock:
        hit = _found.get(key)
        if hit is None:
            st = offset_sparse(X)
            hit = (st if pays(n, p, d, st) else None,)
            _found.put(key, hit, pin=X)
    return hit[0]
