"""``experiments/models_table.py``'s reference columns use the kernels they name."""

import dataclasses

import numpy as np
from helpers import experiment_script

from elicit.engines.numpy_engine import NumpyEngine
from elicit.model.spec import ModelData
from elicit.paper.synthetic import synthetic_problem


def test_the_ideal_kernel_column_is_the_posterior_under_the_ideal_kernel():
    """The ideal column once read the no-feedback fit's cached marginal (built with the
    model's own K) instead of the ideal K it passed: the same MSE as no feedback."""
    prob = synthetic_problem(0, 0)  # tau2 fixed, as in the real-data runs the script reads
    prob = dataclasses.replace(prob, hyper=dataclasses.replace(prob.hyper, variant="fixed"))
    got = experiment_script("models_table").ideal_control(prob, rho=0.9)
    # independently: the NIG posterior mean tau2 K X' (I + tau2 X K X')^-1 y, which sigma2
    # does not enter, with K = 1 on the diagonal and 0.9 within each expert group
    g = np.asarray(prob.expert.groups)
    p = len(g)
    K = np.eye(p)
    for i in range(p):
        for j in range(p):
            if i != j and g[i] >= 0 and g[i] == g[j]:
                K[i, j] = 0.9
    md = ModelData(prob.X, prob.y, prob.U, prob.hyper.with_threshold_mean(1.0))
    tau2 = NumpyEngine("fixed").fit(md).tau2
    X = prob.X
    mu = tau2 * K @ X.T @ np.linalg.solve(np.eye(len(X)) + tau2 * X @ K @ X.T, prob.y)
    want = np.mean((prob.X_test @ mu + prob.y_offset - prob.y_test) ** 2)
    assert np.isclose(got, want, rtol=1e-8)
