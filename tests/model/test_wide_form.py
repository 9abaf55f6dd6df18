"""Every named model on the n x n form (n <= p, no QR basis), which the suite's small problem
(12 rows, 10 features: the p x p form) never reaches: the log density's gradient and Hessian
against central differences, and the batched density against the one-theta one. A review found
these cells of the check matrix empty (docs/reliability.md); the p x p form's are in
test_models.py, test_relevance.py and test_tall.py."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import make_small_data
from helpers import dense_log_density, fd_grad, some_direction, some_relevance, theta_point

from elicit.model.batch import BatchDensity
from elicit.model.density import hessian, log_density
from elicit.model.kernel import pair_weights
from elicit.model.marginal import Marginal
from elicit.model.spec import Hyper, ModelData
from elicit.model.variants import MODELS

WIDE = {"n": 8, "p": 12}


def _rel(a, b) -> float:
    a, b = np.asarray(a, float), np.asarray(b, float)
    return float(np.max(np.abs(a - b)) / max(np.max(np.abs(b)), 1e-300))


def _wide(variant: str, model: str, n_feedback: int) -> ModelData:
    base = make_small_data(variant, n_feedback=n_feedback, **WIDE)
    coupled = np.ones(base.p, dtype=bool)
    coupled[-3:] = False           # the known-coupling models' J: its mask is exercised too
    data = ModelData(base.X, base.y, base.U, Hyper(**{**base.hyper.__dict__, "model": model}),
                     base.pairs, base.f, coupled=coupled, relevance=some_relevance(base.p),
                     direction=some_direction(base.p))
    assert Marginal.at(theta_point(data), data).basis is None     # the n x n form
    return data


@pytest.mark.parametrize("variant", ["fixed", "learned"])
@pytest.mark.parametrize("model", list(MODELS))
def test_derivatives_on_the_n_by_n_form_match_finite_differences(variant, model):
    data = _wide(variant, model, n_feedback=6)
    theta = theta_point(data)
    _, g = log_density(theta, data)
    # measured: 5e-10 at worst; central differences of a smooth density stay far below 1e-5
    assert _rel(g, fd_grad(lambda t: log_density(t, data)[0], theta)) < 1e-5
    assert _rel(hessian(theta, data), fd_grad(lambda t: log_density(t, data)[1], theta)) < 1e-5


@pytest.mark.parametrize("variant", ["fixed", "learned"])
@pytest.mark.parametrize("model", list(MODELS))
def test_batched_density_on_the_n_by_n_form_is_the_models(variant, model):
    data = _wide(variant, model, n_feedback=4)
    new_pairs = np.array([[0, 5], [1, 2], [3, 6]])
    thetas = np.stack([theta_point(data, s) for s in (1, 2, 3)])
    value, grad, _ = BatchDensity(data, pair_weights(data.U, new_pairs), 1).at(thetas,
                                                                               np.arange(3))
    for c in range(3):
        d2 = data.with_feedback(np.vstack([data.pairs, new_pairs[c]]), np.append(data.f, 1))
        v, g = log_density(thetas[c], d2)
        # the same formulas in another order (stacked products): rounding only
        assert abs(value[c] - v) <= 1e-9 * abs(v)
        assert _rel(grad[c], g) < 1e-9


@pytest.mark.parametrize("variant", ["fixed", "learned"])
@pytest.mark.parametrize("model", list(MODELS))
def test_value_on_the_n_by_n_form_is_the_independent_formula(variant, model):
    """The n x n form's value, and the batched density's with one more answer, against the
    density written out with dense K, slogdet and solve (helpers.dense_log_density): the
    p x p form's are in test_models.py."""
    data = _wide(variant, model, n_feedback=6)
    spec = MODELS[model]
    theta = theta_point(data)

    def own(th, d):
        return dense_log_density(th, d, spec.threshold_sd,
                                 data.coupled if spec.known_coupling else None,
                                 relevance=data.relevance if spec.relevance else None,
                                 direction=data.direction if spec.direction else None)

    assert log_density(theta, data)[0] == pytest.approx(own(theta, data), rel=1e-10)
    new_pairs = np.array([[0, 5], [1, 2]])
    thetas = np.stack([theta_point(data, s) for s in (2, 3)])
    value, _, _ = BatchDensity(data, pair_weights(data.U, new_pairs), 0).at(thetas, np.arange(2))
    for c in range(2):
        d2 = data.with_feedback(np.vstack([data.pairs, new_pairs[c]]), np.append(data.f, 0))
        assert value[c] == pytest.approx(own(thetas[c], d2), rel=1e-10)
