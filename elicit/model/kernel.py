"""The Gaussian kernel over meta-features (Afrabandpey et al. 2019, eq. 2),
``K_ij = exp(-0.5 * sum_l gamma_l (U_il - U_jl)^2)``, the pair weights ``w_ij = (u_i - u_j)^2``
of the feedback likelihood, and the sums over ``dK/dgamma_l = -K o D_l / 2`` that the
marginal's Hessian needs (:func:`second_terms`).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from elicit.internal.cache import LRUCache

#: elements per block of the row-blocked passes over p x p arrays (fits in cache)
BLOCK_ELEMS = 1 << 17


def row_blocks(p: int):
    """Slices of consecutive rows of a p x p array, each of about :data:`BLOCK_ELEMS`."""
    step = max(1, BLOCK_ELEMS // max(1, p))
    for i0 in range(0, p, step):
        yield slice(i0, min(p, i0 + step))


#: Meta-features with at most this share of nonzeros (word counts: 4% of Amazon's) and at
#: least :data:`SPARSE_U_MIN_P` features are multiplied as sparse rows (:func:`sparse_meta`).
SPARSE_U_MAX_DENSITY = 0.1
SPARSE_U_MIN_P = 100

_sparse_found = LRUCache(4)


def sparse_meta(U: np.ndarray) -> sp.csc_matrix | None:
    """``U'`` by compressed columns (R U is (U' R')'), once per U, if mostly zero, else None."""
    p, d = U.shape
    if p < SPARSE_U_MIN_P:
        return None
    return _sparse_found.of_array(
        U, lambda U: None if np.count_nonzero(U) > SPARSE_U_MAX_DENSITY * p * d
        else sp.csr_matrix(U).T)


#: The kernel's exponent ``z_i.z_j - h_i - h_j`` (``h_i = z_i.z_i / 2``) is positive only by
#: rounding, by up to a few ``eps * max(h)``: below 1e-9 up to this ``max(h)``, where it is not
#: clipped (the clip costs a fifth of the kernel's time); beyond it (a trial point with gamma
#: ~ 1e18) the rounding alone would overflow exp, so it is clipped at 0.
CLIP_ABOVE_H = 1e6


def _clips(h: np.ndarray) -> bool:
    return bool(h.max(initial=0.0) > CLIP_ABOVE_H)


def _kernel_inplace(U: np.ndarray, gamma: np.ndarray) -> np.ndarray:
    """The kernel from one symmetric product, then the offsets and the exp by blocks of rows in
    cache (no p x p temporaries); ``h_i + h_j`` is added as one term, so K is exactly symmetric."""
    root = np.sqrt(gamma)
    Z = U * root
    h = 0.5 * np.einsum("ij,ij->i", Z, Z)
    Us = sparse_meta(U)
    if Us is None:
        M = Z @ Z.T
    else:
        M = sp.csr_matrix((Us.data * root[Us.indices], Us.indices, Us.indptr), shape=U.shape) @ Z.T
    clip = _clips(h)
    for blk in row_blocks(len(h)):
        Mb = M[blk]
        Mb -= h[blk, None] + h[None, :]
        if clip:
            np.minimum(Mb, 0.0, out=Mb)
        np.exp(Mb, out=Mb)
    np.fill_diagonal(M, 1.0)
    return M


def kernel(U: np.ndarray, gamma: np.ndarray, coupled: np.ndarray | None = None) -> np.ndarray:
    """K_ij = exp(-0.5 * sum_l gamma_l (U_il - U_jl)^2); with a boolean mask ``coupled`` (the set
    J) K_ij is kept only when i and j are both in J, delta_ij otherwise."""
    U, gamma = np.asarray(U, dtype=float), np.asarray(gamma, dtype=float)
    if coupled is None:
        return _kernel_inplace(U, gamma)
    J = np.flatnonzero(coupled)
    K = np.eye(U.shape[0])
    K[np.ix_(J, J)] = _kernel_inplace(U[J], gamma)
    return K


#: rows and columns per tile of the streamed kernel passes (:func:`kernel_apply`): a tile of
#: 512 x 512 (2 MB) stays in cache through its exponent, exp and products
TILE = 512


def kernel_tiles(U: np.ndarray, gamma: np.ndarray, order: np.ndarray | None = None):
    """The upper-triangular tiles ``(I, J, K[I, J])`` (``I.start <= J.start``, at most :data:`TILE`
    square) of :func:`kernel` without a coupled set, of ``K[order][:, order]`` with ``order``:
    half of K, no p x p array held."""
    gamma = np.asarray(gamma, dtype=float)
    # P_i . Q_j = z_i . z_j - h_i - h_j (z = u o sqrt(gamma), h = z.z / 2): one matrix
    # product gives a tile's exponent
    Z = (U if order is None else U[order]) * np.sqrt(gamma)
    h = 0.5 * np.einsum("ij,ij->i", Z, Z)
    one = np.ones((len(h), 1))
    P, Q = np.hstack([Z, -h[:, None], -one]), np.hstack([Z, one, h[:, None]])
    p = len(P)
    clip = _clips(h)
    for i0 in range(0, p, TILE):
        I = slice(i0, min(p, i0 + TILE))
        for j0 in range(i0, p, TILE):
            J = slice(j0, min(p, j0 + TILE))
            E = P[I] @ Q[J].T
            if clip:
                np.minimum(E, 0.0, out=E)
            np.exp(E, out=E)
            lo, hi = max(I.start, J.start), min(I.stop, J.stop)
            if lo < hi:                                 # the diagonal exactly 1
                k = np.arange(lo, hi)
                E[k - I.start, k - J.start] = 1.0
            yield I, J, E


def kernel_apply(U: np.ndarray, gamma: np.ndarray, V: np.ndarray) -> np.ndarray:
    """``K V`` for :func:`kernel` without a coupled set, without forming K (memory O(p (d + m)))."""
    V = np.asarray(V, dtype=float)
    vec = V.ndim == 1
    V2 = V[:, None] if vec else V
    out = np.zeros((len(U), V2.shape[1]))
    for I, J, E in kernel_tiles(U, gamma):
        out[I] += E @ V2[J]
        if J.start != I.start:
            out[J] += E.T @ V2[I]
    return out[:, 0] if vec else out


def coupling_matrix(coupled: np.ndarray | None) -> np.ndarray | None:
    """The entries of K a coupled set J keeps (p x p: i and j both in J, or i = j)."""
    if coupled is None:
        return None
    return np.outer(coupled, coupled) | np.eye(len(coupled), dtype=bool)


def kernel_stack(U: np.ndarray, gammas: np.ndarray, keep: np.ndarray | None,
                 U2: np.ndarray) -> np.ndarray:
    """:func:`kernel` for each row of ``gammas`` (C, d) at once, (C, p, p); ``keep``:
    :func:`coupling_matrix` of the coupled set, ``U2``: the squared meta-features ``U * U``."""
    C, (p, d) = len(gammas), U.shape
    sq = (U2 @ gammas.T).T                                     # (C, p)
    # -D/2 = cross - sq_i/2 - sq_j/2, built in place: one product for every row
    K = ((U[None, :, :] * gammas[:, None, :]).reshape(C * p, d) @ U.T).reshape(C, p, p)
    K -= 0.5 * sq[:, :, None]
    K -= 0.5 * sq[:, None, :]
    np.minimum(K, 0.0, out=K)
    np.exp(K, out=K)
    if keep is not None:
        K *= keep
    return K


def pair_weights(U: np.ndarray, pairs: np.ndarray) -> np.ndarray:
    """w_ij = (u_i - u_j)^2 (elementwise) for each pair: shape (len(pairs), d)."""
    pairs = np.asarray(pairs, dtype=int).reshape(-1, 2)
    return (U[pairs[:, 0]] - U[pairs[:, 1]]) ** 2


def supports_of(U: np.ndarray) -> tuple[list, tuple[list[int], list[int]]]:
    """The nonzero pattern of each meta-feature column with its values there, and the columns
    whose products run over their support (zero in at least a third of the features: word
    counts) apart from the others (embeddings), which are stacked into one product."""
    sup = []
    for l in range(U.shape[1]):
        S = np.flatnonzero(U[:, l])
        sup.append((S, U[S, l]))
    sparse = [l for l, (S, _) in enumerate(sup) if 3 * len(S) <= 2 * U.shape[0]]
    return sup, (sparse, [l for l in range(U.shape[1]) if l not in set(sparse)])


def second_terms(R: np.ndarray, r: np.ndarray, RU: np.ndarray, U: np.ndarray,
                  supports: list, split: tuple[list[int], list[int]]) -> np.ndarray:
    """``T_ab = sum_ij R_ij D_a,ij D_b,ij`` (d x d) for a symmetric R with row sums r and
    ``RU = R U``, by expanding ``D_a D_b``: ``2 (u_a^2 u_b^2)' r + 2 u_a^2' R u_b^2
    - 4 (u_a^2 u_b)' R u_b - 4 (u_b^2 u_a)' R u_a + 4 (u_a u_b)' R (u_a u_b)``."""
    d = U.shape[1]
    U2 = U * U
    T = 2.0 * (U2.T * r) @ U2 + 2.0 * U2.T @ (R @ U2)
    M3 = U2.T @ (U * RU)
    T -= 4.0 * (M3 + M3.T)
    # sum_ij R_ij U_ia U_ja U_ib U_jb, again over the support of u_a only
    E_full = np.empty((d, d))
    sparse, dense = split
    for a in sparse:
        S, u = supports[a]
        Ua = U[S] * u[:, None]                        # rows u_i o u_ia
        E_full[a] = np.einsum("ib,ib->b", Ua, R.take(S, 0).take(S, 1) @ Ua)
    if len(dense):
        Ua = (U[:, None, :] * U[:, dense, None]).reshape(len(U), -1)  # (p, m d)
        RUa = (R @ Ua).reshape(len(U), len(dense), d)
        E_full[dense] = np.einsum("iab,iab->ab", Ua.reshape(len(U), len(dense), d), RUa)
    T += 4.0 * E_full
    return T
