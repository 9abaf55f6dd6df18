"""``elicit session new --corpus``: a session on any review corpus."""

from __future__ import annotations

import json

import numpy as np
import pytest

from elicit.cli.session import main
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
