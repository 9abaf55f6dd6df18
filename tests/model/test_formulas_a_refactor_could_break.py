"""Formulas a mutation audit of the numerical code found unguarded by the fast tests (a factor,
a sign or a symmetrisation a refactor could drop), each checked against an independent
evaluation: a direct solve, the exact one-by-one utility, or a definition (docs/reliability.md,
"A mutation audit of the numerical code")."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import make_small_data
from helpers import theta_point

from elicit.elicitation.gains import PREDICTIVE_FAST
from elicit.elicitation.scorer import UtilityScorer
from elicit.engines.numpy_engine import NumpyEngine
from elicit.model.marginal import Marginal
from elicit.model.newton import NewtonProblem, NewtonSettings, projected_step, solve_local_model
from elicit.model.posterior import mean_squared_error
from elicit.model.spec import all_pairs


class _QuadraticOnly(NewtonProblem):
    """Rows without feedback terms: the local model is the base quadratic alone."""

    single = False

    def __init__(self, k: int) -> None:
        self.lb = np.full(k, -np.inf)

    def feedback(self, rows, theta, hess):
        C, k = theta.shape
        return np.zeros(C), np.zeros((C, k)), np.zeros((C, k, k)) if hess else None


def test_the_local_model_without_feedback_is_maximised_by_the_newton_step():
    # m(s) = g's + s'Hs/2 has its maximum at s = -H^-1 g (H negative definite, no bounds)
    rng = np.random.default_rng(3)
    C, k = 3, 4
    B = rng.normal(size=(C, k, k))
    H = -(B @ B.transpose(0, 2, 1) + k * np.eye(k))
    g = rng.normal(size=(C, k))
    theta = np.zeros((C, k))
    problem = _QuadraticOnly(k)
    step0, dec0 = projected_step(H, g, theta, problem.lb, None)
    s = solve_local_model(problem, np.arange(C), theta, g, H, step0, dec0, 1e-14,
                          NewtonSettings(local_model=True))
    want = -np.linalg.solve(H, g[:, :, None])[:, :, 0]
    np.testing.assert_allclose(s, want, rtol=1e-8, atol=1e-10)


class _ScreenOnly:
    """The parts of a scorer the fast pair utility calls, with a fixed screened gain; records
    whether the exact refinement ran."""

    certainty_margin = 0.3
    computed_hessian = False

    def __init__(self, screened: float) -> None:
        self.screened, self.refined = screened, False

    def prepare(self, pairs):
        return pairs, np.zeros((len(pairs), 1)), np.full(len(pairs), 0.5)

    def screen(self, w, s):
        return np.full(len(w), self.screened)

    def newton_stage(self, *args, **kwargs):
        pass

    def refine_best(self, *args):
        self.refined = True


def test_pairs_are_refined_unless_their_screen_is_a_squared_margin_below_the_reach():
    # the documented bound: the screen may sit up to (1 + margin)^2 = 1.69 below the exact gain
    for reach, refined in ((1.5, True), (1.8, False)):
        scorer = _ScreenOnly(1.0)
        PREDICTIVE_FAST.score_beside(scorer, np.array([[0, 1]]), 10, None, reach)
        assert scorer.refined is refined


@pytest.mark.parametrize("variant", ["fixed", "learned"])
def test_the_marginal_hessian_is_exactly_symmetric(variant):
    # Cholesky and the solves read one triangle: a last-bit asymmetry would make results
    # depend on which one
    data = make_small_data(variant)
    H = Marginal.at(theta_point(data), data).hessian(variant == "learned")
    assert np.array_equal(H, H.T)


class _OneAtATime:
    """The NumPy engine seen without its stacked refits, as an engine without them is."""

    def __init__(self, engine: NumpyEngine) -> None:
        self._engine = engine

    def __getattr__(self, name: str):
        if name in ("refit_candidates", "remember_candidate"):
            raise AttributeError(name)
        return getattr(self._engine, name)


def test_the_batched_stage_without_stacked_refits_is_the_expected_kl_of_both_answers():
    # u = (1 - s) KL(after f = 0) + s KL(after f = 1), here from the exact one-by-one refits
    data = make_small_data("fixed")
    engine = NumpyEngine("fixed")
    scorer = UtilityScorer(data, engine.fit(data), _OneAtATime(engine))
    pairs, w, s = scorer.prepare(all_pairs(data.p)[::4])
    u = np.zeros(len(pairs))
    scorer.newton_stage(u, w, s, None, np.zeros(len(pairs), bool), pairs, remember=1)
    staged = np.flatnonzero(u)
    assert len(staged)
    np.testing.assert_allclose(u[staged], scorer.exact(pairs[staged], s[staged]), rtol=1e-2)


def test_the_test_mse_of_a_constant_is_its_bias_squared_plus_the_variance_of_y():
    # the mean over the n test points (not n - 1): E[(c - y)^2] = (c - mean y)^2 + var y
    y = np.random.default_rng(5).normal(2.0, 3.0, 7)
    np.testing.assert_allclose(mean_squared_error(0.5, y), (0.5 - y.mean()) ** 2 + y.var(),
                               rtol=1e-12)
