"""The question table: all pairs in closed form, and the open questions as a set that is
counted, selected and drawn from without being listed; against the lists they stand for."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import small_arrays

from elicit.elicitation.elicitor import POOL_CAP, Elicitor
from elicit.elicitation.kinds import PAIRS, RELEVANCE
from elicit.elicitation.strategies import draw_pool, round_pool
from elicit.elicitation.table import (
    FeatureSegment,
    PairsAmong,
    PairSegment,
    QuestionTable,
    n_pairs,
    pair_rank,
    pair_unrank,
)
from elicit.model.spec import Hyper, all_pairs

pytestmark = pytest.mark.usefixtures("one_blas_thread")


@pytest.mark.parametrize("p", [2, 3, 7, 50, 363])
def test_pair_ranks_are_the_positions_in_all_pairs(p):
    pairs = all_pairs(p)
    k = np.arange(len(pairs))
    np.testing.assert_array_equal(pair_rank(pairs[:, 0], pairs[:, 1], p), k)
    i, j = pair_unrank(k, p)
    np.testing.assert_array_equal(np.column_stack([i, j]), pairs)


@pytest.mark.parametrize("p", [10_000, 100_000, 3_000_000])
def test_pair_ranks_invert_exactly_at_large_p(p):
    """Where the float square root of the inverse would be off by one (indices near 2^53 /
    p away from a row start), the correction makes it exact."""
    n = n_pairs(p)
    rng = np.random.default_rng(p)
    starts = pair_rank(np.arange(p - 1), np.arange(1, p), p)
    k = np.unique(np.concatenate([rng.integers(0, n, 5000), [0, n - 1], starts[-50:],
                                  starts[-50:] - 1, starts[:50], np.maximum(starts[1:50] - 1, 0)]))
    i, j = pair_unrank(k, p)
    assert np.all((0 <= i) & (i < j) & (j < p))
    np.testing.assert_array_equal(pair_rank(i, j, p), k)


def _listed(table: QuestionTable, removed, closed) -> np.ndarray:
    """The open questions by listing every row (what the table avoids)."""
    rows = table.rows(np.arange(len(table)))
    ok = np.ones(len(rows), bool)
    ok[np.asarray(removed, dtype=int)] = False
    for s, seg in enumerate(table.segments):
        if closed[s] is None:
            continue
        here = np.zeros(len(rows), bool)
        here[table.offsets[s]:table.offsets[s] + len(seg)] = True
        feats = seg.features(rows[here])
        ok[here] &= ~closed[s][feats].any(axis=1)
    return np.flatnonzero(ok)


@pytest.mark.parametrize("seed", range(6))
def test_the_open_set_is_the_listed_open_questions(seed):
    rng = np.random.default_rng(seed)
    p = int(rng.integers(3, 40))
    cands = None if seed % 2 else all_pairs(p)[rng.random(n_pairs(p)) < 0.6]
    table = QuestionTable([PAIRS.segment(p, cands), RELEVANCE.segment(p, None)])
    removed = rng.choice(len(table), size=int(rng.integers(0, len(table) // 2)), replace=False)
    closed = rng.random(p) < rng.random() * 0.5
    masks = [closed, None]
    got = table.open_set(removed, masks)
    want = _listed(table, removed, masks)
    assert len(got) == len(want)
    np.testing.assert_array_equal(got.indices(), want)
    np.testing.assert_array_equal(np.asarray(got), want)
    pos = rng.integers(0, max(len(want), 1), size=20) if len(want) else np.zeros(0, int)
    np.testing.assert_array_equal(got[pos], want[pos])
    probe = rng.integers(0, len(table), size=200)
    np.testing.assert_array_equal(got.contains(probe), np.isin(probe, want))
    # a pool drawn from the set is the pool drawn from the list, draw for draw
    for size in (1, 5, 10_000):
        a, b = np.random.default_rng(size), np.random.default_rng(size)
        np.testing.assert_array_equal(draw_pool(got, size, a), draw_pool(want, size, b))
        assert a.random() == b.random()
    by = dict((k.name, s) for k, s in got.by_kind())
    assert len(by["pairs"]) + len(by["relevance"]) == len(got)


def test_a_pool_among_millions_of_open_pairs_is_the_lists_draws():
    """Large enough for numpy's sampler to use Floyd's algorithm (n > 10,000 and a pool of
    at most n / 50), as at p = 10,000; here small enough to list the pairs and compare."""
    p = 2000
    rng = np.random.default_rng(7)
    seg = PairSegment(PAIRS, p, None)
    asked = rng.choice(len(seg), size=300, replace=False)
    closed = np.zeros(p, bool)
    closed[rng.choice(p, 25, replace=False)] = True
    members = seg.members(closed, np.sort(asked))
    assert isinstance(members, PairsAmong)
    pairs = all_pairs(p)
    ok = ~(closed[pairs[:, 0]] | closed[pairs[:, 1]])
    ok[asked] = False
    listed = np.flatnonzero(ok)
    assert len(members) == len(listed)
    table = QuestionTable([seg])
    got = table.open_set(asked, [closed])
    for s in range(3):
        np.testing.assert_array_equal(draw_pool(got, POOL_CAP, np.random.default_rng(s)),
                                      draw_pool(listed, POOL_CAP, np.random.default_rng(s)))


def test_an_elicitor_over_all_pairs_lists_none_and_asks_the_listed_ones_questions():
    a = small_arrays()
    el = Elicitor(a.X, a.y, a.U, Hyper(tau2=0.5), engine="numpy", pool_size=7, refine=1)
    listed = Elicitor(a.X, a.y, a.U, Hyper(tau2=0.5), engine="numpy", pool_size=7, refine=1,
                      candidates=all_pairs(a.X.shape[1]))
    assert isinstance(el.table.segments[0], PairSegment) and el.table.segments[0].candidates is None
    for strategy, seed in (("sequential", 1), ("random", 2), ("sequential", 3)):
        q1 = el.next_query(strategy, np.random.default_rng(seed))
        q2 = listed.next_query(strategy, np.random.default_rng(seed))
        assert q1 == q2
        el.answer(q1.i, q1.j, "similar")
        listed.answer(q2.i, q2.j, "similar")
    assert "candidates" not in vars(el)               # never listed on the way
    np.testing.assert_array_equal(el.candidates, listed.candidates)


def test_the_default_pool_is_ten_per_feature_up_to_the_cap():
    a = small_arrays()
    el = Elicitor(a.X, a.y, a.U, Hyper(tau2=0.5), engine="numpy")
    assert el.pool_size == min(n_pairs(a.X.shape[1]), 10 * a.X.shape[1])
    rng = np.random.default_rng(0)
    p = 450                                            # 10 p = 4500 > the cap
    X = rng.normal(size=(20, p))
    el = Elicitor(X, rng.normal(size=20), rng.normal(size=(p, 2)), Hyper(tau2=0.5),
                  engine="numpy")
    assert el.pool_size == POOL_CAP == 4000
    pool = round_pool(el, el.open_questions(), rng)
    assert len(pool) == POOL_CAP and len(np.unique(pool)) == POOL_CAP


def test_a_feature_segment_is_one_question_per_feature():
    seg = FeatureSegment(RELEVANCE, 5)
    np.testing.assert_array_equal(seg.rows(np.arange(5))[:, 0], np.arange(5))
    np.testing.assert_array_equal(seg.locate(np.array([[3, -1], [5, -1], [1, 2]])), [3, -1, -1])
    assert seg.missing((7, -1)) == "feature index out of range 0..4: 7"


def test_candidate_pairs_are_checked_into_sorted_rows_and_session_pairs_tell_u_rows_apart():
    """check_candidates sorted the pairs with np.unique by rows (3 s at two million pairs) and
    question_pairs compared every pair's two rows of U (2e6 x d values): both now work on one
    number per pair or row. Their results, against plain Python on random inputs."""
    from elicit.elicitation.table import check_candidates
    from elicit.errors import ElicitError
    from elicit.session.questions import question_pairs

    rng = np.random.default_rng(5)
    for p in (2, 3, 7, 40):
        every = [(a, b) for a in range(p) for b in range(a + 1, p)]
        given = [every[k] for k in rng.permutation(len(every))[:rng.integers(1, len(every) + 1)]]
        flipped = [(b, a) if rng.random() < 0.5 else (a, b) for a, b in given]
        assert check_candidates(np.array(flipped), p).tolist() == sorted(map(list, given))
        with pytest.raises(ElicitError, match="duplicates"):
            check_candidates(np.array(flipped + flipped[:1]), p)
        U = rng.integers(0, 2, size=(p, 2)).astype(float)
        U[-1] = -U[0]  # -0.0 is 0.0
        want = [[a, b] for a, b in every if list(U[a]) != list(U[b])]
        if want:
            assert question_pairs(U).tolist() == want
