"""The Gaussian kernel over meta-features (Afrabandpey et al. 2019, eq. 2).

``K_ij = exp(-0.5 * sum_l gamma_l (U_il - U_jl)^2)`` and the squared meta-feature differences
``w_ij = (u_i - u_j)^2`` of asked pairs, which enter the feedback likelihood.
"""

from __future__ import annotations

import numpy as np

#: elements per block of the row-blocked passes over p x p arrays (fits in cache)
BLOCK_ELEMS = 1 << 17


def row_blocks(p: int, ncols: int | None = None):
    """Slices of consecutive rows, each block holding about :data:`BLOCK_ELEMS` elements."""
    step = max(1, BLOCK_ELEMS // max(1, p if ncols is None else ncols))
    for i0 in range(0, p, step):
        yield slice(i0, min(p, i0 + step))


def _kernel_inplace(U: np.ndarray, gamma: np.ndarray) -> np.ndarray:
    """exp(-0.5 * sum_l gamma_l (U_il - U_jl)^2), the exponent clipped at 0.

    One symmetric product (``Z Z'`` runs as a rank-k update) and then, block by block of rows
    while the block is in cache, the row/column offsets, the clip and the exp: no p x p
    temporaries. ``h_i + h_j`` is added as one term, so the result is exactly symmetric.
    """
    Z = U * np.sqrt(gamma)
    h = 0.5 * np.einsum("ij,ij->i", Z, Z)
    M = Z @ Z.T
    for blk in row_blocks(len(h)):
        Mb = M[blk]
        Mb -= h[blk, None] + h[None, :]
        np.minimum(Mb, 0.0, out=Mb)
        np.exp(Mb, out=Mb)
    np.fill_diagonal(M, 1.0)
    return M


def kernel(U: np.ndarray, gamma: np.ndarray, coupled: np.ndarray | None = None) -> np.ndarray:
    """K_ij = exp(-0.5 * sum_l gamma_l (U_il - U_jl)^2).

    With a boolean mask ``coupled`` (the known-coupling models' set J), K_ij is kept only
    when i and j are both in J and is delta_ij otherwise. Only the J block needs the exp,
    which matters when J is small (on Amazon 43 of 340 features).
    """
    gamma = np.asarray(gamma, dtype=float)
    if coupled is None:
        return _kernel_inplace(U, gamma)
    J = np.flatnonzero(coupled)
    K = np.eye(U.shape[0])
    K[np.ix_(J, J)] = _kernel_inplace(U[J], gamma)
    return K


def coupling_matrix(coupled: np.ndarray | None) -> np.ndarray | None:
    """The entries of K a coupled set J keeps, as a p x p boolean matrix: i and j both in J,
    or i = j (``None`` for ``None``: every entry)."""
    if coupled is None:
        return None
    return np.outer(coupled, coupled) | np.eye(len(coupled), dtype=bool)


def kernel_stack(U: np.ndarray, gammas: np.ndarray, keep: np.ndarray | None = None,
                 U2: np.ndarray | None = None) -> np.ndarray:
    """:func:`kernel` for each row of ``gammas`` (C, d): shape (C, p, p).

    ``keep`` is :func:`coupling_matrix` of the coupled set (the same K as :func:`kernel` with
    ``coupled``), ``U2`` the squared meta-features when the caller has them. All C kernels
    are formed at once, for the batched refits of small problems.
    """
    if U2 is None:
        U2 = U * U
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
