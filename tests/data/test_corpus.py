"""Tests of load_corpus: any JSONL/CSV review file becomes a BowDataset with the paper's rule."""

from __future__ import annotations

import csv
import gzip
import json
from pathlib import Path

import numpy as np
import pytest
from conftest import REAL_DATA_DIR, needs_data
from helpers import write_jsonl

from elicit.data import (
    RAW_FILES,
    default_min_df,
    load_corpus,
    load_raw_reviews,
    load_stopwords,
    prepare_run,
    vectorize_texts,
)
from elicit.errors import ElicitError

GOOD = ["great", "excellent", "sturdy", "love", "perfect"]
BAD = ["broken", "awful", "leaks", "refund", "flimsy"]
NEUTRAL = ["blender", "kettle", "toaster", "pan", "lid", "handle"]


def _reviews(n: int, seed: int = 0) -> list[tuple[str, int]]:
    """Short synthetic reviews whose rating follows their good and bad words."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        rating = int(rng.integers(1, 6))
        pool = GOOD if rating >= 4 else BAD if rating <= 2 else NEUTRAL
        words = list(rng.choice(pool, 2)) + list(rng.choice(NEUTRAL, 2)) + ["the", "it", "is"]
        rng.shuffle(words)
        out.append((" ".join(words).capitalize() + ".", rating))
    return out


def _write_csv(path: Path, header: list[str], rows: list[list], gz: bool = False) -> Path:
    opener = gzip.open if gz else open
    with opener(path, "wt", encoding="utf-8", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(header)
        w.writerows(rows)
    return path


@pytest.fixture(scope="module")
def corpus_files(tmp_path_factory) -> dict[str, Path]:
    """The same 1200 reviews as JSONL.gz (fields body/stars) and CSV (columns review/score)."""
    d = tmp_path_factory.mktemp("corpus")
    revs = _reviews(1200)
    j = write_jsonl(d / "shop.jsonl.gz",
                     [{"id": k, "body": t, "stars": r, "extra": None}
                      for k, (t, r) in enumerate(revs)])
    c = _write_csv(d / "shop.csv", ["score", "review"], [[str(r), t] for t, r in revs])
    return {"jsonl": j, "csv": c}


def test_jsonl_and_csv_with_custom_fields(corpus_files):
    a = load_corpus(corpus_files["jsonl"], text_field="body", rating_field="stars")
    b = load_corpus(corpus_files["csv"], text_field="review", rating_field="score")
    assert a.n == b.n == 1200 and a.name == "shop" and a.source.endswith("shop.jsonl.gz")
    assert a.vocabulary == b.vocabulary and np.array_equal(a.counts, b.counts)
    assert np.array_equal(a.ratings, b.ratings)
    # The paper's rule with the default min_df scaled to the corpus (ceil(1200 * 100 / 5149)).
    assert default_min_df(1200) == 24
    assert np.all(np.count_nonzero(a.counts, axis=0) >= 24)
    sw = load_stopwords()
    assert not any(all(t in sw for t in w.split("_")) for w in a.vocabulary)
    assert {"great", "broken", "blender"} <= set(a.vocabulary)
    assert "the" not in a.vocabulary and "it_is" not in a.vocabulary     # all stop words
    assert any("_" in w for w in a.vocabulary)                           # bigrams kept
    # A run can be made from it.
    r = prepare_run(a, 0)
    assert r.X_train.shape == (100, a.p) and r.X_test.shape == (900, a.p)
    assert r.X_expert.shape == (200, a.p)


def test_options(corpus_files):
    kw = dict(text_field="body", rating_field="stars")
    uni = load_corpus(corpus_files["jsonl"], ngram_range=(1, 1), **kw)
    assert not any("_" in w for w in uni.vocabulary)
    capped = load_corpus(corpus_files["jsonl"], max_features=5, **kw)
    assert capped.p == 5
    mine = load_corpus(corpus_files["jsonl"], stopwords=["blender", "the"], min_df=2,
                       name="mine", **kw)
    assert "blender" not in mine.vocabulary and "it" in mine.vocabulary and mine.name == "mine"
    small = load_corpus(corpus_files["jsonl"], n_model=None, min_df=300, **kw)
    assert 0 < small.p < uni.p and np.all(np.count_nonzero(small.counts, axis=0) >= 300)


def test_errors(tmp_path, corpus_files):
    with pytest.raises(ElicitError, match="review file .*nope.jsonl does not exist"):
        load_corpus(tmp_path / "nope.jsonl")
    # Missing fields name the fields the file has.
    with pytest.raises(ElicitError, match=r"line 1: no field 'text'; the fields are 'id', "
                                          r"'body', 'stars', 'extra'"):
        load_corpus(corpus_files["jsonl"])
    with pytest.raises(ElicitError, match=r"line 2: no field 'rating'; the fields are "
                                          r"'score', 'review'"):
        load_corpus(corpus_files["csv"], text_field="review")
    with pytest.raises(ElicitError, match="field 'extra' is empty"):
        load_corpus(corpus_files["jsonl"], text_field="body", rating_field="extra")
    with pytest.raises(ElicitError, match="text_field must be a non-empty field name"):
        load_corpus(corpus_files["jsonl"], text_field="")
    # Non-numeric and fractional ratings.
    bad = _write_csv(tmp_path / "bad.csv", ["text", "rating"],
                     [["good blender", "5"], ["bad kettle", "five"]])
    with pytest.raises(ElicitError, match=r"bad.csv, line 3, field 'rating': rating must be an "
                                          r"integer, got 'five'"):
        load_corpus(bad, n_model=None)
    half = write_jsonl(tmp_path / "half.jsonl", [{"text": "ok", "rating": 3.5}])
    with pytest.raises(ElicitError, match="rating must be an integer, got 3.5"):
        load_corpus(half, n_model=None)
    num = write_jsonl(tmp_path / "num.jsonl", [{"text": 12, "rating": 3}])
    with pytest.raises(ElicitError, match="field 'text' must be a string, got int"):
        load_corpus(num, n_model=None)
    # Too few reviews for a run: say how many there are and how many are needed.
    few = write_jsonl(tmp_path / "few.jsonl",
                       [{"text": t, "rating": r} for t, r in _reviews(300)])
    with pytest.raises(ElicitError, match=r"has 300 reviews but a run needs n_model = 1000"):
        load_corpus(few)
    assert load_corpus(few, n_model=200).n == 300
    with pytest.raises(ElicitError, match="n_model must be a positive integer or None"):
        load_corpus(few, n_model=0)
    # No keyword survives the rule: name a min_df that keeps two.
    with pytest.raises(ElicitError, match=r"empty after filtering.*use min_df=\d+ or lower") as e:
        load_corpus(few, n_model=None, min_df=300)
    best = int(str(e.value).split("use min_df=")[1].split()[0])
    assert load_corpus(few, n_model=None, min_df=best).p >= 2
    stop = write_jsonl(tmp_path / "stop.jsonl",
                        [{"text": "it is the one", "rating": k % 5 + 1} for k in range(20)])
    with pytest.raises(ElicitError, match=r"0 are not all stop words and none of those occurs "
                                          r"in >= 2 of 20 texts; .*no min_df keeps 2"):
        load_corpus(stop, n_model=None)
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n")
    with pytest.raises(ElicitError, match="holds no reviews"):
        load_corpus(empty)
    with pytest.raises(ElicitError, match="unknown file type"):
        load_corpus(_write_csv(tmp_path / "x.tsv", ["text"], []))
    with pytest.raises(ElicitError) as info:
        load_corpus(few)
    assert "\n" not in str(info.value)                  # one line


@needs_data
def test_shipped_kitchen_reviews():
    path = REAL_DATA_DIR / RAW_FILES["amazon"]
    ds = load_corpus(path)
    assert ds.n == 2000 and ds.name == "amazon_kitchen_reviews"
    assert np.bincount(ds.ratings).tolist() == [0, 687, 313, 0, 246, 754]
    assert default_min_df(2000) == 39 and np.all(np.count_nonzero(ds.counts, axis=0) >= 39)
    assert ds.p == 379 and any("_" in w for w in ds.vocabulary)
    same = load_raw_reviews("amazon", REAL_DATA_DIR)
    assert same.vocabulary == ds.vocabulary and np.array_equal(same.counts, ds.counts)
    r = prepare_run(ds, 0)
    assert r.X_test.shape == (900, 379) and r.X_expert.shape == (1000, 379)
    assert np.abs(np.vstack([r.X_train, r.X_test])).max() <= np.sqrt(999)
    # Field names are the user's choice: the title is a text field too.
    titles = load_corpus(path, text_field="title", min_df=20)
    assert titles.n == 2000 and 0 < titles.p < ds.p


@pytest.mark.parametrize("kw, message", [
    # an empty vocabulary and a 0-feature run; -5 kept all but 5; 2.5 a TypeError
    ({"max_features": 0}, r"^max_features must be a positive integer or None, got 0$"),
    ({"max_features": -5}, r"^max_features must be a positive integer or None, got -5$"),
    ({"max_features": 2.5}, r"^max_features must be a positive integer or None, got 2\.5$"),
    # frozenset("the") is {t, h, e}: the SMART rule silently dropped
    ({"stopwords": "the"},
     r"^stopwords must be a collection of words such as \['the'\], not the string 'the'$")])
def test_corpus_arguments_are_checked(corpus_files, kw, message):
    with pytest.raises(ElicitError, match=message):
        load_corpus(corpus_files["csv"], text_field="review", rating_field="score", **kw)


def test_a_negative_split_seed_is_one_line(corpus_files):
    ds = load_corpus(corpus_files["csv"], text_field="review", rating_field="score")
    with pytest.raises(ElicitError, match=r"^seed must be a non-negative integer or None, "
                                          r"got -1$"):
        prepare_run(ds, seed=-1)


def test_a_review_of_the_corpus_readers(tmp_path):
    """What a review found (docs/reliability.md, "A review of the data layer ..."): each was
    read wrongly, refused with a misleading message or ended in a traceback."""
    revs = [{"text": t, "rating": r} for t, r in _reviews(60)]
    # a byte-order mark, as spreadsheets save "CSV UTF-8", in CSV and JSON Lines
    bom = tmp_path / "bom.csv"
    bom.write_text("text,rating\n" + "".join(f'"{r["text"]}",{r["rating"]}\n' for r in revs),
                   encoding="utf-8-sig")
    jbom = tmp_path / "bom.jsonl"
    jbom.write_text("".join(json.dumps(r) + "\n" for r in revs), encoding="utf-8-sig")
    for path in (bom, jbom):
        got = load_corpus(path, n_model=None, min_df=2)
        assert got.n == 60 and list(got.ratings) == [r["rating"] for r in revs]
    # a column named twice: csv.DictReader kept the last one as the target, without a word
    twice = _write_csv(tmp_path / "twice.csv", ["rating", "text", "rating"],
                       [[str(r["rating"]), r["text"], "1"] for r in revs])
    with pytest.raises(ElicitError, match=r"twice.csv names the column 'rating' twice; give "
                                          r"each column its own name"):
        load_corpus(twice, n_model=None, min_df=2)
    # a JSON array (a .json suffix is taken) was "invalid JSON (Expecting value)"
    array = tmp_path / "array.json"
    array.write_text(json.dumps(revs, indent=1))
    with pytest.raises(ElicitError, match=r"array.json, line \d+: invalid JSON .*; a corpus "
                                          r"holds one JSON object per line \(JSON Lines\)"):
        load_corpus(array, n_model=None, min_df=2)
    # a rating beyond int64 ended in an OverflowError traceback
    for big in (1e20, "100000000000000000000"):
        huge = write_jsonl(tmp_path / "huge.jsonl", revs[:-1] + [{"text": "ok", "rating": big}])
        with pytest.raises(ElicitError, match=r"line 60, field 'rating': rating .* is out of "
                                              r"range"):
            load_corpus(huge, n_model=None, min_df=2)


def test_a_corpus_too_small_for_a_run_says_what_a_run_takes(tmp_path):
    # `session new --corpus` was refused "for the simulated expert", which a session has not:
    # a session takes run R as a sweep splits it, and the split sets the expert's reviews aside
    from elicit.data.sources import corpus_source

    path = write_jsonl(tmp_path / "c.jsonl",
                        [{"text": t, "rating": r} for t, r in _reviews(1050)])
    with pytest.raises(ElicitError, match=r"c.jsonl has 1050 reviews: a run, as a sweep splits "
                                          r"the corpus, takes 1000 for the model and sets at "
                                          r"least 100 aside for a sweep's simulated expert; "
                                          r"use a corpus of at least 1100 reviews"):
        corpus_source(path, min_df=2).load()


def test_decomposed_accents_and_modifier_apostrophes_make_the_same_keywords(tmp_path):
    # text saved in Unicode's decomposed form (macOS file names, some editors) split "naïve"
    # at its combining mark into 'nai' and 've'; U+02BC, the apostrophe of some keyboards,
    # made "donʼt" a keyword the stop list did not catch
    revs = [{"text": t, "rating": r} for t, r in _reviews(60)]
    composed = revs + [{"text": "naïve kettle don't", "rating": 3}] * 3
    decomposed = revs + [{"text": "nai\u0308ve kettle don\u02bct", "rating": 3}] * 3
    a = load_corpus(write_jsonl(tmp_path / "a.jsonl", composed), n_model=None, min_df=2)
    b = load_corpus(write_jsonl(tmp_path / "b.jsonl", decomposed), n_model=None, min_df=2)
    assert "naïve" in a.vocabulary and b.vocabulary == a.vocabulary
    assert np.array_equal(a.counts, b.counts)


def test_a_csv_row_with_more_or_fewer_cells_than_the_header_is_refused(tmp_path):
    # an unquoted comma in a review put its tail in a cell of no column, silently dropped;
    # a short row was refused as "field 'text' is empty (null)"
    rows = [[str(r), t] for t, r in _reviews(60)]
    long = _write_csv(tmp_path / "long.csv", ["rating", "text"], rows + [["5", "sharp", "cheap"]])
    with pytest.raises(ElicitError, match=r"long.csv, line 62: 3 cells but the header names 2 "
                                          r"columns; quote a text that holds a comma$"):
        load_corpus(long, n_model=None, min_df=2)
    short = _write_csv(tmp_path / "short.csv", ["rating", "text"], rows[:5] + [["5"]] + rows)
    with pytest.raises(ElicitError, match=r"short.csv, line 7: 1 cells but the header names 2 "):
        load_corpus(short, n_model=None, min_df=2)


def test_a_corpus_below_the_model_reviews_says_what_a_sweep_takes(tmp_path):
    # below 1000 reviews the message asked for 1000 (a sweep needs 1100) or "a smaller
    # n_model", which no command-line option sets
    from elicit.data.sources import corpus_source

    path = write_jsonl(tmp_path / "c.jsonl", [{"text": t, "rating": r} for t, r in _reviews(500)])
    with pytest.raises(ElicitError, match=r"c.jsonl has 500 reviews: .* use a corpus of at "
                                          r"least 1100 reviews$"):
        corpus_source(path, min_df=2).load()


def test_a_corpus_a_run_cannot_use_is_refused_before_its_keywords_are_counted(tmp_path):
    # both refusals need only the count and the ratings, known once the file is read; they
    # came after the keywords were counted, so a --min-df that keeps none (or any other
    # problem of the keywords) was reported instead
    from elicit.data.sources import corpus_source

    small = write_jsonl(tmp_path / "c.jsonl", [{"text": t, "rating": r} for t, r in _reviews(500)])
    with pytest.raises(ElicitError, match=r"c.jsonl has 500 reviews: .* use a corpus of at "
                                          r"least 1100 reviews$"):
        corpus_source(small, min_df=100000).load()
    same = write_jsonl(tmp_path / "d.jsonl", [{"text": t, "rating": 4} for t, _ in
                                              _reviews(1100)])
    with pytest.raises(ElicitError, match=r"d.jsonl: every rating is 4; a model of the rating "
                                          r"needs at least 2 different ones"):
        corpus_source(same, min_df=100000).load()


def test_html_entities_in_reviews_make_the_keywords_of_the_characters_they_stand_for():
    # scraped reviews keep entities: "&amp;" was the keyword "amp", "&quot;" the keyword
    # "quot" (and "quot_sharp"), "don&#39;t" the words "don" and "39"
    coded = ["Fish &amp; chips, &quot;sharp&quot; and don&#39;t it&#x27;s &lt;b&gt;",
             "fish &amp; chips &#8211; café&nbsp;fine"]
    plain = ["Fish & chips, \"sharp\" and don't it's <b>", "fish & chips \u2013 café\u00a0fine"]
    a, b = (vectorize_texts(t, [1, 5], ["and"], min_df=1) for t in (coded, plain))
    assert a.vocabulary == b.vocabulary and np.array_equal(a.counts, b.counts)
    assert "fish_chips" in a.vocabulary and not {"amp", "quot", "39"} & set(a.vocabulary)


def test_an_empty_field_name_of_realdata_is_refused(corpus_files):
    # `elicit realdata --corpus F --text-field ""` read the field 'text' without a word
    from elicit.data.sources import make_source

    for opt in ("text_field", "rating_field"):
        with pytest.raises(ElicitError, match=r"must be a non-empty name, got ''"):
            make_source(corpus=corpus_files["jsonl"], **{opt: ""})


def test_a_text_given_as_the_rating_is_quoted_short(tmp_path):
    # `--rating-field text` put the whole review (24 kB for a long one) in the one-line error
    revs = [{"text": "sharp knife " * 2000, "rating": 5}]
    with pytest.raises(ElicitError, match=r"line 1, field 'text': rating must be an integer, "
                                          r"got 'sharp knife .*'$") as e:
        load_corpus(write_jsonl(tmp_path / "long.jsonl", revs), rating_field="text",
                    n_model=None)
    assert len(str(e.value)) < 200


def test_a_corpus_whose_ratings_are_all_equal_is_refused(tmp_path):
    # `session new` made a session with nothing to learn and `realdata` wrote config.json
    # before the LASSO expert failed ("constant or uncorrelated with every feature")
    from elicit.data.sources import corpus_source

    path = write_jsonl(tmp_path / "c.jsonl", [{"text": t, "rating": 4} for t, _ in
                                               _reviews(1100)])
    with pytest.raises(ElicitError, match=r"c.jsonl: every rating is 4; a model of the rating "
                                          r"needs at least 2 different ones"):
        corpus_source(path, min_df=2).load()
