"""A session on a corpus with embedded meta-features."""

from __future__ import annotations

import functools
import json

import numpy as np
import pytest
from helpers import run_main

from elicit.cli.main import main
from elicit.data.metafeatures import (
    polarity_auc,
)

cli = functools.partial(run_main, main)


def session_corpus(path) -> None:
    rng = np.random.default_rng(0)
    good = ["great", "love", "perfect", "excellent"]
    bad = ["broke", "awful", "returned", "useless"]
    with open(path, "w") as f:
        for r in range(1300):
            words = good if r % 2 else bad
            text = " ".join(rng.choice(words, size=3)) + " kitchen pan"
            f.write(json.dumps({"text": text, "rating": 5 if r % 2 else 1}) + "\n")


def test_session_corpus_with_ppmi(capsys, tmp_path):
    from elicit.session.session import Session

    session_corpus(tmp_path / "c.jsonl")
    code, out, err = cli(capsys, "session", "new", "--corpus", str(tmp_path / "c.jsonl"),
                         "--min-df", "20", "--meta-features", "ppmi", "--meta-dim", "3",
                         "--engine", "numpy", "--out", str(tmp_path / "s.session"))
    assert code == 0, err
    assert "meta-features: 3 per feature, from a PPMI embedding" in out
    with Session.open(tmp_path / "s.session") as s:
        U = s.elicitor.data.U
        names = s.feature_names
    assert U.shape == (len(names), 3)
    groups = np.array([0 if n in ("great", "love", "perfect", "excellent") else
                       1 if n in ("broke", "awful", "returned", "useless") else -1
                       for n in names])
    assert polarity_auc(U, groups) == pytest.approx(1.0)
