"""A mutation audit of the corpora, the fetching and the data sources: each test pins a
behaviour that a one-line slip could break without any other fast test failing (a negative
count, a capitalised stop word, a stop list given as an iterator, the keywords a cap keeps and
their column order, a corpus of exactly n_model reviews, a config.json that loses a field, a
truncated gzip, a relative mirror folder, a conversion's time stamp, an option that does not
reach the library, an empty --data-dir, an upper-case .CSV, an infinite rating, ...)."""

from __future__ import annotations

import csv
import gzip
import hashlib
import json
import shutil
import time
from pathlib import Path

import numpy as np
import pytest
from helpers import Captured, capture_sweep, write_corpus, write_jsonl

from elicit.data import (
    DATA_ENV,
    PAPER_FILES,
    SHIPPED_STOPWORDS,
    STOPWORDS_FILE,
    BowDataset,
    load_bow,
    load_corpus,
    load_dataset,
    load_stopwords,
    resolve_data_dir,
    select_features,
    vectorize_texts,
)
from elicit.data import fetch as F
from elicit.data import files as data_files
from elicit.data.corpora import read_reviews
from elicit.data.files import parse_rating
from elicit.data.sources import (
    corpus_source,
    file_sha256,
    make_source,
    paper_source,
    source_from_config,
    split_seed,
)
from elicit.errors import ElicitError

# --------------------------------------------------------------------------------------------
# corpora: the bag of words and the keyword rule
# --------------------------------------------------------------------------------------------


def test_a_bag_of_words_with_one_negative_count_is_refused():
    # one negative cell among non-negative ones (a matrix of only negative cells is no slip)
    with pytest.raises(ElicitError, match="^counts must be non-negative$"):
        BowDataset([[1, 0], [2, -1]], [1, 2], ["a", "b"])


def test_a_keyword_spelt_in_capitals_is_still_a_stop_word():
    # a vocabulary file may spell its keywords in capitals; the stop list is lower-case
    vocab = ["The", "good", "OF_the", "Good_Food"]
    keep = select_features(np.ones((3, 4), dtype=int), vocab, {"the", "of"}, min_df=1)
    assert [vocab[i] for i in keep] == ["good", "Good_Food"]


def test_a_single_keyword_not_all_stop_words_says_no_min_df_keeps_two():
    # one content keyword: no second-highest document frequency to suggest (was an IndexError)
    with pytest.raises(ElicitError, match=r"of 2 n-grams, 1 are not all stop words .*no min_df "
                                          r"keeps 2: check the texts"):
        select_features(np.array([[1, 1], [1, 2]]), ["the", "kettle"], {"the"}, min_df=1)


def test_a_count_of_true_in_a_bag_of_words_file_is_refused(tmp_path):
    # JSON's true is a Python int: it was read as a count of 1
    voc = tmp_path / "v.json"
    voc.write_text(json.dumps(["x", "y"]))
    bow = write_jsonl(tmp_path / "b.jsonl", [{"rating": 1, "bow": {"x": 1}},
                                             {"rating": 2, "bow": {"y": True}}])
    with pytest.raises(ElicitError, match=r"line 2: count of 'y' must be a non-negative "
                                          r"integer, got True$"):
        load_bow(bow, voc)


def test_a_bag_of_words_file_is_labelled_by_its_name_without_suffixes(tmp_path):
    # as a corpus is: shop.jsonl.gz is "shop", not "shop.jsonl"
    voc = tmp_path / "v.json"
    voc.write_text(json.dumps(["x"]))
    bow = write_jsonl(tmp_path / "shop.jsonl.gz", [{"rating": 1, "bow": {"x": 1}}])
    assert load_bow(bow, voc).name == "shop"


def test_the_paper_matrix_is_filtered_with_the_stop_list_its_data_directory_holds(
        tmp_path, monkeypatch):
    # a data directory whose stop list differs from the shipped one is refused for the paper's
    # matrix as for a corpus (tiny files under the paper's names: only the names count here)
    monkeypatch.delenv(DATA_ENV, raising=False)
    rec, voc, key = PAPER_FILES["amazon"]
    d = tmp_path / "d"
    d.mkdir()
    (d / voc).write_text(json.dumps({key: ["kettle", "pan"]}))
    write_jsonl(d / rec, [{"rating": r, "bow": {"kettle": 1, "pan": 2}} for r in (1, 5)])
    assert load_dataset("amazon", d, min_df=1).vocabulary == ["kettle", "pan"]
    (d / STOPWORDS_FILE).write_text("kettle\n")
    with pytest.raises(ElicitError, match="differs from the SMART list shipped with elicit"):
        load_dataset("amazon", d, min_df=1)


def test_a_stop_list_given_as_an_iterator_gives_the_message_a_list_gives():
    # the message of too high a min_df counts the n-grams again: a one-shot iterator was empty
    # by then, and "the" counted as a content word
    texts, ratings = ["the kettle", "the pan"], [1, 5]
    said = []
    for sw in (["the"], iter(["the"])):
        with pytest.raises(ElicitError) as e:
            vectorize_texts(texts, ratings, sw, min_df=2, ngram_range=(1, 1))
        said.append(str(e.value))
    assert said[0] == said[1]
    assert "of 3 n-grams, 2 are not all stop words and none of those" in said[0]


def test_max_features_keeps_the_most_frequent_keywords_in_column_order():
    # document frequencies: pan 3, kettle 2, lid 1; the columns are alphabetical
    texts = ["pan kettle lid", "pan kettle", "pan"]
    ds = vectorize_texts(texts, [1, 2, 3], [], min_df=1, ngram_range=(1, 1), max_features=2)
    assert ds.vocabulary == ["kettle", "pan"]
    assert ds.counts.tolist() == [[1, 1], [1, 1], [0, 1]]


def test_max_features_breaks_ties_by_column_order():
    # 14 keywords in 2 reviews, 26 in 1: a cap of 25 keeps the 14 and the first 11 columns
    # of the 26, on any machine (a sort that is not stable picks others among the ties)
    words = [f"w{k:02d}" for k in range(40)]
    twice = words[::3]
    once = [w for w in words if w not in twice]
    texts = words + twice
    ds = vectorize_texts(texts, [1 + k % 5 for k in range(len(texts))], [], min_df=1,
                         ngram_range=(1, 1), max_features=25)
    assert ds.vocabulary == sorted(twice + once[:11])


def test_a_corpus_of_exactly_n_model_reviews_is_enough(tmp_path):
    path = write_corpus(tmp_path / "c.jsonl.gz", n=60)
    ds = load_corpus(path, text_field="review", rating_field="stars", n_model=60, min_df=2)
    assert ds.n == 60
    with pytest.raises(ElicitError, match="has 60 reviews but a run needs n_model = 61"):
        load_corpus(path, text_field="review", rating_field="stars", n_model=61, min_df=2)


# --------------------------------------------------------------------------------------------
# sources: what a sweep records and the choice of the data
# --------------------------------------------------------------------------------------------


def test_a_corpus_source_read_back_from_its_config_is_the_same_source(tmp_path):
    # table1 and a resumed sweep rebuild the runs from config.json: the fields and min_df
    path = write_corpus(tmp_path / "c.jsonl.gz", n=20)
    src = corpus_source(path, "review", "stars", min_df=3, name="shop")
    assert source_from_config(json.loads(json.dumps(src.config()))) == src


def test_the_split_seeds_are_those_the_published_sweeps_recorded():
    # results/ records each run's split seed: a split_seed that changed (its two arguments
    # swapped, say) would give every run other reviews, and no published number would hold
    results = Path(__file__).resolve().parents[2] / "results"
    for sweep in ("amazon", "yelp", "kitchen"):
        seed = json.loads((results / sweep / "config.json").read_text())["seed"]
        with open(results / sweep / "runinfo.csv", newline="") as fh:
            recorded = {int(r["run"]): int(r["split_seed"]) for r in csv.DictReader(fh)}
        assert len(recorded) == 50
        assert {r: split_seed(seed, r) for r in recorded} == recorded, sweep


def test_a_corpus_is_identified_by_the_sum_of_all_its_bytes(tmp_path):
    # a corpus changed after its first MiB must not pass for the one the sweep ran on
    path = tmp_path / "big.jsonl"
    data = np.random.default_rng(0).bytes(3 << 20)
    path.write_bytes(data)
    assert file_sha256(path) == hashlib.sha256(data).hexdigest()


def test_a_relative_data_directory_is_recorded_absolute(tmp_path, monkeypatch):
    # workers and a later table1 may run elsewhere: the directory is resolved once, here
    d = tmp_path / "d"
    d.mkdir()
    for f in (*PAPER_FILES["amazon"][:2], STOPWORDS_FILE):
        (d / f).write_text("")
    monkeypatch.chdir(tmp_path)
    assert paper_source("amazon", "d").data_dir == str(d.resolve())


def test_the_paper_matrix_and_a_corpus_together_are_refused(tmp_path):
    path = write_corpus(tmp_path / "c.jsonl.gz", n=20)
    for kw in ({"dataset": "amazon", "corpus": path}, {}):
        with pytest.raises(ElicitError, match="give either --dataset .* or --corpus FILE"):
            make_source(**kw)


def test_a_label_for_the_papers_matrix_is_refused():
    # --name labels a corpus; with --dataset it was dropped without a word
    with pytest.raises(ElicitError, match="^--name applies to --corpus only, not to --dataset$"):
        make_source("amazon", name="shop")


# --------------------------------------------------------------------------------------------
# fetch
# --------------------------------------------------------------------------------------------


def test_a_half_written_gzip_file_in_the_data_directory_is_a_mismatch(tmp_path, monkeypatch):
    # a download cut off by the network or a full disk: EOFError ended in a traceback
    for env in (F.MIRROR_ENV, F.UPSTREAM_ENV):
        monkeypatch.delenv(env, raising=False)
    name = PAPER_FILES["amazon"][0]
    d = tmp_path / "d"
    d.mkdir()
    (d / name).write_bytes(gzip.compress(b'{"rating": 1, "bow": {}}\n' * 50)[:-12])
    with pytest.raises(ElicitError, match="is present but does not match its SHA-256"):
        F.fetch(d, files=[name], progress=False)


def test_a_mirror_may_be_a_relative_folder(tmp_path, monkeypatch):
    for env in (F.MIRROR_ENV, F.UPSTREAM_ENV):
        monkeypatch.delenv(env, raising=False)
    (tmp_path / "mirror").mkdir()
    shutil.copyfile(SHIPPED_STOPWORDS, tmp_path / "mirror" / STOPWORDS_FILE)
    monkeypatch.chdir(tmp_path)
    res = F.fetch(tmp_path / "d", files=[STOPWORDS_FILE], mirror="mirror", progress=False)
    assert res[0].status == "downloaded"
    assert (tmp_path / "d" / STOPWORDS_FILE).read_bytes() == SHIPPED_STOPWORDS.read_bytes()


def test_the_mirror_option_beats_the_environment(tmp_path, monkeypatch):
    # the variable names an empty folder: taking it would be "cannot download"
    (tmp_path / "empty").mkdir()
    (tmp_path / "mirror").mkdir()
    shutil.copyfile(SHIPPED_STOPWORDS, tmp_path / "mirror" / STOPWORDS_FILE)
    monkeypatch.setenv(F.MIRROR_ENV, str(tmp_path / "empty"))
    monkeypatch.delenv(F.UPSTREAM_ENV, raising=False)
    res = F.fetch(tmp_path / "d", files=[STOPWORDS_FILE], mirror=str(tmp_path / "mirror"),
                  progress=False)
    assert res[0].status == "downloaded"
    assert res[0].urls[0].startswith((tmp_path / "mirror").as_uri())


def test_a_converted_gzip_file_is_gzip_and_the_same_bytes_at_any_time(tmp_path, monkeypatch):
    # a converted .gz file is written compressed, with no time stamp in it (RFC 1952's MTIME)
    for env in (F.MIRROR_ENV, F.UPSTREAM_ENV):
        monkeypatch.delenv(env, raising=False)
    content = b'{"text": "sharp knife", "rating": 5}\n'
    src = F.Source("owner/repo", "c" * 40, "reviews.txt")
    up = tmp_path / "up" / src.repo / src.commit
    up.mkdir(parents=True)
    (up / src.path).write_bytes(content)
    spec = F.DataFile("toy.jsonl.gz", "0" * 64, hashlib.sha256(content).hexdigest(), (src,),
                      lambda raw: raw[0])
    monkeypatch.setitem(F.MANIFEST, spec.name, spec)
    made = []
    for now in (1e9, 2e9):
        monkeypatch.setattr(time, "time", lambda now=now: now)
        d = tmp_path / f"d{len(made)}"
        res = F.fetch(d, files=[spec.name], upstream=str(tmp_path / "up"), progress=False)
        assert res[0].status == "converted"
        made.append((d / spec.name).read_bytes())
    assert gzip.decompress(made[0]) == content
    assert made[0] == made[1]


def test_the_upstream_option_of_data_fetch_reaches_the_download(tmp_path, monkeypatch, capsys):
    # $ELICIT_DATA_UPSTREAM names an empty folder: the option must win over it
    import argparse

    from elicit.cli.data import DATA_COMMANDS, add_data_parsers

    monkeypatch.delenv(F.MIRROR_ENV, raising=False)
    (tmp_path / "empty").mkdir()
    monkeypatch.setenv(F.UPSTREAM_ENV, str(tmp_path / "empty"))
    s = F.MANIFEST[STOPWORDS_FILE].sources[0]
    (tmp_path / "up" / s.repo / s.commit / s.path).parent.mkdir(parents=True)
    shutil.copyfile(SHIPPED_STOPWORDS, tmp_path / "up" / s.repo / s.commit / s.path)
    p = argparse.ArgumentParser(prog="elicit")
    add_data_parsers(p.add_subparsers(dest="command", required=True))
    args = p.parse_args(["data", "fetch", "--data-dir", str(tmp_path / "d"), "--files",
                         STOPWORDS_FILE, "--upstream", str(tmp_path / "up"), "--quiet"])
    DATA_COMMANDS[args.command](args)
    assert (tmp_path / "d" / STOPWORDS_FILE).read_bytes() == SHIPPED_STOPWORDS.read_bytes()


# --------------------------------------------------------------------------------------------
# elicit realdata: the parsed options reach the configuration
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("option, value, field, want", [
    ("--tau2", "0.5", "tau2", 0.5),
    ("--expert-nonzero", "9", "expert_nonzero", 9),
    ("--standardize", "train", "standardize", "train"),
])
def test_realdata_options_reach_the_sweep(tmp_path, monkeypatch, option, value, field, want):
    # the configuration is kept where the sweep would start (no data is read before that)
    import elicit.paper.realdata
    from elicit.cli.main import build_parser
    from elicit.cli.realdata import cmd_realdata

    seen = capture_sweep(monkeypatch, elicit.paper.realdata, "run_realdata")
    corpus = write_jsonl(tmp_path / "shop.jsonl", [{"text": "sharp knife", "rating": 5}])
    with pytest.raises(Captured):
        cmd_realdata(build_parser().parse_args(["realdata", "--corpus", str(corpus), "--out",
                                                str(tmp_path / "o"), option, value]))
    assert getattr(seen[0], field) == want


# --------------------------------------------------------------------------------------------
# files: the data directory, file types, ratings, stop lists
# --------------------------------------------------------------------------------------------


def test_an_empty_data_dir_option_is_not_given(tmp_path, monkeypatch):
    # `--data-dir "$DATA"` with DATA unset: the environment's directory, not the current one
    env = tmp_path / "env"
    env.mkdir()
    (env / "x.txt").write_text("x\n")
    monkeypatch.setenv(DATA_ENV, str(env))
    monkeypatch.chdir(tmp_path)
    assert resolve_data_dir("", required=["x.txt"]) == env


def test_a_default_directory_must_hold_every_required_file(tmp_path, monkeypatch):
    monkeypatch.delenv(DATA_ENV, raising=False)
    first, second = tmp_path / "first", tmp_path / "second"
    for d, names in ((first, ["a.txt"]), (second, ["a.txt", "b.txt"])):
        d.mkdir()
        for n in names:
            (d / n).write_text("x\n")
    monkeypatch.setattr(data_files, "default_data_dirs", lambda: [first, second])
    assert resolve_data_dir(required=["a.txt", "b.txt"]) == second


def test_an_upper_case_csv_suffix_is_a_csv_file(tmp_path):
    path = tmp_path / "REVIEWS.CSV"
    path.write_text("text,rating\nsharp knife,5\nbroken lid,1\n")
    assert read_reviews(path) == (["sharp knife", "broken lid"], [5, 1])


@pytest.mark.parametrize("value", ["inf", "-inf", "nan", float("inf"), float("nan")])
def test_an_infinite_or_missing_number_rating_is_one_line(value):
    with pytest.raises(ElicitError, match=r"^line 2: rating must be an integer, got "):
        parse_rating(value, "line 2")


def test_a_stop_list_file_in_capitals_is_read_lower_case(tmp_path):
    path = tmp_path / "stop.txt"
    path.write_text("The\nOF\nkettle\n")
    assert load_stopwords(path) == {"the", "of", "kettle"}


# --------------------------------------------------------------------------------------------
# a defect found by the audit, fixed: an all-zero keyword column made the message suggest 0
# --------------------------------------------------------------------------------------------


def test_too_high_a_min_df_never_suggests_a_min_df_that_is_refused():
    # 'kettle' occurs in both reviews, 'pan' in none: no min_df keeps 2 keywords, yet the
    # message said "use min_df=0 or lower", a value check_min_df refuses
    with pytest.raises(ElicitError) as e:
        select_features(np.array([[1, 0, 1], [2, 0, 1]]), ["kettle", "pan", "the"], {"the"},
                        min_df=1)
    assert "min_df=0" not in str(e.value) and "no min_df keeps 2" in str(e.value)
