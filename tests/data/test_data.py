"""Tests of elicit.data: data-dir resolution, loaders, the feature rule, splits, runs."""

from __future__ import annotations

import gzip
import json
import re
from pathlib import Path

import numpy as np
import pytest
from conftest import REAL_DATA_DIR, needs_data
from helpers import write_jsonl

from elicit import data
from elicit.data import (
    DATA_ENV,
    PAPER_FILES,
    BowDataset,
    load_bow,
    load_dataset,
    load_paper_bow,
    load_raw_reviews,
    load_stopwords,
    prepare_run,
    resolve_data_dir,
    select_features,
    split_indices,
    vectorize_texts,
)
from elicit.data import files as data_files
from elicit.errors import ElicitError

REAL = REAL_DATA_DIR


@pytest.fixture
def amazon(paper_dataset) -> BowDataset:
    return paper_dataset("amazon")


@pytest.fixture
def yelp(paper_dataset) -> BowDataset:
    return paper_dataset("yelp")


STOP = frozenset({"the", "a", "of", "not", "at", "all", "was", "i", "it"})


# --------------------------------------------------------------------------------------------
# data-dir resolution
# --------------------------------------------------------------------------------------------

def _dir_with(tmp_path: Path, name: str, files=("x.txt",)) -> Path:
    d = tmp_path / name
    d.mkdir()
    for f in files:
        (d / f).write_text("x\n")
    return d


def test_option_beats_env(tmp_path, monkeypatch):
    opt, env = _dir_with(tmp_path, "opt"), _dir_with(tmp_path, "env")
    monkeypatch.setenv(DATA_ENV, str(env))
    assert resolve_data_dir(opt, required=["x.txt"]) == opt
    assert resolve_data_dir(str(opt)) == opt


def test_env_beats_defaults(tmp_path, monkeypatch):
    env, dflt = _dir_with(tmp_path, "env"), _dir_with(tmp_path, "dflt")
    monkeypatch.setattr(data_files, "default_data_dirs", lambda: [dflt])
    monkeypatch.setenv(DATA_ENV, str(env))
    assert resolve_data_dir(required=["x.txt"]) == env
    monkeypatch.delenv(DATA_ENV)
    assert resolve_data_dir(required=["x.txt"]) == dflt


def test_defaults_order_and_fallback(tmp_path, monkeypatch):
    monkeypatch.delenv(DATA_ENV, raising=False)
    repo_data = _dir_with(tmp_path, "repo_data", files=("a.txt",))
    shared = _dir_with(tmp_path, "shared", files=("a.txt", "b.txt"))
    monkeypatch.setattr(data_files, "default_data_dirs", lambda: [repo_data, shared])
    assert resolve_data_dir(required=["a.txt"]) == repo_data
    # repo/data lacks b.txt: fall through to shared.
    assert resolve_data_dir(required=["b.txt"]) == shared
    with pytest.raises(ElicitError, match=r"could not find the file\(s\) c.txt; searched") as e:
        resolve_data_dir(required=["c.txt"])
    msg = str(e.value)
    assert "c.txt" in msg and str(repo_data) in msg and str(shared) in msg
    assert "knowledge-elicitation-for-linear-regression" in msg


def test_default_dirs_are_repo_relative():
    # files.py is <repo>/elicit/data/files.py, one folder below the elicit package.
    pkg = Path(data_files.__file__).resolve().parent.parent
    assert (pkg / "__init__.py").is_file() and pkg.name == "elicit"
    assert data.default_data_dirs() == [pkg.parent / "data", pkg.parent.parent / "shared" / "data"]


def test_an_installed_copy_looks_in_no_folders_beside_site_packages(tmp_path, monkeypatch):
    # installed, files.py is site-packages/elicit/data/files.py: site-packages/data and
    # lib/pythonX.Y/shared/data are no user's data directory, so the message names neither
    # and says how to get the data instead
    monkeypatch.delenv(DATA_ENV, raising=False)
    site = tmp_path / "lib" / "python3.11" / "site-packages"
    (site / "data").mkdir(parents=True)
    (site / "data" / "c.txt").write_text("")
    # where the installed module is (the function reads its __file__ when called)
    monkeypatch.setattr(data_files, "__file__", str(site / "elicit" / "data" / "files.py"))
    assert data.default_data_dirs() == []
    with pytest.raises(ElicitError) as e:
        resolve_data_dir(required=["c.txt"])
    assert str(tmp_path) not in str(e.value) and "elicit data fetch --data-dir" in str(e.value)


def test_explicit_dir_missing_file_is_final(tmp_path, monkeypatch):
    opt = _dir_with(tmp_path, "opt")
    monkeypatch.setattr(data_files, "default_data_dirs", lambda: [_dir_with(tmp_path, "d", ["y"])])
    with pytest.raises(ElicitError, match="has no file y; searched only") as e:
        resolve_data_dir(opt, required=["y"])
    assert str(opt) in str(e.value) and "elicit data fetch" in str(e.value)
    monkeypatch.setenv(DATA_ENV, str(tmp_path / "nope"))
    with pytest.raises(ElicitError, match="does not exist"):
        resolve_data_dir(required=["y"])


# --------------------------------------------------------------------------------------------
# feature rule on constructed data
# --------------------------------------------------------------------------------------------

def test_select_features_tiny():
    vocab = ["the", "good", "the_good", "of_the", "", "bad", "not_bad", "rare", "a__"]
    #        stop   keep    keep        stop      none  keep  keep       df=1    stop
    counts = np.array([
        [1, 1, 1, 1, 1, 0, 0, 1, 1],
        [2, 1, 0, 1, 1, 1, 1, 0, 1],
        [1, 0, 1, 0, 1, 2, 1, 0, 1],
    ])
    keep = select_features(counts, vocab, STOP, min_df=2)
    assert [vocab[i] for i in keep] == ["good", "the_good", "bad", "not_bad"]
    keep1 = select_features(counts, vocab, STOP, min_df=1)
    assert [vocab[i] for i in keep1] == ["good", "the_good", "bad", "not_bad", "rare"]
    with pytest.raises(ElicitError, match="empty after filtering"):
        select_features(counts, vocab, STOP, min_df=4)
    with pytest.raises(ElicitError, match="min_df must be a positive integer"):
        select_features(counts, vocab, STOP, min_df=0)


def test_vectorize_texts_rule():
    texts = ["not good at all", "Not good.", "the food was good", "I don’t like it at all",
             "not good food"]
    ds = vectorize_texts(texts, [1, 2, 4, 2, 3], STOP | {"don't"}, min_df=2)
    v = ds.vocabulary
    assert "not_good" in v and "good" in v and "food" in v   # bigram with a content word kept
    assert "at_all" not in v and "not" not in v              # all tokens are stop words
    assert "don't" not in v                                  # typographic apostrophe normalised
    assert all(" " not in w for w in v)
    j = v.index("not_good")
    assert list(ds.counts[:, j]) == [1, 1, 0, 0, 1]
    assert np.all(np.count_nonzero(ds.counts, axis=0) >= 2)
    assert list(ds.ratings) == [1, 2, 4, 2, 3]
    # 'good' is in 4 texts, 'not_good' in 3: at most 3 keeps two keywords
    with pytest.raises(ElicitError, match=r"empty after filtering.*use min_df=3 or lower"):
        vectorize_texts(texts, [1, 2, 4, 2, 3], STOP, min_df=5)
    with pytest.raises(ElicitError, match=r"in >= 6 of 5 texts; .* use min_df=3 or lower"):
        vectorize_texts(texts, [1, 2, 4, 2, 3], STOP, min_df=6)


# --------------------------------------------------------------------------------------------
# loaders on small files, good and bad
def test_too_high_a_min_df_names_the_largest_that_keeps_two_keywords():
    """Where min_df leaves no keyword or only one, the message names a value that keeps 2
    (the largest: one more leaves fewer), for raw texts and for a count matrix."""
    texts = ["not good at all", "Not good.", "the food was good", "I don’t like it at all",
             "not good food"]
    ratings = [1, 2, 4, 2, 3]

    def suggested(err) -> int:
        m = re.search(r"use min_df=(\d+) or lower", str(err.value))
        assert m and "\n" not in str(err.value), str(err.value)
        return int(m.group(1))

    for min_df in (4, 5):  # 'good' alone is in 4 texts; nothing in 5
        with pytest.raises(ElicitError) as err:
            vectorize_texts(texts, ratings, STOP, min_df=min_df)
        best = suggested(err)
        assert vectorize_texts(texts, ratings, STOP, min_df=best).p >= 2
        with pytest.raises(ElicitError, match=f"min_df={best} or lower"):
            vectorize_texts(texts, ratings, STOP, min_df=best + 1)
    vocab = ["good", "bad", "the", "rare"]
    counts = np.array([[1, 1, 1, 0], [2, 0, 1, 1], [1, 1, 1, 0], [0, 3, 1, 0]])
    with pytest.raises(ElicitError) as err:
        select_features(counts, vocab, STOP, min_df=4)
    best = suggested(err)
    assert len(select_features(counts, vocab, STOP, min_df=best)) == 2
    with pytest.raises(ElicitError, match=f"min_df={best} or lower"):
        select_features(counts, vocab, STOP, min_df=best + 1)


# --------------------------------------------------------------------------------------------

def test_load_bow_small(tmp_path):
    voc = tmp_path / "v.json"
    voc.write_text(json.dumps({"source": "t", "keywords_a": ["x", "y_z", ""], "other": ["x"]}))
    bow = write_jsonl(tmp_path / "b.jsonl.gz",
                       [{"rating": 5, "bow": {"x": 2, "": 1}}, {"rating": 1.0, "bow": {}}])
    ds = load_bow(bow, voc, "keywords_a")
    assert ds.counts.tolist() == [[2, 0, 1], [0, 0, 0]]
    assert ds.ratings.tolist() == [5, 1]
    with pytest.raises(ElicitError, match="say which"):
        load_bow(bow, voc)          # two lists and no key


@pytest.mark.parametrize("rec,pattern", [
    ({"bow": {"x": 1}}, r"line 2: missing field 'rating'"),
    ({"rating": 3}, r"line 2: missing field 'bow'"),
    ({"rating": 3.5, "bow": {}}, r"line 2: rating must be an integer"),
    ({"rating": "good", "bow": {}}, r"rating must be an integer"),
    ({"rating": True, "bow": {}}, r"rating must be an integer"),
    ({"rating": 3, "bow": {"w": 1}}, r"keyword 'w' is not in the vocabulary"),
    ({"rating": 3, "bow": {"x": -1}}, r"non-negative integer"),
])
def test_load_bow_rejects(tmp_path, rec, pattern):
    voc = tmp_path / "v.json"
    voc.write_text(json.dumps(["x", "y"]))
    bow = write_jsonl(tmp_path / "b.jsonl", [{"rating": 1, "bow": {"x": 1}}, rec])
    with pytest.raises(ElicitError, match=pattern):
        load_bow(bow, voc)


def test_bad_gzip_and_json(tmp_path):
    voc = tmp_path / "v.json"
    voc.write_text(json.dumps(["x"]))
    bad = tmp_path / "b.jsonl.gz"
    bad.write_bytes(b"this is not gzip")
    with pytest.raises(ElicitError, match="not a gzip file"):
        load_bow(bad, voc)
    good = gzip.compress(b'{"rating": 1, "bow": {"x": 1}}\n' * 200)
    trunc = tmp_path / "t.jsonl.gz"
    trunc.write_bytes(good[: len(good) // 2])     # gzip magic but cut off
    with pytest.raises(ElicitError, match="cannot read"):
        load_bow(trunc, voc)
    badjson = tmp_path / "j.jsonl"
    badjson.write_text('{"rating": 1, "bow": {}}\n{"rating": 1,\n')
    with pytest.raises(ElicitError, match="line 2: invalid JSON"):
        load_bow(badjson, voc)
    badvoc = tmp_path / "bv.json"
    badvoc.write_text("[1, 2")
    with pytest.raises(ElicitError, match="not valid JSON"):
        load_bow(badjson, badvoc)


def test_raw_user_files(tmp_path):
    recs = [{"text": "Great blender, works great", "rating": 5},
            {"text": "Broken blender, awful", "rating": "1"},
            {"text": "great value blender", "rating": 4}]
    sw = ["the", "a"]
    j = write_jsonl(tmp_path / "r.jsonl.gz", recs)
    ds = load_raw_reviews(j, min_df=2, stopwords=sw)
    assert ds.vocabulary == ["blender", "great"]
    assert ds.counts.tolist() == [[1, 2], [1, 0], [1, 1]]
    assert ds.ratings.tolist() == [5, 1, 4]
    csvp = tmp_path / "r.csv"
    csvp.write_text('text,rating\n"Great blender,\nworks great",5\n'
                    '"Broken blender, awful",1\ngreat value blender,4\n')
    ds2 = load_raw_reviews(csvp, min_df=2, stopwords=sw)
    assert ds2.counts.tolist() == ds.counts.tolist()

    bad = tmp_path / "bad.csv"
    bad.write_text("text,stars\nhello,5\n")
    with pytest.raises(ElicitError, match=r"line 2: no field 'rating'; the fields are 'text', "
                                          r"'stars'"):
        load_raw_reviews(bad, min_df=1, stopwords=sw)
    bad2 = write_jsonl(tmp_path / "bad2.jsonl", [recs[0], {"rating": 3}])
    with pytest.raises(ElicitError, match=r"line 2: no field 'text'; the fields are 'rating'"):
        load_raw_reviews(bad2, min_df=1, stopwords=sw)
    bad3 = write_jsonl(tmp_path / "bad3.jsonl", [recs[0], {"text": "x", "rating": 4.5}],
                       gz=True)
    with pytest.raises(ElicitError, match=r"line 2, field 'rating': rating must be an integer"):
        load_raw_reviews(bad3, min_df=1, stopwords=sw)
    with pytest.raises(ElicitError, match="empty after filtering"):
        load_raw_reviews(j, min_df=1, stopwords=["great", "blender", "works", "broken",
                                                  "awful", "value"])
    with pytest.raises(ElicitError, match="unknown file type"):
        load_raw_reviews(_touch(tmp_path / "r.txt"), min_df=1, stopwords=sw)


def _touch(p: Path) -> Path:
    p.write_text("")
    return p


# --------------------------------------------------------------------------------------------
# the shipped stop list
# --------------------------------------------------------------------------------------------

@pytest.fixture
def no_data_dir(tmp_path, monkeypatch):
    """No data directory anywhere: no option, no $ELICIT_DATA, empty defaults."""
    monkeypatch.delenv(DATA_ENV, raising=False)
    monkeypatch.setattr(data_files, "default_data_dirs", lambda: [tmp_path / "none"])


def test_shipped_stopwords_need_no_data_dir(no_data_dir):
    sw = load_stopwords()
    assert len(sw) == 570 and {"would", "a's", "the", "zero"} <= sw and "lot" not in sw
    assert data.SHIPPED_STOPWORDS.parent == Path(data_files.__file__).resolve().parent
    lines = data.SHIPPED_STOPWORDS.read_text(encoding="utf-8").splitlines()
    assert len(lines) == 571 and lines.count("would") == 2


def test_data_dir_stopwords_must_match_shipped(tmp_path, monkeypatch, no_data_dir):
    shipped = data.SHIPPED_STOPWORDS.read_text(encoding="utf-8")
    same = tmp_path / "same"
    same.mkdir()
    # Same words with Windows line endings: still the same list.
    (same / data.STOPWORDS_FILE).write_bytes(shipped.replace("\n", "\r\n").encode())
    assert load_stopwords(data_dir=same) == load_stopwords()
    monkeypatch.setenv(DATA_ENV, str(same))
    assert load_stopwords() == load_stopwords(data_dir=same)
    monkeypatch.delenv(DATA_ENV)
    other = tmp_path / "other"
    other.mkdir()
    (other / data.STOPWORDS_FILE).write_text(shipped + "lot\n", encoding="utf-8")
    with pytest.raises(ElicitError, match="differs from the SMART list shipped with elicit"):
        load_stopwords(data_dir=other)
    monkeypatch.setattr(data_files, "default_data_dirs", lambda: [tmp_path / "none", other])
    with pytest.raises(ElicitError, match=str(other)):
        load_stopwords()
    # An explicit file is used as it is, without comparison.
    assert "lot" in load_stopwords(other / data.STOPWORDS_FILE)
    # A data directory without the list: the shipped copy.
    empty = tmp_path / "empty"
    empty.mkdir()
    assert load_stopwords(data_dir=empty) == load_stopwords(same / data.STOPWORDS_FILE)
    with pytest.raises(ElicitError, match="does not exist"):
        load_stopwords(data_dir=tmp_path / "missing")


@needs_data
def test_shared_stopwords_identical_to_shipped():
    assert ((REAL / data.STOPWORDS_FILE).read_bytes()
            == data.SHIPPED_STOPWORDS.read_bytes())
    assert load_stopwords(data_dir=REAL) == load_stopwords(data.SHIPPED_STOPWORDS)


@needs_data
def test_paper_matrices_load_without_stop_list_in_data_dir(tmp_path, amazon):
    d = tmp_path / "d"
    d.mkdir()
    for f in PAPER_FILES["amazon"][:2]:
        (d / f).symlink_to(REAL / f)
    ds = load_dataset("amazon", d)
    assert ds.vocabulary == amazon.vocabulary and np.array_equal(ds.counts, amazon.counts)


# --------------------------------------------------------------------------------------------
# real files
# --------------------------------------------------------------------------------------------

@needs_data
def test_paper_bow_matrices_match_readme():
    a = load_paper_bow("amazon", REAL)
    assert a.counts.shape == (5149, 824)
    assert np.bincount(a.ratings, minlength=6).tolist() == [0, 1300, 1313, 0, 1262, 1274]
    assert a.counts.max() == 102 and int(np.sum(a.counts.sum(1) == 0)) == 1
    y = load_paper_bow("yelp", REAL)
    assert y.counts.shape == (4086, 828)
    assert np.bincount(y.ratings).tolist() == [0, 219, 315, 778, 1509, 1265]
    assert y.counts.max() == 59 and int(np.sum(y.counts.sum(1) == 0)) == 6
    # Independent check of the loaded counts: the source's 465-keyword vocabulary is exactly
    # the keywords occurring in more than 100 reviews of the 828-column matrix.
    m100 = json.loads((REAL / PAPER_FILES["yelp"][1]).read_text())["keywords_min100"]
    df = np.count_nonzero(y.counts, axis=0)
    assert set(m100) == {w for w, k in zip(y.vocabulary, df, strict=True) if k > 100}


@needs_data
def test_paper_feature_counts(amazon, yelp):
    # Measured facts of the data (also in shared/data/README.md); the paper reports 340/241.
    assert amazon.p == 337 and amazon.n == 5149
    assert yelp.p == 258 and yelp.n == 4086
    sw = load_stopwords(data_dir=REAL)
    for ds in (amazon, yelp):
        assert np.all(np.count_nonzero(ds.counts, axis=0) >= 100)
        assert not any(all(t in sw for t in w.split("_") if t) for w in ds.vocabulary)
    assert "" not in yelp.vocabulary
    # "as_a": both tokens are stop words; "a_lot": "lot" is not a SMART stop word.
    assert "as_a" not in amazon.vocabulary and "a_lot" in amazon.vocabulary
    # A lower threshold keeps more Yelp keywords (its base vocabulary is df > 50).
    assert load_dataset("yelp", REAL, min_df=51).p > yelp.p


@needs_data
def test_raw_reviews_real():
    a = load_raw_reviews("amazon", REAL, min_df=40)
    assert a.n == 2000
    assert np.bincount(a.ratings).tolist() == [0, 687, 313, 0, 246, 754]
    assert np.all(np.count_nonzero(a.counts, axis=0) >= 40) and 100 < a.p < 1000
    assert any("_" in w for w in a.vocabulary)
    y = load_raw_reviews("yelp", REAL)           # default min_df scales with corpus size
    assert y.n == 3610 and np.all(np.count_nonzero(y.counts, axis=0) >= data.default_min_df(3610))


# --------------------------------------------------------------------------------------------
# split and runs
# --------------------------------------------------------------------------------------------

def test_split_sizes_disjoint_deterministic():
    tr, te, ex = split_indices(5149, np.random.default_rng(3))
    assert (len(tr), len(te), len(ex)) == (100, 900, 4149)
    allidx = np.concatenate([tr, te, ex])
    assert np.array_equal(np.sort(allidx), np.arange(5149))
    tr2, te2, ex2 = split_indices(5149, np.random.default_rng(3))
    assert np.array_equal(tr, tr2) and np.array_equal(te, te2) and np.array_equal(ex, ex2)
    tr3, _, _ = split_indices(5149, np.random.default_rng(4))
    assert not np.array_equal(tr, tr3)
    tr4, te4, ex4 = split_indices(30, np.random.default_rng(0), n_model=20, n_train=5)
    assert (len(tr4), len(te4), len(ex4)) == (5, 15, 10)
    with pytest.raises(ElicitError, match="needs n_model"):
        split_indices(999, np.random.default_rng(0))
    with pytest.raises(ElicitError, match="must exceed n_train"):
        split_indices(50, np.random.default_rng(0), n_model=10, n_train=10)


def _toy(n=60, p=8, seed=0) -> BowDataset:
    rng = np.random.default_rng(seed)
    counts = rng.poisson(1.0, size=(n, p))
    counts[:, 2] = 0                # never occurs: constant in every subset
    return BowDataset(counts, rng.integers(1, 6, size=n), [f"w{i}" for i in range(p)], "toy")


def test_prepare_run_train_standardisation_uses_training_stats():
    # standardize="train": the literal reading of the paper (tests/test_standardize.py has
    # the default, "model").
    ds = _toy()
    r = prepare_run(ds, seed=7, n_model=40, n_train=15, standardize="train")
    assert r.standardize == "train"
    c = ds.counts.astype(float)
    tr = c[r.train_idx]
    mu, sd = tr.mean(0), tr.std(0)
    sd[sd == 0] = 1.0
    assert np.allclose(r.X_train, (tr - mu) / sd)
    assert np.allclose(r.X_test, (c[r.test_idx] - mu) / sd)
    assert np.allclose(r.X_train.mean(0), 0)
    nonconst = tr.std(0) > 0
    assert np.allclose(r.X_train.std(0)[nonconst], 1)
    assert np.all(r.X_train[:, 2] == 0) and np.all(r.X_test[:, 2] == 0)
    assert r.x_scale[2] == 1.0 and np.array_equal(r.x_mean, mu)
    # test data are not re-standardised with their own statistics
    assert not np.allclose(r.X_test.mean(0)[nonconst], 0)
    y = ds.ratings.astype(float)
    assert r.y_mean == pytest.approx(y[r.train_idx].mean())
    assert np.allclose(r.y_train, y[r.train_idx] - y[r.train_idx].mean())
    assert np.array_equal(r.y_test, y[r.test_idx])
    assert r.U.shape == (8, 15) and np.array_equal(r.U, tr.T)
    ex = c[r.expert_idx]
    esd = ex.std(0)
    esd[esd == 0] = 1.0
    assert np.allclose(r.X_expert, (ex - ex.mean(0)) / esd)
    assert np.array_equal(r.y_expert, y[r.expert_idx])
    assert r.feature_names == ds.vocabulary


def test_standardise_constant_column_gets_scale_one():
    X = np.array([[3.0, 1.0], [3.0, 2.0], [3.0, 6.0]])
    Z, mean, scale = data.standardise(X)
    assert scale[0] == 1.0 and np.all(Z[:, 0] == 0)
    assert scale[1] == pytest.approx(np.std([1, 2, 6]))
    # a test value of 5 in the constant column is shifted, not blown up
    assert ((np.array([5.0, 1.0]) - mean) / scale)[0] == pytest.approx(2.0)


@needs_data
def test_prepare_run_real_deterministic(amazon):
    r1, r2 = prepare_run(amazon, 11), prepare_run(amazon, 11)
    assert r1.X_train.shape == (100, 337) and r1.X_test.shape == (900, 337)
    assert r1.X_expert.shape == (5149 - 1000, 337) and r1.U.shape == (337, 100)
    assert np.array_equal(r1.X_train, r2.X_train) and np.array_equal(r1.U, r2.U)
    r3 = prepare_run(amazon, 12)
    assert not np.array_equal(r1.train_idx, r3.train_idx)
    assert np.all(np.isfinite(r1.X_test)) and np.all(np.isfinite(r1.X_expert))
