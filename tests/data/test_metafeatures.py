"""Meta-features of keywords (elicit.data.metafeatures) and their wiring into runs and CLIs."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest
from helpers import one_line

from elicit.data import BowDataset, prepare_run
from elicit.data.metafeatures import (
    TYPICAL_SQ_DISTANCE,
    lsa_embedding,
    meta_features,
    pair_sq_distances,
    polarity_auc,
    ppmi_embedding,
)
from elicit.errors import ElicitError


def brute_auc(U: np.ndarray, groups: np.ndarray) -> float:
    known = [k for k in range(len(groups)) if groups[k] >= 0]
    same, cross = [], []
    for a, b in itertools.combinations(known, 2):
        d = float(np.sum((U[a] - U[b]) ** 2))
        (same if groups[a] == groups[b] else cross).append(d)
    wins = 0.0
    for s in same:
        for c in cross:
            wins += 1.0 if s < c else 0.5 if s == c else 0.0
    return wins / (len(same) * len(cross))


@pytest.mark.parametrize("seed", range(6))
def test_polarity_auc_matches_brute_force(seed):
    rng = np.random.default_rng(seed)
    p = int(rng.integers(5, 14))
    # Small integer coordinates make tied distances common, so ties are exercised.
    U = rng.integers(0, 3, size=(p, 2)).astype(float)
    groups = rng.integers(-1, 2, size=p)
    groups[:4] = [0, 0, 1, 1]
    assert polarity_auc(U, groups) == pytest.approx(brute_auc(U, groups), abs=1e-12)


def test_polarity_auc_extremes():
    U = np.array([[0.0], [0.1], [5.0], [5.1]])
    assert polarity_auc(U, np.array([0, 0, 1, 1])) == 1.0
    # Square corners, each group on a diagonal: every same pair is farther than every cross.
    square = np.array([[0.0, 0.0], [1.0, 1.0], [1.0, 0.0], [0.0, 1.0]])
    assert polarity_auc(square, np.array([0, 0, 1, 1])) == 0.0
    assert polarity_auc(np.zeros((4, 2)), np.array([0, 0, 1, 1])) == 0.5
    assert np.isnan(polarity_auc(U, np.array([0, 0, 0, -1])))  # no cross-group pair
    with pytest.raises(ElicitError, match=r"groups has 3 entries but U has shape \(4, 1\)"):
        polarity_auc(U, np.array([0, 1, 0]))


def corpus(n: int = 60, seed: int = 0) -> BowDataset:
    """Two keyword groups that co-occur only within the group, plus one absent keyword."""
    rng = np.random.default_rng(seed)
    counts = np.zeros((n, 9), dtype=int)
    for r in range(n):
        group = [0, 1, 2, 3] if r % 2 == 0 else [4, 5, 6, 7]
        words = rng.choice(group, size=2, replace=False)
        counts[r, words] = rng.integers(1, 4, size=2)
    ratings = rng.integers(1, 6, size=n)
    return BowDataset(counts, ratings, [f"w{k}" for k in range(9)], name="toy")


@pytest.mark.parametrize("kind", ["ppmi", "lsa"])
def test_embedding_separates_cooccurring_groups(kind):
    ds = corpus()
    U = meta_features(kind, ds.counts, dim=2)
    assert U.shape == (9, 2) and np.all(np.isfinite(U))
    assert np.all(U[8] == 0)  # w8 never occurs: the origin, not NaN
    assert polarity_auc(U, np.array([0, 0, 0, 0, 1, 1, 1, 1, -1])) == pytest.approx(1.0)


@pytest.mark.parametrize("kind, dim", [("ppmi", 3), ("lsa", 4)])
def test_embedding_deterministic_shaped_scaled(kind, dim):
    counts = np.random.default_rng(1).poisson(0.4, size=(80, 12))
    a = meta_features(kind, counts, dim=dim)
    b = meta_features(kind, counts.copy(), dim=dim)
    assert a.shape == (12, dim)
    assert np.array_equal(a, b)
    assert np.median(pair_sq_distances(a)) == pytest.approx(TYPICAL_SQ_DISTANCE)
    # The sign convention (before rows are made unit length): each column's
    # largest-magnitude entry is positive.
    raw = (ppmi_embedding if kind == "ppmi" else lsa_embedding)(counts, dim)
    assert np.all(raw[np.argmax(np.abs(raw), axis=0), np.arange(dim)] > 0)


def toy_dataset(seed: int = 3) -> BowDataset:
    rng = np.random.default_rng(seed)
    counts = rng.poisson(0.3, size=(140, 15))
    return BowDataset(counts, rng.integers(1, 6, size=140), [f"k{i}" for i in range(15)],
                      name="toy")


def test_counts_is_bit_identical_to_the_old_U():
    ds = toy_dataset()
    run = prepare_run(ds, 5, n_model=100, n_train=20)
    old = ds.counts.astype(float)[run.train_idx].T.copy()
    assert run.U.dtype == old.dtype and np.array_equal(run.U, old)
    assert np.array_equal(run.U, ds.counts[run.train_idx].T)
    assert run.meta_features == "counts" and run.meta_dim is None


@pytest.mark.parametrize("kind", ["ppmi", "lsa"])
def test_embeddings_use_no_ratings(kind):
    ds = toy_dataset()
    other = BowDataset(ds.counts, np.random.default_rng(9).permutation(ds.ratings),
                       ds.vocabulary, name="toy")
    a = prepare_run(ds, 5, n_model=100, n_train=20, meta_features=kind, meta_dim=3)
    b = prepare_run(other, 5, n_model=100, n_train=20, meta_features=kind, meta_dim=3)
    assert a.U.shape == (15, 3) and a.meta_dim == 3
    assert np.array_equal(a.U, b.U)
    # ... and only the expert set's counts.
    assert np.array_equal(a.U, meta_features(kind, ds.counts[a.expert_idx], dim=3))


def test_embedding_errors():
    ds = toy_dataset()
    with pytest.raises(ElicitError, match=r"meta_dim must be a positive integer.*got 0"):
        prepare_run(ds, 5, n_model=100, n_train=20, meta_features="ppmi", meta_dim=0)
    # the default 10 named no option a user could change
    with pytest.raises(ElicitError, match=r"meta_dim 20 exceeds the 15 features; choose at "
                                          r"most 15 \(--meta-dim, default 10\)"):
        prepare_run(ds, 5, n_model=100, n_train=20, meta_features="lsa", meta_dim=20)
    with pytest.raises(ElicitError, match=r"leaves 0; use a larger data set"):
        prepare_run(ds, 5, n_model=140, n_train=20, meta_features="ppmi")
    with pytest.raises(ElicitError, match=r"'tfidf' is neither one of counts, ppmi, lsa nor"):
        prepare_run(ds, 5, n_model=100, n_train=20, meta_features="tfidf")


def test_file_aligned_by_name_and_scaled(tmp_path):
    ds = toy_dataset()
    names = list(ds.vocabulary)
    rng = np.random.default_rng(0)
    vals = rng.normal(size=(15, 2))
    table = pd.DataFrame(vals, index=names[::-1], columns=["a", "b"])  # another order
    table.index.name = "keyword"
    table.to_csv(tmp_path / "m.csv")
    run = prepare_run(ds, 5, n_model=100, n_train=20, meta_features=tmp_path / "m.csv")
    expected = table.loc[names].to_numpy()
    scale = run.U[0, 0] / expected[0, 0]
    assert np.allclose(run.U, expected * scale)
    assert np.median(pair_sq_distances(run.U)) == pytest.approx(TYPICAL_SQ_DISTANCE)


def test_file_names_are_read_as_written(tmp_path):
    # pandas read the name column as data: "01" became 1.0, "NA" and "null" became NaN, and
    # a file naming exactly the features was refused with names it does not hold
    names = ["01", "02", "NA", "null"]
    (tmp_path / "m.csv").write_text("feature,u1\n01,0.1\n02,0.9\nNA,0.3\nnull,0.5\n")
    U = meta_features(tmp_path / "m.csv", feature_names=names[::-1])
    assert np.allclose(U[:, 0] / U[-1, 0], [5.0, 3.0, 9.0, 1.0])


@pytest.mark.parametrize("edit, message", [
    (lambda t: t.drop(index="k3"), r"no row for feature\(s\) 'k3'"),
    (lambda t: pd.concat([t, t.iloc[:1]]), r"name feature\(s\) 'k0' more than once"),
    (lambda t: t.assign(c="x"), r"must be numeric; column\(s\) 'c' are not"),
    (lambda t: t.assign(a=t.a.where(t.index != "k2")), r"missing, infinite or huge \(beyond "
                                                       r"1e\+150\) values for feature\(s\) 'k2'"),
    # beyond 1e154 the scaling's squares overflowed and every meta-feature became 0
    (lambda t: t.assign(b=t.b.where(t.index != "k4", 1e160)), r"huge \(beyond 1e\+150\) "
                                                               r"values for feature\(s\) 'k4'"),
    (lambda t: t.rename(index={"k1": "zz"}), r"unknown feature\(s\) 'zz'"),
])
def test_file_errors_are_one_line(tmp_path, edit, message):
    ds = toy_dataset()
    table = pd.DataFrame(np.ones((15, 2)) * np.arange(15)[:, None],
                         index=list(ds.vocabulary), columns=["a", "b"])
    edit(table).to_csv(tmp_path / "m.csv")
    with pytest.raises(ElicitError, match=message) as info:
        meta_features(tmp_path / "m.csv", feature_names=ds.vocabulary)
    one_line(str(info.value))


# --------------------------------------------------------------------------------------------
# config.json of realdata sweeps
# --------------------------------------------------------------------------------------------
