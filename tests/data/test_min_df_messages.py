"""The document-frequency counts that the messages about ``min_df`` state."""

from __future__ import annotations

import re

import numpy as np
import pytest

from elicit.data import BowDataset, select_features, vectorize_texts
from elicit.errors import ElicitError

STOP = frozenset({"the", "a", "of", "not", "at", "was", "i", "it"})


def test_a_min_df_keeping_one_keyword_says_one_is_left_not_that_none_is():
    """At exactly ``min_df`` reviews a keyword counts as kept, also in the message of a
    ``min_df`` that keeps fewer than two: 'good' is the only keyword in 2 reviews."""
    vocab = ["good", "bad", "the"]
    counts = np.array([[1, 0, 1], [2, 1, 1], [0, 0, 1]])
    with pytest.raises(ElicitError, match=r"only 1 keyword is left.*only 1 of those occurs "
                                          r"in >= 2 of 3 texts"):
        select_features(counts, vocab, STOP, min_df=2)
    texts = ["good food", "the good", "it was bad"]  # 'good' in 2 texts, any other word in 1
    with pytest.raises(ElicitError, match=r"only 1 keyword is left.*only 1 of those occurs "
                                          r"in >= 2 of 3 texts"):
        vectorize_texts(texts, [4, 5, 1], STOP, min_df=2)


def test_the_min_df_suggested_for_at_most_so_many_keywords_states_how_many_it_keeps():
    """``min_df_keeping(most)`` names a ``min_df`` and the keywords it keeps: those in at
    least ``min_df`` reviews, counted here from the matrix; no more than ``most``, and one
    less ``min_df`` would keep more than ``most``."""
    # keyword columns in 5, 3, 3, 2 and 1 of the 5 reviews
    counts = np.array([[1, 1, 1, 1, 1],
                       [1, 2, 1, 1, 0],
                       [1, 1, 3, 0, 0],
                       [1, 0, 0, 0, 0],
                       [2, 0, 0, 0, 0]])
    ds = BowDataset(counts, [1, 2, 3, 4, 5], ["a1", "b2", "c3", "d4", "e5"])
    df = np.count_nonzero(counts, axis=0)
    for most in (1, 2, 3, 4):
        m = re.fullmatch(r"min_df=(\d+) or higher \(keeps (\d+) keywords\)",
                         ds.min_df_keeping(most))
        assert m, ds.min_df_keeping(most)
        k, kept = int(m.group(1)), int(m.group(2))
        assert kept == np.count_nonzero(df >= k) <= most < np.count_nonzero(df >= k - 1)
