"""The model's data contract, layouts and caches, each check aimed at a slip a test elsewhere
would not notice: a bad hyperparameter or answer accepted, a field of the Stan data holding
another value, a one-entry block's size or a cache key missing an input.

Every expectation is written independently of the code's formula (a hand-computed value, a
brute-force sum or a property)."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import make_small_data, small_arrays

from elicit.errors import ElicitError
from elicit.model.layout import Block, ParamLayout
from elicit.model.spec import Hyper, ModelData, check_relevance


def _data(hyper: Hyper, *answers, seed: int = 0, n: int = 6, p: int = 4) -> ModelData:
    """ModelData of conftest's small arrays (``n`` rows, ``p`` features, 2 meta-features)."""
    a = small_arrays(seed, n=n, p=p, d=2)
    return ModelData(a.X, a.y, a.U, hyper, *answers)


@pytest.mark.parametrize("name", ["a_sigma", "b_sigma", "tau2", "a_tau", "b_tau",
                                  "threshold_mean"])
def test_a_zero_hyperparameter_is_refused(name):
    # every one of them divides or is a scale: 0 is as bad as a negative value
    with pytest.raises(ElicitError, match="positive number"):
        Hyper(**{name: 0.0})


def test_an_answer_other_than_0_or_1_is_refused():
    for bad in (2, -1):
        with pytest.raises(ElicitError, match="answers f must be 1"):
            _data(Hyper(threshold_mean=1.0), [[0, 1]], [bad])


def test_a_pair_index_equal_to_p_is_refused():
    with pytest.raises(ElicitError, match=r"pair indices must lie in 0\.\.3"):
        _data(Hyper(threshold_mean=1.0), [[0, 4]], [1])
    _data(Hyper(threshold_mean=1.0), [[0, 3]], [1])  # the last feature is fine


def test_with_feedback_refuses_pairs_and_answers_of_different_lengths():
    data = make_small_data(n_feedback=3)
    with pytest.raises(ElicitError, match="2 pairs but 1 answers"):
        data.with_feedback(np.array([[0, 1], [1, 2]]), np.array([1]))


@pytest.mark.parametrize("pairs, f, match", [
    ([[0, 1]], [2], "answers f must be 1"),
    ([[0, -1]], [1], r"pair indices must lie in 0\.\.{last}"),    # W_f of the last feature
    ([[0, "p"]], [0], r"pair indices must lie in 0\.\.{last}"),   # an IndexError traceback
])
def test_with_feedback_checks_its_answers_as_the_data_does(pairs, f, match):
    """with_feedback checked only the lengths: an answer 2 and a pair (0, -1) were taken."""
    data = make_small_data(n_feedback=3)
    pairs = [[i, data.p if j == "p" else j] for i, j in pairs]
    with pytest.raises(ElicitError, match=match.format(last=data.p - 1)):
        data.with_feedback(np.array(pairs), np.array(f))


def test_a_learned_tau2_fit_starts_at_the_prior_mode():
    # InvGamma(a, b) has its density's maximum at b / (a + 1): for a = 3, b = 8 that is 2
    data = _data(Hyper(variant="learned", a_tau=3.0, b_tau=8.0, threshold_mean=1.0))
    assert data.initial_params().tau2 == pytest.approx(2.0, rel=1e-12)


def test_relevance_classes_outside_the_three_are_refused_even_among_valid_ones():
    with pytest.raises(ElicitError, match="relevance must hold one class per feature"):
        check_relevance(np.array([1, 0, 5, -1]), 4)


def test_the_learned_variants_inverse_gamma_prior_reaches_stan_by_name():
    stan = _data(Hyper(variant="learned", a_tau=3.0, b_tau=5.0, threshold_mean=1.0)).to_stan()
    assert (stan["a_tau"].tolist(), stan["b_tau"].tolist(), stan["tau_fixed"].tolist()) \
        == ([3.0], [5.0], [])
    fixed = _data(Hyper(tau2=0.25, threshold_mean=1.0)).to_stan()
    assert (fixed["tau_fixed"].tolist(), fixed["a_tau"].tolist()) == ([0.25], [])


def _twins(hyper_a: Hyper, hyper_b: Hyper, **b_fields) -> tuple[ModelData, ModelData]:
    """Two ModelData on the very same (frozen) arrays: the marginal cache sees one data set."""
    a = _data(hyper_a, seed=4, n=7, p=5)
    return a, ModelData(a.X, a.y, a.U, hyper_b, **b_fields)


def test_the_marginal_cache_tells_noise_priors_apart():
    from elicit.model.marginal import Marginal

    a, b = _twins(Hyper(b_sigma=7.0, threshold_mean=1.0), Hyper(b_sigma=3.0, threshold_mean=1.0))
    g = np.array([0.7, 1.3])
    Marginal.from_data(a, g, 0.5)
    assert Marginal.from_data(b, g, 0.5).b_sigma == 3.0


def test_the_marginal_cache_tells_coupled_sets_apart():
    from elicit.model.marginal import Marginal

    h = Hyper(model="known-coupling", threshold_mean=1.0)
    J1, J2 = np.array([1, 1, 1, 0, 0], bool), np.array([0, 1, 1, 1, 1], bool)
    a, b = _twins(h, h, coupled=J2)
    a = ModelData(a.X, a.y, a.U, h, coupled=J1)
    g = np.array([0.7, 1.3])
    Marginal.from_data(a, g, 0.5)
    assert np.array_equal(Marginal.from_data(b, g, 0.5).coupled, J2)


def test_a_part_field_with_a_default_is_refused():
    # a default would let a part's of() forget a Stan data name silently
    from dataclasses import dataclass, field

    from elicit.model.stan_data import StanPart, part_fields

    @dataclass(frozen=True)
    class WithDefault(StanPart):
        k: int = field(default=1, metadata={"type": "int<lower=0>", "meaning": "k",
                                            "flag": False, "scalar": False})

    with pytest.raises(ValueError, match="no default"):
        part_fields((WithDefault,))


def test_index_refuses_a_block_of_other_than_one_entry():
    lay = ParamLayout((Block("gamma", "gamma", 0, 0.0, vector=True), Block("xi", "threshold", 1,
                                                                           0.0)))
    assert lay.index("xi") == 0
    with pytest.raises(ValueError, match="has 0 entries, not one"):
        lay.index("gamma")


def test_checked_same_point_measures_xi_relative_to_its_prior_mean():
    from elicit.engines.checked import same_point

    data = _data(Hyper(threshold_mean=50.0))
    xi = data.layout.index("xi")
    b = np.concatenate([np.ones(data.d), [1.0]])
    a = b.copy()
    a[xi] += 0.02               # 4e-4 of m = 50: the same point; 2e-2 of |xi| = 1: not
    assert same_point(a, b, data)
    a[xi] += 0.1                # 2.4e-3 of m: another point
    assert not same_point(a, b, data)


def test_check_engine_true_continues_from_the_higher_point():
    # get_engine's docstring: check=True is "higher" (a run goes on), not "stop"
    from elicit.engines import get_engine

    assert get_engine("numpy", check=True).modes == "higher"


def test_checked_engine_compares_a_bounded_entrys_gradient_in_its_log():
    # Stan works in u = log xi: at xi = 50 an error e = 1e-5 (0.5 + |g|) in d/d xi is
    # 1e-5 (25 + 50 |g|) in d/du, beyond the check's 1e-5 (1 + 50 |g|) there (though within
    # the same tolerance written in xi, 1e-5 (1 + |g|))
    from elicit.engines.checked import CheckedEngine
    from elicit.engines.numpy_engine import NumpyEngine
    from elicit.errors import EngineError
    from elicit.model.density import log_density

    data = _data(Hyper(threshold_mean=50.0))
    xi = data.layout.index("xi")
    theta = np.concatenate([np.ones(data.d), [50.0]])

    def log_prob(data, x):
        lp, g = log_density(x, data)
        g = np.array(g, dtype=float)
        g[xi] += 1e-5 * (0.5 + abs(g[xi]))
        return lp, g

    with pytest.raises(EngineError, match="d log p / d log xi"):
        CheckedEngine(NumpyEngine("fixed"))._same_density(data, theta, theta, log_prob)


def test_checked_engine_stops_a_twin_that_stops_short_of_its_map():
    # step 2 of docs/stan.md checks both points: a twin that stopped early is no reference
    from dataclasses import replace

    from elicit.engines.checked import CheckedEngine
    from elicit.engines.numpy_engine import NumpyEngine
    from elicit.errors import EngineError

    class ShortTwin(NumpyEngine):
        def fit(self, data, init=None, *, hessian=None):
            res = super().fit(data, init, hessian=hessian)
            return replace(res, gamma=3.0 * res.gamma + 0.5)

    eng = CheckedEngine(NumpyEngine("fixed"))
    eng.twin = ShortTwin("fixed")
    with pytest.raises(EngineError, match="the numpy twin's MAP is not a stationary point"):
        eng.fit(make_small_data(n_feedback=6))


@pytest.mark.usefixtures("registries_restored")
def test_a_model_name_with_surrounding_spaces_is_refused():
    # "--model ' mine'" and "--model mine" would name two models
    from elicit.model.variants import ModelVariant, register_model

    for name in (" mine", "mine "):
        with pytest.raises(ElicitError, match="without surrounding spaces"):
            register_model(ModelVariant(name, "a test model"))
