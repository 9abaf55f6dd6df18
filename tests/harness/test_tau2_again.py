"""tau2 chosen again as relevance answers arrive (issue 25, "no dead start"): the Elicitor's
refit at another tau2, the sweep's schedule, the CV at a given gamma and the all-answers line."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from elicit.elicitation.elicitor import Elicitor
from elicit.elicitation.settings import RoundSettings
from elicit.errors import ElicitError
from elicit.harness.problem import Tau2Again
from elicit.harness.sweep import SweepConfig, run_one
from elicit.model.spec import Hyper
from elicit.paper.runinfo import ceiling
from elicit.paper.synthetic import synthetic_problem
from elicit.prior.tau2 import cv_tau2

pytestmark = pytest.mark.usefixtures("one_blas_thread")

HYPER = Hyper(variant="fixed", tau2=1.0, model="relevance")


def _problem(again: Tau2Again | None = None):
    prob = synthetic_problem(2, 0, irrelevant=6, pool="open")
    return dataclasses.replace(prob, hyper=HYPER, tau2_again=again)


def judged_count(classes: np.ndarray, gamma: np.ndarray) -> float:
    """A stand-in for the CV: a tau2 that says which classes and gamma it was given."""
    return 0.5 + 0.1 * int(np.sum(classes >= 0)) + 0.0 * float(gamma.sum())


def test_set_tau2_refits_as_a_fresh_elicitor_and_reset_restores_the_start():
    prob = _problem()
    el = Elicitor(prob.X, prob.y, prob.U, HYPER, engine="numpy", questions="both")
    start_mse, start_gamma = prob.mse(el), el.fit.gamma.copy()
    answers = [(k, None, prob.expert.relevance(k)) for k in (0, 3, 7, 11)]
    answers.append((1, 2, prob.expert.answer(1, 2)))
    for i, j, a in answers:
        el.answer(i, j, a)
    el.set_tau2(0.3)
    # the threshold mean stays the one the start resolved (a prior set before any answer)
    fresh = Elicitor(prob.X, prob.y, prob.U, dataclasses.replace(el.hyper, tau2=0.3),
                     engine="numpy", questions="both")
    fresh.set_answers(answers)
    assert el.hyper.tau2 == 0.3 and len(el.history) == len(answers)
    np.testing.assert_allclose(el.fit.gamma, fresh.fit.gamma, rtol=1e-5, atol=1e-8)
    assert prob.mse(el) == pytest.approx(prob.mse(fresh), rel=1e-6)
    assert el.is_asked(0, None) and el.is_asked(1, 2)        # still asked once only
    el.set_tau2(2.0)                                          # from the start's fit again
    el.reset()
    assert el.hyper.tau2 == 1.0 and not el.history
    assert prob.mse(el) == start_mse
    np.testing.assert_array_equal(el.fit.gamma, start_gamma)


def test_set_tau2_needs_a_fixed_positive_tau2():
    prob = _problem()
    el = Elicitor(prob.X, prob.y, prob.U, HYPER, engine="numpy", questions="both")
    with pytest.raises(ElicitError, match=r"^tau2 must be a positive number, got -1$"):
        el.set_tau2(-1)
    learned = Elicitor(prob.X, prob.y, prob.U, Hyper(variant="learned"), engine="numpy")
    with pytest.raises(ElicitError, match=r"^set_tau2 needs a fixed tau2 \(variant 'fixed'\)"):
        learned.set_tau2(0.1)


def test_a_sweep_chooses_tau2_again_after_the_scheduled_answers_only():
    # 4 rounds, choices after 1 and 3 answers: each choice holds for a round after it
    cfg = SweepConfig("x", 1, 4, settings=RoundSettings(engine="numpy", questions="both",
                                                        refine=2))
    again = run_one(_problem(Tau2Again((1, 3), judged_count)), cfg, 0, ("sequential", "random"))
    plain = run_one(_problem(), cfg, 0, ("sequential", "random"))
    for strategy, rec in again.items():
        tau2 = rec["tau2"]
        assert len(tau2) == cfg.rounds + 1
        # the start is the same: a choice again needs answers
        assert tau2[:1] == [1.0] and rec["mse"][:1] == plain[strategy]["mse"][:1]
        assert tau2[1] == tau2[2] != 1.0 and tau2[3] == tau2[4]
        assert tau2[1] != tau2[3] or strategy == "random"
        assert plain[strategy]["tau2"] == [1.0] * (cfg.rounds + 1)
    # the record's tau2 is the model's: an Elicitor given the same answers at that tau2
    rec = again["sequential"]
    prob = _problem()
    el = Elicitor(prob.X, prob.y, prob.U, HYPER, engine="numpy", questions="both")
    el = Elicitor(prob.X, prob.y, prob.U, dataclasses.replace(el.hyper, tau2=rec["tau2"][-1]),
                  engine="numpy", questions="both")
    el.set_answers([(i, j, a) for i, j, a in rec["asked"]])
    assert prob.mse(el) == pytest.approx(rec["mse"][-1], rel=1e-5)


def test_the_all_answers_line_chooses_tau2_again_once_with_every_answer():
    given = []

    def choose(classes, gamma):
        given.append((classes.copy(), gamma.copy()))
        return 0.4

    prob = _problem(Tau2Again((10,), choose))
    ceil = ceiling(prob, "numpy", "both")
    classes, gamma = given[0]
    assert len(given) == 1 and (classes >= 0).all()
    plain = ceiling(_problem(), "numpy", "both")
    assert ceil.initial == plain.initial
    m = Elicitor(prob.X, prob.y, prob.U, HYPER, engine="numpy").hyper.threshold_mean
    at = ceiling(dataclasses.replace(_problem(), hyper=dataclasses.replace(
        HYPER, tau2=0.4, threshold_mean=m)), "numpy", "both")
    assert ceil.ceiling == pytest.approx(at.ceiling, rel=1e-5)
    assert ceil.ceiling != pytest.approx(plain.ceiling, rel=1e-5)


def test_the_cv_at_a_given_gamma_is_the_closed_form_posterior_mean():
    """Each fold's posterior mean at (gamma, tau2) against mu = t K X' (I + t X K X')^-1 y."""
    prob = synthetic_problem(3, 0)
    X, y, U = prob.X, prob.y - prob.y.mean(), prob.U
    gamma, grid, folds = np.full(U.shape[1], 0.7), [0.05, 0.3, 2.0], 4
    best, scores = cv_tau2(X, y, U, grid, folds=folds, rng=np.random.default_rng(5),
                           gamma=gamma)
    diff = U[:, None, :] - U[None, :, :]
    K = np.exp(-0.5 * np.einsum("ijl,l->ij", diff**2, gamma))
    fold_of = np.random.default_rng(5).permutation(len(y)) % folds
    for t in grid:
        err = 0.0
        for k in range(folds):
            tr, te = fold_of != k, fold_of == k
            Xt, yt = X[tr], y[tr] - y[tr].mean()
            mu = t * K @ Xt.T @ np.linalg.solve(np.eye(tr.sum()) + t * Xt @ K @ Xt.T, yt)
            err += np.sum((X[te] @ mu + y[tr].mean() - y[te]) ** 2)
        assert scores[t] == pytest.approx(err / len(y), rel=1e-9)
    assert best == min(scores, key=scores.get)
