"""The Gaussian kernel over meta-features (Afrabandpey et al. 2019, eq. 2).

``K_ij = exp(-0.5 * sum_l gamma_l (U_il - U_jl)^2)`` and the squared meta-feature differences
``w_ij = (u_i - u_j)^2`` of asked pairs, which enter the feedback likelihood.
"""

from __future__ import annotations

import numpy as np


def sq_dists(U: np.ndarray, gamma: np.ndarray) -> np.ndarray:
    """sum_l gamma_l (U_il - U_jl)^2 for all feature pairs (p x p), clipped at 0."""
    Z = U * np.sqrt(gamma)
    s = np.einsum("ij,ij->i", Z, Z)
    D = s[:, None] + s[None, :] - 2.0 * (Z @ Z.T)
    np.maximum(D, 0.0, out=D)
    np.fill_diagonal(D, 0.0)
    return D



def kernel(U: np.ndarray, gamma: np.ndarray) -> np.ndarray:
    """K_ij = exp(-0.5 * sum_l gamma_l (U_il - U_jl)^2)."""
    return np.exp(-0.5 * sq_dists(U, np.asarray(gamma, dtype=float)))



def pair_weights(U: np.ndarray, pairs: np.ndarray) -> np.ndarray:
    """w_ij = (u_i - u_j)^2 (elementwise) for each pair: shape (len(pairs), d)."""
    pairs = np.asarray(pairs, dtype=int).reshape(-1, 2)
    return (U[pairs[:, 0]] - U[pairs[:, 1]]) ** 2
