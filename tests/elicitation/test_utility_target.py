"""The ``params`` utility target: BALD information about (gamma, xi) under the Laplace
approximation (:func:`elicit.elicitation.quadrature.bald_gain`, ``UtilityScorer.param_gain``)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from scipy import integrate
from scipy.linalg import cho_solve
from scipy.special import entr, expit

from elicit.elicitation import quadrature as quadrature_module
from elicit.elicitation.elicitor import Elicitor
from elicit.elicitation.quadrature import bald_gain
from elicit.elicitation.scorer import UtilityScorer
from elicit.errors import ElicitError
from elicit.model.density import feedback_terms
from elicit.model.kernel import pair_weights
from elicit.model.linalg import damped_cho_factor
from elicit.model.simulate import make_synthetic
from elicit.model.theta import join_theta

pytestmark = pytest.mark.usefixtures("one_blas_thread")


def _h(p: float) -> float:
    return float(-(p * np.log(p) + (1 - p) * np.log1p(-p))) if 0 < p < 1 else 0.0


def _entropy(p):
    """Binary entropy (nats) of p, independently of the link's own formula."""
    return entr(p) + entr(1.0 - p)


def _reference_gain(mu: float, s: float) -> float:
    """The gain by adaptive integration over z (independent of the module's quadrature)."""
    def dens(z):
        return np.exp(-0.5 * ((z - mu) / s) ** 2) / (s * np.sqrt(2 * np.pi))
    lo, hi = mu - 12 * s, mu + 12 * s
    pts = [0.0] if lo < 0 < hi else None
    kw = dict(limit=500, points=pts, epsabs=1e-14, epsrel=1e-12)
    p = integrate.quad(lambda z: expit(z) * dens(z), lo, hi, **kw)[0]
    eh = integrate.quad(lambda z: _entropy(expit(z)) * dens(z), lo, hi, **kw)[0]
    return _h(p) - eh


# -- the quadrature ------------------------------------------------------------------------


@pytest.mark.parametrize("mu", [0.0, 1.5, -4.0, 25.0, -80.0])
@pytest.mark.parametrize("s", [0.01, 0.3, 0.999, 1.0, 2.5, 8.0, 40.0, 300.0])
def test_bald_gain_matches_adaptive_integration(mu, s):
    assert float(bald_gain(mu, s * s)) == pytest.approx(_reference_gain(mu, s), abs=1e-9)


def test_quadrature_regimes_agree_where_they_meet(monkeypatch):
    mu = np.array([0.0, 0.7, -2.0, 6.0])
    for s in (0.5, 0.75, 1.0):     # both rules are exact to ~1e-15 here
        grid = bald_gain(mu, np.full(4, s * s))
        monkeypatch.setattr(quadrature_module, "_GRID_FROM", np.inf)    # Gauss-Hermite only
        gh = bald_gain(mu, np.full(4, s * s))
        monkeypatch.setattr(quadrature_module, "_GRID_FROM", 0.0)      # z-grid only
        zg = bald_gain(mu, np.full(4, s * s))
        monkeypatch.undo()
        np.testing.assert_allclose(gh, zg, atol=1e-10)
        np.testing.assert_allclose(grid, zg, atol=1e-10)


def test_bald_gain_vanishes_with_the_spread_as_its_expansion_says():
    # I = h(E sigma) - E h(sigma) ~ -h''(p) Var(sigma(z)) / 2 = s^2 p (1 - p) / 2 for small s
    mu = np.array([-3.0, 0.0, 0.4, 5.0])
    assert np.all(bald_gain(mu, 0.0) == 0.0)
    s = 1e-2
    p = expit(mu)
    np.testing.assert_allclose(bald_gain(mu, s * s), 0.5 * s * s * p * (1 - p), rtol=1e-3)


@pytest.mark.parametrize("s", [200.0, 1000.0, 5000.0])
def test_bald_gain_approaches_log2_as_the_closed_form_says(s):
    # mu = 0: E sigma = 1/2 exactly and E h(sigma(z)) -> (integral of h(sigma)) N(0; 0, s^2)
    # = (pi^2 / 3) / (s sqrt(2 pi)), with a relative error O(1 / s^2)
    expected = np.log(2.0) - np.pi ** 2 / (3.0 * s * np.sqrt(2.0 * np.pi))
    assert float(bald_gain(0.0, s * s)) == pytest.approx(expected, abs=5.0 / s ** 3)


@pytest.mark.parametrize("mu", [0.0, 2.0, -7.0])
def test_bald_gain_increases_with_the_spread(mu):
    s = np.geomspace(1e-3, 1e3, 400)          # crosses the switch between the two rules
    g = bald_gain(np.full_like(s, mu), s * s)
    assert np.all(np.diff(g) > 0)
    assert np.all(g < np.log(2.0))


def test_bald_gain_is_vectorised_elementwise():
    rng = np.random.default_rng(3)
    mu, s2 = rng.normal(0, 5, 50), rng.uniform(0, 30, 50) ** 2
    s2[::7] = 0.0
    loop = np.array([float(bald_gain(m, v)) for m, v in zip(mu, s2)])
    np.testing.assert_allclose(bald_gain(mu, s2), loop, rtol=0, atol=1e-15)


# -- at a MAP of the synthetic problem -------------------------------------------------------


@pytest.fixture(scope="module")
def answered():
    """An Elicitor on the paper's synthetic problem after eight oracle answers."""
    rng = np.random.default_rng(11)
    sd = make_synthetic(rng)
    el = Elicitor(sd.X, sd.y, sd.U)
    for _ in range(8):
        q = el.next_query("random", rng)
        el.answer(q.i, q.j, int(sd.groups[q.i] == sd.groups[q.j]))
    return el, sd


def _laplace(el):
    """theta_hat, the free mask and Sigma over the free parameters, by hand."""
    theta = join_theta(el.fit.gamma, el.fit.xi, el.fit.tau2, el.data)
    sc = UtilityScorer(el.data, el.fit, el.engine)
    H = sc.hessian + feedback_terms(theta, el.data, True)[2]
    free = theta > el.data.layout.lower_bounds()
    return theta, free, np.linalg.inv(-H[np.ix_(free, free)])


def test_param_gain_matches_monte_carlo_of_the_laplace_model(answered):
    el, _ = answered
    theta, free, Sigma = _laplace(el)
    pairs = el.candidates[[0, 40, 120, 299]]
    w = pair_weights(el.data.U, pairs)
    gain = UtilityScorer(el.data, el.fit, el.engine).param_gain(w)
    rng = np.random.default_rng(0)
    n = 200_000
    draws = np.tile(theta, (n, 1))
    draws[:, free] = rng.multivariate_normal(theta[free], Sigma, size=n)
    d = el.data.d
    for c in range(len(pairs)):
        z = draws[:, d] - draws[:, :d] @ w[c]
        sig = expit(z)
        ent = _entropy(sig)
        p = sig.mean()
        mc = _h(p) - ent.mean()
        # standard error of h(mean) - mean(h), to first order in the sample means
        dh = np.log((1 - p) / p)
        se = np.std(dh * sig - ent) / np.sqrt(n)
        assert abs(gain[c] - mc) < 5 * se + 1e-6, (c, gain[c], mc, se)


def test_param_gain_vectorised_equals_per_candidate(answered):
    el, _ = answered
    sc = UtilityScorer(el.data, el.fit, el.engine)
    w = pair_weights(el.data.U, el.candidates)
    loop = np.array([sc.param_gain(w[[c]])[0] for c in range(len(w))])
    np.testing.assert_allclose(sc.param_gain(w), loop, rtol=1e-12, atol=1e-15)


def test_param_gain_of_the_zero_direction_is_the_threshold_alone(answered):
    # w = 0 (identical meta-features): z = xi, so the gain is BALD at (xi, Var xi)
    el, _ = answered
    theta, free, Sigma = _laplace(el)
    d = el.data.d
    assert free[d]
    k = int(np.sum(free[:d]))                 # xi's position among the free parameters
    var_xi = Sigma[k, k]
    gain = UtilityScorer(el.data, el.fit, el.engine).param_gain(np.zeros((3, d)))
    np.testing.assert_allclose(gain, bald_gain(el.fit.xi, var_xi), rtol=1e-10)


def test_a_parameter_on_its_bound_is_held_fixed(answered):
    # gamma_0 put on its bound: the answers' dependence on w_0 is gone (gamma_0 w_0 = 0 and
    # its row and column of the Hessian are dropped)
    el, _ = answered
    gamma = el.fit.gamma.copy()
    gamma[0] = 0.0
    fit = dataclasses.replace(el.fit, gamma=gamma)
    sc = UtilityScorer(el.data, fit, el.engine)
    w = pair_weights(el.data.U, el.candidates[:20])
    w2 = w.copy()
    w2[:, 0] *= 3.0
    np.testing.assert_allclose(sc.param_gain(w), sc.param_gain(w2), rtol=1e-12)


def test_larger_laplace_spread_at_equal_mean_ranks_higher(answered):
    # Move w orthogonally to gamma_hat: mu stays, a' Sigma a changes, and the gains must
    # order as the variances do.
    el, _ = answered
    theta, free, Sigma = _laplace(el)
    d = el.data.d
    g = el.fit.gamma
    rng = np.random.default_rng(5)
    base = pair_weights(el.data.U, el.candidates[[17]])[0]
    delta = rng.normal(size=d)
    delta -= (delta @ g) / (g @ g) * g
    W = np.array([base + t * delta for t in np.linspace(-0.5, 0.5, 9)])
    mu = el.fit.xi - W @ g
    np.testing.assert_allclose(mu, mu[0], atol=1e-9)
    A = np.zeros((len(theta), len(W)))
    A[:d], A[d] = -W.T, 1.0
    A = A[free]
    s2 = np.einsum("ic,ij,jc->c", A, Sigma, A)
    gain = UtilityScorer(el.data, el.fit, el.engine).param_gain(W)
    assert len(np.unique(np.round(s2, 9))) == len(s2)
    np.testing.assert_array_equal(np.argsort(gain), np.argsort(s2))


def test_param_gain_uses_one_cholesky_of_the_full_hessian(answered):
    el, _ = answered
    theta = join_theta(el.fit.gamma, el.fit.xi, el.fit.tau2, el.data)
    sc = UtilityScorer(el.data, el.fit, el.engine)
    H = sc.hessian + feedback_terms(theta, el.data, True)[2]
    free = theta > el.data.layout.lower_bounds()
    w = pair_weights(el.data.U, el.candidates[:5])
    A = np.vstack([-w.T, np.ones((1, 5)), np.zeros((len(theta) - el.data.d - 1, 5))])[free]
    s2 = np.einsum("ic,ic->c", A, cho_solve(damped_cho_factor(-H[np.ix_(free, free)]), A))
    np.testing.assert_allclose(sc.param_gain(w), bald_gain(el.fit.xi - w @ el.fit.gamma, s2),
                               rtol=1e-12)


def test_scores_for_the_params_target_are_exact_and_rank_by_gain(answered):
    el, _ = answered
    pairs = el.candidates[::3]
    sc = UtilityScorer(el.data, el.fit, el.engine)
    scores = sc.score(pairs, utility="fast", refine=10, target="params")
    assert scores.exact.all()
    np.testing.assert_allclose(scores.utility, sc.param_gain(pair_weights(el.data.U, pairs)))
    assert scores.best == int(np.argmax(scores.utility))
    assert scores.ranking()[0] == scores.best
    np.testing.assert_allclose(scores.p_answer,
                               expit(el.fit.xi - pair_weights(el.data.U, pairs) @ el.fit.gamma))
    assert scores.hessian is not None
    # the mode does not change the params target
    np.testing.assert_array_equal(sc.score(pairs, utility="exact", target="params").utility,
                                  scores.utility)
    with pytest.raises(ElicitError, match="utility target must be one of predictive, params, "
                                          "got 'kl'"):
        sc.score(pairs, target="kl")


@pytest.mark.parametrize("strategy", ["sequential", "nonsequential"])
def test_elicitor_with_the_params_target_asks_valid_unasked_pairs(strategy):
    rng = np.random.default_rng(2)
    sd = make_synthetic(rng)
    el = Elicitor(sd.X, sd.y, sd.U, target="params")
    assert el.target == "params"
    if strategy == "nonsequential":
        el.nonsequential_ranking()
    asked = set()
    for _ in range(4):
        q = el.next_query(strategy, rng)
        assert (q.i, q.j) not in asked and 0 <= q.i < q.j < 25
        assert not el.is_asked(q.i, q.j)
        assert q.exact_gain and 0.0 <= q.expected_gain <= np.log(2.0)
        asked.add((q.i, q.j))
        el.answer(q.i, q.j, int(sd.groups[q.i] == sd.groups[q.j]))
    assert el.n_answers == 4
    batch = el.next_batch(strategy, rng, 3)
    assert len({(q.i, q.j) for q in batch}) == 3
    assert not any((q.i, q.j) in asked for q in batch)


