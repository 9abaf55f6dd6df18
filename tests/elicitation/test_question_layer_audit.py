"""The question layer where no other test looked (a mutation review: kinds, strategies,
answers and gains): each test checks behaviour against an expectation written independently
of the code (a hand-computed small case, the documented draw, a property)."""

from __future__ import annotations

import dataclasses
from types import SimpleNamespace

import numpy as np
import pytest
import scipy.stats
import toykind
from conftest import make_small_data, small_arrays
from scipy.special import expit

from elicit.elicitation.answers import Answer, check_expert
from elicit.elicitation.elicitor import Elicitor
from elicit.elicitation.gains import (
    PREDICTIVE_EXACT,
    PREDICTIVE_FAST,
    PairUtility,
    Scores,
    register_utility,
    unregister_utility,
)
from elicit.elicitation.kinds import KINDS, parse_questions, register_group, register_kind
from elicit.elicitation.questions import NO_FEATURE, question_key
from elicit.elicitation.scorer import UtilityScorer
from elicit.elicitation.strategies import answer_probabilities, disjoint_greedy, draw_pool
from elicit.elicitation.utility import QuestionUtility
from elicit.engines.numpy_engine import NumpyEngine
from elicit.errors import ElicitError
from elicit.model.spec import Hyper, all_pairs

pytestmark = pytest.mark.usefixtures("one_blas_thread")


# -- answers and kinds -----------------------------------------------------------------------

def test_an_answer_typed_with_hyphens_reads_as_with_spaces():
    assert Answer.parse("not-relevant") is Answer.IRRELEVANT
    assert Answer.parse("Do-not-know", "pairs") is Answer.DONT_KNOW


@pytest.mark.usefixtures("registries_restored")
def test_an_answer_without_a_key_is_refused():
    # an empty key would be the answer of a bare Enter in the terminal
    with pytest.raises(ElicitError, match=r"^the key of answer 'level' is one character "):
        Answer.define("level", "test-kind", 1, "Level", "")
    assert "level" not in [a.value for a in Answer]


@pytest.mark.usefixtures("registries_restored")
def test_a_kind_cannot_take_the_name_all():
    # questions="all" means every kind: a kind of that name could never be asked alone
    up = Answer.define("up", "all", 1, "Up", "+")
    down = Answer.define("down", "all", 0, "Down", "-")
    with pytest.raises(ElicitError, match=r"^a question kind named 'all' is already "):
        register_kind(toykind.SignKind("all", 1, (up, down), "sign", "sign questions",
                                       "a sign question", "m", "{0}?"))
    assert "all" not in KINDS


def test_a_group_cannot_take_a_kinds_name():
    # a group "relevance" would make questions="relevance" ask the group's kinds
    for name in ("relevance", "feature"):          # a kind's name, and an older name of it
        with pytest.raises(ElicitError, match=rf"^'{name}' already names question kinds$"):
            register_group(name, ["pairs"])
    assert parse_questions("relevance") == ("relevance",)


def test_an_expert_whose_relevance_is_not_a_method_is_refused_up_front():
    class Holder:
        relevance = np.ones(3)      # a data attribute of that name, not a method

        def answer(self, i, j):
            return "similar"

    with pytest.raises(ElicitError, match=r"^questions='both' asks feature questions, and the "
                                          r"expert \(Holder\) has no relevance\(k\) method"):
        check_expert(Holder(), "both")


def test_a_question_about_a_boolean_feature_index_is_refused():
    # True would be feature 1: el.answer(True, 2, ...) answered the pair (1, 2)
    for i, j in ((True, 2), (3, False), (False, None)):
        with pytest.raises(ElicitError, match=r"^a question is \(i, j\) for a pair or \(k, "
                                              r"None\) for a feature, with integer feature "):
            question_key(i, j)


# -- strategies ------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def pairs_el() -> Elicitor:
    """The small problem's pair questions (read only: no test answers through it)."""
    a = small_arrays()
    return Elicitor(a.X, a.y, a.U, Hyper(tau2=0.5), engine="numpy")


def test_the_random_strategy_draws_an_open_question_as_rng_choice_does(pairs_el):
    # one kind: a draw among the open questions, as rng.choice(n) (the sweeps' streams)
    pairs = all_pairs(pairs_el.data.p)
    for seed in range(4):
        q = pairs_el.next_query("random", np.random.default_rng(seed))
        assert (q.i, q.j) == tuple(pairs[np.random.default_rng(seed).choice(len(pairs))])


def test_a_random_batch_of_every_open_question_holds_each_once(pairs_el):
    batch = pairs_el.next_batch("random", np.random.default_rng(0), 45)
    assert sorted((q.i, q.j) for q in batch) == [tuple(p) for p in all_pairs(10)]


def test_a_pool_is_drawn_without_repeats_and_listed_increasing():
    allowed = np.arange(100, 200)
    for seed in range(3):
        pool = draw_pool(allowed, 10, np.random.default_rng(seed))
        assert len(set(pool.tolist())) == 10 and set(pool.tolist()) <= set(allowed.tolist())
        assert np.all(np.diff(pool) > 0)


def test_a_batch_is_disjoint_where_possible_then_filled_up_in_order():
    F = NO_FEATURE
    # two feature questions share no feature (the -1 of their rows is none)
    rows = np.array([[3, F], [5, F], [1, 2], [2, 3], [1, 4]])
    assert disjoint_greedy(rows, np.arange(5), 2) == [0, 1]
    # (2, 3) and (1, 4) share a feature with those taken: the best of them fills up
    assert disjoint_greedy(rows, np.arange(5), 4) == [0, 1, 2, 3]
    # a pair that shares its second feature is passed over for a disjoint one
    rows = np.array([[1, 2], [0, 2], [3, 4]])
    assert disjoint_greedy(rows, np.array([0, 1, 2]), 2) == [0, 2]
    assert disjoint_greedy(rows, np.array([2, 1, 0]), 2) == [2, 1]


@dataclasses.dataclass(frozen=True)
class Staged(PairUtility):
    """Gain i + j / 100, exact where i + j is even: the largest gains are a screen's (odd)."""

    def score(self, scorer, pairs, refine=10, weight=None):
        pairs = np.asarray(pairs, dtype=int).reshape(-1, 2)
        return Scores(pairs, pairs[:, 0] + pairs[:, 1] / 100.0, pairs.sum(axis=1) % 2 == 0,
                      np.full(len(pairs), 0.5))


@pytest.fixture
def staged_el():
    utility = register_utility(Staged("test-staged", "predictive"))
    try:
        a = small_arrays()
        yield Elicitor(a.X, a.y, a.U, Hyper(tau2=0.5), engine="numpy", utility=utility.name,
                       pool_size=45)
    finally:
        unregister_utility(utility.name)


def test_the_sequential_strategy_prefers_exact_gains_to_a_screens_estimates(staged_el):
    # by hand: the best exact gain among the pairs of 10 features is (7, 9), 7.09 (i + j
    # even); (8, 9), 8.09, is only an estimate; then (6, 8), 6.08, shares no feature
    q = staged_el.next_query("sequential", np.random.default_rng(0))
    assert (q.i, q.j, q.expected_gain, q.exact_gain) == (7, 9, 7.09, True)
    batch = staged_el.next_batch("sequential", np.random.default_rng(0), 2)
    assert [(b.i, b.j) for b in batch] == [(7, 9), (6, 8)]


def test_the_nonsequential_strategy_reports_each_questions_own_gain(staged_el):
    rng = np.random.default_rng(0)
    first = staged_el.next_query("nonsequential", rng)
    staged_el.answer(first.i, first.j, "dont_know")
    # the ranking's first is asked: the next one comes with its own gain, not the first's
    q = staged_el.next_query("nonsequential", rng)
    assert (q.i, q.j) == (6, 8)
    assert (q.expected_gain, q.exact_gain) == (q.i + q.j / 100.0, True)


def test_answer_probabilities_are_each_kinds_probability_of_its_first_answer():
    a = small_arrays()
    el = Elicitor(a.X, a.y, a.U, Hyper(tau2=0.5, model="relevance-direction"),
                  questions="all", engine="numpy", refine=0)
    p = el.data.p
    pairs, relevance, direction = np.arange(45), 45 + np.arange(p), 45 + p + np.arange(p)
    got = answer_probabilities(el, np.arange(len(el.table)))
    # similar: the logistic link at xi - gamma . w, w the squared meta-feature differences
    rows = all_pairs(p)
    w = (el.data.U[rows[:, 0]] - el.data.U[rows[:, 1]]) ** 2
    np.testing.assert_allclose(got[pairs], expit(el.fit.xi - w @ el.fit.gamma), rtol=1e-10)
    # relevant: the probability the feature utility weighs the answer "relevant" by
    np.testing.assert_allclose(got[relevance], el.score(relevance).p_answer, rtol=1e-10)
    # raises: P(beta_k > 0) under beta's Student-t marginal at the MAP
    post = el.posterior()
    t = scipy.stats.t(df=2 * post.a_star, loc=post.mu,
                      scale=np.sqrt(post.b_star / post.a_star * np.diag(post.Sigma)))
    np.testing.assert_allclose(got[direction], t.sf(0.0), rtol=1e-8)


def test_direction_questions_are_refitted_at_most_refine_of_them():
    a = small_arrays()
    el = Elicitor(a.X, a.y, a.U, Hyper(tau2=0.5, model="direction"), questions="direction",
                  engine="numpy", refine=0)
    features = np.arange(el.data.p)
    assert not el.score(features).exact.any()         # refine=0: the screen alone
    assert el.score(features, refine=1).exact.sum() == 1


# -- the gains of a round ---------------------------------------------------------------------

@pytest.fixture(scope="module")
def round_parts():
    """The small problem with a few answers, its MAP, and six unasked pairs."""
    data = make_small_data("fixed")
    engine = NumpyEngine("fixed")
    asked = {tuple(q) for q in data.pairs}
    pairs = np.array([q for q in all_pairs(data.p) if tuple(q) not in asked])[::7][:6]
    return data, engine.fit(data), engine, pairs


def _screen_only(data, fit, engine) -> UtilityScorer:
    scorer = UtilityScorer(data, fit, engine)
    scorer.batch_flops = 0.0          # no batched stage: the screen, then the re-scores
    return scorer


def test_pairs_are_refined_while_their_best_screened_gain_is_within_the_margin_of_the_reach(
        round_parts):
    data, fit, engine, pairs = round_parts
    scorer = _screen_only(data, fit, engine)
    _, w, s = scorer.prepare(pairs)
    best = scorer.screen(w, s).max()
    step = 1.0 + scorer.certainty_margin
    # refined while the reach is within (1 + margin)^2 of the best screened gain, not beyond
    near = PREDICTIVE_FAST.score_beside(scorer, pairs, 2, None, best * step ** 1.5)
    far = PREDICTIVE_FAST.score_beside(scorer, pairs, 2, None, best * step ** 2.5)
    assert near.exact.any() and not far.exact.any()


def test_the_fast_utility_screens_by_the_weighted_gain(round_parts):
    data, fit, engine, pairs = round_parts
    scorer = _screen_only(data, fit, engine)
    _, w, s = scorer.prepare(pairs)
    screen = scorer.screen(w, s)
    weight = np.linspace(0.4, 1.0, len(pairs))
    weight[np.argmax(screen)] = 0.01      # the best screened pair can hardly be answered
    got = PREDICTIVE_FAST.score(scorer, pairs, 1, weight)
    # the one re-score goes to the best weighted estimate; the others keep theirs
    assert np.flatnonzero(got.exact).tolist() == [int(np.argmax(weight * screen))]
    np.testing.assert_allclose(got.utility[~got.exact], (weight * screen)[~got.exact],
                               rtol=1e-12)


def test_the_fast_utilitys_rescored_gains_are_weighted(round_parts):
    data, fit, engine, pairs = round_parts
    scorer = _screen_only(data, fit, engine)
    scorer.refine_margin = np.inf         # re-score all that refine asks for
    weight = np.linspace(0.25, 1.0, len(pairs))
    fast = PREDICTIVE_FAST.score(scorer, pairs, len(pairs), weight)
    exact = PREDICTIVE_EXACT.score(scorer, pairs)          # unweighted
    assert fast.exact.all()
    np.testing.assert_allclose(fast.utility, weight * exact.utility, rtol=1e-9)


class _Kind:
    """A kind reduced to what a round asks of it: its name and its scores; it records the
    reach it is told."""

    def __init__(self, name, utility, exact, told):
        self.name, self.u, self.e, self.told = name, np.array(utility), np.array(exact), told

    def score(self, utility, round_, rows, refine, reach):
        self.told.append((self.name, reach))
        return Scores(rows, self.u, self.e, np.full(len(rows), 0.5))


def test_a_later_kind_is_told_the_best_exact_gain_of_the_kinds_before():
    told: list = []
    first = _Kind("first", [5.0, 2.0, 3.0], [False, True, True], told)   # 5.0: an estimate
    second = _Kind("second", [1.0], [True], told)
    utility = SimpleNamespace(name="u")
    both = QuestionUtility(((first, utility), (second, utility)))
    sc = both.score(SimpleNamespace(computed_hessian=None), np.zeros((4, 2), int), 1,
                    kinds=["first", "first", "second", "first"])
    assert told == [("first", -np.inf), ("second", 3.0)]
    assert sc.utility.tolist() == [5.0, 2.0, 1.0, 3.0]


# -- defects the review found (each test failed before its fix) ------------------------------

def test_a_numpy_boolean_answers_as_a_python_boolean_does():
    # (g[i] == g[j]) of numpy labels is an np.bool_: "invalid answer True: use 'similar', ..."
    assert Answer.parse(np.True_, "pairs") is Answer.parse(True, "pairs") is Answer.SIMILAR
    assert Answer.parse(np.False_) is Answer.DISSIMILAR


def test_a_random_batch_larger_than_a_mixed_rounds_pool_is_not_a_numpy_error():
    a = small_arrays()
    el = Elicitor(a.X, a.y, a.U, Hyper(tau2=0.5, model="relevance"), questions="both",
                  engine="numpy", pool_size=1)
    # the round's pool: 1 pair and the 10 feature questions; 55 questions are open
    batch = el.next_batch("random", np.random.default_rng(0), 12)
    assert 1 <= len(batch) <= 12 and len({(q.kind, q.i, q.j) for q in batch}) == len(batch)


@dataclasses.dataclass(frozen=True)
class FloatFlags(PairUtility):
    """Exact flags of 1.0 instead of True (as a utility of one's own may return them)."""

    def score(self, scorer, pairs, refine=10, weight=None):
        pairs = np.asarray(pairs, dtype=int).reshape(-1, 2)
        return Scores(pairs, pairs.sum(axis=1) / 10.0, np.ones(len(pairs)),
                      np.full(len(pairs), 0.5))


def test_a_utility_whose_exact_flags_are_not_booleans_is_one_line():
    register_utility(FloatFlags("test-float-flags", "predictive"))
    try:
        a = small_arrays()
        el = Elicitor(a.X, a.y, a.U, Hyper(tau2=0.5), engine="numpy",
                      utility="test-float-flags", pool_size=12)
        with pytest.raises(ElicitError, match=r"^utility 'test-float-flags' returned float64 "
                                              r"flags, not Scores .* a boolean exact flag "):
            el.next_query("sequential", np.random.default_rng(0))
    finally:
        unregister_utility("test-float-flags")


@pytest.mark.parametrize("answer", [(3, None, "relevant"), (1, 2, "similar")],
                         ids=["feature", "pair"])
def test_a_replay_that_changes_the_likelihood_of_y_drops_the_starts_base_hessian(
        monkeypatch, answer):
    """Under the relevance model a feature answer, and a pair answer (it judges both features
    relevant), change the likelihood of y: the base Hessian of the start's round belongs to
    other classes and is not handed to the replay's refit (a stale one only slows the
    secant Newton steps, so the MAP alone does not show it)."""
    a = small_arrays()
    el = Elicitor(a.X, a.y, a.U, Hyper(tau2=0.5, model="relevance"), questions="both",
                  engine="numpy", refine=0)
    el.score(np.arange(3))                  # a round at the start: its base Hessian is kept
    assert el._initial_hessian is not None
    handed, fit = [], el.engine.fit

    def spy(data, init=None, hessian=None, **kw):
        handed.append((init.warm_hessian is None, hessian is None))
        return fit(data, init=init, hessian=hessian, **kw)

    monkeypatch.setattr(el.engine, "fit", spy)
    el.set_answers([answer])
    assert handed == [(True, True)]
