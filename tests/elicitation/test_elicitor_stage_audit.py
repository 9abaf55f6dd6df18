"""The elicitor, the question table, the round settings, the feature pieces and the batched
Newton stage where no other test looked (a mutation review): each test checks behaviour
against an expectation written independently of the code (a hand-computed small case, the
documented rule, a property)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from conftest import make_small_data, small_arrays

from elicit.elicitation.elicitor import Elicitor
from elicit.elicitation.features import _worst_underestimate
from elicit.elicitation.scorer import UtilityScorer
from elicit.elicitation.settings import RoundSettings, given_settings
from elicit.engines.numpy_engine import NumpyEngine
from elicit.errors import ElicitError
from elicit.model.batch import flops_per_eval
from elicit.model.spec import Hyper, all_pairs

pytestmark = pytest.mark.usefixtures("one_blas_thread")


@pytest.fixture
def el() -> Elicitor:
    """An elicitor of pair questions on the small problem (fixed tau2 0.5, numpy engine)."""
    a = small_arrays()
    return Elicitor(a.X, a.y, a.U, Hyper(tau2=0.5), engine="numpy", refine=1)


# -- the elicitor ------------------------------------------------------------------------------

def test_one_feature_or_no_candidate_pair_is_refused_with_its_own_reason():
    """One feature is refused whatever the questions (not for want of pairs alone: a
    relevance-only elicitor was told about pairs); an empty ``candidates`` is said as such."""
    a = small_arrays()
    for questions, model in (("pairs", "paper"), ("relevance", "relevance")):
        with pytest.raises(ElicitError, match=r"^need at least 2 features$"):
            Elicitor(a.X[:, :1], a.y, a.U[:1], Hyper(tau2=0.5, model=model), engine="numpy",
                     questions=questions)
    with pytest.raises(ElicitError, match=r"^candidates holds no pair$"):
        Elicitor(a.X, a.y, a.U, Hyper(tau2=0.5), engine="numpy",
                 candidates=np.zeros((0, 2), dtype=int))


def test_a_replay_whose_refit_did_not_converge_is_said(el, monkeypatch):
    fit = el.engine.fit
    monkeypatch.setattr(el.engine, "fit", lambda *a, **kw: dataclasses.replace(
        fit(*a, **kw), converged=False, message="stalled"))
    with pytest.warns(UserWarning, match=r"^the refit after answer 2 did not converge \(stalled\)"):
        el.set_answers([(0, 1, "similar"), (2, 3, "dont_know")])


def test_set_tau2_keeps_the_questions_not_to_offer_again(el):
    el.answer(0, 1, "similar")
    el.set_asked([(0, 1), (2, 3)])        # e.g. another expert's question
    el.set_tau2(1.0)
    assert el.is_asked(2, 3) and el.is_asked(0, 1)
    assert el.hyper.tau2 == 1.0


def test_reset_after_two_new_tau2_restores_the_first(el):
    first = el.initial_fit
    el.set_tau2(1.0)
    el.set_tau2(2.0)
    el.reset()
    assert el.hyper.tau2 == 0.5 and el.fit is first


def test_a_question_index_one_past_the_table_is_out_of_range(el):
    with pytest.raises(ElicitError, match=rf"^question index {len(el.table)} is out of range"):
        el.score(np.array([len(el.table)]))


def test_a_pool_as_large_as_the_open_pairs_is_taken_without_a_warning(recwarn):
    a = small_arrays()
    el = Elicitor(a.X, a.y, a.U, Hyper(tau2=0.5), engine="numpy", pool_size=45)   # p = 10
    assert len(el.draw_pool(np.random.default_rng(0))) == 45
    assert not [w for w in recwarn if "pool size" in str(w.message)]


def test_a_replay_of_pair_answers_alone_keeps_the_starts_base_hessian(monkeypatch):
    """Pair answers leave the likelihood of y of the direction model alone: the replay's
    refit starts from the start's base Hessian even though direction questions, which
    change it, are asked too (none of them answered)."""
    a = small_arrays()
    el = Elicitor(a.X, a.y, a.U, Hyper(tau2=0.5, model="direction"),
                  questions="pairs,direction", engine="numpy", refine=0)
    el.score(np.arange(3))                  # a round at the start: its base Hessian is kept
    assert el._initial_hessian is not None
    handed, fit = [], el.engine.fit

    def spy(data, init=None, hessian=None, **kw):
        handed.append(hessian is el._initial_hessian)
        return fit(data, init=init, hessian=hessian, **kw)

    monkeypatch.setattr(el.engine, "fit", spy)
    el.set_answers([(1, 2, "similar")])
    assert handed == [True]


# -- the question table ------------------------------------------------------------------------

def test_a_feature_paired_with_itself_is_no_question(el):
    # (3, 3) is no pair: not read as its neighbour in the pair order, (2, 9)
    with pytest.raises(ElicitError, match=r"^\(3, 3\) is not a candidate pair"):
        el.answer(3, 3, "similar")
    assert el.n_answers == 0 and not el.is_asked(2, 9)


# -- the round settings ------------------------------------------------------------------------

@pytest.mark.parametrize("kw", [{"engine": "numpy"}, {"seed": 3}, {"questions": "relevance"}],
                         ids=["engine", "seed", "questions"])
def test_settings_and_a_keyword_together_are_refused(kw):
    # as an Elicitor and a Session take them: the keyword would be dropped without a word
    with pytest.raises(ElicitError, match=r"^give the round's settings either as settings= or "):
        given_settings(RoundSettings(engine="numpy"), **kw)


# -- the batched Newton stage ------------------------------------------------------------------

def _stage(batch_evals: float | None = None):
    """(scorer, pairs, w, s, screened gains) of a round on the small problem with 4 answers;
    ``batch_evals``: the stage's budget in density evaluations of one candidate's row."""
    data = make_small_data("fixed")
    engine = NumpyEngine("fixed")
    scorer = UtilityScorer(data, engine.fit(data), engine)
    asked = {tuple(q) for q in data.pairs}
    pairs = np.array([q for q in all_pairs(data.p) if tuple(q) not in asked])[::4]
    pairs, w, s = scorer.prepare(pairs)
    if batch_evals is not None:
        scorer.batch_flops = batch_evals * flops_per_eval(data)
    return scorer, pairs, w, s, scorer.screen(w, s)


@pytest.mark.parametrize("evals, staged", [(11.9, 0), (12.0, 1), (36.0, 3)])
def test_the_stage_pays_twelve_evaluations_per_candidate(evals, staged):
    # docs/benchmarks.md: "one candidate's 12 evaluations" (two refits of about six)
    scorer, pairs, w, s, screened = _stage(evals)
    u = screened.copy()
    scorer.newton_stage(u, w, s, None, np.zeros(len(u), bool), pairs, remember=1)
    changed = np.flatnonzero(u != screened)
    assert len(changed) == staged
    # the re-scored are the screen's best
    assert set(changed) == set(np.argsort(-screened)[:staged])


def test_every_candidate_that_may_win_has_its_refits_finished():
    # remember = every candidate: all may win, so all go on to convergence after the first
    # iteration, and each is then the exact expected KL of both answers
    scorer, pairs, w, s, screened = _stage()
    scorer.stage_iterations = 1
    u, exact = screened.copy(), np.zeros(len(screened), bool)
    scorer.newton_stage(u, w, s, None, exact, pairs, remember=len(pairs))
    assert exact.all()
    np.testing.assert_allclose(u, scorer.exact(pairs, s), rtol=2e-2)


def test_a_candidate_whose_refits_were_stopped_is_not_marked_exact():
    # no margin: only the best goes on after one iteration; the others' estimates are no
    # exact gains, so that the refinement may still re-score them
    scorer, pairs, w, s, screened = _stage()
    scorer.stage_iterations, scorer.certainty_margin = 1, 0.0
    u, exact = screened.copy(), np.zeros(len(screened), bool)
    scorer.newton_stage(u, w, s, None, exact, pairs, remember=1)
    assert 1 <= exact.sum() < len(pairs)
    np.testing.assert_allclose(u[exact], scorer.exact(pairs[exact], s[exact]), rtol=2e-2)


# -- the feature pieces ------------------------------------------------------------------------

def test_a_pair_with_a_feature_called_irrelevant_gains_nothing():
    # P(answerable) = r_i r_j, r = 0 for a feature the expert called irrelevant
    a = small_arrays()
    el = Elicitor(a.X, a.y, a.U, Hyper(tau2=0.5, model="relevance"), questions="both",
                  engine="numpy", refine=0)
    el.answer(3, None, "irrelevant")
    gains = el.score(np.array([[3, 4], [4, 5]])).utility
    assert gains[0] == 0.0 and gains[1] > 0.0


@pytest.mark.parametrize("under, value, estimate, worst", [
    (1.0, 3.0, 2.0, 1.5), (2.0, 3.0, 2.0, 2.0), (1.0, 1.0, 4.0, 1.0),
    (1.0, 0.5, 0.0, np.inf), (1.5, 0.0, 0.0, 1.5), (1.0, 0.5, -1.0, np.inf)])
def test_the_worst_underestimate_is_the_largest_ratio_seen(under, value, estimate, worst):
    # a gain the screen underestimated raises the bound of every later estimate, never lowers it
    assert _worst_underestimate(under, value, estimate) == worst
