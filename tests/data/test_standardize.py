"""Tests of the standardisation choice of prepare_run: "model" (default) and "train"."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import needs_data

from elicit.data import STANDARDIZE_CHOICES, BowDataset, prepare_run
from elicit.data.splits import split_indices, standardise
from elicit.errors import ElicitError


def _toy(n=80, p=9, seed=0) -> BowDataset:
    rng = np.random.default_rng(seed)
    counts = rng.poisson(0.4, size=(n, p))
    counts[:, 2] = 0                # never occurs: constant in every subset
    counts[:, 5] = 0
    counts[rng.integers(n), 5] = 4  # occurs once: rare, like most keywords
    return BowDataset(counts, rng.integers(1, 6, size=n), [f"w{i}" for i in range(p)], "toy")


def _old_arrays(dataset: BowDataset, seed, n_model=1000, n_train=100) -> dict:
    """The arrays of prepare_run as it was before the choice existed (training statistics)."""
    rng = np.random.default_rng(seed)
    train, test, expert = split_indices(dataset.n, rng, n_model, n_train)
    counts = dataset.counts.astype(float)
    X_train, mu, scale = standardise(counts[train])
    X_test = (counts[test] - mu) / scale
    X_expert, _, _ = standardise(counts[expert])
    return {"X_train": X_train, "X_test": X_test, "X_expert": X_expert, "x_mean": mu,
            "x_scale": scale, "U": counts[train].T}


def _model_stats(dataset: BowDataset, run) -> tuple[np.ndarray, np.ndarray]:
    """Column mean and scale of the model reviews, computed independently."""
    rows = np.union1d(run.train_idx, run.test_idx)
    X = dataset.counts[rows].astype(np.float64)
    mean = X.sum(axis=0) / len(rows)
    sd = np.sqrt(((X - mean) ** 2).sum(axis=0) / len(rows))
    return mean, np.where(sd > 0, sd, 1.0)


def test_choices_and_validation():
    assert STANDARDIZE_CHOICES == ("model", "train")
    ds = _toy()
    assert prepare_run(ds, 0, n_model=40, n_train=10).standardize == "model"   # the default
    for bad in ("test", "Model", None, 1):
        with pytest.raises(ElicitError, match=r"standardize must be 'model' .* or 'train'") as e:
            prepare_run(ds, 0, n_model=40, n_train=10, standardize=bad)
        assert "\n" not in str(e.value)


def test_train_reproduces_old_arrays_bit_for_bit():
    ds = _toy()
    for seed in (0, 7):
        r = prepare_run(ds, seed, n_model=40, n_train=15, standardize="train")
        for k, v in _old_arrays(ds, seed, 40, 15).items():
            assert np.array_equal(getattr(r, k), v), k


def test_model_uses_model_rows_statistics():
    ds = _toy()
    r = prepare_run(ds, 3, n_model=40, n_train=15)
    mean, scale = _model_stats(ds, r)
    assert np.allclose(r.x_mean, mean) and np.allclose(r.x_scale, scale)
    c = ds.counts.astype(float)
    assert np.allclose(r.X_train, (c[r.train_idx] - mean) / scale)
    assert np.allclose(r.X_test, (c[r.test_idx] - mean) / scale)
    # Constant columns keep scale 1 and become zeros.
    assert r.x_scale[2] == 1.0 and np.all(r.X_train[:, 2] == 0) and np.all(r.X_test[:, 2] == 0)
    # The expert pool of the sample-addition loops is in the same coordinates ...
    pool = r.standardize_counts(ds.counts[r.expert_idx])
    assert np.allclose(pool, (c[r.expert_idx] - mean) / scale)
    with pytest.raises(ElicitError, match=r"shape \(n, 9\)"):
        r.standardize_counts(np.zeros((2, 3)))
    # ... while the LASSO expert's own data keep their own statistics, whatever the choice.
    rt = prepare_run(ds, 3, n_model=40, n_train=15, standardize="train")
    assert np.array_equal(r.X_expert, rt.X_expert)
    assert np.array_equal(r.U, rt.U) and r.y_mean == rt.y_mean
    assert np.array_equal(r.y_train, rt.y_train) and np.array_equal(r.y_test, rt.y_test)


def test_model_statistics_ignore_every_rating():
    ds = _toy()
    r = prepare_run(ds, 5, n_model=40, n_train=15)
    ratings = ds.ratings.copy()
    ratings[r.test_idx] = 6 - ratings[r.test_idx]         # other test ratings
    ratings[r.expert_idx] = 1
    ds2 = BowDataset(ds.counts, ratings, ds.vocabulary, "toy")
    r2 = prepare_run(ds2, 5, n_model=40, n_train=15)
    for k in ("X_train", "X_test", "x_mean", "x_scale", "X_expert"):
        assert np.array_equal(getattr(r, k), getattr(r2, k)), k
    assert not np.array_equal(r.y_test, r2.y_test)


@needs_data
@pytest.mark.parametrize("seed", [0, 1])
def test_train_reproduces_old_arrays_on_amazon(seed, paper_dataset):
    ds = paper_dataset("amazon")
    r = prepare_run(ds, seed, standardize="train")
    for k, v in _old_arrays(ds, seed).items():
        assert np.array_equal(getattr(r, k), v), k


@needs_data
@pytest.mark.parametrize("name", ["amazon", "yelp"])
def test_model_standardisation_on_real_data(name, paper_dataset):
    ds = paper_dataset(name)
    r = prepare_run(ds, 0)
    mean, scale = _model_stats(ds, r)
    assert np.allclose(r.x_mean, mean) and np.allclose(r.x_scale, scale)
    Z = np.vstack([r.X_train, r.X_test])                  # the 1000 model rows
    assert Z.shape == (1000, ds.p)
    assert np.allclose(Z.mean(axis=0), 0, atol=1e-12)
    var = Z.var(axis=0)
    constant = r.x_scale == 1.0
    assert np.allclose(var[~constant], 1) and np.all(var[constant] == 0)
    # A column standardised over n rows has |z| <= sqrt(n - 1), so no test value can explode.
    assert np.abs(Z).max() <= np.sqrt(999) + 1e-9
    # With training statistics the test rows go far beyond that bound (93 on Amazon seed 0).
    rt = prepare_run(ds, 0, standardize="train")
    assert np.abs(rt.X_test).max() > 2 * np.abs(r.X_test).max()
    assert np.abs(rt.X_test).max() > np.sqrt(999)
