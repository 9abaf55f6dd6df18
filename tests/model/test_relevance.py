"""The relevance model (elicit.model.covariance.RELEVANCE): per-feature prior scales from the
expert's relevance classes and zeta, checked against independent formulas.

The references here never use the Woodbury / n x n forms of the package: the marginal
likelihood is scipy's multivariate t with the p x p prior covariance
``tau2 diag(h) K diag(h)`` written out, the posterior the textbook p x p formulas, and the
rank-2 "what if feature j's scale were s" screen a full recomputation per candidate.
"""

from __future__ import annotations

import numpy as np
import pytest
from conftest import make_small_data
from helpers import (
    assert_derivatives_match_finite_differences,
    fd_grad,
    relevance_data,
    signal_direct,
    some_direction,
    some_relevance,
    theta_point,
)
from scipy import stats
from scipy.special import expit, logit

from elicit.errors import ElicitError
from elicit.model.batch import batched_refit
from elicit.model.covariance import (
    IRRELEVANT,
    IRRELEVANT_SCALE,
    RELEVANCE,
    RELEVANT,
    UNASKED,
    Scales,
)
from elicit.model.density import hessian, hessian_base, log_density
from elicit.model.kernel import kernel, pair_weights
from elicit.model.marginal import Marginal
from elicit.model.posterior import NIGPosterior
from elicit.model.priors import RELEVANT_SHARE, ZETA_PRIOR
from elicit.model.result import MAPResult
from elicit.model.spec import Hyper, ModelData, Params, all_pairs
from elicit.model.theta import data_mean, join_theta, params_of, theta_of
from elicit.model.variants import RELEVANCE_MODEL, get_model


def lambdas_direct(classes: np.ndarray, zeta: float, signal=None) -> np.ndarray:
    """lambda per feature, written out from the design."""
    signal = np.zeros(len(classes)) if signal is None else signal
    out = []
    for c, a in zip(classes, signal):
        s = 1.0 / (1.0 + np.exp(-(zeta + RELEVANCE.spread * a)))
        out.append(1.0 if c == 1 else IRRELEVANT_SCALE if c == 0
                   else s + (1 - s) * IRRELEVANT_SCALE)
    return np.array(out)


# -- the data and the registry ---------------------------------------------------------------

def test_classes_default_to_unjudged_and_are_validated():
    base = make_small_data()
    data = relevance_data(classes=None)
    assert data.relevance.tolist() == [UNASKED] * data.p
    assert not data.relevance.flags.writeable
    for bad in (np.zeros(3, int), np.full(base.p, 2), np.full(base.p, 0.5), ["a"] * base.p):
        with pytest.raises(ElicitError, match="relevance must hold one class per feature"):
            ModelData(base.X, base.y, base.U, base.hyper, relevance=bad)
    with pytest.raises(ElicitError, match="relevance must hold one class per feature"):
        data.with_relevance(np.full(base.p, 3))


def test_with_relevance_copies_only_the_classes():
    data = relevance_data()
    new = data.with_relevance(np.ones(data.p, int))
    assert new.relevance.tolist() == [RELEVANT] * data.p
    assert data.relevance.tolist() == some_relevance(data.p).tolist()   # unchanged
    assert new.X is data.X and new.pairs is data.pairs and new.f is data.f


def test_layout_and_registry():
    data = relevance_data("learned")
    lay = data.layout
    assert [b.name for b in lay.blocks] == ["gamma", "xi", "tau2", "zeta"]
    assert lay.lower_bounds()[lay.index("zeta")] == -np.inf
    assert lay.marginal_index.tolist() == list(range(data.d)) + [data.d + 1, data.d + 2]
    assert get_model(RELEVANCE_MODEL).relevance and not get_model("paper").relevance
    assert [b.name for b in make_small_data().layout.blocks] == ["gamma", "xi"]
    assert ZETA_PRIOR.mean == pytest.approx(logit(RELEVANT_SHARE)) and ZETA_PRIOR.sd == 1.0
    assert data.initial_params().zeta == ZETA_PRIOR.mean
    with pytest.raises(ValueError, match="pass zeta"):
        join_theta(np.ones(data.d), 1.0, 0.5, data)


def test_lambdas_follow_the_design():
    cls = np.array([1, 0, -1, -1, 1])
    unasked = cls == -1
    for signal in (np.zeros(5), np.array([0.3, -0.2, 0.6, -0.4, 0.1])):
        for zeta in (-3.0, -0.2, 2.5):
            np.testing.assert_allclose(RELEVANCE.lambdas(cls, zeta, signal),
                                       lambdas_direct(cls, zeta, signal), rtol=1e-15)
            sc = RELEVANCE.scales(cls, zeta, signal)
            np.testing.assert_allclose(sc.h ** 2, lambdas_direct(cls, zeta, signal),
                                       rtol=1e-14)
            # the derivatives of log h by finite differences in zeta, feature by feature
            def log_h(z, signal=signal):
                return 0.5 * np.log(lambdas_direct(cls, z, signal))
            e = 1e-5
            np.testing.assert_allclose(sc.dlog_h, (log_h(zeta + e) - log_h(zeta - e)) / (2 * e),
                                       rtol=1e-7, atol=1e-12)
            assert np.all(sc.dlog_h[~unasked] == 0.0)
            # h''/h = (h'/h)' + (h'/h)^2, the derivative of dlog_h by finite differences
            ddlog = (RELEVANCE.scales(cls, zeta + e, signal).dlog_h
                     - RELEVANCE.scales(cls, zeta - e, signal).dlog_h) / (2 * e)
            np.testing.assert_allclose(sc.d2h_over_h[unasked],
                                       (ddlog + sc.dlog_h**2)[unasked], rtol=1e-6, atol=1e-10)
        zetas = np.array([-1.0, 0.5])
        np.testing.assert_allclose(RELEVANCE.lambdas(cls, zetas, signal),
                                   np.stack([lambdas_direct(cls, z, signal) for z in zetas]),
                                   rtol=1e-15)


def test_an_answer_reaches_its_neighbours_where_most_meta_features_coincide():
    """One-hot or categorical meta-features can make most pairs of features coincide, so the
    median squared distance is 0: the bandwidth is then the median of the nonzero distances
    (as ``scale_to_typical`` takes it), not a zero that switched every neighbour off."""
    U = np.vstack([np.tile([1.0, 0.0], (9, 1)), [[0.0, 1.0], [0.0, 1.1], [5.0, 5.0]]])
    d = ((U[:, None] - U[None]) ** 2).sum(-1)[np.triu_indices(len(U), 1)]
    assert np.median(d) == 0.0
    cls = np.full(len(U), -1)
    cls[9] = 1                               # feature 10, at distance 0.01, is its neighbour
    signal = RELEVANCE.signal(cls, U)
    assert signal[10] > 0.3 and signal[10] > 10 * signal[11]
    np.testing.assert_allclose(signal, signal_direct(cls, U), rtol=1e-12, atol=1e-15)


def test_an_answer_moves_the_neighbours_share():
    """The neighbours' weighted mean answer against its definition, and what it does: an
    answer "relevant" raises the lambda of the unjudged features near it in meta-feature
    space (more than those far from it), "irrelevant" lowers it, no answer changes nothing."""
    rng = np.random.default_rng(5)
    U = rng.normal(size=(12, 3))
    U[1] = U[0] + 0.05                       # feature 1 is feature 0's close neighbour
    cls = np.full(12, -1)
    np.testing.assert_array_equal(RELEVANCE.signal(cls, U), np.zeros(12))
    cls[[0, 5, 7]] = [1, 0, 1]
    np.testing.assert_allclose(RELEVANCE.signal(cls, U), signal_direct(cls, U), rtol=1e-12,
                               atol=1e-15)
    base = RELEVANCE.lambdas(np.full(12, -1), -2.0, np.zeros(12))
    for answer, sign in ((1, 1.0), (0, -1.0)):
        one = np.full(12, -1)
        one[0] = answer
        lam = RELEVANCE.lambdas(one, -2.0, RELEVANCE.signal(one, U))
        moved = sign * (lam - base)
        assert moved[1] > 0 and moved[1] == pytest.approx(moved[2:].max(), rel=0) or \
            moved[1] >= moved[2:].max()
        assert np.all(moved[2:] >= 0)
    assert RELEVANCE.signal(cls, U) is not RELEVANCE.signal(cls, U)   # a fresh array


# -- the density against independent formulas ----------------------------------------------

@pytest.mark.parametrize("classes", ["mixed", "none", "all_known"])
def test_marginal_is_the_multivariate_t_with_scaled_covariance(classes):
    p = 10
    cls = {"mixed": some_relevance(p), "none": np.full(p, -1),
           "all_known": np.array([1, 0] * 5)}[classes]
    data = relevance_data(classes=cls)
    gamma, tau2, zeta = np.array([0.4, 1.1, 0.7]), 0.6, -1.2
    h = data.hyper
    lam = lambdas_direct(cls, zeta, signal_direct(cls, data.U))
    Sigma_beta = tau2 * np.sqrt(lam)[:, None] * kernel(data.U, gamma) * np.sqrt(lam)[None, :]
    cov = (h.b_sigma / h.a_sigma) * (np.eye(data.n) + data.X @ Sigma_beta @ data.X.T)
    ref = stats.multivariate_t(loc=np.zeros(data.n), shape=cov, df=2 * h.a_sigma).logpdf(data.y)
    mg = Marginal.from_data(data, gamma, tau2, zeta=zeta)
    assert mg.value == pytest.approx(ref, rel=1e-12)
    assert mg.X_data is data.X


@pytest.mark.parametrize("classes", ["mixed", "none", "all_known"])
@pytest.mark.parametrize("n_feedback", [0, 6])
def test_derivatives_match_finite_differences(variant, classes, n_feedback):
    p = 10
    cls = {"mixed": some_relevance(p), "none": np.full(p, -1),
           "all_known": np.array([1, 0] * 5)}[classes]
    assert_derivatives_match_finite_differences(
        relevance_data(variant, cls, n_feedback=n_feedback))


def test_zeta_prior_is_normal_and_moves_nothing_else_when_all_classes_are_known():
    data = relevance_data(classes=np.array([1, 0] * 5))
    theta = theta_point(data)
    lay = data.layout
    H = hessian(theta, data)
    z = lay.index("zeta")
    assert H[z, z] == pytest.approx(-1.0 / ZETA_PRIOR.sd**2, rel=1e-12)
    assert np.all(H[z, :z] == 0.0)
    t2 = theta.copy()
    t2[z] += 0.8
    dv = log_density(t2, data)[0] - log_density(theta, data)[0]
    r0, r1 = theta[z] - ZETA_PRIOR.mean, t2[z] - ZETA_PRIOR.mean
    assert dv == pytest.approx(-0.5 * (r1**2 - r0**2), rel=1e-9)


def test_mean_jacobian_matches_finite_differences(variant):
    data = relevance_data(variant)
    theta = theta_point(data)
    mg = Marginal.at(theta, data)
    Jm = mg.mean_jacobian(variant == "learned")
    idx = data.layout.marginal_index
    assert Jm.shape == (data.n, len(idx))
    J = fd_grad(lambda t: Marginal.at(t, data).predictive()[0], theta, rel=1e-6)[:, idx]
    np.testing.assert_allclose(Jm, J, rtol=1e-6, atol=1e-7 * np.max(np.abs(Jm)))


# -- the posterior mapped back ---------------------------------------------------------------

@pytest.mark.parametrize("n,p", [(8, 6), (4, 6), (15, 5)])
def test_posterior_matches_the_direct_formulas(n, p):
    rng = np.random.default_rng(5)
    U = rng.uniform(0.0, 2.0, size=(p, 2))
    X, y = rng.normal(size=(n, p)), 2.0 * rng.normal(size=n)
    cls = np.array([1, 0, -1, -1, 1, -1][:p])
    hyper = Hyper(a_sigma=2.5, b_sigma=3.0, tau2=0.8, threshold_mean=1.0,
                  model=RELEVANCE_MODEL)
    data = ModelData(X, y, U, hyper, relevance=cls)
    gamma, zeta = np.array([1.5, 2.0]), 0.3
    lam = lambdas_direct(cls, zeta, signal_direct(cls, U))
    h = np.sqrt(lam)
    fit = MAPResult(gamma=gamma, xi=1.0, tau2=0.8, log_density=0.0, converged=True,
                    engine="test", U=U, zeta=zeta, scales=h)
    post = NIGPosterior.from_map(data, fit)
    prior = 0.8 * h[:, None] * kernel(U, gamma) * h[None, :]
    Sigma = np.linalg.inv(X.T @ X + np.linalg.inv(prior))
    mu = Sigma @ X.T @ y
    b = 3.0 + 0.5 * (y @ y - mu @ np.linalg.solve(Sigma, mu))
    np.testing.assert_allclose(post.Sigma, Sigma, rtol=1e-7, atol=1e-10)
    np.testing.assert_allclose(post.mu, mu, rtol=1e-8, atol=1e-10)
    assert post.b_star == pytest.approx(b, rel=1e-10)
    np.testing.assert_allclose(post.scales, h)
    X_new = rng.normal(size=(3, p))
    pred = post.predict(X_new)
    np.testing.assert_allclose(pred.mean, X_new @ mu, rtol=1e-8, atol=1e-10)
    quad = np.einsum("ij,jk,ik->i", X_new, Sigma, X_new)
    np.testing.assert_allclose(pred.scale2, (post.b_star / post.a_star) * (1 + quad), rtol=1e-8)


# -- what if feature j's scale were s: the rank-2 screen --------------------------------------

@pytest.mark.parametrize("model", [RELEVANCE_MODEL, "paper", "relevance-direction"])
def test_scale_change_is_a_recomputation_with_the_new_scale(model):
    data = relevance_data("learned", n_feedback=0, p=10)
    if model != RELEVANCE_MODEL:
        # the direction model's residual y - delta X s: a scale change keeps delta s
        data = ModelData(data.X, data.y, data.U, Hyper(**{**data.hyper.__dict__,
                                                          "model": model}),
                         relevance=data.relevance, direction=some_direction(data.p))
    theta = theta_point(data)
    mg = Marginal.at(theta, data)
    h0 = np.ones(data.p) if mg.h is None else mg.h
    feats = np.arange(data.p)
    for lam in (1.0, IRRELEVANT_SCALE, 0.3 * np.arange(1, data.p + 1)):
        got = mg.scale_change(feats, lam)
        lam_j = np.broadcast_to(lam, feats.shape)
        for c, j in enumerate(feats):
            h = h0.copy()
            h[j] = np.sqrt(lam_j[c])
            ref = Marginal(data.X, data.y, data.U, mg.gamma, mg.tau2, data.hyper.a_sigma,
                           data.hyper.b_sigma, scales=Scales(h, np.zeros(data.p, bool), 0.0,
                                                             0.0),
                           mean=data_mean(data, mg.delta))
            m, v = ref.predictive()
            np.testing.assert_allclose(got.mean[:, c], m, rtol=1e-9, atol=1e-10)
            np.testing.assert_allclose(got.var[:, c], v, rtol=1e-9)
            assert got.dvalue[c] == pytest.approx(ref.value - mg.value, rel=1e-8, abs=1e-10)


def test_scale_change_to_the_current_scale_changes_nothing():
    data = relevance_data()
    mg = Marginal.at(theta_point(data), data)
    feats = np.array([0, 1, 2, 3])
    got = mg.scale_change(feats, mg.h[feats] ** 2)
    m0, v0 = mg.predictive()
    np.testing.assert_allclose(got.mean, np.repeat(m0[:, None], 4, axis=1), rtol=1e-12)
    np.testing.assert_allclose(got.var, np.repeat(v0[:, None], 4, axis=1), rtol=1e-12)
    np.testing.assert_allclose(got.dvalue, 0.0, atol=1e-12)


def test_log_bayes_factor_prefers_relevant_for_a_feature_that_carries_the_signal():
    """log BF_j = change for lambda_j = 1 minus change for lambda_j = eps: with y made of
    feature 0 alone, feature 0's BF is large and the others' small."""
    rng = np.random.default_rng(2)
    n, p = 30, 8
    X = rng.normal(size=(n, p))
    y = 2.0 * X[:, 0] + 0.3 * rng.normal(size=n)
    U = rng.uniform(0, 1, size=(p, 2))
    data = ModelData(X, y, U, Hyper(tau2=1.0, threshold_mean=1.0, model=RELEVANCE_MODEL))
    mg = Marginal.from_data(data, np.ones(2), 1.0, zeta=ZETA_PRIOR.mean)
    feats = np.arange(p)
    log_bf = mg.scale_change(feats, 1.0).dvalue - mg.scale_change(feats, IRRELEVANT_SCALE).dvalue
    assert log_bf[0] > 5.0 and np.all(log_bf[1:] < 2.0)
    assert expit(ZETA_PRIOR.mean + log_bf[0]) > 0.99


# -- batched density and refits ---------------------------------------------------------------

def test_batched_refit_reaches_the_engine_refit(variant):
    from elicit.engines.numpy_engine import NumpyEngine

    data = relevance_data(variant, n_feedback=6)
    engine = NumpyEngine(variant)
    fit = engine.fit(data)
    assert fit.converged and fit.zeta is not None
    theta0 = theta_of(fit, data)
    H0 = hessian_base(theta0, data)
    pairs = all_pairs(data.p)
    cands = pairs[np.random.default_rng(1).choice(len(pairs), 5, replace=False)]
    w = pair_weights(data.U, cands)
    scale = np.ones_like(theta0)
    scale[data.d] = data.m
    for f_new in (0, 1):
        theta, mean, var, ok = batched_refit(data, theta0, H0, w, f_new, max_iter=50,
                                             tol=1e-14)
        assert ok.all()
        for c in range(len(cands)):
            d2 = data.with_feedback(np.vstack([data.pairs, cands[c]]), np.append(data.f, f_new))
            ref = theta_of(engine.fit(d2, init=fit), d2)
            np.testing.assert_allclose(theta[c] / scale, ref / scale, rtol=0, atol=3e-5)
            m_ref, v_ref = Marginal.at(theta[c], data).predictive()
            np.testing.assert_allclose(mean[c], m_ref, rtol=1e-12, atol=1e-12)
            np.testing.assert_allclose(var[c], v_ref, rtol=1e-12)


def test_marginal_cache_keys_the_classes_and_zeta():
    from elicit.model.marginal_cache import marginal_cache

    data = relevance_data("learned")
    theta = theta_point(data)
    marginal_cache.clear()
    mg = Marginal.at(theta, data)
    zeta = params_of(theta, data).zeta
    assert marginal_cache.lookup(data, mg.gamma, mg.tau2, zeta) is mg
    (v0, g0), (v1, g1) = log_density(theta, data, mg), log_density(theta, data)
    assert v1 == v0 and np.array_equal(g1, g0)
    other = data.with_relevance(np.ones(data.p, int))
    assert marginal_cache.lookup(other, mg.gamma, mg.tau2, zeta) is None
    assert marginal_cache.lookup(data, mg.gamma, mg.tau2, 0.5) is None
    # a marginal of other scales is not stored under this data's key
    marginal_cache.clear()
    marginal_cache.remember(other, mg)
    assert marginal_cache.lookup(other, mg.gamma, mg.tau2, zeta) is None
    marginal_cache.clear()


def test_a_start_without_zeta_starts_at_its_prior_mean():
    from elicit.engines.numpy_engine import NumpyEngine

    data = relevance_data()
    eng = NumpyEngine("fixed")
    a = eng.fit(data)
    b = eng.fit(data, init=Params(np.ones(data.d), data.m, data.hyper.tau2))
    c = eng.fit(data, init=Params(np.ones(data.d), data.m, data.hyper.tau2, ZETA_PRIOR.mean))
    assert a.zeta == b.zeta == c.zeta
    np.testing.assert_allclose(a.scales, np.sqrt(RELEVANCE.lambdas(data.relevance, a.zeta,
                                                                   data.relevance_signal)))


def test_naming_the_relevant_features_lowers_the_share_of_the_unjudged():
    """The design's claim: as the expert names the relevant features, the unasked ones are
    less likely relevant and the MAP of zeta falls (here 3 of 30 features carry y)."""
    from elicit.engines.numpy_engine import NumpyEngine

    rng = np.random.default_rng(7)
    n, p = 40, 30
    X = rng.normal(size=(n, p))
    y = X[:, :3] @ np.array([1.5, -1.0, 1.2]) + 0.3 * rng.normal(size=n)
    U = rng.uniform(0, 1, size=(p, 2))
    data = ModelData(X, y, U, Hyper(tau2=0.5, threshold_mean=1.0, model=RELEVANCE_MODEL))
    eng = NumpyEngine("fixed")
    none = eng.fit(data)
    named = np.full(p, UNASKED)
    named[:3] = RELEVANT
    some = eng.fit(data.with_relevance(named), init=none)
    assert some.zeta < none.zeta - 1.0
    named[3:10] = IRRELEVANT
    assert eng.fit(data.with_relevance(named), init=some).converged
