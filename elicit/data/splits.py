"""One experimental run: the paper's train/test/expert split and standardisation
(``docs/data.md``).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Literal, get_args

import numpy as np

from elicit.data.corpora import BowDataset
from elicit.data.metafeatures import DEFAULT_META_DIM, EMBEDDINGS, check_meta_dim
from elicit.data.metafeatures import meta_features as build_meta_features
from elicit.errors import ElicitError
from elicit.internal.cache import freeze_fields
from elicit.internal.checks import check_int


def split_indices(n_total: int, rng: np.random.Generator, n_model: int = 1000,
                  n_train: int = 100) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The paper's split of ``0..n_total-1``: sorted index arrays ``train, test, expert`` of
    ``n_model`` random reviews for the model (``n_train`` of them for training) and the rest."""
    for nm, v in (("n_total", n_total), ("n_model", n_model), ("n_train", n_train)):
        check_int(v, f"{nm} must be an integer, got {v!r}")
    if n_train < 1:
        raise ElicitError(f"n_train must be at least 1, got {n_train}")
    if n_model <= n_train:
        raise ElicitError(f"n_model ({n_model}) must exceed n_train ({n_train}) to leave "
                          "test reviews")
    if n_total < n_model:
        raise ElicitError(f"the data set has {n_total} reviews but the run needs n_model = "
                          f"{n_model} (train + test); lower n_model or use a larger data set")
    perm = rng.permutation(n_total)
    return np.sort(perm[:n_train]), np.sort(perm[n_train:n_model]), np.sort(perm[n_model:])


def standardise(X: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``Z, mean, scale`` with ``Z = (X - mean) / scale`` of zero mean and unit (population,
    ddof=0) variance per column; a constant column gets scale 1 (zeros rather than NaN)."""
    X = np.asarray(X, dtype=float)
    mean = X.mean(axis=0)
    scale = X.std(axis=0)
    scale[scale == 0] = 1.0
    return (X - mean) / scale, mean, scale


#: Where :func:`prepare_run` takes the column mean and scale from.
Standardize = Literal["model", "train"]
STANDARDIZE_CHOICES: tuple[str, ...] = get_args(Standardize)


def check_standardize(standardize: str) -> Standardize:
    """``standardize`` if it is ``"model"`` or ``"train"``, else an :class:`ElicitError`."""
    if standardize not in STANDARDIZE_CHOICES:
        raise ElicitError(f"standardize must be 'model' (statistics of all model reviews) or "
                          f"'train' (of the training reviews only), got {standardize!r}")
    return standardize  # type: ignore[return-value]


@dataclass
class RunData:
    """Everything one experimental run needs.

    Attributes
    ----------
    X_train, X_test, y_train, y_test
        Counts standardised with ``x_mean`` and ``x_scale``; the training ratings minus their
        mean ``y_mean`` (the model has no intercept), the test ratings as they are.
    X_expert, y_expert
        The expert set (reviews outside the model's 1000): ``X_expert`` standardised with its
        own statistics whatever ``standardize`` is, ``y_expert`` the ratings on the original
        scale. Only the simulated (LASSO) expert sees them.
    x_mean, x_scale
        The column mean and scale (population standard deviation, 1 for a constant column)
        that standardise every model input (:meth:`standardize_counts`), taken from the rows
        ``standardize`` says (:func:`prepare_run`).
    train_idx, test_idx, expert_idx
        Row indices into the data set.
    seed, name, standardize, meta_features, meta_dim
        The arguments of :func:`prepare_run` (``meta_dim`` None unless an embedding).
    """

    X_train: np.ndarray
    y_train: np.ndarray
    X_test: np.ndarray
    y_test: np.ndarray
    y_mean: float
    U: np.ndarray
    X_expert: np.ndarray
    y_expert: np.ndarray
    feature_names: list[str]
    x_mean: np.ndarray
    x_scale: np.ndarray
    train_idx: np.ndarray
    test_idx: np.ndarray
    expert_idx: np.ndarray
    seed: int | None = None
    name: str = ""
    standardize: Standardize = "model"
    meta_features: str = "counts"
    meta_dim: int | None = None

    def __post_init__(self) -> None:
        freeze_fields(self, "X_train", "y_train", "X_test", "y_test", "U")

    @property
    def p(self) -> int:
        return self.X_train.shape[1]

    def standardize_counts(self, counts: np.ndarray) -> np.ndarray:
        """Raw counts (rows of the data set) in the run's input coordinates, e.g. the
        expert-set rows a Table 1 sample-addition loop adds to the training data."""
        counts = np.asarray(counts, dtype=float)
        if counts.ndim != 2 or counts.shape[1] != self.p:
            raise ElicitError(f"counts must have shape (n, {self.p}), got {counts.shape}")
        return (counts - self.x_mean) / self.x_scale


def prepare_run(dataset: BowDataset, seed: int | None, n_model: int = 1000,
                n_train: int = 100, standardize: Standardize = "model",
                meta_features: str | os.PathLike = "counts",
                meta_dim: int = DEFAULT_META_DIM) -> RunData:
    """Split (``np.random.default_rng(seed)``, :func:`split_indices`) and standardise one run.

    Parameters
    ----------
    n_model, n_train
        Reviews for the model (training + test) and, among them, for training.
    standardize
        ``"model"`` (default): column mean and scale of all ``n_model`` model reviews' inputs
        (the test inputs are known when the model is built; using them keeps every z-score
        moderate). ``"train"``: those of the ``n_train`` training reviews only (the literal
        reading of the paper: a keyword in one training review has a tiny scale, so test
        z-scores reach about 100).
    meta_features
        ``"counts"`` (default: the transposed raw training counts), ``"ppmi"`` or ``"lsa"``
        (embeddings learned from the expert set's counts, never its ratings), or the path of
        a CSV/Parquet table indexed by keyword (:func:`~elicit.data.metafeatures.meta_features`).
    meta_dim
        Embedding dimensions of ``"ppmi"`` and ``"lsa"`` (ignored otherwise).

    Raises
    ------
    ElicitError
        If ``standardize`` is unknown, the split impossible or the meta-features unbuildable.
    """
    check_standardize(standardize)
    if seed is not None:
        check_int(seed, f"seed must be a non-negative integer or None, got {seed!r}", 0)
    embedded = isinstance(meta_features, str) and meta_features in EMBEDDINGS
    dim = check_meta_dim(meta_dim) if embedded else None
    rng = np.random.default_rng(seed)
    train, test, expert = split_indices(dataset.n, rng, n_model, n_train)
    counts = dataset.counts.astype(float)
    y = dataset.ratings.astype(float)

    if standardize == "train":
        # operation for operation as before, so old runs reproduce bit for bit
        X_train, mu, scale = standardise(counts[train])
    else:
        # inputs only: nothing about y_test leaks
        _, mu, scale = standardise(counts[np.concatenate([train, test])])
        X_train = (counts[train] - mu) / scale
    X_test = (counts[test] - mu) / scale
    y_mean = float(y[train].mean())
    X_expert = standardise(counts[expert])[0] if expert.size else np.zeros((0, dataset.p))
    if embedded and expert.size < 2:
        raise ElicitError(f"meta-features {meta_features!r} are learned from the reviews outside "
                          f"the model's {n_model}, but {dataset.name} leaves {expert.size}; "
                          "use a larger data set or --meta-features counts")
    # the embeddings read only the expert set's inputs, never its ratings
    U = build_meta_features(meta_features, counts[expert], dim=dim or DEFAULT_META_DIM,
                            train_counts=counts[train], feature_names=dataset.vocabulary)
    return RunData(
        X_train=X_train, y_train=y[train] - y_mean, X_test=X_test, y_test=y[test],
        y_mean=y_mean, U=U, X_expert=X_expert, y_expert=y[expert],
        feature_names=list(dataset.vocabulary), x_mean=mu, x_scale=scale,
        train_idx=train, test_idx=test, expert_idx=expert, seed=seed, name=dataset.name,
        standardize=standardize, meta_features=os.fspath(meta_features), meta_dim=dim)
