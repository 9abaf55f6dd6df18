r"""Meta-features of keywords: what the model's kernel measures similarity on.

The model's prior covariance of the regression weights is the kernel

.. math:: K_{ij} = \exp\Big(-\tfrac12 \sum_{l=1}^{d} \gamma_l (u_{il} - u_{jl})^2\Big)

over per-feature meta-features :math:`U` (``p x d``, one row per keyword). Which rows sit
close decides which weights the prior ties together before any answer, and which pairs an
expert's "similar" answers can pull together. :func:`meta_features` builds ``U`` in one of
these ways (:data:`META_FEATURES`, or a file):

``"counts"`` (the default; the paper's choice)
    :math:`U = C_{\mathrm{train}}^\top`, the transposed raw counts of the training reviews
    (``p x n_train``), unscaled. Bit-identical to what elicit always used, so old runs
    reproduce exactly.
``"ppmi"``
    Positive pointwise mutual information of keyword co-occurrence in the *unlabelled*
    reviews (no rating is read). With :math:`B_{ri} = [c_{ri} > 0]` (keyword *i* present
    in review *r*), :math:`N` reviews, document frequencies :math:`n_i = \sum_r B_{ri}` and
    co-occurrence counts :math:`n_{ij} = \sum_r B_{ri} B_{rj}`,

    .. math:: M_{ij} = \max\Big(0, \log \frac{N\, n_{ij}}{n_i\, n_j}\Big), \qquad i \ne j,

    and :math:`M_{ii} = 0` (a keyword's "co-occurrence with itself" only measures its
    rarity, which says nothing about polarity). With the eigen-decomposition
    :math:`M = Q \Lambda Q^\top`, the keyword coordinates are the top ``dim`` eigenvectors
    scaled by the square root of their eigenvalue, :math:`U = Q_{:,1..k}
    \Lambda_{1..k}^{1/2}` (eigenvalues below 0 are clipped to 0), so that
    :math:`U U^\top` is the best rank-``dim`` positive semi-definite approximation of M's
    top spectrum.
``"lsa"``
    Latent semantic analysis of the same unlabelled reviews: the tf-idf matrix :math:`T`
    (``n x p``; raw counts times the smoothed idf :math:`1 + \log\frac{1 + N}{1 + n_i}`,
    each review scaled to unit length), its truncated SVD :math:`T \approx W S V^\top`,
    and the keyword loadings :math:`U = V_{:,1..k} S_{1..k}`.
a file (``FILE``)
    A CSV or Parquet table indexed by feature name (first column), one row per feature and
    numeric columns, aligned to the vocabulary by name (:func:`read_meta_file`).

**Directions, not lengths.** Both embeddings then scale every keyword's row to unit length
(a keyword absent from the unlabelled reviews stays at the origin), so that
:math:`\lVert u_i - u_j \rVert^2 = 2 - 2 \cos(u_i, u_j)`. A row's length mostly tracks how
frequent the keyword is, its direction which keywords it occurs with; on Amazon (10 splits,
the LASSO expert's signs) unit rows raise the polarity AUC (:func:`polarity_auc`) of
``ppmi`` 10 from 0.80 to 0.93 and of ``lsa`` 25 from 0.60 to 0.78.

Determinism: the decompositions are dense LAPACK ones (no random start), and each
eigen/singular vector's sign is fixed so that its largest-magnitude entry is positive.

A keyword that never occurs in the unlabelled reviews has no co-occurrence to embed: its
row is zeros (the origin) rather than NaN.

**Scale.** The kernel only sees :math:`\gamma_l (u_{il} - u_{jl})^2`, and the prior on
:math:`\gamma` is fixed (:math:`N_+(1, 0.5^2)`), so the scale of ``U`` matters. The
embeddings (``ppmi``, ``lsa`` and a file) are multiplied by one constant so that the
median over keyword pairs :math:`i < j` of :math:`\sum_l (u_{il} - u_{jl})^2` equals
:data:`TYPICAL_SQ_DISTANCE` = 2. At the prior mean :math:`\gamma = 1` a typical pair then
has :math:`K_{ij} = e^{-1} \approx 0.37`: neither unrelated (``K`` near 0, where the prior
ignores U) nor all alike (``K`` near 1, where every weight is tied to every other);
closer-than-median pairs get clearly larger ``K``, farther ones clearly smaller. If the
median is 0 (most rows equal), the median of the nonzero distances is used instead; if
every row is equal the embedding is left as it is. For unit rows 2 is also the distance of
two orthogonal directions (cosine 0), so the scaling changes ``ppmi`` and ``lsa`` little.
``counts`` stays unscaled, as in the paper.

A plain table without meta-features (a researcher's own data in a session) gets
:func:`table_meta_features`: each column's correlations with the first principal components
of the standardised table, scaled to a median pair distance of :data:`TABLE_SQ_DISTANCE`.

:func:`polarity_auc` measures how well a ``U`` separates the keywords of known polarity.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from elicit.data.tables import align_meta, read_table
from elicit.errors import ElicitError
from elicit.internal.text import listing

#: The built-in meta-feature choices; anything else given to :func:`meta_features` is a file.
META_FEATURES: tuple[str, ...] = ("counts", "ppmi", "lsa")
#: The choices that build an embedding of ``dim`` dimensions (the others ignore ``dim``).
EMBEDDINGS: tuple[str, ...] = ("ppmi", "lsa")
#: The default number of embedding dimensions.
DEFAULT_META_DIM = 10
#: The median squared distance between keyword pairs that embeddings are scaled to (see the
#: module docstring: ``K = exp(-1)`` for a typical pair at the prior mean of gamma).
TYPICAL_SQ_DISTANCE = 2.0
#: The median squared distance of the default meta-features of a plain table
#: (:func:`table_meta_features`): ``K = exp(-2)`` for a typical pair at the prior mean of
#: gamma, so that uncorrelated columns start loosely tied and correlated ones closely.
TABLE_SQ_DISTANCE = 4.0


def check_meta_dim(dim: object) -> int:
    """``dim`` as a positive integer, else an :class:`ElicitError`."""
    if isinstance(dim, bool) or not isinstance(dim, (int, np.integer)) or dim < 1:
        raise ElicitError(f"meta_dim must be a positive integer (embedding dimensions), "
                          f"got {dim!r}")
    return int(dim)


def is_builtin(kind: object) -> bool:
    """Whether ``kind`` names a built-in choice (rather than a file)."""
    return isinstance(kind, str) and kind in META_FEATURES


def meta_features(kind: str | os.PathLike, counts_unlabeled: np.ndarray | None = None,
                  dim: int = DEFAULT_META_DIM, train_counts: np.ndarray | None = None,
                  feature_names: Sequence[str] | None = None) -> np.ndarray:
    """The meta-features ``U`` (``p x d``) of one run, by ``kind``.

    Parameters
    ----------
    kind
        ``"counts"``, ``"ppmi"``, ``"lsa"`` (see the module docstring) or the path of a
        CSV/Parquet table of meta-features indexed by feature name.
    counts_unlabeled
        ``(n_u, p)`` keyword counts of reviews that are *not* used for the model; only
        their inputs are read (``ppmi``, ``lsa``).
    dim
        Embedding dimensions of ``ppmi`` and ``lsa`` (at most ``p``; ``lsa`` also at most
        ``n_u``). Ignored by ``counts`` and a file.
    train_counts
        ``(n_train, p)`` raw counts of the training reviews (``counts``).
    feature_names
        The ``p`` keywords, to align a file by name.

    Returns
    -------
    numpy.ndarray
        ``(p, d)`` float array without NaN: ``d = n_train`` for ``counts``, ``dim`` for the
        embeddings, the file's column count for a file.

    Raises
    ------
    ElicitError
        On a missing input, a bad ``dim``, too few unlabelled reviews, or a file that does
        not match the features (one-line messages).
    """
    if is_builtin(kind) and kind == "counts":
        if train_counts is None:
            raise ElicitError("meta-features 'counts' need the training counts (train_counts)")
        # The exact operations of the paper's U (float counts, transposed, copied), so that
        # old runs are reproduced bit for bit.
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
        raise ElicitError(f"meta_dim {dim} exceeds the {p} features; choose at most {p}")
    U = ppmi_embedding(C, dim) if kind == "ppmi" else lsa_embedding(C, dim)
    return scale_to_typical(unit_rows(U))


def unit_rows(U: np.ndarray) -> np.ndarray:
    """Every nonzero row of ``U`` scaled to unit Euclidean length; zero rows stay zero."""
    norm = np.linalg.norm(U, axis=1, keepdims=True)
    return U / np.where(norm > 0, norm, 1.0)


def ppmi_matrix(counts: np.ndarray) -> np.ndarray:
    """The symmetric ``p x p`` PPMI matrix of keyword presence (module docstring).

    Pairs involving a keyword absent from every review, and pairs that never co-occur, get
    0; so does the diagonal.
    """
    B = (np.asarray(counts) > 0).astype(float)
    n = B.shape[0]
    df = B.sum(axis=0)
    co = B.T @ B
    with np.errstate(divide="ignore", invalid="ignore"):
        pmi = np.log(n * co / np.outer(df, df))
    # log(0) (never together) and 0/0 (an absent keyword) are "no association": 0.
    M = np.where(np.isfinite(pmi), np.maximum(pmi, 0.0), 0.0)
    np.fill_diagonal(M, 0.0)
    return M


def ppmi_embedding(counts: np.ndarray, dim: int) -> np.ndarray:
    """Raw PPMI keyword coordinates: top-``dim`` eigenvectors times sqrt(eigenvalue).

    Not yet unit-length nor scaled (:func:`meta_features` does both)."""
    M = ppmi_matrix(counts)
    vals, vecs = np.linalg.eigh(M)  # ascending
    order = np.argsort(vals)[::-1][:dim]
    U = _fix_signs(vecs[:, order]) * np.sqrt(np.clip(vals[order], 0.0, None))
    U[np.asarray(counts).sum(axis=0) == 0] = 0.0
    return U


def tfidf(counts: np.ndarray) -> np.ndarray:
    """Raw counts times the smoothed idf ``1 + log((1 + N) / (1 + n_i))``, rows scaled to
    unit Euclidean length (an empty review stays zeros)."""
    C = np.asarray(counts, dtype=float)
    df = (C > 0).sum(axis=0)
    T = C * (1.0 + np.log((1.0 + C.shape[0]) / (1.0 + df)))
    norm = np.linalg.norm(T, axis=1, keepdims=True)
    return T / np.where(norm > 0, norm, 1.0)


def lsa_embedding(counts: np.ndarray, dim: int) -> np.ndarray:
    """Raw LSA keyword loadings ``V S`` of the tf-idf matrix, ``dim`` dimensions.

    Not yet unit-length nor scaled (:func:`meta_features` does both)."""
    T = tfidf(counts)
    if dim > min(T.shape):
        raise ElicitError(f"meta_dim {dim} exceeds the rank bound of the tf-idf matrix "
                          f"({T.shape[0]} unlabelled reviews x {T.shape[1]} keywords); choose "
                          f"at most {min(T.shape)}")
    _, s, Vt = np.linalg.svd(T, full_matrices=False)
    U = _fix_signs(Vt[:dim].T) * s[:dim]
    U[np.asarray(counts).sum(axis=0) == 0] = 0.0
    return U


def _fix_signs(V: np.ndarray) -> np.ndarray:
    """Each column flipped so that its largest-magnitude entry (the first, on ties) is
    positive: a decomposition's sign is arbitrary, a stored result's must not be."""
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
    """``U`` times one constant, so the median squared pair distance is ``target``.

    If the median is 0, the median of the nonzero distances is matched instead; if every
    row is equal (or p < 2), ``U`` is returned unchanged.
    """
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
    r"""Default meta-features of a plain table's columns: how they correlate.

    The columns of ``X`` (``n x p``) are standardised (centred, divided by their standard
    deviation; a constant column becomes zeros), giving :math:`Z`. With the thin SVD
    :math:`Z / \sqrt{n} = A S V^\top` the correlation matrix of the columns is
    :math:`R = V S^2 V^\top`: the rows of :math:`V S` have unit length and inner products
    :math:`r_{ij}`, so :math:`\lVert u_i - u_j \rVert^2 = 2 (1 - r_{ij})`. Feature *i* is
    described by its first :math:`k` coordinates :math:`u_i = (V S)_{i, 1..k}` (its
    correlations with the first k principal components), :math:`k` = ``dim`` capped at the
    rank of Z, and the squared distances approximate :math:`2 (1 - r_{ij})` (exactly when k
    reaches the rank): correlated columns sit close, uncorrelated ones at about 2, opposite
    ones at about 4. Finally U is multiplied by one constant (:func:`scale_to_typical`) so
    that the median pair distance is ``target`` (:data:`TABLE_SQ_DISTANCE` = 4): at the
    prior mean ``gamma = 1`` a typical pair starts at ``K = exp(-2) = 0.14``, closer
    (correlated) pairs clearly higher, and every pair is coupled enough for an answer to
    move the model.

    Nothing depends on the columns' units (each is standardised) or on the outcome (y is
    not read). Columns equal up to scale and shift get identical rows (the same
    measurement; a session does not ask about such pairs). Each singular vector's sign is
    fixed (largest-magnitude entry positive), so U is deterministic.
    ``docs/metafeatures.md`` gives the measurements behind ``dim`` and ``target``.

    Parameters
    ----------
    X
        ``(n, p)`` training inputs, finite.
    dim
        The most principal directions to keep (default :data:`DEFAULT_META_DIM`).
    target
        The median squared pair distance of the result.

    Returns
    -------
    numpy.ndarray
        ``(p, k)`` floats, ``1 <= k <= dim``; zeros of shape ``(p, 1)`` when every column is
        constant.
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
    """A meta-features table aligned to ``feature_names``: ``(p, d)`` floats.

    The table (CSV, TSV or Parquet) has the feature name in its first column and one
    numeric column per meta-feature. Reading and alignment are those of ``elicit session
    new --from-csv --meta-features`` (:func:`elicit.data.tables.read_table`,
    :func:`elicit.data.tables.align_meta`); every mistake is a one-line
    :class:`ElicitError`.
    """
    df = read_table(Path(path), "--meta-features", index_col=0)
    df.index = pd.Index([str(k) for k in df.index])
    U = np.asarray(align_meta(df, list(feature_names)), dtype=float)
    if U.ndim != 2 or U.shape[1] == 0:
        raise ElicitError(f"--meta-features file {Path(path).name} has no numeric columns "
                          "after the feature name")
    bad = np.flatnonzero(~np.isfinite(U).all(axis=1))
    if bad.size:
        names = listing([feature_names[k] for k in bad.tolist()])
        raise ElicitError(f"--meta-features file {Path(path).name} has missing or infinite "
                          f"values for feature(s) {names}; fill them")
    return U


def polarity_auc(U: np.ndarray, groups: np.ndarray) -> float:
    r"""How well ``U`` puts same-polarity keywords closer than opposite-polarity ones.

    Over the keywords with a known group (``groups >= 0``; e.g. 0 for a positive and 1 for
    a negative LASSO weight, -1 for unknown), let :math:`S` be the squared distances
    :math:`\lVert u_i - u_j \rVert^2` of the same-group pairs and :math:`D` those of the
    cross-group pairs. The AUC is

    .. math:: \Pr(s < d) + \tfrac12 \Pr(s = d), \qquad s \in S,\ d \in D \text{ uniformly},

    0.5 without signal and 1 when every same-group pair is closer than every cross-group
    pair. It is the Mann-Whitney statistic of the two sets, from the average ranks of their
    union (ties share ranks), in :math:`O(m \log m)` for m pairs.

    Returns
    -------
    float
        The AUC, or NaN when either set is empty (fewer than two known keywords in a group,
        or only one group).
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
