"""The prior set-up of the relevance model (elicit.prior): its no-feedback fit (zeta at its
MAP) and the choice of tau2 by marginal likelihood and by cross-validation."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import small_arrays
from helpers import dense_log_density

from elicit.engines.numpy_engine import NumpyEngine
from elicit.model.covariance import unasked_lambda
from elicit.model.density import log_density
from elicit.model.posterior import NIGPosterior, squared_errors
from elicit.model.priors import ZETA_PRIOR
from elicit.model.spec import Hyper, all_pairs
from elicit.model.theta import theta_of
from elicit.model.variants import RELEVANCE_MODEL
from elicit.prior.setup import PLACEHOLDER_THRESHOLD_MEAN, fit_no_feedback, no_feedback_data
from elicit.prior.tau2 import cv_tau2, ml_tau2


@pytest.fixture
def arrays():
    return small_arrays(seed=4, n=20, p=12, d=3)


def _stationary(fit, data) -> None:
    theta = theta_of(fit, data)
    _, g = log_density(theta, data)
    free = theta > data.layout.lower_bounds()
    assert np.max(np.abs(g[free])) < 1e-4


def test_no_feedback_fit_has_zeta_at_its_map(arrays):
    a = arrays
    cands = all_pairs(a.X.shape[1])
    data, fit = fit_no_feedback(NumpyEngine("fixed"), a.X, a.y, a.U,
                                Hyper(tau2=0.3, model=RELEVANCE_MODEL), cands)
    assert data.relevance.tolist() == [-1] * data.p
    assert fit.zeta is not None and fit.converged
    _stationary(fit, data)
    # with classes: the same set-up with the answers given
    cls = np.array([1, 0] * 6)
    data2, fit2 = fit_no_feedback(NumpyEngine("fixed"), a.X, a.y, a.U,
                                  Hyper(tau2=0.3, model=RELEVANCE_MODEL), cands, relevance=cls)
    assert data2.relevance.tolist() == cls.tolist() and fit2.zeta != fit.zeta
    _stationary(fit2, data2)


def test_ml_tau2_scores_the_profile_over_gamma_and_zeta(arrays):
    a = arrays
    grid = [0.03, 0.1, 0.3]
    best, scores = ml_tau2(a.X, a.y, a.U, grid, model=RELEVANCE_MODEL)
    assert set(grid) <= set(scores)
    eng = NumpyEngine("fixed")
    for t in grid:
        data = no_feedback_data(a.X, a.y, a.U, Hyper(tau2=t, b_sigma=0.2,
                                                     threshold_mean=PLACEHOLDER_THRESHOLD_MEAN,
                                                     model=RELEVANCE_MODEL))
        fit = eng.fit(data)       # a cold fit: the profile's maximiser, however started
        assert scores[t] == pytest.approx(log_density(theta_of(fit, data), data)[0], abs=1e-6)
    assert best == max(scores, key=lambda t: (scores[t], -t))
    # the relevance classes change the scores
    _, other = ml_tau2(a.X, a.y, a.U, grid, model=RELEVANCE_MODEL,
                       relevance=np.array([1, 0] * 6))
    assert other[0.1] != scores[0.1]


def _written_out_cv(a, grid, folds, model, scale=1.0, classes=None) -> dict:
    """The held-out MSE of each tau2, cold fits, the folds of cv_tau2's default rng."""
    fold_of = np.random.default_rng(0).permutation(len(a.y)) % folds
    eng = NumpyEngine("fixed")
    out = {}
    for t in grid:
        sse = 0.0
        for k in range(folds):
            tr, te = fold_of != k, fold_of == k
            mean = a.y[tr].mean()
            data = no_feedback_data(a.X[tr], a.y[tr] - mean, a.U,
                                    Hyper(tau2=t * scale, model=model), relevance=classes)
            mu = NIGPosterior.from_map(data, eng.fit(data)).mu
            sse += np.sum(squared_errors(a.X[te] @ mu + mean, a.y[te]))
        out[t] = sse / len(a.y)
    return out


def test_cv_tau2_of_the_relevance_start_holds_zeta_at_its_prior_mean(arrays):
    """Nothing judged: every feature has the scale lambda_u(logit pi0), so the CV is the paper
    model's at tau2 lambda_u(logit pi0)."""
    a = arrays
    grid = [0.3, 1.0, 3.0]
    best, scores = cv_tau2(a.X, a.y, a.U, grid, folds=4, model=RELEVANCE_MODEL)
    lu0 = unasked_lambda(ZETA_PRIOR.mean)[0]
    ref = _written_out_cv(a, grid, 4, "paper", scale=lu0)
    for t in grid:
        assert scores[t] == pytest.approx(ref[t], rel=1e-5)
    assert best == min(scores, key=lambda t: (scores[t], t))


def test_cv_tau2_with_every_feature_judged_is_the_relevance_models(arrays):
    """Every feature judged: zeta moves nothing, so the CV is the relevance model's as fitted."""
    a = arrays
    grid = [0.03, 0.1, 0.3]
    classes = np.array([1, 0, 0] * 4)
    _, scores = cv_tau2(a.X, a.y, a.U, grid, folds=4, model=RELEVANCE_MODEL,
                        relevance=classes)
    ref = _written_out_cv(a, grid, 4, RELEVANCE_MODEL, classes=classes)
    for t in grid:
        assert scores[t] == pytest.approx(ref[t], rel=1e-5)


@pytest.mark.parametrize("model", ["paper", "known-coupling"])
def test_ml_tau2_scores_are_the_profile_of_the_independent_formula(arrays, model):
    """Each score is the no-feedback log posterior written out with dense K, slogdet and
    solve (helpers.dense_log_density, xi at its prior mean) at the fitted gamma, and no
    other gamma scores higher: the profile over gamma."""
    a = arrays
    coupled = np.arange(len(a.U)) % 4 != 3 if model == "known-coupling" else None
    grid = [0.03, 0.3]
    _, scores = ml_tau2(a.X, a.y, a.U, grid, model=model, coupled=coupled)
    eng = NumpyEngine("fixed")
    rng = np.random.default_rng(2)
    for t in grid:
        data = no_feedback_data(a.X, a.y, a.U, Hyper(tau2=t, b_sigma=0.2, model=model,
                                                     threshold_mean=PLACEHOLDER_THRESHOLD_MEAN),
                                coupled=coupled)
        fit = eng.fit(data)
        theta = np.append(fit.gamma, PLACEHOLDER_THRESHOLD_MEAN)
        assert scores[t] == pytest.approx(dense_log_density(theta, data, 0.5, coupled),
                                          abs=1e-6)
        for _ in range(3):
            near = theta.copy()
            near[:-1] = np.maximum(fit.gamma + 0.05 * rng.normal(size=data.d), 0.0)
            assert dense_log_density(near, data, 0.5, coupled) < scores[t]
