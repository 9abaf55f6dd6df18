"""ElicitRegressor with relevance feedback: features the expert says affect the outcome
(``relevant``) or not (``irrelevant``), in the relevance model."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from sklearn.base import clone

from elicit import ElicitError, ElicitRegressor
from elicit.engines import get_engine
from elicit.model.posterior import NIGPosterior
from elicit.model.spec import Hyper, ModelData

pytestmark = pytest.mark.usefixtures("one_blas_thread")

NAMES = [f"f{k}" for k in range(8)]
#: feature 6 has a clear effect in the data; features 3, 4, 5 and 7 have none
BETA = np.array([1.0, -1.0, 0.5, 0.0, 0.0, 0.0, 0.8, 0.0])


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(30, len(BETA)))
    y = X @ BETA + 0.5 * rng.normal(size=30)
    return pd.DataFrame(X, columns=NAMES), y


def fit(data, **kw) -> ElicitRegressor:
    X, y = data
    kw.setdefault("model", "relevance")
    return ElicitRegressor(tau2=0.5, engine="numpy", **kw).fit(X, y)


def test_an_irrelevant_feature_shrinks_toward_zero_and_a_relevant_one_keeps_its_weight(data):
    base = fit(data)
    irr = fit(data, irrelevant=["f6"])
    rel = fit(data, relevant=[6])
    # the answer's own feature: pulled to 0 (prior variance tau2 eps, eps = 0.01)
    assert abs(irr.coef_[6]) < 0.25 * abs(base.coef_[6])
    assert abs(rel.coef_[6]) >= abs(base.coef_[6])
    assert list(irr.relevance_) == [-1] * 6 + [0, -1]
    assert list(rel.relevance_) == [-1] * 6 + [1, -1]
    # calling a feature with a real effect irrelevant makes the unjudged look less relevant
    assert irr.zeta_ < base.zeta_
    assert np.isnan(ElicitRegressor(tau2=0.5, engine="numpy").fit(*data).zeta_)


def test_the_fit_is_the_relevance_model_with_those_classes(data):
    """Against the model built directly: the classes set by name and index, the posterior
    mean of beta at the engine's MAP."""
    X, y = data
    est = ElicitRegressor(model="relevance", tau2=0.5, engine="numpy", standardize=False,
                          normalize_y=False, fit_intercept=False, relevant=["f0", 1],
                          irrelevant=[3, "f7"]).fit(X, y)
    classes = np.array([1, 1, -1, 0, -1, -1, -1, 0])
    hyper = Hyper(variant="fixed", tau2=0.5, model="relevance", threshold_mean=1.0,
                  a_sigma=2.0, b_sigma=0.2)             # the estimator's sigma prior
    md = ModelData(X.to_numpy(), y, X.to_numpy().T, hyper, relevance=classes)
    ref = NIGPosterior.from_map(md, get_engine("numpy", "fixed").fit(md))
    np.testing.assert_allclose(est.coef_, ref.mu, rtol=1e-6, atol=1e-9)
    assert list(est.relevance_) == list(classes)
    # the parameters survive clone, like feedback
    c = clone(est)
    assert c.relevant == ["f0", 1] and c.irrelevant == [3, "f7"]


@pytest.mark.parametrize("kw, message", [
    ({"model": "paper", "irrelevant": ["f1"]},
     "relevant/irrelevant feedback needs the relevance model; model='paper' has no relevance "
     "classes: add model='relevance'"),
    ({"relevant": ["f1"], "irrelevant": [1]},
     "feature(s) ['f1'] are both relevant and irrelevant; give each feature one answer"),
    ({"irrelevant": ["nope"]}, "irrelevant entry 0 names an unknown feature 'nope'"),
    ({"relevant": [8]}, "relevant entry 0: feature index 8 is out of range"),
    ({"relevant": "f1"}, "relevant must be a list of feature names or indices, got str"),
    ({"irrelevant": [1.5]}, "irrelevant entry 0: a feature must be a name or a column index"),
])
def test_bad_relevance_feedback_is_a_one_line_error(data, kw, message):
    with pytest.raises(ElicitError) as e:
        fit(data, **kw)
    assert message in str(e.value) and "\n" not in str(e.value)


def test_a_pair_answer_makes_both_features_relevant_as_in_an_elicitation(data):
    """The estimator enters pair feedback as the Elicitor does: features of answered pairs
    that no feature answer judged are relevant; a feature answer stands."""
    pairs = [("f0", "f1", "similar"), ("f1", "f6", "dissimilar"), ("f2", "f5", "dont_know")]
    est = fit(data, feedback=pairs, irrelevant=["f6"])
    assert list(est.relevance_) == [1, 1, -1, -1, -1, -1, 0, -1]
    explicit = fit(data, feedback=pairs, irrelevant=["f6"], relevant=["f0", "f1"])
    np.testing.assert_allclose(est.coef_, explicit.coef_, rtol=1e-6, atol=1e-9)
