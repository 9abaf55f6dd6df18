"""The batched log density and Newton refits of :mod:`elicit.model.batch` against the scalar
code: :func:`elicit.model.density.log_density`, ``Marginal.predictive()``, the feedback
Hessian of :func:`elicit.model.density.feedback_terms` and the numpy engine's warm refit.

Each batch row c carries its own parameter vector and its own extra answer (pair c, answer
``f_new``); the scalar reference for row c is the model data with that answer appended.
"""

from __future__ import annotations

import numpy as np
import pytest
from conftest import make_small_data
from helpers import with_answers

from elicit.engines.numpy_engine import NumpyEngine
from elicit.model.batch import BatchDensity, CandidateRefits, batched_refit
from elicit.model.density import feedback_terms, hessian, hessian_base, log_density
from elicit.model.kernel import pair_weights
from elicit.model.marginal import Marginal
from elicit.model.spec import ModelData, all_pairs
from elicit.model.theta import join_theta, split_theta

pytestmark = pytest.mark.usefixtures("one_blas_thread")

N_CAND = 5


def _candidates(data: ModelData, n: int = N_CAND, seed: int = 0) -> np.ndarray:
    """``n`` pairs not yet asked, in a random order."""
    asked = {tuple(p) for p in data.pairs}
    left = np.array([p for p in all_pairs(data.p) if tuple(p) not in asked])
    return left[np.random.default_rng(seed).choice(len(left), n, replace=False)]


def _random_thetas(data: ModelData, n: int, seed: int) -> np.ndarray:
    """Interior points around the prior means; one row per candidate."""
    rng = np.random.default_rng(seed)
    rows = [join_theta(rng.uniform(0.2, 2.0, data.d), rng.uniform(0.4, 1.8) * data.m,
                       rng.uniform(0.2, 2.0), data) for _ in range(n)]
    return np.array(rows)


def _data(variant: str, n_feedback: int) -> ModelData:
    # tau2 = 0.5 in the fixed variant: large enough that gamma moves the y-likelihood.
    return make_small_data(variant, n_feedback=n_feedback)


@pytest.fixture(params=[0, 4], ids=["no_feedback", "feedback"])
def n_feedback(request) -> int:
    return request.param


# -- (a) value and gradient ------------------------------------------------------------------


@pytest.mark.parametrize("f_new", [0, 1])
def test_value_and_gradient_match_scalar_log_density(variant, n_feedback, f_new):
    data = _data(variant, n_feedback)
    cands = _candidates(data)
    bd = BatchDensity(data, pair_weights(data.U, cands), f_new)
    theta = _random_thetas(data, N_CAND, seed=n_feedback + 10 * f_new)
    value, grad, _ = bd.at(theta, np.arange(N_CAND))
    assert value.shape == (N_CAND,) and grad.shape == theta.shape
    for c in range(N_CAND):
        v_ref, g_ref = log_density(theta[c], with_answers(data, cands[c], f_new))
        # The same formulas in another order of operations: agreement to rounding (measured
        # 6e-16 relative for the value, 2e-15 of the largest component for the gradient).
        assert value[c] == pytest.approx(v_ref, rel=1e-12)
        np.testing.assert_allclose(grad[c], g_ref, rtol=0, atol=1e-12 * np.abs(g_ref).max())


def test_rows_follow_idx(variant):
    """Row c of the output belongs to ``theta[idx[c]]`` and the answer ``w_new[idx[c]]``."""
    data = _data(variant, 4)
    cands = _candidates(data)
    bd = BatchDensity(data, pair_weights(data.U, cands), 1)
    theta = _random_thetas(data, N_CAND, seed=3)
    idx = np.array([3, 0, 4])
    v_all, g_all, (m_all, s_all) = bd.at(theta, np.arange(N_CAND))
    v, g, (m, s) = bd.at(theta[idx], idx)
    np.testing.assert_allclose(v, v_all[idx], rtol=1e-13)
    np.testing.assert_allclose(g, g_all[idx], rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(m, m_all[idx], rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(s, s_all[idx], rtol=1e-12)


def test_a_stack_larger_than_a_chunk_is_evaluated_in_chunks_row_for_row(variant):
    """A stack is evaluated in chunks that fit in cache (``BatchDensity.chunk``): the rows
    come back in order, each as a stack of its own would give it, a row without a density
    (-inf) included."""
    data = _data(variant, 4)
    cands = _candidates(data, 7)
    bd = BatchDensity(data, pair_weights(data.U, cands), 1)
    assert bd.chunk >= 7          # the small problem fits one chunk ...
    theta = _random_thetas(data, 7, seed=5)
    theta[4, data.layout["gamma"]] = 1e-12       # K all ones: see the test below
    if data.hyper.variant == "learned":
        theta[4, data.layout.index("tau2")] = 1e20
    idx = np.array([6, 0, 4, 2, 5, 1, 3])
    whole = bd.at(theta[idx], idx)
    bd.chunk = 3                  # ... here it takes three: rows 0-2, 3-4, 5-6
    chunked = bd.at(theta[idx], idx)
    singles = [bd.at(theta[idx[[c]]], idx[[c]]) for c in range(7)]
    for got in (chunked, whole):
        np.testing.assert_allclose(got[0], [s[0][0] for s in singles], rtol=1e-13)
        for e in range(2):
            np.testing.assert_allclose(got[2][e], [s[2][e][0] for s in singles],
                                       rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(got[1], [s[1][0] for s in singles], rtol=1e-12,
                                   atol=1e-12)
    if data.hyper.variant == "learned":
        assert chunked[0][2] == -np.inf and np.isfinite(chunked[0]).sum() == 6


# -- (b) the training predictive -------------------------------------------------------------


def test_predictive_matches_marginal(variant):
    data = _data(variant, 4)
    cands = _candidates(data)
    bd = BatchDensity(data, pair_weights(data.U, cands), 0)
    theta = _random_thetas(data, N_CAND, seed=7)
    _, _, (mean, var) = bd.at(theta, np.arange(N_CAND))
    assert mean.shape == var.shape == (N_CAND, data.n)
    for c in range(N_CAND):
        gamma, _, tau2 = split_theta(theta[c], data)
        m_ref, v_ref = Marginal.from_data(data, gamma, tau2).predictive()
        # measured: 6e-16 of the largest mean, 3e-15 relative for the variance
        np.testing.assert_allclose(mean[c], m_ref, rtol=0, atol=1e-12 * np.abs(m_ref).max())
        np.testing.assert_allclose(var[c], v_ref, rtol=1e-12)


# -- (c) the feedback curvature --------------------------------------------------------------


@pytest.mark.parametrize("f_new", [0, 1])
def test_feedback_curvature_matches_feedback_hessian(variant, n_feedback, f_new):
    data = _data(variant, n_feedback)
    cands = _candidates(data)
    w_new, rows = pair_weights(data.U, cands), np.arange(N_CAND)
    theta = _random_thetas(data, N_CAND, seed=20 + n_feedback)
    refits = CandidateRefits(data, w_new, f_new)
    value, grad, H = refits.feedback(rows, theta, True)
    # with the Hessian the run reads no value, so none is computed; the rest is the same
    assert value is None
    value, grad_only, _ = refits.feedback(rows, theta, False)
    np.testing.assert_array_equal(grad_only, grad)
    k = theta.shape[1]
    assert H.shape == (N_CAND, k, k)
    for c in range(N_CAND):
        v_ref, g_ref, H_ref = feedback_terms(theta[c], with_answers(data, cands[c], f_new),
                                             hess=True)
        # measured: 7e-16 of the largest entry
        np.testing.assert_allclose(H[c], H_ref, rtol=0, atol=1e-12 * np.abs(H_ref).max())
        assert value[c] == pytest.approx(v_ref, rel=1e-12, abs=1e-12)
        np.testing.assert_allclose(grad[c], g_ref, rtol=1e-12, atol=1e-12)
    # The Hessian of a log-logistic term does not depend on the answer.
    H_other = CandidateRefits(data, w_new, 1 - f_new).feedback(
        rows, theta, True)[2]
    np.testing.assert_array_equal(H, H_other)


# -- (d) the batched Newton refit ------------------------------------------------------------


def _refit_problem(variant: str, start: str) -> ModelData:
    """Four mixed answers (a MAP inside the bounds), or twelve "similar" answers, which push
    gamma_3 onto its bound 0 (the projected steps must keep it there)."""
    if start == "interior":
        return make_small_data(variant, n_feedback=4)
    data = make_small_data(variant, n_feedback=12)
    return data.with_feedback(data.pairs, np.ones(12, dtype=int))


@pytest.mark.parametrize("start", ["interior", "on_bound"])
@pytest.mark.parametrize("f_new", [0, 1])
def test_batched_refit_reaches_the_engine_refit(variant, f_new, start):
    """Each candidate's batched refit reaches the MAP of the numpy engine's warm refit.

    Both run projected Newton from the current MAP and stop on the Newton decrement
    delta = g' A^-1 g, the engine at 1e-10 and the batched refit here at 1e-14. Near the
    optimum sqrt(delta) is the distance to the MAP in the A-norm, so each coordinate is
    within sqrt(delta / lambda_min(A)) of it. In the coordinates used here (xi divided by
    its prior mean m) lambda_min(A) >= 1 is asserted (measured 2.9-5.5), which bounds the
    gap between the two MAPs by 1e-5 + 1e-7; the tolerance is 3e-5 (measured: <= 2.2e-7).
    The default settings (at most 8 iterations, delta < 1e-7) give sqrt(1e-7) = 3.2e-4;
    their tolerance is 1e-3 (measured: <= 1.4e-4).
    """
    data = _refit_problem(variant, start)
    engine = NumpyEngine(variant)
    fit = engine.fit(data)
    assert fit.converged
    theta0 = join_theta(fit.gamma, fit.xi, fit.tau2, data)
    lb = data.layout.lower_bounds()
    assert np.any(theta0 <= lb) == (start == "on_bound")
    H0 = hessian_base(theta0, data)
    cands = _candidates(data, n=6, seed=1)
    w = pair_weights(data.U, cands)
    scale = np.ones_like(theta0)
    scale[data.d] = data.m

    theta, mean, var, converged = batched_refit(data, theta0, H0, w, f_new, max_iter=50,
                                                tol=1e-14)
    assert converged.all()
    default, _, _, _ = batched_refit(data, theta0, H0, w, f_new)
    moved = 0.0
    for c in range(len(cands)):
        d2 = with_answers(data, cands[c], f_new)
        ref = engine.fit(d2, init=fit)
        assert ref.converged, ref.message
        ref_theta = join_theta(ref.gamma, ref.xi, ref.tau2, d2)
        A = -(scale[:, None] * hessian(ref_theta, d2) * scale[None, :])
        free = ref_theta > lb
        assert np.linalg.eigvalsh(A[np.ix_(free, free)]).min() >= 1.0
        moved = max(moved, np.max(np.abs(ref_theta - theta0) / scale))
        np.testing.assert_allclose(theta[c] / scale, ref_theta / scale, rtol=0, atol=3e-5,
                                   err_msg=f"candidate {c}")
        np.testing.assert_allclose(default[c] / scale, ref_theta / scale, rtol=0, atol=1e-3,
                                   err_msg=f"candidate {c}, default settings")
        assert np.all(theta[c] >= lb)
        # The predictive it returns is the one at its own final point.
        gamma, _, tau2 = split_theta(theta[c], data)
        m_ref, v_ref = Marginal.from_data(data, gamma, tau2).predictive()
        np.testing.assert_allclose(mean[c], m_ref, rtol=1e-12, atol=1e-12 * np.abs(m_ref).max())
        np.testing.assert_allclose(var[c], v_ref, rtol=1e-12)
    # Not a comparison of start points: the answer moves the MAP 1000 times further than
    # the tolerance (measured: 0.03-0.24).
    assert moved > 1000 * 3e-5


def test_trial_points_without_a_density_are_rejected_not_fatal():
    """Bug (synthetic sweep, seed 0, run 7): a line-search trial at an extreme tau2 made
    S = I + tau2 X K X' numerically indefinite, and the stacked Cholesky factorisation
    raised LinAlgError for the whole batch. Such a point has no density: it must get -inf
    (so the line search rejects it) while the other candidates keep their values."""
    from elicit.model.spec import Hyper

    rng = np.random.default_rng(0)
    n, p, d = 20, 25, 3
    X, y, U = rng.standard_normal((n, p)), rng.standard_normal(n), rng.standard_normal((p, d))
    data = ModelData(X, y, U, Hyper(variant="learned", threshold_mean=5.0))
    pair = np.array([0, 1])
    w = np.repeat(pair_weights(U, pair), 3, axis=0)
    theta = np.zeros((3, d + 2))
    theta[:, :d] = 1e-12                  # K is all ones to rounding: X K X' has rank one
    theta[:, d] = 5.0
    theta[:, d + 1] = [1.0, 1e20, 2.0]
    S = theta[1, d + 1] * X @ np.ones((p, p)) @ X.T + np.eye(n)
    with pytest.raises(np.linalg.LinAlgError):   # the point really has no factorisation
        np.linalg.cholesky(S)
    value, grad, _ = BatchDensity(data, w, 1).at(theta, np.arange(3))
    assert value[1] == -np.inf and np.all(np.isfinite(grad))
    for c in (0, 2):
        expected = log_density(theta[c], with_answers(data, pair, 1))[0]
        assert value[c] == pytest.approx(expected, rel=1e-10)


# -- (e) the projected Newton step of elicit.model.newton --------------------------------------


@pytest.mark.parametrize("ridge", [None, 1e-9])
def test_projected_step_holds_bound_parameters_and_solves_the_free_block(ridge):
    """Both ridge policies: parameters on a bound whose gradient pushes them out stay put;
    the free ones take the Newton step of their block (checked against a direct solve)."""
    from elicit.model.newton import projected_step

    rng = np.random.default_rng(4)
    k, C = 5, 3
    A = rng.normal(size=(C, k, k))
    H = -(A @ A.transpose(0, 2, 1) + k * np.eye(k))        # negative definite
    g = rng.normal(size=(C, k))
    lb = np.zeros(k)
    theta = rng.uniform(0.5, 1.5, size=(C, k))
    theta[0, 1] = 0.0
    g[0, 1] = -abs(g[0, 1])        # on the bound, pushed out: held
    theta[1, 2] = 0.0
    g[1, 2] = abs(g[1, 2])         # on the bound, pulled in: free
    step, dec = projected_step(H, g, theta, lb, ridge)
    assert step[0, 1] == 0.0
    for c in range(C):
        free = ~((theta[c] <= lb) & (g[c] < 0))
        ref = np.linalg.solve(-H[c][np.ix_(free, free)], g[c, free])
        np.testing.assert_allclose(step[c, free], ref, rtol=1e-7)
        assert dec[c] == pytest.approx(g[c] @ step[c], rel=1e-12) and dec[c] > 0


def test_fixed_ridge_falls_back_to_a_gradient_step_on_an_indefinite_system():
    from elicit.model.newton import projected_step

    H = np.diag([1.0, -2.0])[None]                          # not concave: no ascent step
    g = np.array([[1.0, 0.5]])
    step, dec = projected_step(H, g, np.ones((1, 2)), np.zeros(2), 1e-9)
    np.testing.assert_allclose(step[0], g[0] / 2.0)         # g / max(1, |diag|)
    assert dec[0] > 0
    # the damped policy instead adds a multiple of the identity until -H is definite
    step_d, dec_d = projected_step(H, g, np.ones((1, 2)), np.zeros(2), None)
    assert dec_d[0] > 0 and np.all(np.isfinite(step_d))


def test_the_secant_update_meets_the_secant_equation_and_leaves_the_rest_alone():
    """The BFGS update of the base Hessian (``secant=True``, the engine's warm refits) along
    an accepted step s: afterwards H s is the change of the base gradient (the log density's
    minus the feedback terms', each recomputed here), and H is unchanged on directions
    orthogonal to that change and to the old H s; H stays symmetric."""
    from helpers import theta_point

    from elicit.model.newton import NewtonRun, NewtonSettings, OneRefit

    data = make_small_data(n_feedback=4)
    theta0 = theta_point(data)
    v0, g0 = log_density(theta0, data)
    # a stale base Hessian (another point's), so that the update has something to correct
    H0 = hessian_base(theta_point(data, seed=5), data)
    run = NewtonRun(OneRefit(data), theta0[None].copy(), np.array([v0]), g0[None].copy(), H0,
                    NewtonSettings(secant=True, refresh_at=None))
    run.step()
    theta1, H1 = run.theta[0], run.hess_base[0]
    s = theta1 - theta0
    assert np.linalg.norm(s) > 1e-3          # a step was accepted
    base_change = ((log_density(theta1, data)[1] - feedback_terms(theta1, data, False)[1])
                   - (g0 - feedback_terms(theta0, data, False)[1]))
    np.testing.assert_allclose(H1 @ s, base_change, rtol=1e-8,
                               atol=1e-10 * np.max(np.abs(base_change)))
    np.testing.assert_array_equal(H1, H1.T)
    # a direction orthogonal to both vectors of the rank-2 update: H1 v = H0 v
    basis = np.linalg.qr(np.column_stack([base_change, H0 @ s]))[0]
    v = np.random.default_rng(0).normal(size=len(s))
    v -= basis @ (basis.T @ v)
    np.testing.assert_allclose(H1 @ v, H0 @ v, rtol=1e-8, atol=1e-10 * np.max(np.abs(H0 @ v)))
    assert not np.allclose(H1, H0)


def test_the_line_search_backtracks_to_the_first_armijo_rise():
    """A base Hessian twenty times too flat makes the Newton step overshoot (its full length
    lowers the log density, checked here): the accepted point is theta + t step (projected onto
    the bounds) for the first t of 1, 1/2, 1/4, ... whose log density rises by 1e-4 t times the
    slope."""
    from helpers import theta_point

    from elicit.model.newton import NewtonRun, NewtonSettings, OneRefit

    data = make_small_data(n_feedback=4)
    theta0 = theta_point(data)
    v0, g0 = log_density(theta0, data)
    H0 = 0.05 * hessian_base(theta0, data)
    step = np.linalg.solve(-(H0 + feedback_terms(theta0, data, True)[2]), g0)
    slope = g0 @ step
    lb = data.layout.lower_bounds()

    def at(t):
        # each trial point projected onto the bounds (gamma >= 0)
        return np.maximum(theta0 + t * step, lb)

    def rises(t):
        return log_density(at(t), data)[0] >= v0 + 1e-4 * t * slope

    assert log_density(at(1.0), data)[0] < v0
    t = next(0.5 ** k for k in range(14) if rises(0.5 ** k))
    assert t < 1.0
    run = NewtonRun(OneRefit(data), theta0[None].copy(), np.array([v0]), g0[None].copy(), H0,
                    NewtonSettings(refresh_at=None))
    run.step()
    np.testing.assert_allclose(run.theta[0], at(t), rtol=1e-12)
    assert run.value[0] == log_density(run.theta[0], data)[0] > v0


def test_the_local_model_is_maximised_as_a_general_optimiser_finds():
    """The local model's step (``local_model=True``): the maximiser of g_base' s + s' H_base s
    / 2 + F(theta + s) - F(theta) over theta + s >= 0, F the answers' log likelihood, against
    L-BFGS-B on that function written out."""
    from helpers import theta_point
    from scipy.optimize import minimize

    from elicit.model.newton import NewtonSettings, OneRefit, projected_step, solve_local_model

    data = make_small_data(n_feedback=4)
    theta = theta_point(data)
    lb = data.layout.lower_bounds()
    F0, fg, fH = feedback_terms(theta, data, True)
    g_base = log_density(theta, data)[1] - fg
    H_base = hessian_base(theta, data)
    step, dec = projected_step((H_base + fH)[None], (g_base + fg)[None], theta[None], lb, None)
    s = solve_local_model(OneRefit(data), np.array([0]), theta[None], g_base[None], H_base[None],
                          step, dec, 1e-14, NewtonSettings())[0]

    def neg_model(x):
        F, Fg, _ = feedback_terms(theta + x, data, False)
        return (-(g_base @ x + 0.5 * x @ H_base @ x + F - F0),
                -(g_base + H_base @ x + Fg))

    ref = minimize(neg_model, np.zeros_like(theta), jac=True, method="L-BFGS-B",
                   bounds=[(lo - t, None) for lo, t in zip(lb, theta)],
                   options={"ftol": 1e-15, "gtol": 1e-11, "maxiter": 500}).x
    np.testing.assert_allclose(s, ref, rtol=1e-5, atol=1e-7 * np.max(np.abs(ref)))
    assert np.max(np.abs(s)) > 1e-2 and not np.allclose(s, step[0], rtol=1e-3)
