"""Feature questions beside pair questions: asking, answering, resuming, pools, the utility."""

from __future__ import annotations

import dataclasses
import itertools

import numpy as np
import pytest
from conftest import small_arrays
from helpers import fd_grad, question_rows, some_direction, some_relevance
from scipy import stats
from scipy.optimize import minimize_scalar

from elicit.elicitation.answers import Answer, GroupOracle, ask
from elicit.elicitation.elicitor import Elicitor
from elicit.elicitation.features import FeatureScorer
from elicit.elicitation.kinds import KINDS, model_for
from elicit.elicitation.questions import NO_FEATURE, Query
from elicit.elicitation.scorer import UtilityScorer
from elicit.elicitation.strategies import STRATEGIES, round_pool
from elicit.elicitation.table import feature_rows
from elicit.elicitation.utility import (
    PREDICTIVE_EXACT,
    PREDICTIVE_FAST,
    QuestionUtility,
    UtilityArgs,
    kl_gauss,
)
from elicit.engines import get_engine
from elicit.engines.numpy_engine import NumpyEngine
from elicit.errors import ElicitError
from elicit.model.covariance import Scales
from elicit.model.density import log_density
from elicit.model.marginal import Marginal
from elicit.model.spec import Hyper, ModelData, all_pairs
from elicit.model.theta import data_mean, theta_of

pytestmark = pytest.mark.usefixtures("one_blas_thread")


def make_elicitor(questions: str = "both", variant: str = "fixed", **kw) -> Elicitor:
    a = small_arrays()
    kw.setdefault("engine", "numpy")
    model = model_for(questions) or "relevance"
    return Elicitor(a.X, a.y, a.U, Hyper(variant=variant, tau2=0.5, model=model),
                    questions=questions, **kw)


def oracle() -> GroupOracle:
    """The small problem's groups, features 0 and 5 without a group: irrelevant."""
    groups = small_arrays().groups.copy()
    groups[[0, 5]] = -1
    return GroupOracle(groups)


def _rows(a) -> set[tuple[int, int]]:
    return {(int(i), int(j)) for i, j in np.asarray(a).reshape(-1, 2)}


def _theta(el: Elicitor) -> np.ndarray:
    t = theta_of(el.fit, el.data)
    t[el.data.d] /= el.hyper.threshold_mean
    return t


# -- asking and answering both kinds ---------------------------------------------------------


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_both_kinds_are_asked_once_and_no_pair_with_an_irrelevant_feature(strategy):
    el = make_elicitor(refine=1, pool_size=6)
    expert = oracle()
    rng = np.random.default_rng(1)
    p = el.data.p
    asked: list[tuple[int, int]] = []
    kinds = set()
    while len(el.unasked()):
        try:
            q = el.next_query(strategy, rng)
        except ElicitError as e:                  # the non-sequential ranking ran out
            assert strategy == "nonsequential" and "non-sequential ranking" in str(e)
            break
        assert q.row not in asked and q.row in _rows(el.unasked())
        irrelevant = set(np.flatnonzero(el.relevance == 0).tolist())
        assert q.kind == "relevance" or not irrelevant & set(q.features)
        el.answer(q.i, q.j, ask(expert, q))
        asked.append(q.row)
        kinds.add(q.kind)
    assert kinds == {"pairs", "relevance"}
    # the feature answers are the model's data
    for i, j, a in el.history:
        if j is None:
            assert el.relevance[i] == a.outcome
    assert [h.kind for h in el.history] == ["relevance" if j is None else "pairs"
                                            for _, j, _ in el.history]
    n_feature = sum(j is None for _, j, _ in el.history)
    assert np.sum(el.relevance != -1) == n_feature
    assert len(el.data.f) == sum(a.outcome is not None for _, j, a in el.history
                                 if j is not None)
    if strategy != "nonsequential":
        # all feature questions, and every pair among the features not called irrelevant
        # (besides pairs asked before one of their features was called irrelevant)
        assert n_feature == p
        relevant = np.flatnonzero(el.relevance == 1)
        assert _rows(relevant[all_pairs(len(relevant))]) <= set(asked)
        with pytest.raises(ElicitError, match="^every candidate question has been asked$"):
            el.next_query(strategy, rng)


def test_a_feature_answer_refits_and_dont_know_leaves_the_model_unchanged():
    el = make_elicitor()
    before = el.fit
    out = el.answer(3, None, "r")
    assert out is el.fit and el.fit is not before
    assert el.relevance[3] == 1 and el.data.relevance[3] == 1
    assert el.fit.zeta != before.zeta
    fit, data = el.fit, el.data
    assert el.answer(4, None, "?") is fit and el.data is data
    assert el.relevance[4] == -1
    assert el.history[-2:] == [(3, None, Answer.RELEVANT), (4, None, Answer.DONT_KNOW)]
    assert el.is_asked(4, None) and not el.is_asked(5, None)
    assert (4, NO_FEATURE) not in _rows(el.unasked())
    with pytest.raises(ElicitError, match=r"^feature 4 was already answered; a question is "
                                          r"asked once$"):
        el.answer(4, None, "irrelevant")
    # an irrelevant feature closes its pairs, whoever asks
    el.answer(0, None, "irrelevant")
    assert not any(0 in (i, j) for i, j in el.unasked() if j != NO_FEATURE)


ANSWERS = [(0, None, "irrelevant"), (1, 2, "similar"), (3, None, "relevant"),
           (4, None, "dont_know"), (2, 7, "dissimilar"), (6, None, 1), (8, 9, "?")]


@pytest.mark.parametrize("variant", ["fixed", "learned"])
def test_set_answers_of_both_kinds_rebuilds_the_same_fit_and_undo_reopens(variant):
    one = make_elicitor(variant=variant)
    for i, j, a in ANSWERS:
        one.answer(i, j, a)
    batch = make_elicitor(variant=variant)
    batch.answer(5, None, "relevant")             # replaced by set_answers
    batch.set_answers(ANSWERS)
    assert batch.history == one.history
    assert np.array_equal(batch.relevance, one.relevance)
    assert np.array_equal(batch.data.pairs, one.data.pairs)
    assert np.array_equal(batch.unasked(), one.unasked())
    assert not batch.is_asked(5, None)
    if variant == "fixed":
        # (with tau2 learned the small problem has two optima on these answers, and the
        # one-by-one refits follow another path to the other)
        np.testing.assert_allclose(_theta(batch), _theta(one), rtol=1e-5, atol=1e-7)
    # undo the last feature answer: the feature is open again and its pairs too
    batch.set_answers(ANSWERS[:-2] + ANSWERS[-1:])
    assert batch.relevance[6] == -1 and not batch.is_asked(6, None)
    # undo the irrelevant answer: its pairs come back
    batch.set_answers(ANSWERS[1:])
    assert (0, 5) in _rows(batch.unasked()) and batch.relevance[0] == -1
    # no feature or pair answer left: the no-feedback fit
    batch.set_answers([(4, None, "dont_know")])
    assert batch.fit is batch.initial_fit


def test_several_experts_set_a_class_only_where_they_agree():
    el = make_elicitor()
    el.set_answers([(1, None, "relevant", "ann"), (1, None, "relevant", "bob"),
                    (2, None, "relevant", "ann"), (2, None, "irrelevant", "bob"),
                    (3, None, "irrelevant", "bob")], asked=[(1, None), (2, None)])
    assert el.relevance[[1, 2, 3]].tolist() == [1, -1, 0]
    assert el.is_asked(2, None) and not el.is_asked(3, None)
    with pytest.raises(ElicitError, match=r"^feature 1 appears twice in the answers$"):
        el.set_answers([(1, None, "relevant"), (1, None, "irrelevant")])
    # a rejected call changes nothing
    assert el.relevance[[1, 2, 3]].tolist() == [1, -1, 0]


# -- pools ---------------------------------------------------------------------------------


def test_explicit_candidates_are_honoured_and_closed_by_an_irrelevant_feature():
    cands = [(0, 1), (1, 2), (2, 3), (3, 4)]
    el = make_elicitor(candidates=cands, refine=1)
    pairs = {r for r in _rows(el.unasked()) if r[1] != NO_FEATURE}
    assert pairs == set(cands)
    features = {r[0] for r in _rows(el.unasked()) if r[1] == NO_FEATURE}
    assert features == set(range(el.data.p))
    el.answer(2, None, "irrelevant")
    assert {r for r in _rows(el.unasked()) if r[1] != NO_FEATURE} == {(0, 1), (3, 4)}
    rng = np.random.default_rng(0)
    for strategy in ("random", "sequential"):
        for _ in range(5):
            q = el.next_query(strategy, rng)
            assert q.kind == "relevance" or q.row in {(0, 1), (3, 4)}
    with pytest.raises(ElicitError, match=r"^\(1, 5\) is not a candidate pair$"):
        el.answer(1, 5, "similar")


def test_random_nonsequential_and_sequential_draw_from_the_same_mixed_pool():
    el = make_elicitor(utility="exact", pool_size=5)
    el.answer(0, None, "irrelevant")
    el.answer(1, 2, "similar")
    el.answer(3, None, "dont_know")
    allowed = el.open_questions()
    assert _rows(question_rows(el)[np.asarray(allowed)]) == _rows(el.unasked())
    pool = el.draw_pool(np.random.default_rng(5))
    assert np.array_equal(pool, question_rows(el)[round_pool(el, allowed,
                                                            np.random.default_rng(5))])
    kinds = np.where(pool[:, 1] == NO_FEATURE, "feature", "pair")
    # every allowed feature question and pool_size pairs, none with feature 0
    assert _rows(pool[kinds == "feature"]) == {(k, NO_FEATURE) for k in range(10)} - {
        (0, NO_FEATURE), (3, NO_FEATURE)}
    assert (kinds == "pair").sum() == 5 and not any(0 in r for r in _rows(pool[kinds == "pair"]))
    # random: uniformly from the pool drawn with the same stream
    rng = np.random.default_rng(5)
    q = el.next_query("random", rng)
    assert q.row in _rows(pool)
    seen = {el.next_query("random", np.random.default_rng(s)).row for s in range(300)}
    assert seen <= _rows(el.unasked()) and {r[1] == NO_FEATURE for r in seen} == {True, False}
    # sequential: the best of that pool
    q = el.next_query("sequential", np.random.default_rng(5))
    sc = el.score(pool)
    assert q.row == tuple(pool[sc.best]) and q.expected_gain == pytest.approx(sc.utility[sc.best])
    # non-sequential: the start's pool (drawn among all questions) ranked once
    el.reset()
    ranking = el.nonsequential_ranking(np.random.default_rng(5))
    start = question_rows(el)[round_pool(el, el.table.everything(),
                                        np.random.default_rng(5))]
    assert _rows(question_rows(el)[ranking.index]) == _rows(start)
    assert len(start) == 10 + 5
    first = el.next_query("nonsequential", np.random.default_rng(99))
    assert first.row == tuple(question_rows(el)[ranking.index[0]])


def test_a_mixed_ranking_without_a_stream_is_the_same_after_reopening():
    a, b = make_elicitor(refine=1), make_elicitor(refine=1)
    b.answer(2, None, "relevant")                  # a resumed session ranks after answers
    ra, rb = a.nonsequential_ranking(), b.nonsequential_ranking()
    assert np.array_equal(ra.index, rb.index)


@pytest.mark.parametrize("questions", ["pairs", "relevance", "both", "pairs,relevance", "all"])
def test_the_rows_of_each_kind_of_elicitation(questions):
    el = make_elicitor(questions)
    kinds = question_rows(el)[:, 1] == NO_FEATURE
    one = sum(KINDS[k].arity == 1 for k in el.questions)     # kinds about one feature
    assert kinds.sum() == one * el.data.p
    assert (~kinds).sum() == (0 if questions == "relevance" else len(el.candidates))
    assert el.questions == {"pairs": ("pairs",), "relevance": ("relevance",),
                            "all": tuple(KINDS)}.get(questions, ("pairs", "relevance"))
    q = el.next_query("random", np.random.default_rng(0))
    assert q.kind in el.questions and (q.j is None) == (q.kind != "pairs")


# -- the utility ---------------------------------------------------------------------------


def test_the_feature_screen_ranks_like_exact_refits():
    el = make_elicitor(questions="relevance")
    el.answer(4, None, "relevant")
    el.answer(0, None, "irrelevant")
    features = np.flatnonzero(el.relevance == -1)
    scorer = FeatureScorer(UtilityScorer(el.data, el.fit, el.engine))
    screen, p = scorer.zeta_screen(features)
    exact = scorer.exact(features, p)
    assert np.all(exact >= 0) and np.all((0 < p) & (p < 1))
    rho = stats.spearmanr(screen, exact).statistic
    assert rho > 0.8
    # the screen's best is among the exact best two
    assert np.argmax(screen) in np.argsort(-exact)[:2]
    # the fast utility re-scores the best of its zeta-line screen exactly (all three: on a
    # small problem the budget pays for them), and so picks the exact best of them
    sc = el.score(feature_rows(features), refine=3)
    assert sc.exact.sum() == 3
    top3 = np.argsort(-scorer.zeta_screen(features)[0], kind="stable")[:3]
    np.testing.assert_allclose(sc.utility[top3], exact[top3], rtol=1e-6)


def _after_two_answers() -> tuple[Elicitor, np.ndarray]:
    el = make_elicitor(questions="relevance")
    el.answer(4, None, "relevant")
    el.answer(0, None, "irrelevant")
    return el, np.flatnonzero(el.relevance == -1)


def test_the_zeta_line_screen_finds_the_refit_of_zeta_alone():
    """Independent: for each candidate and answer, maximise the log density over zeta alone
    (gamma and xi held at the MAP) by a scalar optimiser, and take the KL there."""
    el, features = _after_two_answers()
    scorer = FeatureScorer(UtilityScorer(el.data, el.fit, el.engine))
    theta = theta_of(el.fit, el.data)
    z = el.data.layout.index("zeta")
    alone = []
    for k in features:
        kl = {}
        for c in (1, 0):
            d2 = scorer.with_class(k, c)

            def neg(zeta, d2=d2):
                t = theta.copy()
                t[z] = zeta
                return -log_density(t, d2)[0]

            t = theta.copy()
            t[z] = minimize_scalar(neg, bracket=(theta[z] - 0.1, theta[z] + 0.1),
                                   tol=1e-10).x
            kl[c] = kl_gauss(*Marginal.at(t, d2).predictive(), scorer.scorer.m0,
                             scorer.scorer.v0)
        p = scorer.p_relevant([k])[0]
        alone.append(p * kl[1] + (1 - p) * kl[0])
    line, p = scorer.zeta_screen(features)
    np.testing.assert_array_equal(p, scorer.p_relevant(features))
    # quadratics through three points 0.1 apart, followed up to 0.5 away (zeta moves by up
    # to 0.58 here, a tenth of the feature classes changing), and the neighbours' scales to
    # first order in their change of log h at the MAP (exact here: within 9.3%)
    np.testing.assert_allclose(line, alone, rtol=0.1)
    # and nearer the exact gains than the screen at the MAP's parameters
    exact = scorer.exact(features, p)
    p_held, kl_relevant, kl_irrelevant = (a[features] for a in scorer._screen_all)
    held = p_held * kl_relevant + (1.0 - p_held) * kl_irrelevant
    assert np.abs(np.log(line / exact)).max() < np.abs(np.log(held / exact)).max()


def test_fast_feature_rounds_stop_refining_when_the_winner_is_certain(monkeypatch):
    el, features = _after_two_answers()
    # as at Amazon size: the budget pays for one exact re-score, the rest must be earned
    monkeypatch.setattr(UtilityScorer, "refine_flops", 0.0)
    refine = 5
    sc = el.score(feature_rows(features), refine=refine)
    # the round's pieces, from the base Hessian the round used
    scorer = FeatureScorer(UtilityScorer(el.data, el.fit, el.engine, hessian=sc.hessian))
    line, p = scorer.zeta_screen(features)
    # utility="exact" at the same MAP, with an engine of its own (no memo shared)
    exact = UtilityArgs("exact", questions="relevance", model="relevance").validate()
    truth = exact.score(UtilityScorer(el.data, el.fit, get_engine("numpy", "fixed")),
                        feature_rows(features), refine).utility
    done = sc.exact
    assert 1 <= done.sum() < refine          # stopped early
    # the re-scores are the exact utility's values (the elicitor's round starts its refits
    # from the last refit's base Hessian, this scorer from a fresh one: they end within the
    # refits' scoring tolerance of each other), the others the zeta line's or the first
    # Newton steps' estimates, all among the zeta line's best
    np.testing.assert_allclose(sc.utility[done], truth[done], rtol=2e-4)
    top = np.argsort(-line, kind="stable")[:refine]
    stepped = []
    for c in np.flatnonzero(~done):
        if sc.utility[c] != line[c]:
            assert c in top
            assert sc.utility[c] == scorer.model_step_one(features[c], p[c])
            stepped.append(c)
    assert set(np.flatnonzero(done)) <= set(top)
    # the rule that stopped: the best exact gain beats every other estimate of the refine
    # best, raised by its level's margin (and by the worst underestimate, >= 1)
    best = sc.utility[done].max()
    for c in set(top) - set(np.flatnonzero(done)):
        margin = scorer.step_margin if c in stepped else scorer.screen_margin
        assert best >= sc.utility[c] * (1 + margin)
    # the pick is the exact utility's
    assert sc.best == np.argmax(truth)


def test_the_first_newton_steps_are_the_warm_refits_first_iterates():
    """Independent: the engine's own warm refit from the MAP, advanced one iteration."""
    el, features = _after_two_answers()
    scorer = FeatureScorer(UtilityScorer(el.data, el.fit, el.engine))
    engine = get_engine("numpy", "fixed")
    theta = np.maximum(theta_of(el.fit, el.data), el.data.layout.lower_bounds())
    for k in features[:4]:
        p = scorer.p_relevant([k])[0]
        kl = {}
        for c in (1, 0):
            d2 = scorer.with_class(k, c)
            run = engine.newton_run(d2, theta, scorer.scorer.hessian)
            run.advance(1)
            kl[c] = kl_gauss(*Marginal.at(run.theta, d2).predictive(), scorer.scorer.m0,
                             scorer.scorer.v0)
        np.testing.assert_allclose(scorer.model_step_one(k, p), p * kl[1] + (1 - p) * kl[0],
                                   rtol=1e-9)


def test_a_features_exact_gain_builds_no_kernel_at_the_rounds_map(monkeypatch):
    """Both refits start at the MAP, where only the scales differ from the round's marginal:
    its kernel serves them (the refits' later points build their own)."""
    from elicit.model import marginal
    from elicit.model.marginal_cache import marginal_cache

    el, features = _after_two_answers()
    scorer = FeatureScorer(UtilityScorer(el.data, el.fit, el.engine))
    assert scorer.scorer.marginal.K is not None           # the round's kernel, built
    marginal_cache.clear()
    built, kernel = [], marginal.kernel
    monkeypatch.setattr(marginal, "kernel",
                        lambda U, gamma, *a: built.append(np.array(gamma)) or kernel(U, gamma, *a))
    scorer.exact_one(features[0], 0.5)
    assert built and not any(np.array_equal(g, el.fit.gamma) for g in built)


def test_the_refit_after_a_feature_answer_is_the_rounds():
    el = make_elicitor(questions="relevance", refine=2)
    el.answer(4, None, "relevant")
    q = el.next_query("sequential", np.random.default_rng(0))
    before = el.fit
    runs = []
    newton_run = el.engine.newton_run
    el.engine.newton_run = lambda *a, **k: runs.append(1) or newton_run(*a, **k)
    fit = el.answer(q.i, q.j, ask(oracle(), q))
    # served from the engine's memo of the round's refits: no refit started
    assert runs == []
    # and it is the MAP of the new classes: a warm refit from the old MAP with the new
    # classes' own base Hessian there (as before the round's Hessian served) finds the same
    again = get_engine("numpy", "fixed").fit(
        el.data, init=dataclasses.replace(before, warm_hessian=None))
    np.testing.assert_allclose(theta_of(fit, el.data), theta_of(again, el.data), rtol=1e-6,
                               atol=1e-8)


def test_pairs_that_cannot_reach_the_best_feature_are_not_refined(monkeypatch):
    el = make_elicitor(refine=3)
    el.answer(4, None, "relevant")
    # as at Amazon size: no batched stage, no guaranteed re-scores
    monkeypatch.setattr(UtilityScorer, "refine_flops", 0.0)
    monkeypatch.setattr(UtilityScorer, "batch_flops", 0.0)
    pool = el.draw_pool(np.random.default_rng(0))
    sc = el.score(pool)
    pair = pool[:, 1] != NO_FEATURE
    best_feature = sc.utility[~pair & sc.exact].max()
    scorer = UtilityScorer(el.data, el.fit, el.engine)
    weight = FeatureScorer(scorer).answerable(pool[pair])
    margin = (1 + scorer.certainty_margin) ** 2
    # here no pair's screened gain comes near the best feature's: none is refined
    assert sc.utility[pair].max() * margin < best_feature and not sc.exact[pair].any()
    # and refining them would not have changed the pick
    refined = PREDICTIVE_FAST.score(scorer, pool[pair], 3, weight)
    assert refined.exact.any() and refined.utility.max() < best_feature
    # pair utilities that do not refine (the exact one) score as they would alone
    plain = PREDICTIVE_EXACT.score(scorer, pool[pair], 3, weight)
    beside = PREDICTIVE_EXACT.score_beside(scorer, pool[pair], 3, weight, best_feature)
    np.testing.assert_array_equal(plain.utility, beside.utility)


def test_the_exact_feature_gain_by_hand():
    """Each answer's MAP by a cold fit (not the scorer's warm Newton), the KL of the Gaussian
    predictives at the training inputs written out, weighted by p_relevant and 1 - p."""
    el, features = _after_two_answers()
    engine = NumpyEngine(el.data.hyper.variant, score_tol=1e-10)
    scorer = FeatureScorer(UtilityScorer(el.data, el.fit, engine))
    m0, v0 = Marginal.of_fit(el.data, el.fit).predictive()
    ks = features[:2]
    p = scorer.p_relevant(ks)
    expected = []
    for k, pk in zip(ks, p):
        kl = {}
        for c in (1, 0):
            d2 = scorer.with_class(k, c)
            m1, v1 = Marginal.of_fit(d2, engine.fit(d2)).predictive()
            kl[c] = np.sum(0.5 * np.log(v0 / v1) + (v1 + (m1 - m0) ** 2) / (2 * v0) - 0.5)
        expected.append(pk * kl[1] + (1 - pk) * kl[0])
    # the warm refits stop on a decrement of 1e-10 (see test_exact_utility_by_hand)
    np.testing.assert_allclose(scorer.exact(ks, p), expected, rtol=2e-4)
    assert min(expected) > 1e-4 and np.all((0 < p) & (p < 1))


def test_the_probability_of_relevant_is_the_bayes_factor_posterior():
    el = make_elicitor(questions="relevance")
    scorer = FeatureScorer(UtilityScorer(el.data, el.fit, el.engine))
    k = 6
    # independent: the log marginal at the MAP's parameters with lambda_k = 1 and = eps
    from elicit.model.covariance import RELEVANCE
    from elicit.model.marginal import Marginal

    data = el.data
    sig = data.relevance_signal
    h = np.sqrt(RELEVANCE.lambdas(data.relevance, el.fit.zeta, sig))

    def logml(lam):
        # k's own scale changed, every other feature's held (its neighbours' change with the
        # answer is a consequence of the answer, not evidence about it)
        hk = h.copy()
        hk[k] = np.sqrt(lam)
        return Marginal(data.X * hk, data.y, data.U, el.fit.gamma, el.fit.tau2,
                        data.hyper.a_sigma, data.hyper.b_sigma).value

    prior_logit = el.fit.zeta + RELEVANCE.spread * sig[k]
    p = 1.0 / (1.0 + np.exp(-(prior_logit + logml(1.0) - logml(RELEVANCE.irrelevant_scale))))
    assert scorer.p_relevant([k])[0] == pytest.approx(p, rel=1e-9)


def test_pair_gains_are_weighted_by_the_chance_that_the_pair_is_answerable():
    el = make_elicitor(utility="exact")
    el.answer(3, None, "relevant")
    pairs = np.array([[1, 3], [1, 2], [3, 6]])
    hessian = el.fit.warm_hessian      # the round's base Hessian: the last refit's
    sc = el.score(pairs)
    scorer = UtilityScorer(el.data, el.fit, el.engine, hessian=hessian)
    plain = PREDICTIVE_EXACT.score(scorer, pairs)
    r = FeatureScorer(scorer).p_relevant(np.arange(el.data.p))
    r[3] = 1.0
    np.testing.assert_allclose(sc.utility, plain.utility * r[pairs[:, 0]] * r[pairs[:, 1]],
                               rtol=1e-9)


# -- one-line errors -----------------------------------------------------------------------


@pytest.mark.parametrize("kw, message", [
    ({"questions": "both", "model": "paper"},
     r"^questions='both' asks feature questions, which need a model with relevance classes: "
     r"use model='relevance' \(the model is 'paper'\)$"),
    ({"questions": "everything"}, r"^unknown question kind 'everything' in "
                                  r"questions='everything'; name kinds from pairs, relevance"),
    ({"questions": "pairs,pairs"}, r"^question kind 'pairs' is named twice in "
                                   r"questions='pairs,pairs'; name each kind once$"),
    ({"questions": "relevance", "target": "params"},
     r"^the 'params' utility target does not score feature questions; use "
     r"target='predictive' with questions='relevance'$"),
    ({"questions": "pairs", "utility": "relevance-fast"},
     r"^utility 'relevance-fast' scores feature questions, which questions='pairs' does not "
     r"ask; ask them \(questions='both'\) or use 'fast' or 'exact'$"),
    ({"questions": "relevance", "utility": "predictive-exact"},
     r"^utility 'predictive-exact' scores pair questions, which questions='relevance' does "
     r"not ask; ask them \(questions='both'\) or use 'fast' or 'exact'$"),
    ({"questions": "relevance", "utility": "sample-gain"},
     r"^utility 'sample-gain' scores samples, not questions of any kind; use 'fast' or "
     r"'exact'$"),
    ({"questions": "both", "utility": "exact", "stan_file": "my.stan"},
     r"^feature questions and the relevance model's pair weights are scored with the shipped "
     r"relevance model's analytic marginal"),
])
def test_utility_settings_that_cannot_run_are_one_line_errors(kw, message):
    kw.setdefault("model", "relevance")
    with pytest.raises(ElicitError, match=message):
        UtilityArgs(**kw).validate()


@pytest.mark.parametrize("questions, utility, parts", [
    ("pairs", "fast", ("predictive-fast", None)),
    ("both", "fast", ("predictive-fast", "relevance-fast")),
    ("both", "exact", ("predictive-exact", "relevance-exact")),
    ("relevance", "exact", (None, "relevance-exact")),
    ("both", "relevance-exact", ("predictive-fast", "relevance-exact")),
    ("both", "predictive-exact", ("predictive-exact", "relevance-fast")),
])
def test_the_relevance_model_scores_with_one_utility_of_the_named_parts(questions, utility,
                                                                         parts):
    got = UtilityArgs(utility, questions=questions, model="relevance").validate()
    assert isinstance(got, QuestionUtility)
    named = {k.name: u.name for k, u in got.parts}
    assert (named.get("pairs"), named.get("relevance")) == parts
    # the features first: the best feature's exact gain is what a pair must reach
    assert got.kinds == tuple(k for k in ("relevance", "pairs") if k in named)


def test_feature_questions_need_the_relevance_model_in_one_line():
    a = small_arrays()
    with pytest.raises(ElicitError, match=r"^questions='relevance' asks feature questions, "
                                          r"which need a model with relevance classes: use "
                                          r"model='relevance' \(the model is 'paper'\)$"):
        Elicitor(a.X, a.y, a.U, Hyper(tau2=0.5), questions="relevance", engine="numpy")
    # beside direction questions the model to name keeps the direction mean (model='relevance'
    # would be refused by them in turn)
    with pytest.raises(ElicitError, match=r"^questions='relevance,direction' asks feature "
                                          r"questions, .*use model='relevance-direction' "
                                          r"\(the model is 'direction'\)$"):
        Elicitor(a.X, a.y, a.U, Hyper(tau2=0.5, model="direction"),
                 questions="relevance,direction", engine="numpy")


@pytest.mark.parametrize("questions, i, j, answer, message", [
    ("both", 3, None, "similar", r"^'similar' answers a pair question .*not a feature question"),
    ("both", 1, 3, "relevant", r"^'relevant' answers a feature question .*not a pair question"),
    ("both", 10, None, "relevant", r"^feature index out of range 0..9: 10$"),
    ("pairs", 3, None, "relevant", r"^\(3, None\) is a question about one feature, which this "
                                   r"elicitation does not ask \(questions='pairs'\)$"),
    ("relevance", 1, 3, "similar", r"^\(1, 3\) is a question about a pair, which this "
                                   r"elicitation does not ask \(questions='relevance'\)$"),
])
def test_answers_to_the_wrong_question_are_one_line_errors(questions, i, j, answer, message):
    el = make_elicitor(questions)
    with pytest.raises(ElicitError, match=message):
        el.answer(i, j, answer)
    assert el.n_answers == 0 and el.fit is el.initial_fit


def test_an_exhausted_mixed_ranking_says_so():
    el = make_elicitor(questions="both", pool_size=1, refine=0)
    rng = np.random.default_rng(0)
    for _ in range(11):
        q = el.next_query("nonsequential", rng)
        el.answer(q.i, q.j, "dont_know")
    with pytest.raises(ElicitError, match=r"^every question of the non-sequential ranking has "
                                          r"been asked \(it ranks the 11 questions of the first "
                                          r"round's pool\); continue with another strategy$"):
        el.next_query("nonsequential", rng)


def test_query_kinds_reach_the_caller():
    el = make_elicitor(questions="relevance")
    q = el.next_query("sequential", np.random.default_rng(0))
    assert isinstance(q, Query) and q.kind == "relevance" and q.j is None and q.exact_gain


# -- pair answers say both features can be judged (issue 25, item 4) ---------------------------

def test_a_pair_answer_makes_both_features_relevant_in_a_model_with_relevance_classes():
    """The expert could say how features 1 and 2 affect the outcome, so both do: the model
    after the answer is the model after "relevant" to both and the pair answer."""
    el = make_elicitor()
    el.answer(1, 2, "similar")
    want = np.full(el.data.p, -1)
    want[[1, 2]] = 1
    np.testing.assert_array_equal(el.data.relevance, want)
    # the same data and MAP as the three answers given explicitly
    ref = make_elicitor()
    ref.set_answers([(1, None, "relevant"), (2, None, "relevant"), (1, 2, "similar")])
    np.testing.assert_array_equal(ref.data.relevance, el.data.relevance)
    assert el.fit.log_density == pytest.approx(ref.fit.log_density, abs=1e-8)
    np.testing.assert_allclose(_theta(el), _theta(ref), rtol=1e-5, atol=1e-7)


def test_a_dont_know_to_a_pair_judges_nothing_and_a_feature_answer_stands():
    el = make_elicitor()
    el.answer(1, 2, "dont_know")
    assert (np.asarray(el.data.relevance) == -1).all()
    el.answer(3, None, "irrelevant")   # closes the pairs of 3
    el.answer(1, 4, "dissimilar")
    el.answer(4, None, "irrelevant")   # after the pair: the expert's own word stands
    want = np.full(el.data.p, -1)
    want[[1]], want[[3, 4]] = 1, 0
    np.testing.assert_array_equal(el.data.relevance, want)
    # replayed in one go (the kinds entered in their order), the same classes and MAP
    replay = make_elicitor()
    replay.set_answers([(1, 2, "dont_know"), (3, None, "irrelevant"), (1, 4, "dissimilar"),
                        (4, None, "irrelevant")])
    np.testing.assert_array_equal(replay.data.relevance, want)
    assert replay.fit.log_density == pytest.approx(el.fit.log_density, abs=1e-6)


# -- answered one at a time or replayed at once: the same model (resume, undo) ---------------

@pytest.mark.parametrize("answers", [
    [(1, None, "irrelevant"), (1, 2, "similar")],
    [(1, 2, "similar"), (1, None, "irrelevant")],
    [(1, None, "dont_know"), (1, 2, "dissimilar")],
    [(1, 2, "dissimilar"), (1, None, "dont_know")],
    [(1, None, "relevant"), (1, 2, "similar")],
    [(1, 2, "similar"), (1, None, "relevant")],
], ids=["irrelevant-pair", "pair-irrelevant", "dontknow-pair", "pair-dontknow",
        "relevant-pair", "pair-relevant"])
def test_one_expert_answers_one_at_a_time_and_replayed_give_the_same_model(answers):
    """A feature answer and a pair answer about the same feature, in either order: the
    elicitation answered one at a time and its answers replayed at once (a session's resume
    and undo) have the same relevance classes and MAP. The expert's own word about a
    feature stands; a pair answer judges a feature no feature answer judged."""
    live = make_elicitor()
    for i, j, a in answers:
        live.answer(i, j, a)
    replay = make_elicitor()
    replay.set_answers(answers)
    said = {a for i, j, a in answers if j is None}
    assert live.relevance[1] == {"irrelevant": 0}.get(said.pop(), 1)
    np.testing.assert_array_equal(replay.relevance, live.relevance)
    assert replay.fit.log_density == pytest.approx(live.fit.log_density, abs=1e-6)
    np.testing.assert_allclose(_theta(replay), _theta(live), rtol=1e-5, atol=1e-7)


SPLIT = [(1, None, "relevant", "ann"), (1, None, "irrelevant", "bob"),
         (1, 2, "similar", "bob")]


@pytest.mark.parametrize("order", list(itertools.permutations(range(3))))
def test_several_experts_replayed_a_pair_answer_judges_the_feature_they_disagree_about(order):
    """Two experts disagree about feature 1 and one of them answers the pair (1, 2): in any
    order, the replay is the model of that pair answer given alone, one at a time (the
    disagreement judges nothing; the pair answer says that both features matter), as
    :meth:`PairKind.judged` says."""
    replay = make_elicitor()
    replay.set_answers([SPLIT[k] for k in order], asked=[])
    live = make_elicitor()
    live.answer(1, 2, "similar")
    assert replay.relevance[1] == 1
    np.testing.assert_array_equal(replay.relevance, live.relevance)
    assert replay.fit.log_density == pytest.approx(live.fit.log_density, abs=1e-6)
    np.testing.assert_allclose(_theta(replay), _theta(live), rtol=1e-5, atol=1e-7)
    # without the pair answer the feature stays not judged
    replay.set_answers([a for a in SPLIT if a[1] is None], asked=[])
    assert replay.relevance[1] == -1


def test_pair_answers_leave_a_model_without_relevance_classes_alone():
    a = small_arrays()
    el = Elicitor(a.X, a.y, a.U, Hyper(variant="fixed", tau2=0.5), engine="numpy")
    el.answer(1, 2, "similar")
    assert not el.data.model.relevance and (np.asarray(el.data.relevance) == -1).all()
    assert len(el.data.f) == 1


def test_several_experts_a_pair_answer_judges_a_feature_they_disagree_about():
    """Experts who disagree about feature 1 leave it not judged; a pair answer about it is
    one more judgement that it matters, with the kinds entered in either order (a replay
    enters the pairs first)."""
    from elicit.elicitation.kinds.pairs import DISSIMILAR, PAIRS
    from elicit.elicitation.kinds.relevance import IRRELEVANT, RELEVANCE, RELEVANT

    data = make_elicitor().base
    features = ([(1, -1), (1, -1), (3, -1)], [RELEVANT, IRRELEVANT, IRRELEVANT])
    pairs = ([(1, 2), (3, 4)], [DISSIMILAR, DISSIMILAR])
    split = RELEVANCE.enter(data, *features)
    assert split.relevance[1] == -1 and split.relevance[3] == 0
    after = PAIRS.enter(split, *pairs)
    want = np.full(data.p, -1)
    want[[1, 2, 4]], want[3] = 1, 0
    np.testing.assert_array_equal(after.relevance, want)
    assert len(after.f) == 2 and after.relevance is not split.relevance
    np.testing.assert_array_equal(RELEVANCE.enter(PAIRS.enter(data, *pairs), *features).relevance,
                                  want)


@pytest.mark.parametrize("n", [8, 12])                # the n x n form, and the p x p form
@pytest.mark.parametrize("direction", [False, True])
def test_the_neighbour_screens_jacobians_match_finite_differences(n, direction):
    """d(mean), d(var) of the training predictive and d(log marginal) along log h_j, which
    the screen of the neighbours' scales uses, against central differences of marginals
    rebuilt at h_j e^(+-eps) (with a direction prior mean too, whose residual they keep)."""
    a = small_arrays(n=n)
    p = a.X.shape[1]
    model = "relevance-direction" if direction else "relevance"
    data = ModelData(a.X, a.y, a.U, Hyper(variant="learned", model=model, threshold_mean=a.m),
                     relevance=some_relevance(p), direction=some_direction(p))
    gamma, zeta = np.array([0.6, 1.3, 0.9]), -0.4
    mg = Marginal.from_data(data, gamma, 0.7, zeta=zeta, delta=0.5 if direction else None)
    assert (mg.basis is not None) == (n > p)
    h = data.hyper

    def at(log_h):
        other = Marginal(a.X, a.y, a.U, gamma, 0.7, h.a_sigma, h.b_sigma,
                         scales=Scales(np.exp(log_h), np.zeros(p, bool), np.zeros(p),
                                       np.zeros(p)), mean=data_mean(data, mg.delta))
        return np.concatenate([*other.predictive(), [other.value]])

    fd = fd_grad(at, np.log(mg.h), rel=1e-6)
    Jm, Jv, dvalue = FeatureScorer._jacobians(mg)
    for got, ref in ((Jm, fd[:n]), (Jv, fd[n:2 * n]), (dvalue, fd[-1])):
        np.testing.assert_allclose(got, ref, rtol=1e-6, atol=1e-7 * np.abs(ref).max())
