"""``elicit session new --corpus``: a session on any review corpus."""

from __future__ import annotations

import json

import numpy as np
import pytest
from helpers import check_data_dir_as_elicit_data

from elicit.cli.main import main
from elicit.session.session import Session

GOOD = ["great", "excellent", "love", "perfect", "sturdy"]
BAD = ["broken", "awful", "refund", "flimsy", "disappointed"]
FILLER = ["kettle", "handle", "lid", "water", "price", "box", "colour", "size"]


def _corpus(path, n: int = 1200, seed: int = 0) -> None:
    rng = np.random.default_rng(seed)
    with open(path, "w") as fh:
        for _ in range(n):
            good, bad = rng.integers(0, 3), rng.integers(0, 3)
            words = list(rng.choice(GOOD, good)) + list(rng.choice(BAD, bad)) \
                + list(rng.choice(FILLER, 6))
            rng.shuffle(words)
            stars = int(np.clip(3 + good - bad + rng.integers(-1, 2), 1, 5))
            fh.write(json.dumps({"body": " ".join(words), "stars": stars}) + "\n")


def test_a_session_on_a_corpus_with_its_own_field_names(tmp_path, capsys):
    corpus = tmp_path / "kettles.jsonl"
    _corpus(corpus)
    out = tmp_path / "k.session"
    assert main(["session", "new", "--corpus", str(corpus), "--text-field", "body",
                 "--rating-field", "stars", "--min-df", "20", "--out", str(out),
                 "--engine", "numpy"]) == 0
    printed = capsys.readouterr().out
    with Session.open(out) as s:
        assert s.X.shape[0] == 100
        assert {"great", "broken", "kettle"} <= set(s.feature_names)
        assert f"{len(s.feature_names)} features" in printed
        assert "kettles.jsonl" in s.description and "seed 0, run 0" in s.description
        # the snippets come from the corpus itself
        assert any("great" in t for t in s.texts("great"))
        assert s.settings["pool_size"] == 400


def test_a_corpus_sessions_run_is_the_sweeps_run(tmp_path):
    """--corpus F --run R --seed S takes run R of a sweep on F with seed S."""
    from elicit.data.sources import corpus_source

    corpus = tmp_path / "kettles.jsonl"
    _corpus(corpus)
    out = tmp_path / "k.session"
    assert main(["session", "new", "--corpus", str(corpus), "--text-field", "body",
                 "--rating-field", "stars", "--min-df", "20", "--run", "2", "--seed", "5",
                 "--out", str(out), "--engine", "numpy"]) == 0
    run = corpus_source(corpus, "body", "stars", 20).run(5, 2)
    with Session.open(out) as s:
        np.testing.assert_array_equal(s.X, run.X_train)
        assert s.feature_names == run.feature_names
        assert "seed 5, run 2" in s.description and s.settings["seed"] == 5


def test_corpus_options_and_errors_are_one_line(tmp_path, capsys):
    corpus = tmp_path / "kettles.jsonl"
    _corpus(corpus, n=1100)
    assert main(["session", "new", "--corpus", str(corpus), "--out",
                 str(tmp_path / "a.session")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0
    assert "no field 'text'; the fields are 'body', 'stars'" in err
    assert main(["session", "new", "--dataset", "amazon", "--rating-field", "stars", "--out",
                 str(tmp_path / "b.session")]) == 2
    assert "--rating-field go(es) with --corpus FILE only" in capsys.readouterr().err


@pytest.mark.parametrize("n", [300])
def test_a_corpus_too_small_for_a_run_is_refused(tmp_path, capsys, n):
    corpus = tmp_path / "small.jsonl"
    _corpus(corpus, n=n)
    assert main(["session", "new", "--corpus", str(corpus), "--text-field", "body",
                 "--rating-field", "stars", "--out", str(tmp_path / "s.session")]) == 2
    assert f"{n} reviews" in capsys.readouterr().err


def test_data_dir_with_a_corpus_is_the_choice_elicit_data_makes(tmp_path, capsys, monkeypatch):
    """--data-dir DIR beside --corpus is where the corpus's stop list is checked, as with
    $ELICIT_DATA=DIR: a missing DIR, or a stop list there other than the shipped one, is the
    same one-line error either way; an existing DIR without a stop list is taken."""
    corpus = tmp_path / "kettles.jsonl"
    _corpus(corpus, n=1100)
    args = ["session", "new", "--corpus", str(corpus), "--text-field", "body", "--rating-field",
            "stars", "--min-df", "20", "--engine", "numpy", "--overwrite"]

    def run(out, data_dir):
        return main([*args, "--out", str(out.with_suffix(".session")),
                     *([] if data_dir is None else ["--data-dir", str(data_dir)])])

    check_data_dir_as_elicit_data(run, tmp_path, capsys, monkeypatch)


def test_too_high_a_min_df_names_a_value_that_works(tmp_path, capsys):
    """--min-df leaving no keyword, or only one, is refused naming --min-df N (as the option
    is spelt), N the largest value that keeps the 2 keywords a question compares."""
    import re

    corpus = tmp_path / "kettles.jsonl"
    _corpus(corpus, n=1100)
    args = ["session", "new", "--corpus", str(corpus), "--text-field", "body", "--rating-field",
            "stars", "--engine", "numpy", "--overwrite", "--out", str(tmp_path / "k.session")]
    assert main([*args, "--min-df", "1100"]) == 2
    err = capsys.readouterr().err
    m = re.search(r"use --min-df (\d+) or lower", err)
    assert m and err.count("\n") == 1 and "min_df" not in err, err
    best = int(m.group(1))
    assert main([*args, "--min-df", str(best + 1)]) == 2
    assert f"use --min-df {best} or lower" in capsys.readouterr().err
    assert main([*args, "--min-df", str(best)]) == 0
