"""The engines on the relevance model: the parameter block zeta (unbounded) read and written
by every engine, the numpy engine's cold and warm fits in agreement, and the Stan engines
against the numpy twin (slow; the CmdStan comparison runs over every named model in
test_cmdstan.py, the PyStan log density in test_stan_engines.py).
"""

from __future__ import annotations

import numpy as np
import pytest
from helpers import rel_diff, relevance_data

from elicit.engines.checked import CheckedEngine
from elicit.engines.numpy_engine import NumpyEngine
from elicit.model.covariance import IRRELEVANT, RELEVANCE, RELEVANT, UNASKED
from elicit.model.density import hessian_base, log_density
from elicit.model.posterior import NIGPosterior
from elicit.model.spec import Hyper, ModelData
from elicit.model.theta import theta_of


def scaled(theta: np.ndarray, data: ModelData) -> np.ndarray:
    out = theta.copy()
    out[data.layout.index("xi")] /= data.m
    return out


def test_cold_fit_is_a_stationary_maximum(variant):
    data = relevance_data(variant)
    fit = NumpyEngine(variant).fit(data)
    assert fit.converged and fit.zeta is not None
    theta = theta_of(fit, data)
    _, g = log_density(theta, data)
    free = theta > data.layout.lower_bounds() + 1e-12
    assert np.max(np.abs(g[free])) < 1e-4
    z = data.layout.index("zeta")
    assert free[z]              # unbounded: never held
    H = hessian_base(theta, data)
    assert np.linalg.eigvalsh(-H[np.ix_(free, free)]).min() > 0
    np.testing.assert_allclose(fit.scales ** 2, RELEVANCE.lambdas(data.relevance, fit.zeta,
                                                                  data.relevance_signal))


@pytest.mark.parametrize("change", ["class", "pair", "both"])
def test_warm_refit_equals_cold_fit(variant, change):
    """A warm Newton refit after a relevance answer (or a pair answer) reaches the cold MAP."""
    data0 = relevance_data(variant)
    engine = NumpyEngine(variant)
    fit0 = engine.fit(data0)
    data1 = data0
    if change in ("class", "both"):
        cls = data0.relevance.copy()
        cls[[2, 3]] = (RELEVANT, IRRELEVANT)
        data1 = data1.with_relevance(cls)
    if change in ("pair", "both"):
        data1 = data1.with_feedback(np.vstack([data1.pairs, [0, 7]]), np.append(data1.f, 1))
    warm = engine.fit(data1, init=fit0, hessian=hessian_base(theta_of(fit0, data0), data0))
    cold = engine.fit(data1)
    assert "Newton" in warm.message and warm.converged
    np.testing.assert_allclose(scaled(theta_of(warm, data1), data1),
                               scaled(theta_of(cold, data1), data1), rtol=1e-5, atol=1e-7)
    assert warm.log_density == pytest.approx(cold.log_density, rel=1e-9)
    assert abs(warm.zeta - fit0.zeta) > 1e-4 or change == "pair"


def test_a_start_from_another_models_fit():
    """The paper model's MAP (no zeta) starts a relevance fit; the warm Hessian of the other
    layout is not reused."""
    data = relevance_data("learned")
    paper = ModelData(data.X, data.y, data.U, Hyper(**{**data.hyper.__dict__, "model": "paper"}),
                      data.pairs, data.f)
    eng = NumpyEngine("learned")
    p_fit = eng.fit(paper)
    warm = eng.fit(data, init=p_fit)
    cold = eng.fit(data)
    assert warm.converged
    assert rel_diff(warm, cold, data) < 1e-5


def test_posterior_of_an_all_relevant_fit_is_the_papers():
    """All features called relevant: h = 1, so the relevance model's posterior is the paper
    model's at the same (gamma, tau2)."""
    data = relevance_data("fixed", classes=np.ones(10, int))
    fit = NumpyEngine("fixed").fit(data)
    paper = ModelData(data.X, data.y, data.U, Hyper(**{**data.hyper.__dict__, "model": "paper"}),
                      data.pairs, data.f)
    p_fit = NumpyEngine("fixed").fit(paper)
    np.testing.assert_allclose(fit.gamma, p_fit.gamma, rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(NIGPosterior.from_map(data, fit).mu,
                               NIGPosterior.from_map(paper, p_fit).mu, rtol=1e-5, atol=1e-8)
    assert np.all(fit.scales == 1.0)


def test_checked_engine_compares_zeta():
    data = relevance_data("fixed")
    res = CheckedEngine(NumpyEngine("fixed")).fit(data)
    assert res.zeta is not None and res.scales is not None
    assert np.isin(data.relevance, (RELEVANT, IRRELEVANT, UNASKED)).all()


@pytest.mark.slow
@pytest.mark.pystan
def test_pystan_fits_the_relevance_model(variant):
    """PyStan (L-BFGS-B on Stan's log density, zeta unconstrained as it is) reaches the numpy
    twin's MAP, zeta included."""
    from elicit.engines.pystan_engine import PyStanEngine

    data = relevance_data(variant, n_feedback=6)
    ref = NumpyEngine(variant).fit(data)
    got = PyStanEngine(variant).fit(data)
    assert got.converged and ref.converged, got.message
    assert got.zeta == pytest.approx(ref.zeta, abs=1e-4)
    assert rel_diff(got, ref, data) <= 1e-4
    np.testing.assert_allclose(got.scales, ref.scales, rtol=1e-4)
