"""``experiments/bench_stan_kernel.py`` times formulations only when their densities agree."""

import pytest
from helpers import experiment_script


def test_formulations_whose_densities_differ_stop_the_benchmark():
    """The check was a bare assert, which ``python -O`` skips: the timings of a formulation
    that computes another density were printed as if comparable."""
    check = experiment_script("bench_stan_kernel").check_same_density
    check({"entrywise": -120.5, "gram": -120.5 * (1 + 1e-12)})
    with pytest.raises(RuntimeError, match="'gram' gives log density -120.4 where "
                                           "'entrywise' gives -120.5"):
        check({"entrywise": -120.5, "gram": -120.4})
