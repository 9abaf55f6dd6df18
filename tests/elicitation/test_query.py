"""The elicitation state and the query strategies: bookkeeping, answers and input errors."""

from __future__ import annotations

import contextlib
import dataclasses
import re
import warnings
from types import SimpleNamespace

import numpy as np
import pytest
from conftest import small_arrays

from elicit.elicitation.answers import Answer, GroupOracle
from elicit.elicitation.elicitor import Elicitor
from elicit.elicitation.scorer import UtilityScorer
from elicit.elicitation.settings import RoundSettings
from elicit.elicitation.strategies import (
    STRATEGIES,
    STRATEGY_REGISTRY,
    Query,
    Strategy,
    get_strategy,
    register_strategy,
    unregister_strategy,
)
from elicit.engines import get_engine
from elicit.errors import ElicitError
from elicit.harness.problem import strategy_stream
from elicit.model.spec import Hyper, all_pairs
from elicit.model.theta import join_theta

pytestmark = pytest.mark.usefixtures("one_blas_thread")

HYPER = Hyper(tau2=0.5)  # fixed tau2, threshold_mean="auto"


def make_elicitor(variant: str = "fixed", p: int | None = None, **kw) -> Elicitor:
    a = small_arrays() if p is None else small_arrays(p=p)
    hyper = Hyper(variant=variant, tau2=0.5)
    kw.setdefault("engine", "numpy")
    return Elicitor(a.X, a.y, a.U, hyper, **kw)


def _oracle_with_unknowns(p: int | None = None) -> GroupOracle:
    """Group labels of the small problem (of ``p`` features), with features 0 and 5 unknown
    to the expert."""
    groups = (small_arrays() if p is None else small_arrays(p=p)).groups.copy()
    groups[[0, 5]] = -1
    return GroupOracle(groups)


def _theta(el: Elicitor) -> np.ndarray:
    t = join_theta(el.fit.gamma, el.fit.xi, el.fit.tau2, el.data)
    t[el.data.d] /= el.hyper.threshold_mean
    return t


# -- strategy bookkeeping ------------------------------------------------------------------


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_never_asks_a_pair_twice_until_exhausted(strategy):
    # 7 features (21 pairs) rather than the small problem's 10 (45): exhausting the pool
    # scores every round, and the bookkeeping does not depend on the pool's size
    el = make_elicitor(refine=2, p=7)
    expert = _oracle_with_unknowns(p=7)
    rng = np.random.default_rng(0)
    n_pairs = len(el.candidates)
    asked = []
    for t in range(n_pairs):
        q = el.next_query(strategy, rng)
        key = (min(q.i, q.j), max(q.i, q.j))
        assert key not in asked
        # the query comes from the unasked pairs
        assert any((el.unasked() == key).all(axis=1))
        el.answer(q.i, q.j, expert.answer(q.i, q.j))
        asked.append(key)
        assert len(el.unasked()) == n_pairs - t - 1
    assert sorted(asked) == [tuple(p) for p in all_pairs(el.data.p)]
    assert el.n_answers == n_pairs
    # only the answers the expert could give reached the model
    n_known = sum(a.outcome is not None for _, _, a in el.history)
    assert 0 < n_known < n_pairs
    assert len(el.data.f) == n_known
    with pytest.raises(ElicitError, match="every candidate pair has been asked"):
        el.next_query(strategy, rng)


def test_dont_know_is_recorded_and_leaves_the_model_unchanged():
    el = make_elicitor()
    el.answer(1, 2, "similar")
    fit, data = el.fit, el.data
    gamma = fit.gamma.copy()
    out = el.answer(4, 3, "don't know")  # order of i, j does not matter
    assert out is fit and el.fit is fit and el.data is data
    assert np.array_equal(el.fit.gamma, gamma)
    assert len(el.data.f) == 1
    assert el.history[-1] == (3, 4, Answer.DONT_KNOW)
    assert el.is_asked(3, 4) and el.is_asked(4, 3)
    assert not any((el.unasked() == (3, 4)).all(axis=1))
    with pytest.raises(ElicitError, match="already answered"):
        el.answer(3, 4, "similar")


def test_nonsequential_asks_in_the_initial_ranked_order():
    el = make_elicitor(utility="exact")
    # The reference ranking, computed independently at the no-feedback MAP.
    ref = UtilityScorer(el.base, el.initial_fit, el.engine).score(el.candidates, "exact")
    order = np.argsort(-ref.utility, kind="stable")
    ranked = [tuple(el.candidates[k]) for k in order]

    rng = np.random.default_rng(0)
    expert = _oracle_with_unknowns()
    q = el.next_query("nonsequential", rng)
    assert (q.i, q.j) == ranked[0]
    assert q.expected_gain == pytest.approx(ref.utility[order[0]], rel=1e-6)
    # Answer the third-ranked pair out of turn: it must be skipped later.
    skipped = ranked[2]
    el.answer(*skipped, expert.answer(*skipped))
    got = []
    for _ in range(8):
        q = el.next_query("nonsequential", rng)
        got.append((q.i, q.j))
        el.answer(q.i, q.j, expert.answer(q.i, q.j))
    expected = [p for p in ranked if p != skipped][:8]
    assert got == expected
    # not re-scored after the answers: same order whatever the answers were


def test_nonsequential_ranking_needs_no_answers_before_it():
    el = make_elicitor()
    el.answer(0, 1, "similar")
    with pytest.raises(ElicitError, match="before any answer"):
        el.next_query("nonsequential", np.random.default_rng(0))


def test_random_and_pool_draw_from_unasked():
    el = make_elicitor(pool_size=12)
    rng = np.random.default_rng(3)
    for i, j in all_pairs(el.data.p)[::2]:
        el.answer(i, j, "dissimilar" if (i + j) % 3 else "dont_know")
    left = {tuple(p) for p in el.unasked()}
    assert len(left) == 22
    for _ in range(30):
        q = el.next_query("random", rng)
        assert (q.i, q.j) in left
    pool = el.draw_pool(rng)
    assert len(pool) == 12 and len({tuple(p) for p in pool}) == 12
    assert {tuple(p) for p in pool} <= left
    # every unasked pair can be drawn
    seen = set()
    for _ in range(200):
        q = el.next_query("random", rng)
        seen.add((q.i, q.j))
    assert seen == left


def test_sequential_picks_the_best_of_its_pool():
    el = make_elicitor(utility="exact", pool_size=8)
    rng = np.random.default_rng(5)
    q = el.next_query("sequential", rng)
    # the same pool, drawn again from an identically seeded generator
    pool = el.draw_pool(np.random.default_rng(5))
    sc = UtilityScorer(el.data, el.fit, el.engine).score(pool, "exact")
    b = int(np.argmax(sc.utility))
    assert (q.i, q.j) == tuple(pool[b])
    assert q.expected_gain == pytest.approx(sc.utility[b], rel=1e-6)


def test_pool_larger_than_unasked_is_capped_with_a_warning():
    el = make_elicitor(pool_size=30, refine=1)
    for i, j in all_pairs(el.data.p)[:20]:
        el.answer(i, j, "dont_know")
    rng = np.random.default_rng(0)
    with pytest.warns(UserWarning, match="pool size 30 is larger than the 25 unasked"):
        pool = el.draw_pool(rng)
    assert len(pool) == 25
    with pytest.warns(UserWarning, match="larger than"):
        el.next_query("sequential", rng)


def test_default_pool_is_capped_silently():
    el = make_elicitor(refine=1)
    assert el.pool_size == len(el.candidates)  # min(45, 10 p)
    for i, j in all_pairs(el.data.p)[:20]:
        el.answer(i, j, "dont_know")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert len(el.draw_pool(np.random.default_rng(0))) == 25


# -- answers -------------------------------------------------------------------------------


ANSWERS = [(0, 1, "similar"), (2, 7, "dissimilar"), (3, 4, "dont_know"), (1, 8, "similar"),
           (5, 9, "dissimilar"), (6, 2, 1), (4, 9, Answer.DISSIMILAR)]


@pytest.mark.parametrize("variant", ["fixed", "learned"])
def test_set_answers_rebuilds_the_same_fit(variant):
    one = make_elicitor(variant)
    for i, j, a in ANSWERS:
        one.answer(i, j, a)
    batch = make_elicitor(variant)
    batch.answer(0, 2, "similar")  # replaced by set_answers
    batch.set_answers(ANSWERS)
    assert batch.history == one.history
    assert np.array_equal(batch.data.pairs, one.data.pairs)
    assert np.array_equal(batch.data.f, one.data.f)
    assert np.array_equal(batch.unasked(), one.unasked())
    assert not batch.is_asked(0, 2)
    # Both refits stop on the Newton decrement (1e-10), ~1e-6 from the exact optimum, from
    # different starts; so they agree to a few 1e-6, not to rounding.
    np.testing.assert_allclose(_theta(batch), _theta(one), rtol=1e-5, atol=1e-8)
    assert batch.fit.log_density == pytest.approx(one.fit.log_density, rel=1e-9)


def test_set_answers_without_model_answers_is_the_initial_fit():
    el = make_elicitor()
    el.answer(0, 1, "similar")
    el.set_answers([(2, 3, "dont_know")])
    assert el.fit is el.initial_fit
    assert len(el.data.f) == 0 and el.n_answers == 1


def test_reset_forgets_everything():
    el = make_elicitor(refine=2)
    rng = np.random.default_rng(0)
    first = el.next_query("nonsequential", rng)
    el.answer(first.i, first.j, "similar")
    el.answer(0, 9, "dont_know")
    assert el.fit is not el.initial_fit
    el.reset()
    # back at the no-feedback MAP, which no utility round has changed (it is immutable) and
    # which carries no Hessian of the placeholder threshold prior
    assert el.data is el.base
    assert el.fit is el.initial_fit
    assert el.fit.warm_hessian is None
    with pytest.raises(ValueError, match="read-only"):
        el.fit.gamma[0] = 99.0
    assert el.n_answers == 0 and el.history == []
    assert len(el.unasked()) == len(el.candidates)
    # the non-sequential ranking was forgotten too, and is rebuilt identically
    again = el.next_query("nonsequential", rng)
    assert (again.i, again.j) == (first.i, first.j)
    el.answer(again.i, again.j, "similar")
    assert el.n_answers == 1


@pytest.mark.parametrize("i,j,answer,match", [
    (0, 1, "maybe", "invalid answer 'maybe'.*similar.*dissimilar.*dont_know"),
    (0, 1, 2, "invalid answer"),
    (0, 1, None, "invalid answer"),
    (0, 0, "similar", r"\(0, 0\) is not a candidate pair"),
    (0, 10, "similar", r"\(0, 10\) is not a candidate pair"),
    (-1, 3, "similar", "not a candidate pair"),
])
def test_invalid_answers_and_pairs(i, j, answer, match):
    el = make_elicitor()
    with pytest.raises(ElicitError, match=match):
        el.answer(i, j, answer)
    # a rejected answer leaves no trace
    assert el.n_answers == 0 and len(el.unasked()) == len(el.candidates)


def test_set_answers_rejects_duplicates_and_keeps_nothing_half_done():
    el = make_elicitor()
    with pytest.raises(ElicitError, match=r"\(1, 0\) appears twice"):
        el.set_answers([(0, 1, "similar"), (1, 0, "dissimilar")])


@pytest.mark.parametrize("raw,expected", [
    ("similar", Answer.SIMILAR), ("Similar ", Answer.SIMILAR), ("s", Answer.SIMILAR),
    (1, Answer.SIMILAR), (True, Answer.SIMILAR), (np.int64(0), Answer.DISSIMILAR),
    ("different", Answer.DISSIMILAR), ("don't know", Answer.DONT_KNOW),
    ("Do not know", Answer.DONT_KNOW), ("?", Answer.DONT_KNOW),
])
def test_answer_parsing(raw, expected):
    assert Answer.parse(raw) is expected


def test_restricted_candidates():
    cands = [(3, 1), (0, 2), (4, 5)]
    el = make_elicitor(candidates=cands)
    assert [tuple(p) for p in el.candidates] == [(0, 2), (1, 3), (4, 5)]
    with pytest.raises(ElicitError, match="not a candidate pair"):
        el.answer(0, 1, "similar")
    rng = np.random.default_rng(0)
    seen = {tuple(sorted((q.i, q.j))) for q in (el.next_query("random", rng) for _ in range(30))}
    assert seen == {(0, 2), (1, 3), (4, 5)}


# -- bad input -----------------------------------------------------------------------------


def _bad_inputs():
    a = small_arrays()
    X, y, U = a.X, a.y, a.U
    Xnan = X.copy()
    Xnan[2, 3] = np.nan
    yinf = y.copy()
    yinf[0] = np.inf
    Unan = U.copy()
    Unan[1, 1] = np.nan
    return [
        ("y_length", (X, y[:-1], U), {}, "X has 12 rows but y has 11"),
        ("X_1d", (X[:, 0], y, U), {}, "X must be a 2-D array"),
        ("X_nan", (Xnan, y, U), {}, "X contains 1 NaN"),
        ("y_inf", (X, yinf, U), {}, "y contains 1 NaN or infinite"),
        ("U_nan", (X, y, Unan), {}, "meta-features U contains 1 NaN"),
        ("U_rows", (X, y, U[:-1]), {}, "meta-features have 9 rows but X has 10 features"),
        ("U_1d", (X, y, U[:, 0]), {}, "meta-features must be a 2-D array"),
        ("X_text", ([["a"] * 10] * 12, y, U), {}, "X must be numeric"),
        ("engine", (X, y, U), {"engine": "tensorflow"}, "unknown engine 'tensorflow'"),
        ("utility", (X, y, U), {"utility": "slow"}, "utility must be 'fast' or 'exact'"),
        ("refine", (X, y, U), {"refine": -1}, "refine must be a non-negative integer"),
        ("pool", (X, y, U), {"pool_size": 0}, "pool_size must be a positive integer"),
        ("cand_shape", (X, y, U), {"candidates": [1, 2, 3]}, "shape"),
        ("cand_range", (X, y, U), {"candidates": [(0, 10)]}, "0..9"),
        ("cand_self", (X, y, U), {"candidates": [(2, 2)]}, "two different features"),
        ("cand_dup", (X, y, U), {"candidates": [(2, 3), (3, 2)]}, "duplicates"),
    ]


@pytest.mark.parametrize("name,args,kw,match", _bad_inputs(), ids=[b[0] for b in _bad_inputs()])
def test_bad_input_is_an_elicit_error(name, args, kw, match):
    kw = {"engine": "numpy", **kw}
    with pytest.raises(ElicitError, match=match):
        Elicitor(*args, HYPER, **kw)


@pytest.mark.parametrize("kw,match", [
    ({"a_sigma": -1.0}, "a_sigma must be a positive number"),
    ({"b_sigma": 0.0}, "b_sigma must be a positive number"),
    ({"tau2": -0.01}, "tau2 must be a positive number"),
    ({"a_tau": np.nan}, "a_tau must be a positive number"),
    ({"b_tau": np.inf}, "b_tau must be a positive number"),
    ({"threshold_mean": -3.0}, "threshold_mean must be 'auto' or a positive number"),
    ({"threshold_mean": "big"}, "threshold_mean must be 'auto'"),
    ({"variant": "both"}, "variant must be 'fixed' or 'learned'"),
])
def test_bad_hyperparameters(kw, match):
    with pytest.raises(ElicitError, match=match):
        Hyper(**kw)


def test_unknown_strategy_and_engine():
    el = make_elicitor()
    with pytest.raises(ElicitError, match="unknown strategy 'greedy'.*random.*sequential"):
        el.next_query("greedy", np.random.default_rng(0))
    with pytest.raises(ElicitError, match="unknown engine 'jax'.*numpy"):
        get_engine("jax")


def test_fast_utility_with_custom_stan_file_is_an_error(tmp_path):
    from elicit.engines.numpy_engine import NumpyEngine

    a = small_arrays()
    stan = tmp_path / "custom.stan"
    stan.write_text("// custom\n")
    # An engine instance bypasses get_engine, so the utility check itself is reached.
    with pytest.raises(ElicitError, match="a custom Stan file does not have; use exact"):
        Elicitor(a.X, a.y, a.U, HYPER, engine=NumpyEngine("fixed"), stan_file=stan)


def test_predict_rejects_wrong_width():
    el = make_elicitor()
    assert el.predict(small_arrays().X[:3]).shape == (3,)
    with pytest.raises(ElicitError, match=r"shape \(m, 10\)"):
        el.predict(np.ones((3, 9)))


# -- the simulated expert ------------------------------------------------------------------


def test_group_oracle_answers():
    o = GroupOracle([0, 0, 1, 1, -1, 2])
    assert o.answer(0, 1) is Answer.SIMILAR
    assert o.answer(1, 0) is Answer.SIMILAR
    assert o.answer(2, 3) is Answer.SIMILAR
    assert o.answer(0, 2) is Answer.DISSIMILAR
    assert o.answer(3, 5) is Answer.DISSIMILAR
    assert o.answer(4, 0) is Answer.DONT_KNOW
    assert o.answer(5, 4) is Answer.DONT_KNOW
    with pytest.raises(ElicitError, match="out of range"):
        o.answer(0, 6)
    with pytest.raises(ElicitError, match="out of range"):
        o.answer(-1, 2)
    with pytest.raises(ElicitError, match="1-D"):
        GroupOracle([[0, 1], [1, 0]])


def test_group_oracle_drives_the_model_towards_the_groups():
    """Answers from the oracle change the fit; "similar" answers lower gamma . w of their
    pairs relative to the threshold (they become more probable under the model)."""
    from scipy.special import expit

    el = make_elicitor()
    expert = GroupOracle(small_arrays().groups)
    rng = np.random.default_rng(1)
    for _ in range(10):
        q = el.next_query("random", rng)
        el.answer(q.i, q.j, expert.answer(q.i, q.j))
    pairs, f = el.data.pairs, el.data.f
    w = (el.data.U[pairs[:, 0]] - el.data.U[pairs[:, 1]]) ** 2

    def loglik(fit):
        s = expit(fit.xi - w @ fit.gamma)
        return np.sum(f * np.log(s) + (1 - f) * np.log1p(-s))

    assert 0 < f.sum() < len(f)
    assert loglik(el.fit) > loglik(el.initial_fit)


# -- strategies as registered objects ------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class LastAllowed(Strategy):
    """A toy strategy defined outside the package: the allowed pairs last first."""

    def choose(self, state, allowed, rng, k):
        return [Query(*map(int, state.candidates[t])) for t in allowed[::-1][:k]]


@dataclasses.dataclass(frozen=True)
class LowestRanked(Strategy):
    """A toy that reads the no-feedback ranking: its worst allowed pairs first."""

    def choose(self, state, allowed, rng, k):
        ok = set(allowed.tolist())
        index = [t for t in state.nonsequential_ranking().index[::-1] if t in ok]
        return [Query(*map(int, state.candidates[t])) for t in index[:k]]


@pytest.fixture
def toy_strategy():
    strategy = register_strategy(LastAllowed("test-last-allowed", "Last allowed", stream_id=90))
    yield strategy
    unregister_strategy(strategy.name)


def test_the_paper_strategies_have_their_labels_and_needs():
    assert STRATEGIES == ("random", "nonsequential", "sequential")
    assert [get_strategy(s).label for s in STRATEGIES] == ["Random", "Non-sequential",
                                                           "Sequential"]
    assert [get_strategy(s).needs_ranking for s in STRATEGIES] == [False, True, False]
    assert [get_strategy(s).draws_pool for s in STRATEGIES] == [False, False, True]


def _streams(names) -> dict[str, list[int]]:
    """The first draws of each strategy's stream in run 3 of a sweep with seed 0."""
    return {s: strategy_stream(0, 3, get_strategy(s).stream_id).generate_state(4).tolist()
            for s in names}


def test_stream_ids_are_distinct_and_registering_a_strategy_keeps_the_others_streams():
    """What the ids must be (not which numbers they are): distinct, so no two strategies
    share random draws, and fixed, so that a strategy registered later, in any order,
    re-seeds no stored result."""
    ids = [s.stream_id for s in STRATEGY_REGISTRY.values()]
    assert len(set(ids)) == len(ids) and all(isinstance(i, int) and i >= 0 for i in ids)
    before = _streams(STRATEGIES)
    unused = max(ids) + 1
    for order in ((unused, unused + 1), (unused + 1, unused)):
        added = [register_strategy(LastAllowed(f"test-{sid}", "Toy", stream_id=sid))
                 for sid in order]
        try:
            assert _streams(STRATEGIES) == before
            streams = _streams([*STRATEGIES, *(s.name for s in added)])
            assert len({tuple(v) for v in streams.values()}) == len(streams)
        finally:
            for s in added:
                unregister_strategy(s.name)


def test_a_strategy_registered_from_outside_is_asked_through_the_elicitor(toy_strategy):
    el = make_elicitor()
    rng = np.random.default_rng(0)
    cands = [tuple(map(int, c)) for c in el.candidates]
    name = toy_strategy.name
    q = el.next_query(name, rng)
    assert (q.i, q.j) == cands[-1]
    el.answer(q.i, q.j, "similar")
    q = el.next_query(name, rng, exclude=[cands[-2]])
    assert (q.i, q.j) == cands[-3]
    assert [(b.i, b.j) for b in el.next_batch(name, rng, 3)] == cands[-2:-5:-1]
    assert STRATEGY_REGISTRY[name] is toy_strategy


def test_the_strategy_registry_refuses_taken_names_and_streams_in_one_line(toy_strategy):
    with pytest.raises(ElicitError, match=r"^a strategy named 'sequential' is already "
                                          r"registered; choose another name$"):
        register_strategy(LastAllowed("sequential", "Mine", stream_id=91))
    sid = get_strategy("sequential").stream_id
    taken = sorted(s.stream_id for s in STRATEGY_REGISTRY.values())
    with pytest.raises(ElicitError, match=rf"^stream id {sid} is taken by strategy "
                                          rf"'sequential'; give 'mine' an unused one \(taken: "
                                          rf"{re.escape(str(taken))}\)$"):
        register_strategy(LastAllowed("mine", "Mine", stream_id=sid))
    with pytest.raises(ElicitError, match=r"^the stream id of strategy 'mine' must be a "
                                          r"non-negative integer, got -1$"):
        register_strategy(LastAllowed("mine", "Mine", stream_id=-1))
    with pytest.raises(ElicitError, match=r"^register_strategy takes a Strategy object, "
                                          r"got str$"):
        register_strategy("mine")  # type: ignore[arg-type]
    # a sweep stores a strategy's runs in a folder of its name: "my/way" made a folder in a
    # folder, ".." wrote its runs into parts/ itself, "../../x" beside the sweep
    # Bug (2026-11-30): a NUL, a control character or a name longer than a file name may be
    # (255 bytes) was taken, and the sweep then failed with a bare ValueError ("embedded null
    # byte") or OSError ("File name too long") when it made the folder
    for name in ("my/way", "..", ".", "..\\x", "a\x00b", "two\nlines", "y" * 256):
        with pytest.raises(ElicitError, match=r"^a strategy needs a name without commas or "
                                              r"surrounding spaces that can name a folder"):
            register_strategy(LastAllowed(name, "Mine", stream_id=92))
    assert "mine" not in STRATEGY_REGISTRY
    with pytest.raises(ElicitError, match=r"^unknown strategy 'mine'; choose one of random, "
                                          r"nonsequential, sequential, test-last-allowed; "
                                          r"one of your own is known only in the process "
                                          r"that registers it"):
        get_strategy("mine")


def test_the_elicitor_reads_a_strategys_needs_not_its_name():
    ranked = register_strategy(LowestRanked("test-lowest", "Lowest", stream_id=91,
                                            needs_ranking=True, draws_pool=True))
    try:
        el = make_elicitor(utility="exact", pool_size=1000)
        el.answer(0, 1, "similar")
        # it reads the no-feedback ranking, which answers given before it was made forbid
        with pytest.raises(ElicitError, match="the non-sequential ranking is made before any"):
            el.next_query("test-lowest", np.random.default_rng(0))
        el.reset()
        with pytest.warns(UserWarning, match="pool size 1000 is larger than the 45 unasked"):
            q = el.next_query("test-lowest", np.random.default_rng(0))
        ranking = el.nonsequential_ranking()
        assert (q.i, q.j) == tuple(el.candidates[ranking.index[-1]])
    finally:
        unregister_strategy(ranked.name)


# -- a review of the elicitation API (docs/reliability.md, "A review of the data layer ...") -

class _Flaky:
    """A numpy engine whose fits fail while ``fail`` is set, or report no convergence."""

    def __init__(self, engine):
        self.inner, self.fail, self.unconverged = engine, False, False

    def __getattr__(self, name):
        return getattr(self.inner, name)

    def fit(self, data, init=None, **kw):
        from elicit.errors import EngineError

        if self.fail:
            raise EngineError("CmdStan optimisation failed: made up")
        fit = self.inner.fit(data, init=init, **kw)
        if self.unconverged:
            fit = dataclasses.replace(fit, converged=False, message="L-BFGS-B: ABNORMAL")
        return fit


def test_a_failed_refit_leaves_no_answer_behind_and_can_be_retried(monkeypatch):
    # the answer was recorded before the refit: after an engine error it stood in the history
    # and the model data with the old MAP, and giving it again was "already answered"
    el = make_elicitor()
    flaky = _Flaky(el.engine)
    monkeypatch.setattr(el, "engine", flaky)
    before = el.fit
    flaky.fail = True
    with pytest.raises(ElicitError, match="made up"):
        el.answer(0, 1, "similar")
    assert el.n_answers == 0 and len(el.data.f) == 0 and el.fit is before
    flaky.fail = False
    el.answer(0, 1, "similar")
    assert el.n_answers == 1 and len(el.data.f) == 1 and el.fit is not before


def test_an_unconverged_refit_is_said(monkeypatch):
    el = make_elicitor()
    flaky = _Flaky(el.engine)
    monkeypatch.setattr(el, "engine", flaky)
    flaky.unconverged = True
    with pytest.warns(UserWarning, match=r"the refit after answer 1 did not converge "
                                         r"\(L-BFGS-B: ABNORMAL\)") as said:
        el.answer(0, 1, "similar")
    assert said[0].filename == __file__  # the caller's line, not contextlib's


def test_the_questions_choose_the_model_when_hyper_names_none(tmp_path):
    a = small_arrays()
    # refused with "use model='relevance'", which was refused in turn for "all"
    el = Elicitor(a.X, a.y, a.U, questions="all", engine="numpy")
    assert el.settings.model == RoundSettings(questions="all").validate().model
    assert el.hyper.model == el.settings.model
    with pytest.raises(ElicitError, match="hyper must be an elicit.Hyper, got dict"):
        Elicitor(a.X, a.y, a.U, {"tau2": 0.5}, engine="numpy")
    # an engine object runs its own program: a stan_file beside it was ignored, and recorded
    with pytest.raises(ElicitError, match="stan_file goes with an engine's name"):
        (tmp_path / "mine.stan").write_text("// mine\n")
        Elicitor(a.X, a.y, a.U, engine=get_engine("numpy"), stan_file=tmp_path / "mine.stan",
                 utility="exact")


@contextlib.contextmanager
def choosing(name: str, stream_id: int, returns):
    """A strategy ``name`` whose ``choose`` returns ``returns(state, k)``, registered for the
    block: a strategy of one's own that may return anything."""
    from elicit.elicitation.strategies import RandomStrategy, unregister_strategy

    @dataclasses.dataclass(frozen=True)
    class Chooser(RandomStrategy):
        def choose(self, state, allowed, rng, k):
            return returns(state, k)

    register_strategy(Chooser(name, name, stream_id=stream_id))
    try:
        yield
    finally:
        unregister_strategy(name)


def test_a_strategy_that_chooses_nothing_is_one_line():
    with choosing("nothing-test", 901, lambda state, k: []), pytest.raises(
            ElicitError, match=r"strategy 'nothing-test' chose 0 questions, not 1"):
        make_elicitor().next_query("nothing-test", np.random.default_rng(0))


def test_a_strategy_that_chooses_a_question_not_allowed_is_one_line():
    # the question was handed out, to be refused only at answer(): "already answered"
    with choosing("stale-test", 902, lambda state, k: [state.query(0)] * k):
        el = make_elicitor()
        assert el.next_query("stale-test", np.random.default_rng(0)) == el.query(0)
        message = (r"^strategy 'stale-test' chose \('pairs', 0, 1\), which is not an open "
                   r"question \(asked, excluded, closed or chosen twice\); a strategy chooses "
                   r"among the allowed ones$")
        with pytest.raises(ElicitError, match=message):
            el.next_query("stale-test", np.random.default_rng(0), exclude=[(1, 0)])
        el.answer(0, 1, "similar")
        with pytest.raises(ElicitError, match=message):
            el.next_query("stale-test", np.random.default_rng(0))
        with pytest.raises(ElicitError, match=message):
            el.next_batch("stale-test", np.random.default_rng(0), 2)


@pytest.mark.parametrize("returns, message", [
    (lambda state, k: None, r"chose NoneType, not a list of 1 to 3$"),
    (lambda state, k: (state.query(t) for t in range(k)),
     r"chose generator, not a list of 1 to 3$"),
    (lambda state, k: [], r"chose 0 questions, not a list of 1 to 3$"),
    (lambda state, k: [state.query(t) for t in range(k + 2)],
     r"chose 5 questions, not a list of 1 to 3$"),
    (lambda state, k: [state.query(0)] * k,
     r"chose \('pairs', 0, 1\), which is not an open question \(asked, excluded, closed or "
     r"chosen twice\)"),
    # the same question again, as (j, i) or with another gain, was asked twice in one batch
    (lambda state, k: [state.query(0), Query(1, 0)], r"chose \('pairs', 1, 0\), which is not"),
    (lambda state, k: [state.query(0), dataclasses.replace(state.query(0), expected_gain=1.0)],
     r"chose \('pairs', 0, 1\), which is not an open question"),
])
def test_a_strategy_that_returns_other_than_a_list_of_distinct_questions_is_one_line(
        returns, message):
    # next_batch handed out a generator, an empty batch, 5 questions for 3 or one question
    # three times; next_query failed with "object of type 'NoneType' has no len()"
    with choosing("odd-test", 903, returns):
        with pytest.raises(ElicitError, match=rf"^strategy 'odd-test' {message}"):
            make_elicitor().next_batch("odd-test", np.random.default_rng(0), 3)
        if "twice" not in message:
            with pytest.raises(ElicitError, match=r"^strategy 'odd-test' chose .*, not 1$"):
                make_elicitor().next_query("odd-test", np.random.default_rng(0))


def test_a_strategy_whose_choose_takes_other_arguments_is_refused_when_registered():
    # it was registered, then every next_query failed: "choose() takes 4 positional
    # arguments but 5 were given"
    @dataclasses.dataclass(frozen=True)
    class NoK(Strategy):
        def choose(self, state, allowed, rng):
            return []

    with pytest.raises(ElicitError, match=r"^strategy 'no-k-test': choose\(\) must take "
                                          r"\(state, allowed, rng, k\), as "
                                          r"Strategy.choose does$"):
        register_strategy(NoK("no-k-test", "No k", stream_id=904))
    assert "no-k-test" not in STRATEGY_REGISTRY


def test_a_failed_set_tau2_leaves_the_state_whole(monkeypatch):
    # set_tau2 replaced its base and start before its refits: after an engine error the new
    # tau2 stood beside the old answers' fit (the start's fit failing, then the answers')
    from elicit.errors import EngineError

    el = make_elicitor()
    el.answer(0, 1, "similar")
    inner = el.engine
    state = el.base, el.initial_fit, el.data, el.fit, list(el.history)
    for good_fits in (0, 1):
        fits: list = []

        def fit(data, init=None, fits=fits, good_fits=good_fits, **kw):
            fits.append(data)
            if len(fits) > good_fits:
                raise EngineError("CmdStan optimisation failed: made up")
            return inner.fit(data, init=init, **kw)

        monkeypatch.setattr(el, "engine", SimpleNamespace(fit=fit))
        with pytest.raises(ElicitError, match="made up"):
            el.set_tau2(0.1)
        assert len(fits) == good_fits + 1
        assert (el.base, el.initial_fit, el.data, el.fit, el.history) == state
        assert el.hyper.tau2 == 0.5 and el.is_asked(0, 1)
    monkeypatch.setattr(el, "engine", inner)
    el.set_tau2(0.1)
    assert el.hyper.tau2 == 0.1 and el.data.hyper.tau2 == 0.1 and el.n_answers == 1


def test_a_failed_set_answers_leaves_the_state_whole(monkeypatch):
    # history, asked and data were replaced before the refit: after an engine error they
    # stood beside the old MAP
    el = make_elicitor()
    el.answer(0, 1, "similar")
    flaky = _Flaky(el.engine)
    monkeypatch.setattr(el, "engine", flaky)
    history, data, fit = list(el.history), el.data, el.fit
    flaky.fail = True
    for asked in (None, [(2, 3), (4, 5), (6, 7)]):
        with pytest.raises(ElicitError, match="made up"):
            el.set_answers([(2, 3, "similar"), (4, 5, "dissimilar")], asked=asked)
        assert el.history == history and el.data is data and el.fit is fit
        assert el.is_asked(0, 1) and not el.is_asked(2, 3) and not el.is_asked(6, 7)
    flaky.fail = False
    el.set_answers([(2, 3, "similar"), (4, 5, "dissimilar")], asked=[(2, 3), (4, 5), (6, 7)])
    assert el.n_answers == 2 and len(el.data.f) == 2 and el.fit is not fit
    assert el.is_asked(6, 7) and not el.is_asked(0, 1)
