"""The numpy engine: cold L-BFGS-B fits, warm Newton refits, bounds and errors."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from conftest import make_small_data
from helpers import projected_grad, some_relevance, two_modes_after_one_answer, with_answers
from scipy.optimize import minimize

from elicit.engines import get_engine
from elicit.engines.numpy_engine import NumpyEngine
from elicit.errors import ElicitError
from elicit.model.density import hessian, hessian_base, log_density
from elicit.model.kernel import kernel
from elicit.model.result import MAPResult
from elicit.model.spec import Hyper, ModelData, Params
from elicit.model.theta import join_theta
from elicit.model.variants import MODELS

pytestmark = pytest.mark.usefixtures("one_blas_thread")


def _theta(r: MAPResult, data: ModelData) -> np.ndarray:
    return join_theta(r.gamma, r.xi, r.tau2, data, zeta=r.zeta, delta=r.delta)


def _scaled(theta: np.ndarray, data: ModelData) -> np.ndarray:
    """theta with xi divided by its prior mean m, so that all coordinates are O(1)."""
    out = theta.copy()
    out[data.d] /= data.m
    return out


def _base_hessian(r: MAPResult, data: ModelData) -> np.ndarray:
    return hessian_base(_theta(r, data), data)


# -- cold fits -----------------------------------------------------------------------------


@pytest.mark.parametrize("n_feedback", [0, 4])
def test_cold_fit_is_a_stationary_maximum(variant, n_feedback):
    data = make_small_data(variant, n_feedback=n_feedback)
    r = NumpyEngine(variant).fit(data)
    assert r.converged and r.engine == "numpy"
    theta = _theta(r, data)
    assert np.max(np.abs(projected_grad(theta, data))) < 1e-4
    assert r.log_density == pytest.approx(log_density(theta, data)[0], rel=1e-12)
    # A maximum: the Hessian on the coordinates off their bounds is negative definite.
    free = theta > data.layout.lower_bounds()
    H = hessian(theta, data)[np.ix_(free, free)]
    assert np.max(np.linalg.eigvalsh(H)) < 0


def _model_data(model: str, variant: str, n_feedback: int) -> ModelData:
    """The small problem under ``model``, with a coupled set, relevance classes and signs
    where the model reads them."""
    base = make_small_data(variant, n_feedback=n_feedback)
    p = base.X.shape[1]
    data = ModelData(base.X, base.y, base.U, replace(base.hyper, model=model), base.pairs,
                     base.f, coupled=np.arange(p) % 3 != 2 if "coupling" in model else None)
    if "relevance" in model:
        data = data.with_relevance(some_relevance(p))
    if "direction" in model:
        data = data.with_direction(np.array([(1, -1, 0)[j % 3] for j in range(p)]))
    return data


@pytest.mark.parametrize("model", [
    "paper", *(pytest.param(m, marks=pytest.mark.slow) for m in MODELS if m != "paper")])
@pytest.mark.parametrize("n_feedback", [0, 4])
def test_cold_fit_beats_scipy_from_several_starts(variant, n_feedback, model):
    """An independent optimiser (SLSQP on the unscaled problem, no analytic Hessian) from
    random starts finds nothing higher than the engine's MAP, under every model."""
    data = _model_data(model, variant, n_feedback)
    r = NumpyEngine(variant).fit(data)
    lb = data.layout.lower_bounds()
    rng = np.random.default_rng(7)
    best = -np.inf
    for _ in range(4):
        start = join_theta(rng.uniform(0.05, 3.0, data.d), data.m * rng.uniform(0.3, 2.0),
                           rng.uniform(0.2, 3.0), data,
                           zeta=rng.uniform(-3.0, 0.0) if "zeta" in data.layout else None,
                           delta=rng.uniform(0.1, 2.0) if "delta" in data.layout else None)
        res = minimize(lambda t: tuple(-v for v in log_density(t, data)), start, jac=True,
                       method="SLSQP", bounds=[(b, None) for b in lb],
                       options={"maxiter": 500, "ftol": 1e-12})
        val = log_density(np.maximum(res.x, lb), data)[0]
        best = max(best, val)
        if val > r.log_density - 1e-6:  # found the same optimum: same point too
            np.testing.assert_allclose(_scaled(np.maximum(res.x, lb), data),
                                       _scaled(_theta(r, data), data), rtol=1e-3, atol=1e-3)
    assert r.log_density >= best - 1e-8
    assert best > r.log_density - 1e-3  # scipy does get there, so the comparison is real


# -- warm Newton refits --------------------------------------------------------------------


@pytest.mark.parametrize("local_model", [True, False])
@pytest.mark.parametrize("new_answers", [([[0, 7]], [1]), ([[0, 7], [2, 9], [3, 5]], [1, 0, 0])])
def test_warm_newton_equals_cold_fit(variant, new_answers, local_model):
    """Both kinds of warm step, the local model's and plain Newton's, reach the cold MAP."""
    data0 = make_small_data(variant, n_feedback=4)
    engine = NumpyEngine(variant, local_model=local_model)
    fit0 = engine.fit(data0)
    data1 = with_answers(data0, *new_answers)
    warm = engine.fit(data1, init=fit0, hessian=_base_hessian(fit0, data0))
    cold = engine.fit(data1)
    assert "Newton" in warm.message  # the warm path was taken, not the L-BFGS-B fallback
    assert warm.converged
    np.testing.assert_allclose(_scaled(_theta(warm, data1), data1),
                               _scaled(_theta(cold, data1), data1), rtol=1e-5, atol=1e-7)
    assert warm.log_density == pytest.approx(cold.log_density, rel=1e-9)
    # and it really moved: the new answers change the MAP
    assert np.max(np.abs(_theta(warm, data1) - _theta(fit0, data0))) > 1e-3


def test_warm_start_without_hessian_equals_cold_fit(variant):
    """A previous MAP is a valid warm start without a Hessian handed over."""
    data0 = make_small_data(variant)
    engine = NumpyEngine(variant)
    fit0 = engine.fit(data0)
    assert fit0.warm_hessian is None  # a cold L-BFGS-B fit has none either
    data1 = with_answers(data0, [0, 7], 1)
    r = engine.fit(data1, init=fit0)
    assert r.converged
    cold = engine.fit(data1)
    np.testing.assert_allclose(_scaled(_theta(r, data1), data1),
                               _scaled(_theta(cold, data1), data1), rtol=1e-5, atol=1e-7)


def _count_kernel_evaluations(monkeypatch) -> list:
    """Count the marginals the density builds (one per kernel evaluation; a marginal served
    from the cache of recent ones is not built)."""
    from elicit.model.marginal import Marginal

    calls = []
    orig = Marginal.__init__

    def counted(self, *args, **kwargs):
        calls.append(1)
        orig(self, *args, **kwargs)

    monkeypatch.setattr(Marginal, "__init__", counted)
    return calls


@pytest.mark.parametrize("f_new", [0, 1])
def test_warm_refit_after_one_answer_needs_few_kernel_evaluations(variant, f_new, monkeypatch):
    """Each Newton iteration solves the local model with the feedback terms exact, so one
    new answer costs one or two evaluations of the kernel part (plain Newton on the frozen
    quadratic needed four to seven); the start point's comes from the marginal cache, which a
    query round fills."""
    from elicit.model.marginal import Marginal
    from elicit.model.marginal_cache import marginal_cache

    data0 = make_small_data(variant, n_feedback=4)
    engine = NumpyEngine(variant, local_model=True)
    fit0 = engine.fit(data0)
    H = _base_hessian(fit0, data0)
    data1 = with_answers(data0, [0, 7], f_new)
    cold = engine.fit(data1)
    marginal_cache.clear()
    calls = _count_kernel_evaluations(monkeypatch)
    warm = engine.fit(data1, init=fit0, hessian=H)
    n_uncached = len(calls)
    marginal_cache.clear()
    marginal_cache.remember(data0, Marginal.from_data(data0, fit0.gamma, fit0.tau2))
    calls.clear()
    # (a new engine: no memo of the first)
    warm2 = NumpyEngine(variant, local_model=True).fit(data1, init=fit0, hessian=H)
    assert "Newton" in warm.message and warm.converged
    assert len(calls) == n_uncached - 1 and len(calls) <= 3
    assert np.array_equal(warm.gamma, warm2.gamma)
    np.testing.assert_allclose(_scaled(_theta(warm, data1), data1),
                               _scaled(_theta(cold, data1), data1), rtol=1e-5, atol=1e-7)
    marginal_cache.clear()


def test_repeated_warm_refit_is_remembered_exactly(variant, monkeypatch):
    """A query round finishes the refits of its best candidates; the refit after the answer
    is the same computation, and the engine returns its result at once. Any difference in
    the data, the start or the base Hessian is a new refit."""
    data0 = make_small_data(variant, n_feedback=4)
    engine = NumpyEngine(variant)
    fit0 = engine.fit(data0)
    H = _base_hessian(fit0, data0)
    data1 = with_answers(data0, [0, 7], 1)
    first = engine.fit(data1, init=fit0, hessian=H)
    calls = _count_kernel_evaluations(monkeypatch)
    again = engine.fit(data0.with_feedback(data1.pairs.copy(), data1.f.copy()), init=fit0,
                       hessian=H.copy())
    assert again is first and len(calls) == 0
    other_answer = engine.fit(with_answers(data0, [0, 7], 0), init=fit0, hessian=H)
    other_hessian = engine.fit(data1, init=fit0, hessian=1.01 * H)
    assert len(calls) > 0 and other_answer is not first and other_hessian is not first
    np.testing.assert_allclose(_theta(other_hessian, data1), _theta(first, data1), rtol=1e-6)
    # other data (a caller's array changed after a model was built from it) is a new refit;
    # the model built before the change keeps its own copy and its remembered refit
    X = data1.X.copy()
    d_before = ModelData(X, data1.y, data1.U, data1.hyper, data1.pairs, data1.f)
    r1 = engine.fit(d_before, init=fit0, hessian=H)
    X[0, 0] += 0.5
    d_after = ModelData(X, data1.y, data1.U, data1.hyper, data1.pairs, data1.f)
    r2 = engine.fit(d_after, init=fit0, hessian=H)
    assert r2 is not r1 and not np.array_equal(r2.gamma, r1.gamma)
    assert engine.fit(d_before, init=fit0, hessian=H) is r1
    # engines are picklable (sweeps run in processes); the memo is not carried along
    import pickle

    clone = pickle.loads(pickle.dumps(engine))
    assert clone.gtol == engine.gtol and len(clone._memo) == 0


def test_remembered_refit_is_not_served_for_another_coupled_set():
    """Bug: the memo's key left out the coupled set J, so a known-coupling refit with another
    J (same arrays, answers, start and Hessian) got the result made with the first J."""
    base = make_small_data("fixed", n_feedback=4)
    h = Hyper(**{**base.hyper.__dict__, "model": "known-coupling"})
    J1 = np.ones(base.p, bool)
    J1[-3:] = False
    J2 = np.ones(base.p, bool)
    J2[:3] = False
    d1, d2 = (ModelData(base.X, base.y, base.U, h, base.pairs, base.f, coupled=J)
              for J in (J1, J2))
    engine = NumpyEngine("fixed")
    fit0 = engine.fit(d1.with_feedback(base.pairs[:2], base.f[:2]))
    H = _base_hessian(fit0, d1)
    r1 = engine.fit(d1, init=fit0, hessian=H)
    r2 = engine.fit(d2, init=fit0, hessian=H)
    fresh = NumpyEngine("fixed").fit(d2, init=fit0, hessian=H)
    assert r2 is not r1
    np.testing.assert_array_equal(r2.gamma, fresh.gamma)
    np.testing.assert_array_equal(r2.K, kernel(base.U, fresh.gamma, J2))


def test_local_model_by_problem_size():
    """Plain Newton steps on the synthetic experiment's size, the local model at Amazon's."""
    from elicit.model.batch import uses_local_model
    from elicit.model.simulate import make_synthetic, random_problem

    syn = make_synthetic(np.random.default_rng(np.random.SeedSequence([0, 0])))
    small = ModelData(syn.X, syn.y, syn.U, Hyper(variant="learned", threshold_mean=1.0))
    assert not uses_local_model(small)
    X, y, U, _ = random_problem(seed=0)
    assert uses_local_model(ModelData(X, y, U,
                                      Hyper(variant="fixed", tau2=0.01, threshold_mean=1.0)))
    engine = NumpyEngine("learned")
    assert engine.newton_run(small, _theta(engine.fit(small), small),
                             np.eye(small.d + 2)).local_model is False


# -- bounds --------------------------------------------------------------------------------


def _bound_problem(variant: str) -> ModelData:
    """Answers that drive gamma_2 onto its bound 0.

    Features i and i + 6 differ only in meta-feature 2 (by 3), and the expert calls all six
    such pairs similar, which only gamma_2 = 0 explains. A tiny tau2 (fixed, or a tight
    prior around 1e-3 when learned) keeps the y-likelihood from pulling gamma_2 back up.
    """
    rng = np.random.default_rng(11)
    p, d, n = 12, 3, 10
    U = rng.uniform(0.0, 0.3, size=(p, d))
    U[:, 2] = np.repeat([0.0, 3.0], p // 2)
    U[:, :2] = np.tile(U[: p // 2, :2], (2, 1))
    X = rng.normal(size=(n, p))
    b = rng.normal(size=p // 2)
    y = X @ np.concatenate([b, b]) + 0.3 * rng.normal(size=n)
    pairs = np.array([[i, i + p // 2] for i in range(p // 2)])
    hyper = Hyper(variant=variant, tau2=1e-3, a_tau=50.0, b_tau=0.05, threshold_mean=2.0)
    return ModelData(X, y, U, hyper, pairs, np.ones(len(pairs), int))


def test_bounds_are_respected(variant):
    data = _bound_problem(variant)
    engine = NumpyEngine(variant)
    lb = data.layout.lower_bounds()
    cold = engine.fit(data)
    # warm Newton from the no-feedback MAP, with its base Hessian
    nofb = data.with_feedback(np.zeros((0, 2), int), np.zeros(0, int))
    fit0 = engine.fit(nofb)
    assert fit0.gamma[2] > 0.1  # the bound is not active before the answers
    warm = engine.fit(data, init=fit0, hessian=_base_hessian(fit0, nofb))
    for r in (cold, warm):
        theta = _theta(r, data)
        assert np.all(theta >= lb)
        assert r.gamma[2] == 0.0  # on the bound, not merely near it
        assert r.tau2 > 0 and r.xi >= 0
        # KKT: the log density would increase only by leaving the feasible set
        _, g = log_density(theta, data)
        assert g[2] < 0
        assert np.max(np.abs(projected_grad(theta, data))) < 1e-4
    np.testing.assert_allclose(_scaled(_theta(warm, data), data),
                               _scaled(_theta(cold, data), data), rtol=1e-5, atol=1e-7)


def test_start_outside_bounds_is_projected(variant):
    """An infeasible start is projected onto the bounds and the fit ends at a KKT point
    (not necessarily the cold fit's mode: the posterior can be multimodal)."""
    data = make_small_data(variant)
    engine = NumpyEngine(variant)
    start = Params(np.array([-1.0, 0.5, -0.2]), -3.0, 1.0)
    r = engine.fit(data, init=start)
    theta = _theta(r, data)
    assert np.all(theta >= data.layout.lower_bounds())
    assert r.converged
    assert np.max(np.abs(projected_grad(theta, data))) < 1e-4


# -- errors --------------------------------------------------------------------------------


def test_custom_stan_file_names_the_stan_engines(tmp_path):
    stan = tmp_path / "my_model.stan"
    stan.write_text("// custom model\n")
    for make in (lambda: NumpyEngine("fixed", stan_file=stan),
                 lambda: get_engine("numpy", "fixed", stan_file=stan)):
        with pytest.raises(ElicitError, match="only runs the shipped Stan programs") as exc:
            make()
        msg = str(exc.value)
        assert "pystan" in msg and "cmdstan" in msg
        assert "my_model.stan" in msg


@pytest.mark.parametrize("engine_variant,data_variant", [("fixed", "learned"),
                                                         ("learned", "fixed")])
def test_variant_mismatch_is_an_error(engine_variant, data_variant):
    data = make_small_data(data_variant)
    with pytest.raises(ElicitError, match=f"{engine_variant}.*{data_variant}"):
        NumpyEngine(engine_variant).fit(data)


def test_result_kernel_is_rebuilt_from_gamma(variant):
    data = make_small_data(variant)
    r = NumpyEngine(variant).fit(data)
    np.testing.assert_allclose(r.K, kernel(data.U, r.gamma), rtol=1e-14)


# -- a fit reported converged is a maximum ------------------------------------------------


def test_lbfgs_converged_means_stationary_on_synthetic_run(stalled_chain):
    """A fit that L-BFGS-B reports converged has a small projected gradient and is no worse
    than a cold fit, even where L-BFGS-B stops early.

    L-BFGS-B can stop with "CONVERGENCE: RELATIVE REDUCTION OF F <= FACTR*EPSMCH" far from
    the optimum. On synthetic run (seed 1, run 3) a chain of warm L-BFGS-B fits
    (``init=Params``, one per answer of ``STALL_PAIRS``) once stopped that way after 10
    answers: gradient 49.6 in gamma_9, an indefinite Hessian, 0.6 nats below the cold fit,
    yet reported converged. The engine judges convergence by the scaled projected gradient
    and restarts L-BFGS-B while that is large, so on this chain ``converged`` means
    stationary and the last fit reaches the cold fit's log density.
    """
    for k, (data, fit) in enumerate(stalled_chain, start=1):
        pg = np.max(np.abs(projected_grad(_theta(fit, data), data)))
        assert not (fit.converged and pg > 1e-2), (k, pg, fit.message)
    data, fit = stalled_chain[-1]
    cold = NumpyEngine("learned").fit(data)
    assert fit.log_density > cold.log_density - 1e-3


def test_cache_helper_drops_the_entry_stored_longest_ago():
    """The one LRU helper behind the engine's memo and the y-part cache."""
    import pickle

    from elicit.internal.cache import LRUCache, arrays_key

    cache = LRUCache(2)
    cache.put("a", 1)
    cache.put("b", 2)
    assert cache.get("a") == 1            # a lookup does not refresh "a"...
    cache.put("c", 3)                     # ...so "a", stored longest ago, goes
    assert cache.get("a") is None and cache.get("b") == 2 and cache.get("c") == 3
    cache.put("b", 20)                    # storing again refreshes "b"
    cache.put("d", 4)
    assert cache.get("c") is None and cache.get("b") == 20 and len(cache) == 2
    assert len(pickle.loads(pickle.dumps(cache))) == 0
    X = np.zeros(3)
    k = arrays_key(X)
    assert arrays_key(X) == k and arrays_key(X.copy()) != k   # identity...
    X[0] = 1.0
    assert arrays_key(X) != k                                # ...and content
    # a refresh on lookup, when asked for, and a smaller limit when storing
    cache.get("b", refresh=True)
    cache.put("e", 5)
    assert cache.get("d") is None and cache.get("b") == 20
    cache.put("f", 6, limit=1)
    assert len(cache) == 1 and cache.get("f") == 6


def test_checksum_sees_every_change_of_content():
    from elicit.internal.cache import checksum

    rng = np.random.default_rng(0)
    X = rng.standard_normal((100, 337))
    c = checksum(X)
    assert checksum(X.copy()) == c
    changes = []
    Y = X.copy()
    Y[3, 4] = np.nextafter(Y[3, 4], 10.0)                  # the last bit of one value
    changes.append(Y)
    Y = X.copy()
    Y[[0, 1]] = Y[[1, 0]]                                   # two rows exchanged
    changes.append(Y)
    Y = X.copy()
    Y[5, 6], Y[7, 8] = Y[7, 8], Y[5, 6]                     # two values exchanged
    changes.append(Y)
    changes.append(X[:, :-1].copy())                        # shorter
    assert all(checksum(Y) != c for Y in changes)
    # arrays whose size is not a multiple of 8 bytes: the tail counts too
    b = np.zeros(13, np.uint8)
    cb = checksum(b)
    b[12] = 1
    assert checksum(b) != cb
    # beyond the 65,536 weights (a larger array wraps around them)
    big = rng.standard_normal(70_000)
    cbig = checksum(big)
    big[69_999] += 1.0
    assert checksum(big) != cbig


# -- refits that do not depend on luck (ColdStartPolicy) -------------------------------------

def test_a_refit_on_the_boundary_after_an_unlikely_answer_is_checked_by_a_cold_start():
    from elicit.model.refit_checks import ColdStartPolicy

    elicitor = two_modes_after_one_answer()
    luck, checked = NumpyEngine("learned", cold_start=None), NumpyEngine("learned")
    assert checked.cold_start == ColdStartPolicy()  # the default
    before, after = elicitor(luck), elicitor(checked)
    for el in (before, after):
        el.answer(0, 1, "similar")
    assert before.fit.gamma[2] == 0.0
    assert after.fit.gamma.min() > 0.3, after.fit.gamma
    assert after.fit.log_density == pytest.approx(before.fit.log_density + 0.458, abs=1e-3)
    assert "cold start kept (gamma moved onto its bound (new answers' p = 0.00046))" \
        in after.fit.message
    assert checked.cold_starts["tried"] == checked.cold_starts["kept"] == 1
    # the cold fit's maximum, a stationary one
    cold = NumpyEngine("learned").fit(after.data)
    np.testing.assert_allclose(_theta(after.fit, after.data), _theta(cold, after.data),
                               rtol=1e-6)
    assert np.max(np.abs(projected_grad(_theta(after.fit, after.data), after.data))) < 1e-4


def test_no_cold_start_after_a_likely_answer_or_off_the_boundary():
    from elicit.model.refit_checks import ColdStartPolicy

    elicitor = two_modes_after_one_answer()
    engine = NumpyEngine("learned", cold_start=ColdStartPolicy(unlikely=0.05))
    el = elicitor(engine)
    el.answer(0, 1, "dissimilar")  # the likely answer
    el.answer(2, 3, "similar")
    el.answer(4, 5, "dissimilar")
    assert engine.cold_starts["tried"] == 0, [el.fit.message]
    assert engine.cold_starts["warm"] >= 3


def test_the_cold_start_policy_reasons():
    from elicit.model.refit_checks import ColdStartPolicy, new_answers_loglik

    data = make_small_data("learned", n_feedback=3)
    policy = ColdStartPolicy(unlikely=0.05)
    assert ColdStartPolicy().unlikely == 1.0     # the default trusts no switch
    theta = np.ones(data.layout.size)
    on_bound = theta.copy()
    on_bound[1] = 0.0
    unlikely, likely = np.log(0.01), np.log(0.5)
    assert policy.reason(data, theta, -10.0, -10.0, unlikely) is None
    assert policy.reason(data, on_bound, -10.0, -10.0, likely) is None
    assert "p = 0.01" in policy.reason(data, on_bound, -10.0, -10.0, unlikely)
    near, off = theta.copy(), theta.copy()
    near[1], off[1] = 0.009, 0.011  # within 0.01 of the bound counts as on it
    assert "p = 0.01" in policy.reason(data, near, -10.0, -10.0, unlikely)
    assert policy.reason(data, off, -10.0, -10.0, unlikely) is None
    # a gamma that was on its bound at the start already is no switch of mode
    assert "p = 0.01" in policy.reason(data, on_bound, -10.0, -10.0, unlikely, theta)
    assert policy.reason(data, on_bound, -10.0, -10.0, unlikely, on_bound) is None
    assert policy.reason(data, on_bound, -10.0, -10.0, unlikely, near) is None
    assert policy.reason(data, theta, -10.0 - 1e-9, -10.0, likely) is None  # rounding
    assert "lost 0.5 in log density" in policy.reason(data, theta, -10.5, -10.0, likely)
    # The new answers' log likelihood at the previous MAP: the difference of the log
    # densities with and without them, or the last answer's term.
    prev = data.with_feedback(data.pairs[:-1], data.f[:-1])
    v_prev, v = log_density(theta, prev)[0], log_density(theta, data)[0]
    assert new_answers_loglik(data, theta, v, v_prev) == pytest.approx(
        new_answers_loglik(data, theta, v, None), abs=1e-10)


def test_the_cold_start_of_the_relevance_model_starts_zeta_at_its_prior_mean():
    """zeta is one more entry of theta: a checked refit after a feature answer compares the
    warm refit with the cold fit from the prior means (zeta's too) and keeps the higher."""
    import dataclasses

    from elicit.model.refit_checks import ColdStartPolicy
    from elicit.model.theta import theta_of

    small = make_small_data("learned", n_feedback=3)
    hyper = dataclasses.replace(small.hyper, model="relevance")
    before = ModelData(small.X, small.y, small.U, hyper, small.pairs[:2], small.f[:2])
    classes = np.full(small.X.shape[1], -1)
    classes[0], classes[3] = 1, 0
    after = before.with_feedback(small.pairs, small.f).with_relevance(classes)
    always = NumpyEngine("learned", cold_start=ColdStartPolicy(slack=-np.inf))  # checks all
    plain = NumpyEngine("learned", cold_start=None)
    prev = plain.fit(before)
    res = always.fit(after, init=prev)
    assert always.cold_starts["tried"] == 1 and "a cold start" in res.message
    warm, cold = plain.fit(after, init=prev), plain.fit(after)
    assert res.zeta is not None
    # the higher of the two, the warm refit's unless the cold fit is higher beyond rounding
    assert res.log_density in (warm.log_density, cold.log_density)
    assert res.log_density >= max(warm.log_density, cold.log_density) - 1e-8
    np.testing.assert_allclose(theta_of(res, after), theta_of(cold, after), rtol=1e-5,
                               atol=1e-8)


def test_cache_helper_computes_once_per_array_and_again_after_a_change():
    from elicit.internal.cache import LRUCache

    cache, calls = LRUCache(2), []

    def compute(a):
        calls.append(1)
        return None if a[0] == 0.0 else float(a.sum())

    X = np.zeros(3)
    assert cache.of_array(X, compute) is None and cache.of_array(X, compute) is None
    assert len(calls) == 1                  # a None result is remembered too
    X[0] = 2.0                              # changed in place: computed again
    assert cache.of_array(X, compute) == 2.0 and len(calls) == 2
    assert cache.of_array(X.copy(), compute) == 2.0 and len(calls) == 3   # another array


def test_frozen_arrays_are_read_only_and_their_checksums_computed_once(monkeypatch):
    import elicit.internal.cache as cache_mod
    from elicit.internal.cache import checksum, frozen, is_frozen

    a = np.arange(12.0)
    f = frozen(a)
    assert f is not a and np.array_equal(f, a) and not f.flags.writeable
    assert frozen(f) is f and is_frozen(f) and is_frozen(f[2:5])      # views of it too
    ro_view = a.view()
    ro_view.flags.writeable = False
    assert not is_frozen(a) and not is_frozen(ro_view)                # a can still change it
    assert not is_frozen([1.0, 2.0])

    calls = []
    real = cache_mod._checksum
    monkeypatch.setattr(cache_mod, "_checksum", lambda x: calls.append(1) or real(x))
    first = checksum(f)
    assert checksum(f) == first == real(f) and len(calls) == 1       # remembered
    checksum(ro_view), checksum(ro_view)
    assert len(calls) == 3                                            # not remembered
    # an id freed by a dead array and taken by a new one never serves the old checksum
    for k in range(200):
        g = frozen(np.full(5, float(k)))
        assert checksum(g) == real(g)
        del g
