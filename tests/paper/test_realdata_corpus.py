"""``elicit realdata --corpus``: the real-data pipeline on any review file.

The tests write their own corpus: 1300 short reviews (1000 for the model, 300 for the
simulated expert) whose star rating follows a few sentiment words, so the pipeline has
something to find and runs in seconds. One test runs on the shipped raw kitchen reviews when
the data directory is there.
"""

from __future__ import annotations

import json
import re

import pandas as pd
import pytest
from conftest import REAL_DATA_DIR, needs_data
from helpers import assert_png, check_data_dir_as_elicit_data, lockable_elsewhere, write_corpus

from elicit.cli.main import main
from elicit.errors import ElicitError

ARGS = ["--runs", "1", "--rounds", "2", "--expert-nonzero", "8", "--engine", "numpy",
        "--quiet"]


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    return write_corpus(tmp_path_factory.mktemp("corpus") / "shop_reviews.jsonl.gz")


@pytest.fixture(scope="module")
def corpus_sweep(corpus, tmp_path_factory):
    out = tmp_path_factory.mktemp("corpus_results")
    assert main(["realdata", "--corpus", str(corpus), "--text-field", "review",
                 "--rating-field", "stars", "--out", str(out / "shop"), "--jobs", "2",
                 *ARGS[:1], "2", *ARGS[2:]]) == 0
    return out


@pytest.mark.slow
def test_corpus_sweep_outputs(corpus_sweep, corpus):
    df = pd.read_csv(corpus_sweep / "shop" / "mse.csv")
    # The label is the file's stem; workers rebuilt the data set from the path (--jobs 2).
    assert set(df.dataset) == {"shop_reviews"} and set(df.run) == {0, 1}
    assert {"random", "nonsequential", "sequential", "mean", "ceiling"} <= set(df.strategy)
    init = df[(df.strategy == "sequential") & (df.n_feedback == 0)].set_index("run").mse
    mean = df[df.strategy == "mean"].set_index("run").mse
    # The ratings follow the words, so the no-feedback model beats predicting the mean.
    assert (init < mean).all()
    cfg = json.loads((corpus_sweep / "shop" / "config.json").read_text())
    assert cfg["corpus"] == str(corpus.resolve()) and cfg["text_field"] == "review"
    assert cfg["standardize"] == "model" and cfg["tau2"] == "cv" and len(cfg["corpus_sha256"]) == 64
    assert_png(corpus_sweep / "shop" / "fig5_shop_reviews.png")
    info = pd.read_csv(corpus_sweep / "shop" / "runinfo.csv")
    assert (info.n_expert == 300).all() and info.n_answerable.between(1, 45).all()


@pytest.mark.slow
def test_table1_and_report_on_a_corpus_sweep(corpus_sweep, capsys):
    from elicit.report import write_report

    assert main(["table1", "--runs", "2", "--out", str(corpus_sweep), "--datasets", "shop",
                 "--samples", "3", "--quiet"]) == 0
    t = pd.read_csv(corpus_sweep / "table1.csv", dtype=str, keep_default_na=False)
    # No paper levels for a corpus: the relative rows only, without paper counts.
    assert list(t.level_kind) == ["relative", "relative"]
    assert set(t.dataset) == {"shop_reviews"} and set(t.sweep) == {"shop"}
    assert set(t.paper_rnd) == {""}
    text = write_report(corpus_sweep).read_text()
    assert "## Review corpus: shop_reviews" in text
    assert "Corpus `shop_reviews.jsonl.gz` (fields `review`, `stars`" in text


@pytest.mark.usefixtures("unsaved_figures")  # the corpus sweep's figure: the slow tests
def test_data_dir_with_a_corpus_is_the_choice_elicit_data_makes(tmp_path, capsys, monkeypatch):
    """--data-dir DIR beside --corpus was refused ("applies to --dataset only") while
    $ELICIT_DATA=DIR was honoured, and `session new --corpus --data-dir` takes it: DIR is where
    the corpus's stop list is checked, with the same one-line error either way, and an existing
    DIR without a stop list gives the sweep $ELICIT_DATA=DIR gives."""
    # a file of its own: a process loads a corpus once, and $ELICIT_DATA is read at that load
    corpus = write_corpus(tmp_path / "shop_reviews.jsonl.gz")
    args = ["realdata", "--corpus", str(corpus), "--text-field", "review", "--rating-field",
            "stars", "--rounds", "0", *ARGS[:2], *ARGS[4:]]

    def run(out, data_dir):
        return main([*args, "--out", str(out),
                     *([] if data_dir is None else ["--data-dir", str(data_dir)])])

    check_data_dir_as_elicit_data(run, tmp_path, capsys, monkeypatch)
    assert ((tmp_path / "c" / "mse.csv").read_text()
            == (tmp_path / "d" / "mse.csv").read_text())


def test_corpus_errors(corpus, tmp_path, capsys):
    def err(argv):
        capsys.readouterr()
        assert main(argv) == 2
        e = capsys.readouterr().err
        assert e.count("\n") == 1, e  # one line
        return e

    base = ["realdata", "--out", str(tmp_path / "x"), *ARGS]
    # The default field names are not in this file: the message names the fields it has.
    e = err([*base, "--corpus", str(corpus)])
    assert "no field 'text'; the fields are 'review', 'stars'" in e
    e = err([*base, "--corpus", str(corpus), "--text-field", "review"])
    assert "no field 'rating'; the fields are 'review', 'stars'" in e
    e = err([*base, "--corpus", str(tmp_path / "missing.jsonl")])
    assert "missing.jsonl not found" in e
    # Corpus options with the paper's matrices, and a reserved or unusable label.
    e = err([*base, "--dataset", "amazon", "--min-df", "5"])
    assert "--min-df applies to --corpus only" in e
    e = err([*base, "--corpus", str(corpus), "--name", "amazon"])
    assert "reserved for the paper's matrix" in e
    e = err([*base, "--corpus", str(corpus), "--name", "a/b"])
    assert "letters, digits" in e
    # Too few reviews for the model and the expert.
    small = write_corpus(tmp_path / "small.jsonl.gz", n=1050)
    e = err([*base, "--corpus", str(small), "--text-field", "review", "--rating-field",
             "stars"])
    assert "1050 reviews" in e and "at least 1100" in e
    # A --min-df that leaves no keyword: the message names the largest that keeps 2, as the
    # option is spelt.
    e = err([*base, "--corpus", str(corpus), "--text-field", "review", "--rating-field",
             "stars", "--min-df", "1300"])
    assert "or lower (the largest that keeps 2)" in e and "use --min-df " in e, e
    assert "min_df" not in e, e
    # --dataset and --corpus together: argparse's usage error.
    with pytest.raises(SystemExit):
        main([*base, "--dataset", "amazon", "--corpus", str(corpus)])


def test_a_changed_corpus_is_refused(tmp_path):
    from elicit.data.sources import corpus_source, source_from_config

    path = write_corpus(tmp_path / "c.jsonl.gz", n=20)
    cfg = corpus_source(path, "review", "stars").config()
    assert source_from_config(cfg).corpus == str(path.resolve())
    write_corpus(path, n=20, seed=1)
    with pytest.raises(ElicitError, match="changed since the sweep ran"):
        source_from_config(cfg)


@pytest.mark.parametrize("bad", ["abc", "3", 0, 2.5, True, [3]])
def test_a_bad_min_df_is_one_line_naming_reviews(tmp_path, bad):
    from elicit.data.sources import corpus_source

    path = write_corpus(tmp_path / "c.jsonl.gz", n=20)
    with pytest.raises(ElicitError, match=r"^min_df must be a positive integer number of "
                                          r"reviews, got .*$"):
        corpus_source(path, "review", "stars", min_df=bad)
    assert corpus_source(path, "review", "stars", min_df=3).min_df == 3


@needs_data
@pytest.mark.slow
def test_shipped_kitchen_corpus(tmp_path):
    from elicit.data.sources import corpus_source, shipped_corpus
    from elicit.paper.configs import RealDataConfig
    from elicit.paper.realdata import run_realdata

    src = corpus_source(shipped_corpus("amazon", REAL_DATA_DIR), name="kitchen")
    res = run_realdata(RealDataConfig(src, runs=1, rounds=1, engine="numpy"),
                       tmp_path / "kitchen", progress=False)
    info = pd.read_csv(tmp_path / "kitchen" / "runinfo.csv").iloc[0]
    assert info.n_features == 379 and info.n_expert == 1000
    assert res.references["mean"] > info.initial


def test_a_realdata_call_that_fails_lets_go_of_its_folder(corpus, tmp_path, monkeypatch, capsys):
    """Stopped in its first stage (the runs' records: an error, or Ctrl-C in a notebook), a
    call kept its --out locked until its process ended, and other calls were refused."""
    def stopped(*args, **kwargs):
        raise ElicitError("stopped while the runs' records were computed")

    monkeypatch.setattr("elicit.paper.realdata.ensure_runinfo", stopped)
    assert main(["realdata", "--corpus", str(corpus), "--text-field", "review",
                 "--rating-field", "stars", "--out", str(tmp_path / "s"), *ARGS]) != 0
    assert "stopped while" in capsys.readouterr().err
    assert lockable_elsewhere(tmp_path / "s")


@pytest.mark.usefixtures("unsaved_figures")  # the corpus sweep's figure: the slow tests
def test_the_summary_counts_each_kind_of_question_asked(corpus, tmp_path, capsys):
    # direction questions were counted as "feature questions" (the relevance kind's name)
    assert main(["realdata", "--corpus", str(corpus), "--text-field", "review",
                 "--rating-field", "stars", "--name", "shop", "--out", str(tmp_path / "s"),
                 "--questions", "relevance,direction", "--strategies", "random", *ARGS]) == 0
    lines = capsys.readouterr().out.splitlines()
    # --name labels the outputs (the corpus's stem, shop_reviews, otherwise)
    assert set(pd.read_csv(tmp_path / "s" / "mse.csv").dataset) == {"shop"}
    part = json.loads((tmp_path / "s" / "parts" / "shop" / "random" / "run000.json")
                      .read_text())
    for kind, plural in (("relevance", "feature questions"), ("direction", "direction questions")):
        assert f"{plural} asked (mean per run): random {part['kinds'].count(kind):.1f}" in lines


@pytest.mark.slow
@pytest.mark.parametrize("command", ["realdata", "session new"])
def test_a_corpus_too_large_once_built_is_told_a_min_df_not_rows(command, tmp_path, capsys,
                                                                  monkeypatch):
    """A corpus whose keywords pass the early check but whose run's inputs the model refuses
    was told by the model's check "use at most N rows (a random sample of them)" (realdata:
    of a tau2 CV fold's 80): a corpus has 100 training reviews, and its keywords follow
    --min-df. A machine between the two sizes is set up by its memory limit."""
    import numpy as np

    import elicit.model.spec as spec_mod

    rng = np.random.default_rng(0)
    words = [f"kw{a}{b}{c}" for a in "abcd" for b in "abcdefghijklmnopqrstuvwxyz"
             for c in "abcdefghijklm"]  # 1352 words: --min-df 2 keeps about as many
    corpus = tmp_path / "shop.jsonl"
    corpus.write_text("".join(json.dumps({"text": " ".join(rng.choice(words, 12)),
                                          "rating": 1 + k % 5}) + "\n" for k in range(1100)))
    # the early check lets up to 1,500 keywords through (inputs touching no column fit); a
    # run's 100 reviews of 12 words touch about 800 columns, which do not fit
    monkeypatch.setattr(spec_mod, "memory_limit", lambda: spec_mod.model_bytes(100, 1500, 10, 0))
    out = tmp_path / ("shop" if command == "realdata" else "s.session")
    sweep = ["--runs", "1", "--rounds", "1", "--quiet"] if command == "realdata" else []
    assert main([*command.split(), "--corpus", str(corpus), "--min-df", "2", "--meta-features",
                 "lsa", "--out", str(out), "--engine", "numpy", *sweep]) == 2
    err = capsys.readouterr().err
    assert re.match(r"elicit: error: 1,[34]\d\d keywords are too many for this machine", err)
    assert "rows" not in err
    assert re.search(r"use --min-df \d+ or higher \(keeps [\d,]+ keywords\)$", err.strip())
    assert not out.exists()
