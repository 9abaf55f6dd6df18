"""The analytic log density of :mod:`elicit.density` against independent evaluations.

Derivatives are checked against central finite differences; the marginal likelihood against
``scipy.stats.multivariate_t``; the priors and the feedback likelihood against ``scipy.stats``;
the kernel against a direct double loop.
"""

from __future__ import annotations

import numpy as np
import pytest
from conftest import make_small_data
from helpers import (
    assert_derivatives_match_finite_differences,
    fd_grad,
    some_relevance,
    theta_point,
)
from scipy import stats

from elicit.engines.numpy_engine import NumpyEngine
from elicit.model.density import LaplaceMoves, feedback_terms, hessian, hessian_base, log_density
from elicit.model.kernel import kernel, pair_weights
from elicit.model.marginal import Marginal
from elicit.model.priors import GAMMA_MEAN, GAMMA_SD
from elicit.model.spec import Hyper, ModelData, all_pairs
from elicit.model.theta import join_theta, split_theta


def _with_U(data: ModelData, U: np.ndarray) -> ModelData:
    return ModelData(data.X, data.y, U, data.hyper, data.pairs, data.f)


def _u_variants(U: np.ndarray) -> dict[str, np.ndarray]:
    """Meta-features with different sparsity patterns (the code exploits zeros in U)."""
    out = {"sparse": U.copy()}
    Z = U.copy()
    Z[:, 1] = 0.0  # an all-zero column: empty support
    Z[:, 2] = 0.0
    Z[3, 2] = 1.7  # a single nonzero entry
    out["zero_and_single_columns"] = Z
    rng = np.random.default_rng(5)
    out["dense_signed"] = rng.normal(size=U.shape)  # negative values, no zeros
    return out


# -- the kernel ----------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["sparse", "zero_and_single_columns", "dense_signed"])
def test_kernel_matches_double_loop(kind):
    U = _u_variants(make_small_data().U)[kind]
    gamma = np.array([0.7, 0.0, 2.5])  # a zero gamma switches a meta-feature off
    p, d = U.shape
    K_ref = np.empty((p, p))
    for i in range(p):
        for j in range(p):
            K_ref[i, j] = np.exp(-0.5 * sum(gamma[l] * (U[i, l] - U[j, l]) ** 2
                                            for l in range(d)))
    K = kernel(U, gamma)
    np.testing.assert_allclose(K, K_ref, rtol=1e-12, atol=1e-14)
    assert np.array_equal(np.diag(K), np.ones(p))
    assert np.array_equal(K, K.T)


# -- gradient and Hessian ------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["sparse", "zero_and_single_columns", "dense_signed"])
@pytest.mark.parametrize("n_feedback", [0, 4])
def test_gradient_matches_finite_differences(variant, n_feedback, kind):
    base = make_small_data(variant, n_feedback=n_feedback)
    data = _with_U(base, _u_variants(base.U)[kind])
    theta = theta_point(data)
    _, g = log_density(theta, data)
    g_fd = fd_grad(lambda t: log_density(t, data)[0], theta)
    np.testing.assert_allclose(g, g_fd, rtol=1e-6, atol=1e-6 * np.max(np.abs(g)))


@pytest.mark.parametrize("kind", ["sparse", "zero_and_single_columns", "dense_signed"])
@pytest.mark.parametrize("n_feedback", [0, 4])
def test_hessian_matches_finite_differences(variant, n_feedback, kind):
    base = make_small_data(variant, n_feedback=n_feedback)
    data = _with_U(base, _u_variants(base.U)[kind])
    theta = theta_point(data)
    H = hessian(theta, data)
    H_fd = fd_grad(lambda t: log_density(t, data)[1], theta)
    scale = np.max(np.abs(H))
    np.testing.assert_allclose(H, H_fd, rtol=1e-6, atol=1e-7 * scale)
    np.testing.assert_allclose(H, H.T, rtol=1e-14, atol=1e-14 * scale)


@pytest.mark.parametrize("model", ["paper", "relevance-direction"])
@pytest.mark.parametrize("gamma, tau2, xi", [(0.02, 1e-3, 0.05), (25.0, 40.0, 30.0)])
def test_derivatives_match_finite_differences_far_from_the_prior_means(model, gamma, tau2, xi):
    """The tests above differentiate at one interior point; here gamma, tau2 and xi are small
    (a kernel near all-ones, a prior near 0) or large (K near the identity), on the paper model
    and on the one with every term (relevance scales, a prior mean delta s)."""
    base = make_small_data("learned", n_feedback=4)
    p = base.X.shape[1]
    data = ModelData(base.X, base.y, base.U, Hyper(variant="learned", threshold_mean=base.m,
                                                    model=model), base.pairs, base.f)
    if model != "paper":
        data = data.with_relevance(some_relevance(p)).with_direction(
            np.array([(1, -1, 0)[j % 3] for j in range(p)]))
    theta = join_theta(np.full(data.d, gamma) * [1.0, 0.5, 2.0][:data.d], xi, tau2, data,
                       zeta=-0.7 if "zeta" in data.layout else None,
                       delta=0.4 if "delta" in data.layout else None)
    # steps of 1e-7: tau2 = 1e-3 is below fd_grad's unit floor of the step
    assert_derivatives_match_finite_differences(data, theta, rel=1e-7)


@pytest.mark.parametrize("kind", ["sparse", "zero_and_single_columns"])
def test_hessian_base_is_hessian_without_feedback(variant, kind):
    """``hessian_base`` leaves out exactly the feedback terms, whatever the answers are."""
    base = make_small_data(variant, n_feedback=4)
    data = _with_U(base, _u_variants(base.U)[kind])
    assert len(data.f) == 4
    no_fb = data.with_feedback(np.zeros((0, 2), int), np.zeros(0, int))
    theta = theta_point(data, seed=2)
    Hb = hessian_base(theta, data)
    H_fd = fd_grad(lambda t: log_density(t, no_fb)[1], theta)
    np.testing.assert_allclose(Hb, H_fd, rtol=1e-6, atol=1e-7 * np.max(np.abs(Hb)))
    # and the feedback terms do matter here, so the comparison above is not vacuous
    assert np.max(np.abs(hessian(theta, data) - Hb)) > 1e-3 * np.max(np.abs(Hb))


def test_marginal_reuse_gives_the_same_derivatives(variant):
    """Passing a precomputed :class:`Marginal` must not change the result (one is reused
    across a query round)."""
    data = make_small_data(variant)
    theta = theta_point(data)
    gamma, _, tau2 = split_theta(theta, data)
    mg = Marginal.from_data(data, gamma, tau2)
    v1, g1 = log_density(theta, data)
    H1 = hessian(theta, data)
    # Hessian first on the shared marginal, to exercise the cache in the other order too.
    H2 = hessian(theta, data, mg)
    v2, g2 = log_density(theta, data, mg)
    assert v1 == pytest.approx(v2, rel=1e-14)
    np.testing.assert_allclose(g1, g2, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(H1, H2, rtol=1e-12, atol=1e-12)


# -- values against scipy.stats ------------------------------------------------------------


@pytest.mark.parametrize("a_sigma,b_sigma,tau2,gamma", [
    (2.0, 7.0, 0.01, (1.0, 1.0, 1.0)),
    (2.0, 7.0, 0.5, (0.3, 2.0, 0.0)),
    (3.5, 0.8, 2.0, (1.5, 0.1, 4.0)),
])
def test_marginal_value_is_multivariate_student_t(a_sigma, b_sigma, tau2, gamma):
    """y ~ Student-t with 2a degrees of freedom and shape (b/a)(I + tau2 X K X'), constants
    included."""
    data = make_small_data()
    gamma = np.array(gamma)
    mg = Marginal(data.X, data.y, data.U, gamma, tau2, a_sigma, b_sigma)
    K = kernel(data.U, gamma)
    shape = (b_sigma / a_sigma) * (np.eye(data.n) + tau2 * data.X @ K @ data.X.T)
    ref = stats.multivariate_t(loc=np.zeros(data.n), shape=shape, df=2 * a_sigma).logpdf(data.y)
    assert mg.value == pytest.approx(ref, rel=1e-12, abs=1e-10)


def _reference_log_density(theta: np.ndarray, data: ModelData) -> float:
    """log p(y | gamma, tau2) + log priors + feedback log likelihood, from scipy.stats.

    Differs from :func:`log_density` by a constant only (normalisers of the truncated priors).
    """
    gamma, xi, tau2 = split_theta(theta, data)
    h = data.hyper
    K = kernel(data.U, gamma)
    shape = (h.b_sigma / h.a_sigma) * (np.eye(data.n) + tau2 * data.X @ K @ data.X.T)
    val = stats.multivariate_t(np.zeros(data.n), shape, df=2 * h.a_sigma).logpdf(data.y)
    val += stats.norm(GAMMA_MEAN, GAMMA_SD).logpdf(gamma).sum()
    val += stats.norm(data.m, data.m / 2).logpdf(xi)
    if h.variant == "learned":
        val += stats.invgamma(h.a_tau, scale=h.b_tau).logpdf(tau2)
    w = (data.U[data.pairs[:, 0]] - data.U[data.pairs[:, 1]]) ** 2
    p_sim = 1.0 / (1.0 + np.exp(-(xi - w @ gamma)))
    val += stats.bernoulli(p_sim).logpmf(data.f).sum()
    return float(val)


def test_log_density_matches_scipy_up_to_a_constant(variant):
    data = make_small_data(variant)
    thetas = [theta_point(data, seed=s) for s in range(4)]
    # also move xi and tau2, which _theta keeps fixed
    thetas[1][data.d] = 0.6 * data.m
    if variant == "learned":
        thetas[2][-1] = 2.3
    diffs = [log_density(t, data)[0] - _reference_log_density(t, data) for t in thetas]
    # the values themselves vary by several nats between the points...
    vals = [log_density(t, data)[0] for t in thetas]
    assert np.ptp(vals) > 1.0
    # ...but the difference to scipy is one constant
    np.testing.assert_allclose(diffs, diffs[0], rtol=0, atol=1e-9)


def test_fixed_variant_ignores_tau2_prior_and_uses_hyper_tau2():
    data = make_small_data("fixed", tau2=0.3)
    theta = theta_point(data)
    assert len(theta) == data.d + 1
    _, _, tau2 = split_theta(theta, data)
    assert tau2 == 0.3
    other = ModelData(data.X, data.y, data.U, Hyper(tau2=0.6, threshold_mean=data.m),
                      data.pairs, data.f)
    assert log_density(theta, data)[0] != log_density(theta, other)[0]


# -- the predictive and its Jacobian -------------------------------------------------------


@pytest.mark.parametrize("learned", [False, True])
@pytest.mark.parametrize("kind", ["sparse", "zero_and_single_columns"])
def test_mean_jacobian_matches_finite_differences(learned, kind):
    data = make_small_data()
    U = _u_variants(data.U)[kind]
    gamma0, tau20 = np.array([0.5, 1.3, 0.2]), 0.7
    h = data.hyper
    mg = Marginal(data.X, data.y, U, gamma0, tau20, h.a_sigma, h.b_sigma)
    Jm = mg.mean_jacobian(learned)
    k = data.d + learned
    assert Jm.shape == (data.n, k)

    def mean(t):
        tau2 = t[data.d] if learned else tau20
        return Marginal(data.X, data.y, U, t[:data.d], tau2, h.a_sigma,
                        h.b_sigma).predictive()[0]

    J_fd = fd_grad(mean, np.append(gamma0, tau20)[:k], rel=1e-6)
    np.testing.assert_allclose(Jm, J_fd, rtol=1e-6, atol=1e-7 * np.max(np.abs(Jm)))


# -- large-p code paths: row-blocked kernel passes and the y-part cache ---------------------


def test_kernel_over_several_row_blocks_is_symmetric_and_exact():
    """p = 600 spans several row blocks of the in-place kernel pass; the result must equal
    the direct formula and be exactly symmetric."""
    from elicit.model.kernel import BLOCK_ELEMS, row_blocks

    rng = np.random.default_rng(2)
    p, d = 600, 7
    U = rng.poisson(0.4, size=(p, d)).astype(float)
    U[:50] = U[50:100]  # duplicate rows: distance exactly 0 off the diagonal
    gamma = rng.uniform(0.0, 2.0, d)
    assert len(list(row_blocks(p))) > 1 and p * p > BLOCK_ELEMS
    D_ref = ((U[:, None, :] - U[None, :, :]) ** 2) @ gamma
    K = kernel(U, gamma)
    np.testing.assert_allclose(K, np.exp(-0.5 * D_ref), rtol=1e-12, atol=1e-15)
    # coinciding rows: K_ij = 1 up to the rounding of the exponent (not clipped at 0)
    assert np.array_equal(K, K.T) and np.all(np.diag(K) == 1.0) and np.all(K <= 1.0 + 1e-14)
    np.testing.assert_allclose(K[:50, 50:100][np.eye(50, dtype=bool)], 1.0, rtol=0, atol=1e-14)


@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("gamma_scale", [1e18, 1e25, 1e100])
def test_kernel_at_extreme_gamma_stays_within_zero_and_one(sparse, gamma_scale):
    """A line search's trial point can put gamma far out (an L-BFGS-B step of a tau2 CV fit
    reached 1e18). The exponent's rounding grows with |gamma| (~eps sum_l gamma_l u_il^2),
    so for rows that coincide it was positive and large there and exp overflowed (a
    RuntimeWarning, K = inf, a NaN density): K must stay in [0, 1], warning-free, on the
    dense, sparse and tiled paths."""
    import warnings

    from elicit.model.kernel import kernel_apply

    rng = np.random.default_rng(5)
    p, d = (337, 100) if sparse else (40, 9)
    U = rng.poisson(0.12 if sparse else 3.0, size=(p, d)).astype(float)
    U[: p // 4] = U[p // 4: 2 * (p // 4)]       # coinciding rows
    gamma = np.full(d, gamma_scale)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        K = kernel(U, gamma)
        KV = kernel_apply(U, gamma, np.ones(p))
    assert np.all(np.isfinite(K)) and np.all(K >= 0.0) and np.all(K <= 1.0)
    np.testing.assert_array_equal(K, K.T)
    np.testing.assert_array_equal(np.diag(K), 1.0)
    # rows that differ: exp(-huge) = 0; rows that coincide: whatever the exponent's
    # cancellation leaves, but within [0, 1] (1 at ordinary gamma, the test above)
    same = np.all(U[:, None, :] == U[None, :, :], axis=2)
    np.testing.assert_array_equal(K[~same], 0.0)
    assert np.all(np.isfinite(KV)) and np.all(KV >= 1.0) and np.all(KV <= same.sum(axis=1))


def test_derivatives_over_several_row_blocks_match_finite_differences(variant):
    """With p = 400 the p x p work of the gradient runs in several row blocks."""
    assert_derivatives_match_finite_differences(make_small_data(variant, n=9, p=400, d=3))


def test_marginal_cache_serves_exact_values_and_never_stale_ones(variant):
    from elicit.model.marginal_cache import MarginalCache, marginal_cache

    data = make_small_data(variant)
    theta = theta_point(data)
    gamma, _, tau2 = split_theta(theta, data)
    v_ref, g_ref = log_density(theta, data)
    cache = MarginalCache(size=2)
    assert cache.lookup(data, gamma, tau2) is None
    mg = Marginal(data.X, data.y, data.U, gamma, tau2, data.hyper.a_sigma, data.hyper.b_sigma)
    cache.remember(data, mg)
    assert cache.lookup(data, gamma, tau2) is mg
    # another answer set, or the other tau2 variant, shares X, y, U: the marginal is the same
    other = data.with_feedback(data.pairs[:2], data.f[:2])
    assert cache.lookup(other, gamma, tau2) is mg
    other_variant = "fixed" if data.hyper.variant == "learned" else "learned"
    h3 = Hyper(variant=other_variant, tau2=tau2, threshold_mean=data.m)
    assert cache.lookup(ModelData(data.X, data.y, data.U, h3, data.pairs, data.f),
                        gamma, tau2) is mg
    # a different point, different arrays, or other hyperparameters of y miss
    g2 = gamma.copy()
    g2[0] = np.nextafter(g2[0], 2.0)
    assert cache.lookup(data, g2, tau2) is None
    assert cache.lookup(data, gamma, np.nextafter(tau2, 1.0)) is None
    copy = ModelData(data.X.copy(), data.y, data.U, data.hyper, data.pairs, data.f)
    assert cache.lookup(copy, gamma, tau2) is None
    h2 = Hyper(variant=data.hyper.variant, a_sigma=3.0, tau2=data.hyper.tau2,
               threshold_mean=data.m)
    assert cache.lookup(ModelData(data.X, data.y, data.U, h2, data.pairs, data.f),
                        gamma, tau2) is None
    # a marginal of other data is not stored under this data's key
    cache.remember(copy, mg)
    assert cache.lookup(copy, gamma, tau2) is None
    # at most `size` entries: the oldest goes
    for k in range(3):
        gk = gamma + k + 1.0
        cache.remember(data, Marginal(data.X, data.y, data.U, gk, tau2, data.hyper.a_sigma,
                                      data.hyper.b_sigma))
    assert cache.lookup(data, gamma, tau2) is None and len(cache._cache) == 2

    # log_density gives the same value on a hit and on a miss
    marginal_cache.clear()
    v_miss, g_miss = log_density(theta, data)
    assert marginal_cache.lookup(data, gamma, tau2) is not None
    v_hit, g_hit = log_density(theta, data)
    assert v_miss == v_ref and v_hit == v_ref
    assert np.array_equal(g_miss, g_ref) and np.array_equal(g_hit, g_ref)

    # the model holds its own read-only copy of a caller's writable array: the caller's
    # later writes do not reach it, and it cannot be written to
    X = data.X.copy()
    held = ModelData(X, data.y, data.U, data.hyper, data.pairs, data.f)
    assert held.X is not X and not held.X.flags.writeable
    log_density(theta, held)
    X[0, 0] += 1.0
    hit = marginal_cache.lookup(held, gamma, tau2)
    assert hit is not None
    assert np.array_equal(log_density(theta, held)[1], g_ref)
    with pytest.raises(ValueError):
        held.X[0, 0] = 1.0
    # an array a cache key reads that can still change (a read-only view of a writable
    # array) is looked at again after a change: its checksum is not remembered
    base = data.X.copy()
    view = base.view()
    view.flags.writeable = False
    key = marginal_cache.key(data, gamma, tau2, None)
    from elicit.internal.cache import arrays_key
    before = arrays_key(view)
    base[0, 0] += 1.0
    assert arrays_key(view) != before and key == marginal_cache.key(data, gamma, tau2, None)
    marginal_cache.clear()


def test_marginal_cache_keeps_no_marginal_larger_than_its_budget():
    from elicit.model.marginal_cache import MarginalCache, marginal_bytes

    data = make_small_data("fixed")
    theta = theta_point(data)
    gamma, _, tau2 = split_theta(theta, data)
    one = marginal_bytes(data.n, data.p, data.d)
    mg = Marginal.at(theta, data)
    small = MarginalCache(size=8, max_bytes=2.5 * one)
    assert small.entries_for(data) == 2
    none = MarginalCache(size=8, max_bytes=0.5 * one)
    none.remember(data, mg)
    assert none.entries_for(data) == 0 and none.lookup(data, gamma, tau2) is None


# -- the parameter layout ------------------------------------------------------------------


@pytest.mark.parametrize("learned", [False, True])
def test_parameter_layout_names_the_blocks_of_theta(learned):
    from elicit.model.layout import TAU2_FLOOR, layout_of

    lay = layout_of(3, ("gamma", "xi") + ("tau2",) * learned)
    assert [b.name for b in lay.blocks] == ["gamma", "xi", "tau2"][:2 + learned]
    assert lay.size == 4 + learned and lay["gamma"] == slice(0, 3) and lay.index("xi") == 3
    assert ("tau2" in lay) == learned
    theta = lay.join({"gamma": [0.5, 1.5, 2.5], "xi": 7.0, "tau2": 0.3})
    np.testing.assert_array_equal(theta, [0.5, 1.5, 2.5, 7.0, 0.3][:lay.size])
    np.testing.assert_array_equal(lay.lower_bounds(),
                                  [0.0, 0.0, 0.0, 0.0, TAU2_FLOOR][:lay.size])
    assert lay.labels() == ["gamma[0]", "gamma[1]", "gamma[2]", "xi", "tau2"][:lay.size]
    # the Stan programs' names
    assert [b.stan for b in lay.blocks] == ["gamma", "threshold", "tau"][:2 + learned]
    # the y-likelihood's parameters, in the order of Marginal's derivatives
    np.testing.assert_array_equal(lay.marginal_index, [0, 1, 2, 4][:3 + learned])
    with pytest.raises(ValueError, match="block gamma has 3 entries"):
        lay.index("gamma")


def test_unresolved_threshold_mean_error_names_functions_that_exist():
    """Bug: the error named ``elicit.model.auto_threshold_mean``, which does not exist."""
    import importlib
    import re

    data = make_small_data()
    with pytest.raises(Exception, match="resolve threshold_mean='auto'") as err:
        ModelData(data.X, data.y, data.U, Hyper())
    msg = str(err.value)
    assert "\n" not in msg
    names = re.findall(r"elicit(?:\.\w+)+", msg)
    assert names
    for name in names:
        module, attr = name.rsplit(".", 1)
        assert callable(getattr(importlib.import_module(module), attr)), name


def test_threshold_mean_over_every_pair_is_the_sum_over_the_pairs():
    """With every pair of many features as candidates the mean of gamma . w comes from a
    closed form (p sum u^2 - (sum u)^2 per column), not from the millions of pairs; it is
    the mean over the pairs, and a subset of pairs is still summed pair by pair."""
    from elicit.model.kernel import pair_weights
    from elicit.model.spec import _PAIR_CHUNK, all_pairs, auto_threshold_mean

    rng = np.random.default_rng(3)
    p = 400
    assert p * (p - 1) // 2 > _PAIR_CHUNK
    U = rng.poisson(0.3, size=(p, 12)).astype(float) + 100.0   # offset: cancellation
    gamma = rng.uniform(0.1, 2.0, 12)
    pairs = all_pairs(p)
    direct = float(np.mean(pair_weights(U, pairs) @ gamma))
    assert auto_threshold_mean(U, gamma, pairs) == pytest.approx(direct, rel=1e-12)
    some = pairs[::3]
    assert auto_threshold_mean(U, gamma, some) == pytest.approx(
        float(np.mean(pair_weights(U, some) @ gamma)), rel=1e-12)


def test_a_trial_point_far_out_has_no_density_but_raises_nothing():
    """Bug (make reproduce, kitchen corpus): a Newton line search tried a point whose xi was
    so large that the prior's square overflowed a Python float: OverflowError ended the
    sweep. The line search's evaluation of such a point gives log density -inf (or a finite,
    far lower one), so the point is rejected."""
    from elicit.model.newton import OneRefit

    data = make_small_data("learned", n_feedback=3)
    theta = theta_point(data)
    problem = OneRefit(data)
    rows = np.array([0])
    base = problem.evaluate(rows, theta[None])[0][0]
    for name, value in (("xi", 1e200), ("tau2", 1e-320), ("tau2", 1e200)):
        t = theta.copy()
        t[data.layout.index(name)] = value
        with np.errstate(all="ignore"):
            v = problem.evaluate(rows, t[None])[0][0]
        assert not np.isfinite(v) or v < base - 1e3, (name, v)


@pytest.mark.parametrize("f_new", [0, 1])
def test_laplace_moves_maximise_the_quadratic_model_plus_the_new_answer(variant, f_new):
    """Independent formula: at the MAP (gradient ~0) the Laplace approximation of the log
    density after one more answer is ``-s' A s / 2 + log p(f | z0 + v' s)``, A = -H; its
    maximiser, found here by a general optimiser, is the move :class:`LaplaceMoves` computes
    in closed form (the scalar root t along A^-1 v)."""
    _assert_laplace_moves_maximise(make_small_data(variant, n_feedback=4), f_new)


@pytest.mark.parametrize("model", ["tied-threshold", "known-coupling", "relevance",
                                   "direction", "relevance-direction"])
def test_laplace_moves_of_the_other_models_maximise_their_quadratic_model(model):
    """The same for the models with a coupled set, zeta or delta (blocks that no answer
    moves directly, but that the Hessian couples to gamma and xi); the direction answers
    follow the true beta's signs, so that delta's MAP is off its bound."""
    base = make_small_data("learned", n_feedback=4)
    p = base.p
    _assert_laplace_moves_maximise(ModelData(
        base.X, base.y, base.U, Hyper(**{**base.hyper.__dict__, "model": model}), base.pairs,
        base.f, coupled=np.arange(p) < p - 3, relevance=some_relevance(p),
        direction=np.sign(base.U[:, 0] - base.U[:, 1])), 1)


def _assert_laplace_moves_maximise(data: ModelData, f_new: int) -> None:
    from scipy.optimize import minimize

    fit = NumpyEngine(data.hyper.variant).fit(data)      # four mixed answers: an interior MAP
    theta0 = join_theta(fit.gamma, fit.xi, fit.tau2, data, zeta=fit.zeta, delta=fit.delta)
    assert np.all(theta0 > data.layout.lower_bounds())
    H0 = hessian_base(theta0, data)
    A = -(H0 + feedback_terms(theta0, data, True)[2])
    asked = {tuple(p) for p in data.pairs}
    w = pair_weights(data.U, np.array([p for p in all_pairs(data.p) if tuple(p) not in asked][:4]))
    moves = LaplaceMoves(data, theta0, H0, w).steps()[f_new]
    for c in range(len(w)):
        v = np.zeros(len(theta0))
        v[:data.d], v[data.d] = -w[c], 1.0
        z0 = theta0[data.d] - w[c] @ theta0[:data.d]

        def neg(s, v=v, z0=z0):
            return 0.5 * s @ A @ s - data.link.log_lik(z0 + v @ s, f_new)

        best = minimize(neg, np.zeros(len(theta0)), method="BFGS", options={"gtol": 1e-12})
        np.testing.assert_allclose(moves[:, c], best.x, atol=1e-6, err_msg=f"candidate {c}")
        assert np.abs(moves[:, c]).max() > 1e3 * 1e-6     # a move, not a zero


def test_laplace_moves_of_both_answers_at_once_are_each_answers_own_bits():
    """The screen bisects the roots of both answers in one pass over 2 C entries: every move is
    bit for bit the one a bisection of that answer alone gives (a move's last bit can decide
    which question is asked), a bound held, a move clipped onto a bound as it is."""
    from elicit.model.link import scalar_step

    data = make_small_data("learned", n_feedback=4)
    fit = NumpyEngine("learned").fit(data)
    theta0 = join_theta(fit.gamma, fit.xi, fit.tau2, data)
    theta0[:2] = 0.0, 1e-6          # one gamma on its bound, one a hair above it
    w = pair_weights(data.U, np.array(all_pairs(data.p)))
    moves = LaplaceMoves(data, theta0, hessian_base(theta0, data), w)
    both = moves.steps()
    for f in (0, 1):
        alone = np.zeros_like(both[f])
        alone[moves.free] = moves.Y * scalar_step(f, moves.z0, moves.q, data.link)
        assert (alone[1] < -1e-6).any() and not moves.free[0]      # a move clipped, one held
        np.testing.assert_array_equal(both[f], np.maximum(alone, (moves.lb - theta0)[:, None]))


@pytest.mark.parametrize("f", [0, 1])
def test_the_logistic_links_derivatives_match_finite_differences(f):
    """The shipped link's score, curvature and density against central differences of its
    log likelihood, score and probability; its probability and entropy written out plainly;
    the screen's residual is t minus the score."""
    from elicit.model.link import LOGISTIC

    z = np.random.default_rng(7).uniform(-6.0, 6.0, 9)
    h = 1e-5

    def diff(fun):
        return (fun(z + h) - fun(z - h)) / (2 * h)

    p = 1.0 / (1.0 + np.exp(-z))
    np.testing.assert_allclose(LOGISTIC.prob(z), p, rtol=1e-12)
    np.testing.assert_allclose(LOGISTIC.log_lik(z, f), np.log(p if f else 1.0 - p), rtol=1e-9)
    np.testing.assert_allclose(LOGISTIC.entropy(z), -(p * np.log(p) + (1 - p) * np.log(1 - p)),
                               rtol=1e-9)
    np.testing.assert_allclose(LOGISTIC.score(z, f), diff(lambda x: LOGISTIC.log_lik(x, f)),
                               rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(LOGISTIC.curvature(z, f), -diff(lambda x: LOGISTIC.score(x, f)),
                               rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(LOGISTIC.density(z), diff(LOGISTIC.prob), rtol=1e-6, atol=1e-9)
    t = np.linspace(-1.0, 1.0, 9)
    np.testing.assert_allclose(LOGISTIC.step_residual(t, z, f), t - LOGISTIC.score(z, f),
                               rtol=1e-12, atol=1e-15)
