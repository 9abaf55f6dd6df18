r"""Meta-features of keywords, what the kernel measures similarity on (``docs/metafeatures.md``).

:func:`meta_features` builds ``U`` (``p x d``) in one of these ways (:data:`META_FEATURES`,
or a file):

``"counts"`` (the default; the paper's choice)
    :math:`U = C_{\mathrm{train}}^\top`, the transposed raw training counts, unscaled.
``"ppmi"``
    Positive pointwise mutual information of keyword co-occurrence in the *unlabelled*
    reviews. With :math:`B_{ri} = [c_{ri} > 0]`, :math:`N` reviews, :math:`n_i = \sum_r
    B_{ri}` and :math:`n_{ij} = \sum_r B_{ri} B_{rj}`,

    .. math:: M_{ij} = \max\Big(0, \log \frac{N\, n_{ij}}{n_i\, n_j}\Big), \qquad i \ne j,

    and :math:`M_{ii} = 0` (self co-occurrence only measures rarity). With
    :math:`M = Q \Lambda Q^\top`, :math:`U = Q_{:,1..k} \Lambda_{1..k}^{1/2}` (negative
    eigenvalues clipped to 0).
``"lsa"``
    The tf-idf matrix :math:`T` of the same reviews (:func:`tfidf`), its truncated SVD
    :math:`T \approx W S V^\top` and :math:`U = V_{:,1..k} S_{1..k}`.
a file (``FILE``)
    A CSV or Parquet table indexed by feature name (:func:`read_meta_file`).

The embeddings get unit rows and fixed signs, they and a file one scale; ``counts`` none.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from elicit.data.tables import align_meta, read_table
from elicit.errors import ElicitError
from elicit.internal.checks import check_int
from elicit.internal.text import listing

#: The built-in meta-feature choices; anything else given to :func:`meta_features` is a file.
META_FEATURES: tuple[str, ...] = ("counts", "ppmi", "lsa")
#: The choices that build an embedding of ``dim`` dimensions (the others ignore ``dim``).
EMBEDDINGS: tuple[str, ...] = ("ppmi", "lsa")
DEFAULT_META_DIM = 10
#: p x p arrays :func:`ppmi_embedding` holds at its peak (6.5 measured at p = 2000 and 4000)
PPMI_ARRAYS = 6
#: The median squared pair distance embeddings are scaled to (module docstring).
TYPICAL_SQ_DISTANCE = 2.0
#: The median squared pair distance of a plain table's meta-features (:func:`table_meta_features`).
TABLE_SQ_DISTANCE = 4.0


def check_meta_dim(dim: object) -> int:
    """``dim`` as a positive integer, else an :class:`ElicitError`."""
    return check_int(dim, f"meta_dim must be a positive integer (embedding dimensions), "
                          f"got {dim!r}", 1)


def is_builtin(kind: object) -> bool:
    """Whether ``kind`` names a built-in choice (rather than a file)."""
    return isinstance(kind, str) and kind in META_FEATURES


def meta_features(kind: str | os.PathLike, counts_unlabeled: np.ndarray | None = None,
                  dim: int = DEFAULT_META_DIM, train_counts: np.ndarray | None = None,
                  feature_names: Sequence[str] | None = None) -> np.ndarray:
    """The meta-features ``U`` (``p x d`` floats, no NaN) of one run, by ``kind``.

    Parameters
    ----------
    kind
        ``"counts"``, ``"ppmi"``, ``"lsa"`` (module docstring) or the path of a CSV/Parquet
        table of meta-features indexed by feature name.
    counts_unlabeled
        ``(n_u, p)`` keyword counts of reviews *not* used for the model (``ppmi``, ``lsa``).
    dim
        Embedding dimensions of ``ppmi`` and ``lsa`` (at most ``p``; ``lsa`` also at most
        ``n_u``).
    train_counts
        ``(n_train, p)`` raw counts of the training reviews (``counts``).
    feature_names
        The ``p`` keywords, to align a file by name.

    Raises
    ------
    ElicitError
        On a missing input, a bad ``dim``, too few unlabelled reviews, or a bad file.
    """
    if is_builtin(kind) and kind == "counts":
        if train_counts is None:
            raise ElicitError("meta-features 'counts' need the training counts (train_counts)")
        # the exact operations of the paper's U, so old runs reproduce bit for bit
        return np.asarray(train_counts).astype(float).T.copy()
    if not is_builtin(kind):
        if not isinstance(kind, (str, os.PathLike)) or not Path(kind).is_file():
            raise ElicitError(f"meta-features {str(kind)!r} is neither one of "
                              f"{', '.join(META_FEATURES)} nor an existing file")
        if feature_names is None:
            raise ElicitError("a meta-features file is aligned by feature name, so the "
                              "feature names are needed (feature_names)")
        return scale_to_typical(read_meta_file(kind, feature_names))
    dim = check_meta_dim(dim)
    if counts_unlabeled is None:
        raise ElicitError(f"meta-features {kind!r} need the counts of unlabelled reviews "
                          "(counts_unlabeled)")
    C = np.asarray(counts_unlabeled, dtype=float)
    if C.ndim != 2 or C.shape[0] < 2:
        raise ElicitError(f"meta-features {kind!r} need at least 2 unlabelled reviews (rows "
                          f"outside the model), got counts of shape {C.shape}")
    if np.any(~np.isfinite(C)) or np.any(C < 0):
        raise ElicitError(f"meta-features {kind!r}: the unlabelled counts must be finite and "
                          "non-negative")
    p = C.shape[1]
    if dim > p:
        raise ElicitError(f"meta_dim {dim} exceeds the {p} features; choose at most {p} "
                          f"(--meta-dim, default {DEFAULT_META_DIM})")
    U = ppmi_embedding(C, dim) if kind == "ppmi" else lsa_embedding(C, dim)
    U[C.sum(axis=0) == 0] = 0.0  # a keyword absent from these reviews: no direction at all
    return scale_to_typical(unit_rows(U))


def unit_rows(U: np.ndarray) -> np.ndarray:
    """Every nonzero row of ``U`` scaled to unit Euclidean length; zero rows stay zero."""
    norm = np.linalg.norm(U, axis=1, keepdims=True)
    return U / np.where(norm > 0, norm, 1.0)


def ppmi_embedding(counts: np.ndarray, dim: int) -> np.ndarray:
    """Raw PPMI keyword coordinates: top-``dim`` eigenvectors times sqrt(eigenvalue)."""
    B = (np.asarray(counts) > 0).astype(float)
    df = B.sum(axis=0)
    with np.errstate(divide="ignore", invalid="ignore"):
        pmi = np.log(B.shape[0] * (B.T @ B) / np.outer(df, df))
    # 0 for pairs that never co-occur or involve an absent keyword, and on the diagonal
    M = np.where(np.isfinite(pmi), np.maximum(pmi, 0.0), 0.0)
    np.fill_diagonal(M, 0.0)
    vals, vecs = np.linalg.eigh(M)  # ascending
    order = np.argsort(vals)[::-1][:dim]
    return _fix_signs(vecs[:, order]) * np.sqrt(np.clip(vals[order], 0.0, None))


def tfidf(counts: np.ndarray) -> np.ndarray:
    """Raw counts times the smoothed idf ``1 + log((1 + N) / (1 + n_i))``, rows scaled to
    unit Euclidean length (an empty review stays zeros)."""
    C = np.asarray(counts, dtype=float)
    df = (C > 0).sum(axis=0)
    return unit_rows(C * (1.0 + np.log((1.0 + C.shape[0]) / (1.0 + df))))


def lsa_embedding(counts: np.ndarray, dim: int) -> np.ndarray:
    """Raw LSA keyword loadings ``V S`` of the tf-idf matrix, ``dim`` dimensions."""
    T = tfidf(counts)
    if dim > min(T.shape):
        raise ElicitError(f"meta_dim {dim} exceeds the rank bound of the tf-idf matrix "
                          f"({T.shape[0]} unlabelled reviews x {T.shape[1]} keywords); choose "
                          f"at most {min(T.shape)}")
    _, s, Vt = np.linalg.svd(T, full_matrices=False)
    return _fix_signs(Vt[:dim].T) * s[:dim]


def _fix_signs(V: np.ndarray) -> np.ndarray:
    """Each column flipped so its largest-magnitude entry (the first, on ties) is positive."""
    idx = np.argmax(np.abs(V), axis=0)
    signs = np.sign(V[idx, np.arange(V.shape[1])])
    return V * np.where(signs == 0, 1.0, signs)


def pair_sq_distances(U: np.ndarray) -> np.ndarray:
    """Squared Euclidean distances of all rows pairs ``i < j`` of ``U`` (``p(p-1)/2``)."""
    U = np.asarray(U, dtype=float)
    i, j = np.triu_indices(U.shape[0], k=1)
    # Row by row differences, not the Gram identity: exact zeros stay zeros (ties matter to
    # the AUC) and no cancellation error enters.
    out = np.empty(len(i))
    step = 200_000
    for a in range(0, len(i), step):
        diff = U[i[a:a + step]] - U[j[a:a + step]]
        out[a:a + step] = np.einsum("ij,ij->i", diff, diff)
    return out


def scale_to_typical(U: np.ndarray, target: float = TYPICAL_SQ_DISTANCE) -> np.ndarray:
    """``U`` times one constant, so the median squared pair distance (else the median of the
    nonzero ones) is ``target``; unchanged if every row is equal or p < 2."""
    U = np.asarray(U, dtype=float)
    if U.shape[0] < 2:
        return U
    d = pair_sq_distances(U)
    med = float(np.median(d))
    if med <= 0:
        pos = d[d > 0]
        if pos.size == 0:
            return U
        med = float(np.median(pos))
    return U * np.sqrt(target / med)


def table_meta_features(X: np.ndarray, dim: int = DEFAULT_META_DIM,
                        target: float = TABLE_SQ_DISTANCE) -> np.ndarray:
    r"""Default meta-features of a plain table's columns: how they correlate
    (``docs/metafeatures.md``).

    With the standardised columns :math:`Z` of ``X`` (``n x p``, finite; a constant column
    becomes zeros) and the thin SVD :math:`Z / \sqrt{n} = A S V^\top`, the rows of
    :math:`V S` have inner products :math:`r_{ij}` (the correlations), so
    :math:`\lVert u_i - u_j \rVert^2 = 2 (1 - r_{ij})`. Feature *i* keeps its first
    :math:`k` coordinates, ``dim`` capped at the rank of Z, and U is scaled to a median
    squared pair distance of ``target`` (:func:`scale_to_typical`). Returns ``(p, k)``
    floats, ``1 <= k <= dim`` (zeros of shape ``(p, 1)`` when every column is constant).
    """
    dim = check_meta_dim(dim)
    # C order: LAPACK's rounding depends on the layout (a DataFrame's values are in F order).
    X = np.ascontiguousarray(X, dtype=float)
    n, p = X.shape
    # Each column divided by its largest magnitude first: squares of huge entries (1e300)
    # would overflow, and correlations do not change.
    top = np.max(np.abs(X), axis=0)
    Z = X / np.where(top > 0, top, 1.0)
    Z = Z - Z.mean(axis=0)
    sd = np.sqrt(np.mean(Z * Z, axis=0))
    # A spread at the rounding level of the column's values counts as constant.
    flat = sd <= 1e-13
    Z = np.where(flat, 0.0, Z / np.where(flat, 1.0, sd)) / np.sqrt(n)
    if not np.any(Z):
        return np.zeros((p, 1))
    _, s, Vt = np.linalg.svd(Z, full_matrices=False)
    rank = int(np.sum(s > s[0] * max(n, p) * np.finfo(float).eps))
    k = max(1, min(dim, rank))
    return scale_to_typical(_fix_signs(Vt[:k].T) * s[:k], target)


def read_meta_file(path: str | os.PathLike, feature_names: Sequence[str]) -> np.ndarray:
    """A meta-features table (CSV, TSV or Parquet; the feature name in its first column, one
    numeric column per meta-feature) aligned to ``feature_names``: ``(p, d)`` floats."""
    df = read_table(Path(path), "--meta-features", index_col=0)
    U = np.asarray(align_meta(df, list(feature_names)), dtype=float)
    if U.ndim != 2 or U.shape[1] == 0:
        raise ElicitError(f"--meta-features file {Path(path).name} has no numeric columns "
                          "after the feature name")
    bad = np.flatnonzero(~(np.abs(U) <= 1e150).all(axis=1))
    if bad.size:
        names = listing([feature_names[k] for k in bad.tolist()])
        raise ElicitError(f"--meta-features file {Path(path).name} has missing, infinite or "
                          f"huge (beyond 1e+150) values for feature(s) {names}; fill or "
                          "rescale them")
    return U


def polarity_auc(U: np.ndarray, groups: np.ndarray) -> float:
    r"""How well ``U`` puts same-polarity keywords closer than opposite-polarity ones.

    Over the keywords with a known group (``groups >= 0``; -1 for unknown), with :math:`S`
    the squared distances of the same-group pairs and :math:`D` those of the cross-group
    pairs, the AUC :math:`\Pr(s < d) + \tfrac12 \Pr(s = d)` (:math:`s \in S, d \in D`
    uniformly; the Mann-Whitney statistic): 0.5 without signal, NaN when either set is empty.
    """
    from scipy.stats import rankdata

    U = np.asarray(U, dtype=float)
    g = np.asarray(groups).reshape(-1)
    if U.ndim != 2 or len(g) != U.shape[0]:
        raise ElicitError(f"groups has {len(g)} entries but U has shape {U.shape}; give one "
                          "group per row of U")
    known = np.flatnonzero(g >= 0)
    Uk, gk = U[known], g[known]
    i, j = np.triu_indices(len(known), k=1)
    same = gk[i] == gk[j]
    n_same, n_cross = int(same.sum()), int((~same).sum())
    if n_same == 0 or n_cross == 0:
        return float("nan")
    d = pair_sq_distances(Uk)
    ranks = rankdata(d)  # average ranks for ties
    # Mann-Whitney U of the cross-group distances being larger, over n_same * n_cross.
    u_cross = ranks[~same].sum() - n_cross * (n_cross + 1) / 2.0
    return float(u_cross / (n_same * n_cross))
