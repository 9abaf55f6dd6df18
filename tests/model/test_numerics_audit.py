"""What the formula and finite-difference checks of the model cannot see: the clips and bounds
that only act far out, the cache keys, where projected Newton runs end (a bound, the iteration
cap, a line search without a rise), the tau2 choice's ties, folds and coupled set, and the
checks of tau2 and its grid. Each is checked against a case worked out by hand or a property
of the design, on problems of a few features; only the tau2 choices fit MAPs, where the data
make the gradient in gamma exactly 0."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from conftest import make_small_data
from helpers import some_direction, some_relevance

from elicit.errors import ElicitError
from elicit.model.covariance import RELEVANCE, RelevanceScales
from elicit.model.direction import delta_prior_sd
from elicit.model.kernel import kernel_stack
from elicit.model.marginal import Marginal
from elicit.model.newton import (
    CONVERGED,
    FAILED,
    NewtonProblem,
    NewtonRun,
    NewtonSettings,
)
from elicit.model.spec import Hyper, ModelData, Params
from elicit.model.theta import params_of, theta_of
from elicit.prior.setup import coupled_features
from elicit.prior.tau2 import (
    EVIDENCE_NATS,
    TAU2_BOUNDS,
    check_grid,
    check_tau2,
    cv_search,
    cv_tau2,
    ml_tau2,
)

# -- the kernel and the relevance model's neighbours -------------------------------------------


def test_the_stacked_kernel_at_extreme_gamma_stays_within_zero_and_one():
    """The batched refits' kernel (one per candidate's gamma) at a line search's far-out trial
    gamma: the exponent's rounding (~eps gamma u^2) must not overflow exp for rows that
    coincide, as the scalar kernel's test checks for :func:`kernel`."""
    rng = np.random.default_rng(5)
    U = rng.uniform(0.5, 3.0, size=(40, 9))
    U[:10] = U[10:20]                                   # coinciding rows
    gammas = np.stack([np.full(9, 1e18), np.full(9, 1e25)])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        K = kernel_stack(U, gammas, None, U * U)
    assert np.all(np.isfinite(K)) and np.all(K >= 0.0) and np.all(K <= 1.0)
    same = np.all(U[:, None, :] == U[None, :, :], axis=2)
    assert np.all(K[:, ~same] == 0.0)                   # rows that differ: exp(-huge)


def test_each_relevance_covariance_weighs_neighbours_by_its_own_bandwidth():
    """Two relevance covariances of other bandwidths on the same meta-features: each gets the
    weights of its own bandwidth (written out: exp(-|u_j - u_k|^2 / (2 bandwidth D)), D the
    median squared distance), whichever asked first."""
    U = np.random.default_rng(11).normal(size=(9, 3))
    D = ((U[:, None, :] - U[None, :, :]) ** 2).sum(axis=2)
    med = np.median(D[np.triu_indices(9, 1)])
    for cov in (RELEVANCE, RelevanceScales(bandwidth=1.0), RelevanceScales(bandwidth=0.02)):
        ref = np.exp(-0.5 * D / (cov.bandwidth * med))
        np.fill_diagonal(ref, 0.0)
        np.testing.assert_allclose(cov.neighbours(U), ref, rtol=1e-12, atol=1e-300)


def test_the_delta_prior_of_a_target_of_zeros_is_one():
    """``delta ~ N+(0, rms(y))``, 1 when y is all zeros (docstring): never a zero sd, whose
    prior would be NaN."""
    assert delta_prior_sd(np.zeros(7)) == 1.0
    assert delta_prior_sd(np.array([3.0, -4.0])) == pytest.approx(np.sqrt(12.5), rel=1e-15)


# -- the screens' closed forms ------------------------------------------------------------------


def test_a_scale_change_of_other_features_is_computed_for_them():
    """:meth:`Marginal.scale_change` keeps its per-feature parts between calls (both answers
    share them): a second call about other features gets theirs, the same as a marginal that
    was asked about them first."""
    data = make_small_data("fixed", n_feedback=0)
    args = (data.X, data.y, data.U, np.array([0.6, 1.4, 0.9]), 0.5, 2.0, 0.7)
    mg, fresh = Marginal(*args), Marginal(*args)
    mg.scale_change([0, 1], 0.01)
    got, ref = mg.scale_change([5, 8], 0.01), fresh.scale_change([5, 8], 0.01)
    for a, b in zip(got, ref):
        np.testing.assert_array_equal(a, b)


# -- projected Newton's ends -------------------------------------------------------------------


class _Quadratic(NewtonProblem):
    """``f(theta) = -(theta - c)' A (theta - c) / 2`` on ``theta >= 0`` with no answers (zero
    feedback terms), as one row: its base Hessian is ``-A``."""

    single = True

    def __init__(self, A: np.ndarray, c: np.ndarray) -> None:
        self.A, self.c, self.lb = A, c, np.zeros(len(c))

    def feedback(self, rows, theta, hess):
        C, k = theta.shape
        return np.zeros(C), np.zeros((C, k)), np.zeros((C, k, k)) if hess else None

    def evaluate(self, rows, theta):
        r = theta - self.c
        return -0.5 * np.einsum("ci,ij,cj->c", r, self.A, r), -(r @ self.A), None

    def hessian_base(self, row, theta):
        return -self.A


def _run(problem: _Quadratic, theta0, hess_base, **settings) -> NewtonRun:
    theta = np.array([theta0], dtype=float)
    value, grad, _ = problem.evaluate(np.array([0]), theta)
    return NewtonRun(problem, theta, value, grad, hess_base, NewtonSettings(**settings))


def test_the_last_step_of_a_converged_row_stays_within_the_bounds():
    """The maximiser of the quadratic lies a hair outside the bound (c_0 = -1e-7) and the start
    a hair inside: the decrement is below the tolerance at once, and the last (tiny) step is
    projected onto the bound, so theta_0 ends on 0, not at -1e-7 (a gamma below 0 makes the
    kernel's sqrt(gamma) NaN)."""
    problem = _Quadratic(np.eye(2), np.array([-1e-7, 1.0]))
    run = _run(problem, [1e-7, 1.0], -np.eye(2))
    run.advance()
    assert run.status[0] == CONVERGED and run.iters[0] == 1
    assert run.theta[0, 0] == 0.0 and run.theta[0, 1] == 1.0


def test_a_line_search_without_a_rise_far_from_the_optimum_is_no_convergence():
    """A base Hessian a million times too flat: every step length of the line search overshoots,
    with a decrement far above the stall tolerance. That is a stale Hessian, not the optimum:
    it is refreshed and the run goes on to the maximiser (without refreshes the row fails)."""
    A, c = np.diag([1.0, 2.0]), np.array([2.0, 3.0])
    run = _run(_Quadratic(A, c), [1.0, 1.0], -1e-6 * A)
    run.advance()
    assert run.status[0] == CONVERGED and run.refreshed[0]
    np.testing.assert_allclose(run.theta[0], c, rtol=1e-9)
    stuck = _run(_Quadratic(A, c), [1.0, 1.0], -1e-6 * A, refresh_at=None)
    stuck.advance()
    assert stuck.status[0] == FAILED


def test_the_line_search_asks_a_rise_in_proportion_to_the_step_length():
    """A base Hessian 2^13 times too flat: the Newton step overshoots 2^13 times, and the last
    step length tried, 2^-13, lands on the maximiser. Its rise, half the slope times that
    length, is above 1e-4 of the slope times the length (Armijo), so it is taken."""
    A, c = np.diag([1.0, 2.0]), np.array([2.0, 3.0])
    run = _run(_Quadratic(A, c), [1.0, 1.0], -(2.0**-13) * A, refresh_at=None)
    run.step()
    np.testing.assert_allclose(run.theta[0], c, rtol=1e-12)


def test_a_run_fails_after_max_iter_iterations():
    """``max_iter = 1``: the exact Newton step of a quadratic reaches its maximiser in one
    iteration, but the convergence test (the decrement) is only met in the second one, which
    the cap does not allow."""
    A, c = np.diag([1.0, 2.0]), np.array([2.0, 3.0])
    run = _run(_Quadratic(A, c), [1.0, 1.0], -A, max_iter=1)
    run.advance()
    assert run.status[0] == FAILED and run.iters[0] == 1
    run = _run(_Quadratic(A, c), [1.0, 1.0], -A, max_iter=2)
    run.advance()
    assert run.status[0] == CONVERGED and run.iters[0] == 2


# -- choosing tau2 -----------------------------------------------------------------------------


def _mean_only(X_tr, y_tr, t, init):
    """A fold's posterior mean when y carries no signal the model sees: beta = 0."""
    return np.zeros(X_tr.shape[1]), None


def test_the_cv_breaks_ties_toward_the_smaller_tau2():
    """y = 0: every held-out prediction is exact whatever tau2, so every score ties; the choice
    is the smaller (documented), which sits on the lower edge, so the grid walks down to the
    lower bound."""
    X = np.random.default_rng(1).normal(size=(9, 4))
    best, scores = cv_search(X, np.zeros(9), [0.01, 0.1], 3, None, _mean_only)
    assert set(scores.values()) == {0.0}
    assert best == min(scores) == TAU2_BOUNDS[0]


def test_the_cv_may_leave_one_sample_out():
    """``folds = n`` (2 .. n allowed): each sample is held out alone and predicted by the mean
    of the others, whose error is n / (n - 1) times its deviation from the mean of all."""
    rng = np.random.default_rng(2)
    n = 7
    X, y = rng.normal(size=(n, 3)), rng.normal(size=n)
    _, scores = cv_search(X, y, [0.1], n, None, _mean_only)
    assert scores[0.1] == pytest.approx((n / (n - 1)) ** 2 * np.mean((y - y.mean()) ** 2),
                                        rel=1e-12)


def test_ml_breaks_ties_toward_the_smaller_tau2():
    """X = 0: y's marginal likelihood does not depend on tau2 (nor gamma), so every score ties
    and the choice is the smaller (documented), down to the lower bound."""
    rng = np.random.default_rng(3)
    X, y, U = np.zeros((6, 4)), rng.normal(size=6), rng.normal(size=(4, 2))
    best, scores = ml_tau2(X, y - y.mean(), U, [1e-5, 1e-4])
    assert len(set(scores.values())) == 1
    assert best == min(scores) == TAU2_BOUNDS[0]


@pytest.mark.parametrize("bad", [[0.0, 0.1], [0.1, -1.0], [np.inf], []])
def test_a_tau2_grid_takes_positive_numbers_only(bad):
    with pytest.raises(ElicitError, match=r"^tau2_grid must be a list of positive numbers"):
        check_grid(bad)


@pytest.mark.parametrize("bad", [True, False, 0, 0.0, -1.0, np.nan, "auto"])
def test_tau2_is_a_positive_number_or_a_mode_not_a_boolean(bad):
    with pytest.raises(ElicitError, match=r"^tau2 must be a positive number or 'cv', got "):
        check_tau2(bad)
    assert check_tau2(2) == 2.0 and check_tau2(" CV ") == "cv"


def test_the_test_mse_adds_its_offset_back():
    """The sweeps' targets are centred and their mean passed as the offset: targets shifted by
    c, with c as the offset, have the MSE of the unshifted ones."""
    from elicit.model.posterior import NIGPosterior

    data = make_small_data("fixed", n_feedback=0)
    post = NIGPosterior(Marginal(data.X, data.y, data.U, np.ones(3), 0.5, 2.0, 0.7))
    X_test, y_test = data.X[:5] + 0.3, data.y[:5] - 1.0
    assert post.mse(X_test, y_test + 2.5, offset=2.5) == pytest.approx(
        post.mse(X_test, y_test), rel=1e-12)


def test_at_the_lower_bound_a_known_coupling_cv_scores_the_evidence_of_its_own_kernel():
    """y = 0: no fold sees a signal, the CV walks down to the lower bound and the choice is the
    largest tau2 within EVIDENCE_NATS of the best type-II ML score of the model, with the
    coupled set J of its candidates. Every meta-feature alike makes K = 1 1' on J (and I off
    it) but 1 1' on every feature without J: other evidence, another choice."""
    rng = np.random.default_rng(4)
    X, y, U = rng.normal(size=(30, 6)), np.zeros(30), np.ones((6, 2))
    cands = np.array([[0, 1]])
    best, scores = cv_tau2(X, y, U, [0.01, 0.02, 0.04], folds=3,
                           model="known-coupling", candidates=cands, gamma=np.ones(2))
    assert min(scores) == TAU2_BOUNDS[0] < best

    def choice(ml: dict) -> float:
        top = max(ml.values())
        return max(t for t, v in ml.items() if v >= top - EVIDENCE_NATS)

    J = coupled_features(6, cands)
    own = ml_tau2(X, y, U, sorted(scores), model="known-coupling", coupled=J)[1]
    every = ml_tau2(X, y, U, sorted(scores))[1]
    assert best == choice(own) != choice(every)


def test_a_start_from_another_models_map_keeps_the_zeta_it_has():
    """A relevance model's point (zeta, no delta) as the start of the relevance-direction
    model: theta keeps its zeta, and only the block it lacks, delta, is the cold start's."""
    base = make_small_data("fixed", n_feedback=0)
    hyper = Hyper(**{**base.hyper.__dict__, "model": "relevance-direction"})
    data = ModelData(base.X, base.y, base.U, hyper, base.pairs, base.f,
                     relevance=some_relevance(base.p), direction=some_direction(base.p))
    got = params_of(theta_of(Params(np.array([0.4, 1.1, 2.0]), base.m, 0.5, 0.3), data), data)
    assert got.zeta == 0.3 and got.delta == data.initial_params().delta
@pytest.mark.parametrize("grid", [[True, 0.1], ["0.1", "1"], "15"])
def test_a_tau2_grid_of_booleans_or_strings_is_refused_as_tau2_itself_is(grid):
    """check_tau2 refuses True and "0.1" ("a positive number"); check_grid took True as 1.0,
    "0.1" as 0.1 and the string "15" as the grid (1, 5), silently."""
    with pytest.raises(ElicitError):
        check_tau2(grid[0])
    with pytest.raises(ElicitError, match=r"^tau2_grid must be a list of positive numbers"):
        check_grid(grid)
