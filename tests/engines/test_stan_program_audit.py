"""The shipped Stan program against the numpy twin where the other CmdStan tests do not look:
hyperparameters away from their defaults.

tests/engines/test_cmdstan.py compares CmdStan with the twin for every variant and named
model, but always with Hyper's defaults, where a_sigma = a_tau = 2 (and tau2 =
irrelevant_scale = 0.01): a program that read one of a pair for the other gave the same
numbers there. Here every hyperparameter a user can set differs from every other one.
Marked ``cmdstan`` and ``slow`` (a CmdStan process per point; the program is the one the
``cmdstan_engines`` fixture compiled).
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from conftest import make_small_data
from helpers import some_direction, some_relevance, theta_point

from elicit.model.density import log_density
from elicit.model.spec import Hyper
from elicit.model.variants import MODELS

pytestmark = [pytest.mark.cmdstan, pytest.mark.slow]


@pytest.mark.parametrize("model", list(MODELS))
@pytest.mark.parametrize("variant", ["fixed", "learned"])
def test_cmdstan_reads_each_hyperparameter_by_its_name(cmdstan_engines, variant, model):
    small = make_small_data(variant, n_feedback=6)
    p = small.p
    hyper = Hyper(variant=variant, a_sigma=3.0, b_sigma=5.0, tau2=0.3, a_tau=1.5, b_tau=0.6,
                  threshold_mean=small.m, model=model)
    data = replace(small, hyper=hyper, coupled=np.arange(p) % 3 != 2,
                   relevance=some_relevance(p), direction=some_direction(p))
    engine = cmdstan_engines[variant]
    points = [theta_point(data, seed) for seed in (1, 2)]
    stan = [engine.log_prob(data, t) for t in points]
    twin = [log_density(t, data) for t in points]
    # Stan drops constant terms: the log densities agree up to one constant, the gradients
    # (in theta) agree
    assert stan[1][0] - stan[0][0] == pytest.approx(twin[1][0] - twin[0][0], rel=1e-9,
                                                    abs=1e-7)
    for (_, g_stan), (_, g_twin) in zip(stan, twin):
        np.testing.assert_allclose(g_stan, g_twin, rtol=1e-6, atol=1e-8)
