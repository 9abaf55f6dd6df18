"""The estimator fits every named model."""

from __future__ import annotations

import numpy as np

from elicit.model.spec import Hyper


def test_estimator_from_answers_keeps_the_model():
    from elicit.estimator import ElicitRegressor

    est = ElicitRegressor.from_answers(np.ones((3, 2)), [], hyper=Hyper(model="tied-threshold"))
    assert est.model == "tied-threshold"
