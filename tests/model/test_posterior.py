"""The n x n (Woodbury) NIG posterior against the direct p x p formulas of the paper.

With a well-conditioned kernel (few features, moderate gamma) ``inv(tau2 K)`` is stable, so
the textbook formulas serve as an independent reference::

    Sigma* = inv(X'X + inv(tau2 K)),  mu* = Sigma* X' y,
    a* = a + n/2,  b* = b + (y'y - mu*' inv(Sigma*) mu*) / 2.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from elicit.errors import ElicitError
from elicit.model.kernel import kernel
from elicit.model.marginal import Marginal
from elicit.model.marginal_cache import marginal_cache
from elicit.model.posterior import NIGPosterior
from elicit.model.result import MAPResult
from elicit.model.spec import Hyper, ModelData
from elicit.model.theta import data_scales


def _problem(n: int, p: int, seed: int = 3):
    rng = np.random.default_rng(seed)
    d = 2
    U = rng.uniform(0.0, 2.0, size=(p, d))
    X = rng.normal(size=(n, p))
    y = 2.0 * rng.normal(size=n)
    gamma, tau2 = np.array([1.5, 2.0]), 0.8
    hyper = Hyper(a_sigma=2.5, b_sigma=3.0, tau2=tau2, threshold_mean=1.0)
    data = ModelData(X, y, U, hyper)
    fit = MAPResult(gamma=gamma, xi=1.0, tau2=tau2, log_density=0.0, converged=True,
                    engine="test", U=U)
    return data, fit


def _direct(data: ModelData, fit: MAPResult):
    """Sigma*, mu*, a*, b* by the p x p formulas."""
    X, y, h = data.X, data.y, data.hyper
    K = kernel(data.U, fit.gamma)
    assert np.linalg.cond(K) < 1e4  # the premise of this reference
    Sigma = np.linalg.inv(X.T @ X + np.linalg.inv(fit.tau2 * K))
    mu = Sigma @ X.T @ y
    a = h.a_sigma + data.n / 2
    b = h.b_sigma + 0.5 * (y @ y - mu @ np.linalg.solve(Sigma, mu))
    return Sigma, mu, a, b


SHAPES = [(8, 6), (4, 6), (15, 5)]  # n > p, n < p, n >> p


@pytest.mark.parametrize("n,p", SHAPES)
def test_posterior_moments_match_direct_formulas(n, p):
    data, fit = _problem(n, p)
    post = NIGPosterior.from_map(data, fit)
    Sigma, mu, a, b = _direct(data, fit)
    np.testing.assert_allclose(post.Sigma, Sigma, rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(post.mu, mu, rtol=1e-8, atol=1e-10)
    assert post.a_star == pytest.approx(a, rel=1e-14)
    assert post.b_star == pytest.approx(b, rel=1e-10)


@pytest.mark.parametrize("n,p", SHAPES)
def test_training_identities(n, p):
    """X Sigma* X' = B S^-1 and X mu* = B S^-1 y with B = tau2 X K X', S = I + B."""
    data, fit = _problem(n, p)
    Sigma, mu, _, _ = _direct(data, fit)
    mg = Marginal.from_data(data, fit.gamma, fit.tau2)
    K = kernel(data.U, fit.gamma)
    B = fit.tau2 * data.X @ K @ data.X.T
    BSinv = B @ np.linalg.inv(np.eye(n) + B)
    np.testing.assert_allclose(data.X @ Sigma @ data.X.T, BSinv, rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(data.X @ mu, BSinv @ data.y, rtol=1e-8, atol=1e-10)
    # and the marginal's cached pieces are those matrices (with more rows than features,
    # their p x p form: B = Q B_p Q' and B S^-1 = Q B_p S_p^-1 Q', X = Q R)
    Q = np.eye(n) if mg.basis is None else mg.basis.Q
    assert (mg.basis is not None) == (n > p)
    np.testing.assert_allclose(Q @ mg.B @ Q.T, B, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(Q @ mg.B @ mg.Sinv @ Q.T, BSinv, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("n,p", SHAPES)
def test_predict_is_student_t_with_direct_scale(n, p):
    data, fit = _problem(n, p)
    Sigma, mu, a, b = _direct(data, fit)
    X_new = np.random.default_rng(9).normal(size=(7, p))
    t = NIGPosterior.from_map(data, fit).predict(X_new)
    quad = np.einsum("ij,jk,ik->i", X_new, Sigma, X_new)
    assert t.df == pytest.approx(2 * a, rel=1e-14)
    np.testing.assert_allclose(t.mean, X_new @ mu, rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(t.scale2, (b / a) * (1.0 + quad), rtol=1e-8)
    # The variance of a Student-t with df = 2a* is scale2 * df / (df - 2).
    np.testing.assert_allclose(t.var, b / (a - 1) * (1.0 + quad), rtol=1e-8)


@pytest.mark.parametrize("n,p", SHAPES)
def test_predict_mean_is_the_direct_posterior_mean(n, p):
    """The mean-only shortcut the sweeps' test MSE uses, against the direct mu*."""
    data, fit = _problem(n, p)
    _, mu, _, _ = _direct(data, fit)
    X_new = np.random.default_rng(11).normal(size=(9, p))
    np.testing.assert_allclose(NIGPosterior.from_map(data, fit).predict_mean(X_new),
                               X_new @ mu, rtol=1e-8, atol=1e-10)


@pytest.mark.parametrize("n,p", SHAPES)
def test_marginal_predictive_is_the_gaussian_approximation(n, p):
    """Mean x'mu*, variance b*/(a*-1) (1 + x' Sigma* x) at the training inputs (appendix A)."""
    data, fit = _problem(n, p)
    Sigma, mu, a, b = _direct(data, fit)
    post = NIGPosterior.from_map(data, fit)
    mean, var = Marginal.of_fit(data, fit).predictive()
    quad = np.einsum("ij,jk,ik->i", data.X, Sigma, data.X)
    np.testing.assert_allclose(mean, data.X @ mu, rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(var, b / (a - 1) * (1.0 + quad), rtol=1e-8)
    # the same numbers as the Student-t predictive's variance at the training inputs
    np.testing.assert_allclose(var, post.predict(data.X).var, rtol=1e-10)


def test_from_map_uses_the_fitted_gamma_and_tau2():
    data, fit = _problem(8, 6)
    other = MAPResult(gamma=fit.gamma * 2, xi=1.0, tau2=fit.tau2 / 2, log_density=0.0,
                      converged=True, engine="test", U=data.U)
    p1 = NIGPosterior.from_map(data, fit)
    p2 = NIGPosterior.from_map(data, other)
    _, mu2, _, b2 = _direct(data, other)
    np.testing.assert_allclose(p2.mu, mu2, rtol=1e-8, atol=1e-10)
    assert p2.b_star == pytest.approx(b2, rel=1e-10)
    assert not np.allclose(p1.mu, p2.mu)


@pytest.mark.parametrize("n,p", SHAPES)
@pytest.mark.parametrize("model", ["known-coupling", "direction", "relevance-direction"])
def test_posterior_of_a_coupled_set_or_a_prior_mean_matches_direct_formulas(n, p, model):
    """The other models' posteriors by the p x p formulas with their prior: beta ~ N(delta s,
    sigma^2 tau2 diag(h) K_J diag(h)), K_J the kernel with J's mask applied entrywise, s 0
    where a relevance model's class is irrelevant::

        Sigma* = inv(X'X + inv(V)),  mu* = Sigma* (X'y + inv(V) delta s),
        b* = b + (y'y + delta^2 s' inv(V) s - mu*' inv(Sigma*) mu*) / 2."""
    data, fit = _problem(n, p)
    s = np.resize([1.0, -1.0, 0.0], p)
    coupled = np.arange(p) < p - 2
    data = ModelData(data.X, data.y, data.U, replace(data.hyper, model=model), coupled=coupled,
                     relevance=np.resize([1, 0, -1, -1], p), direction=s)
    zeta = 0.3 if data.model.relevance else None
    delta = 0.6 if data.model.direction else None
    h = np.ones(p) if zeta is None else data_scales(data, zeta).h
    fit = replace(fit, zeta=zeta, delta=delta, coupled=data.kernel_mask)
    K = kernel(data.U, fit.gamma)
    if data.model.known_coupling:
        K = np.where(np.outer(coupled, coupled) | np.eye(p, dtype=bool), K, 0.0)
    V = fit.tau2 * h[:, None] * K * h[None, :]
    if data.model.relevance:
        s = np.where(np.resize([1, 0, -1, -1], p) == 0, 0.0, s)
    m0 = np.zeros(p) if delta is None else delta * s
    X, y = data.X, data.y
    Sigma = np.linalg.inv(X.T @ X + np.linalg.inv(V))
    mu = Sigma @ (X.T @ y + np.linalg.solve(V, m0))
    b = 3.0 + 0.5 * (y @ y + m0 @ np.linalg.solve(V, m0) - mu @ np.linalg.solve(Sigma, mu))
    post = NIGPosterior.from_map(data, fit)
    np.testing.assert_allclose(post.Sigma, Sigma, rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(post.mu, mu, rtol=1e-8, atol=1e-10)
    assert post.b_star == pytest.approx(b, rel=1e-10)
    X_new = np.random.default_rng(9).normal(size=(4, p))
    quad = np.einsum("ij,jk,ik->i", X_new, Sigma, X_new)
    pred = post.predict(X_new)
    np.testing.assert_allclose(pred.mean, X_new @ mu, rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(pred.scale2, (b / post.a_star) * (1.0 + quad), rtol=1e-8)
    mean, var = Marginal.of_fit(data, fit).predictive()
    np.testing.assert_allclose(mean, X @ mu, rtol=1e-8, atol=1e-10)
    quad = np.einsum("ij,jk,ik->i", X, Sigma, X)
    np.testing.assert_allclose(var, b / (post.a_star - 1) * (1.0 + quad), rtol=1e-8)


@pytest.mark.parametrize("order", ["other_fit_first", "own_fit_first"])
def test_a_fit_without_the_datas_coupled_set_gets_the_datas_posterior_in_any_order(order):
    """A fit made without the data's coupled set (the paper model's, say) passed with
    known-coupling data: the posterior at its parameters under the data's masked kernel, and
    before or after it a fit that has the set gets the same one."""
    data, fit = _problem(8, 6)
    coupled = np.arange(6) < 4
    kc = ModelData(data.X, data.y, data.U, replace(data.hyper, model="known-coupling"),
                   coupled=coupled)
    K = np.where(np.outer(coupled, coupled) | np.eye(6, dtype=bool), kernel(data.U, fit.gamma),
                 0.0)
    mu = np.linalg.solve(data.X.T @ data.X + np.linalg.inv(fit.tau2 * K), data.X.T @ data.y)
    marginal_cache.clear()
    fits = [fit, replace(fit, coupled=coupled)]
    for f in fits if order == "other_fit_first" else fits[::-1]:
        np.testing.assert_allclose(NIGPosterior.from_map(kc, f).mu, mu, rtol=1e-8, atol=1e-10)


@pytest.mark.parametrize("bad,match", [
    (np.ones((3, 5)), "shape"),
    (np.ones(6), "shape"),
    (np.full((2, 6), np.nan), "NaN"),
])
def test_predict_rejects_bad_input(bad, match):
    data, fit = _problem(8, 6)
    post = NIGPosterior.from_map(data, fit)
    with pytest.raises(ElicitError, match=match):
        post.predict(bad)
    with pytest.raises(ElicitError, match=match):
        post.predict_mean(bad)
