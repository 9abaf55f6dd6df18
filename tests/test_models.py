"""The named model variants (elicit.model.variants): registry, numpy twins, Stan programs.

The PyStan comparisons (log density and MAP of each new program against its numpy twin) are
marked slow like those of test_stan_engines.py; everything else runs in the fast suite.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from conftest import make_small_data
from test_density import _theta, assert_derivatives_match_finite_differences
from test_stan_engines import make_data, rel_diff

from elicit.cli.main import main
from elicit.elicitation.elicitor import Elicitor
from elicit.engines.base import shipped_stan_file
from elicit.engines.contract import check_stan_contract, detect_variant
from elicit.engines.numpy_engine import NumpyEngine
from elicit.errors import ElicitError
from elicit.harness.store import SweepStore
from elicit.harness.sweep import SweepConfig
from elicit.model.batch import BatchDensity
from elicit.model.density import log_density
from elicit.model.kernel import kernel, pair_weights
from elicit.model.spec import Hyper, ModelData, all_pairs, auto_threshold_mean
from elicit.model.variants import MODELS, PAPER, TIED_THRESHOLD_SD, get_model
from elicit.prior.setup import coupled_features

NEW_MODELS = [m for m in MODELS if m != PAPER]
VARIANTS = ("fixed", "learned")


def with_model(data: ModelData, model: str, coupled=None) -> ModelData:
    """``data`` under another model (and coupled set)."""
    h = Hyper(**{**data.hyper.__dict__, "model": model})
    return ModelData(data.X, data.y, data.U, h, data.pairs, data.f, coupled=coupled)


def some_coupled(p: int) -> np.ndarray:
    # Features 0..p-4 coupled: a proper subset, with feedback pairs inside and outside it.
    c = np.ones(p, dtype=bool)
    c[-3:] = False
    return c


# -- the registry --------------------------------------------------------------------------

def test_unknown_model_is_one_line_error_listing_names():
    with pytest.raises(ElicitError, match=r"unknown model 'bogus'; choose one of paper, "
                                          r"tied-threshold, known-coupling, known-coupling-tied"):
        Hyper(model="bogus")
    with pytest.raises(ElicitError, match="unknown model 'Paper'"):
        SweepConfig("x", 1, 1, model="Paper")
    assert Hyper().model == PAPER and get_model(PAPER).threshold_sd == 0.5


@pytest.mark.parametrize("model", list(MODELS))
@pytest.mark.parametrize("variant", VARIANTS)
def test_shipped_programs_follow_their_contract(model, variant):
    path = shipped_stan_file(variant, model)
    assert path.name == get_model(model).stan_name(variant)
    check_stan_contract(path, variant, model)
    assert detect_variant(path) == variant
    code = path.read_text()
    # The prior sd of xi in the program is the registry's (the numpy twin reads the registry).
    if get_model(model).threshold_sd == TIED_THRESHOLD_SD:
        assert f"threshold_mean * {TIED_THRESHOLD_SD:g})" in code
    else:
        assert "threshold_mean / 2)" in code


def test_contract_check_asks_for_the_models_extra_data():
    paper_file = shipped_stan_file("fixed")
    with pytest.raises(ElicitError, match=r"of model 'known-coupling': data block lacks coupled"):
        check_stan_contract(paper_file, "fixed", "known-coupling")
    check_stan_contract(paper_file, "fixed", "tied-threshold")  # no extra data


def test_coupled_mask_is_validated():
    base = make_small_data()
    with pytest.raises(ElicitError, match="coupled must be a boolean mask of the 10 features"):
        ModelData(base.X, base.y, base.U, base.hyper, coupled=np.ones(3, bool))
    d = with_model(base, "known-coupling", coupled=some_coupled(base.p))
    assert d.to_stan()["coupled"].tolist() == [1] * 7 + [0] * 3
    assert "coupled" not in with_model(base, PAPER, coupled=some_coupled(base.p)).to_stan()
    # All features coupled: the full kernel, so the paper's arithmetic.
    assert with_model(base, "known-coupling", coupled=np.ones(base.p, bool)).kernel_mask is None


# -- the numpy twins -----------------------------------------------------------------------

def test_masked_kernel_is_block_plus_identity():
    base = make_small_data()
    c = some_coupled(base.p)
    gamma = np.array([0.4, 1.3, 0.8])
    K = kernel(base.U, gamma, c)
    J, out = np.flatnonzero(c), np.flatnonzero(~c)
    np.testing.assert_array_equal(K[np.ix_(J, J)], kernel(base.U[J], gamma))
    assert np.all(K[np.ix_(out, J)] == 0) and np.all(K[np.ix_(J, out)] == 0)
    np.testing.assert_array_equal(K[np.ix_(out, out)], np.eye(len(out)))
    assert np.linalg.eigvalsh(K).min() > -1e-12
    d = with_model(base, "known-coupling", coupled=c)
    fit = NumpyEngine("fixed").fit(d)
    np.testing.assert_array_equal(fit.K, kernel(base.U, fit.gamma, c))


@pytest.mark.parametrize("model", NEW_MODELS)
@pytest.mark.parametrize("n_feedback", [0, 6])
def test_new_models_gradient_and_hessian_match_finite_differences(variant, model, n_feedback):
    base = make_small_data(variant, n_feedback=n_feedback)
    assert_derivatives_match_finite_differences(
        with_model(base, model, coupled=some_coupled(base.p)))


@pytest.mark.parametrize("model", NEW_MODELS)
def test_new_models_change_the_density(model):
    # The variants must not silently fall back to the paper's density.
    base = make_small_data(n_feedback=6)
    theta = _theta(base)
    paper = log_density(theta, with_model(base, PAPER, coupled=some_coupled(base.p)))[0]
    other = log_density(theta, with_model(base, model, coupled=some_coupled(base.p)))[0]
    assert abs(paper - other) > 1e-3


@pytest.mark.parametrize("model", NEW_MODELS)
def test_batched_density_is_the_models(model):
    # The utility screen's batched refits evaluate the same density as log_density.
    base = make_small_data("learned", n_feedback=4)
    data = with_model(base, model, coupled=some_coupled(base.p))
    new_pairs = np.array([[0, 8], [1, 2]])
    thetas = np.stack([_theta(data, 1), _theta(data, 2)])
    val, grad, _ = BatchDensity(data, pair_weights(data.U, new_pairs), 1)(thetas, np.arange(2))
    for c in range(2):
        dc = data.with_feedback(np.vstack([data.pairs, new_pairs[c]]), np.append(data.f, 1))
        v, g = log_density(thetas[c], dc)
        np.testing.assert_allclose(val[c], v, rtol=1e-10)
        np.testing.assert_allclose(grad[c], g, rtol=1e-8, atol=1e-8 * np.max(np.abs(g)))


def test_known_coupling_with_every_feature_coupled_equals_paper():
    base = make_small_data(n_feedback=6)
    eng = NumpyEngine("fixed")
    a = eng.fit(with_model(base, PAPER))
    b = eng.fit(with_model(base, "known-coupling", coupled=np.ones(base.p, bool)))
    np.testing.assert_array_equal(a.gamma, b.gamma)
    assert a.xi == b.xi and a.log_density == b.log_density


def test_paper_model_ignores_the_coupled_set():
    base = make_small_data(n_feedback=6)
    eng = NumpyEngine("fixed")
    a = eng.fit(base)
    b = eng.fit(with_model(base, PAPER, coupled=some_coupled(base.p)))
    np.testing.assert_array_equal(a.gamma, b.gamma)
    np.testing.assert_array_equal(a.K, b.K)


def _two_groups(model: str):
    """Two groups of features told apart by meta-feature 0; meta-feature 1 is noise."""
    rng = np.random.default_rng(0)
    p, n = 16, 12
    g = np.repeat([0, 1], p // 2)
    U = np.column_stack([2.0 * g, rng.poisson(1.0, p).astype(float)])
    X = rng.normal(size=(n, p))
    y = X @ (g - 0.5) + 0.3 * rng.normal(size=n)
    eng = NumpyEngine("fixed")
    pairs = all_pairs(p)
    probe = eng.fit(ModelData(X, y, U, Hyper(model=model, threshold_mean=1.0)))
    m = auto_threshold_mean(U, probe.gamma, pairs)
    data = ModelData(X, y, U, Hyper(model=model, threshold_mean=m))
    return data, eng.fit(data), pairs, m


def test_tied_threshold_makes_answers_move_gamma():
    # The expert calls every pair similar, the two groups included. The paper's model
    # explains that mostly by raising xi; with the threshold tied to m it must lower gamma_0.
    out = {}
    for model in (PAPER, "tied-threshold"):
        data, fit0, pairs, m = _two_groups(model)
        fit = NumpyEngine("fixed").fit(data.with_feedback(pairs, np.ones(len(pairs), int)),
                                       init=fit0)
        out[model] = (fit0, fit, m)
    (p0, p1, m), (t0, t1, _) = out[PAPER], out["tied-threshold"]
    np.testing.assert_allclose(p0.gamma, t0.gamma, rtol=1e-6)  # no answers: same gamma
    assert p1.xi > 1.5 * m                    # the paper's xi absorbs the answers
    assert abs(t1.xi - m) < 0.05 * m          # the tied one stays at m
    assert t1.gamma[0] < 0.5 * p1.gamma[0]    # so gamma moves instead


def test_elicitor_couples_the_features_of_its_candidates():
    base = make_small_data(n_feedback=0)
    cands = np.array([[0, 1], [1, 2], [2, 5], [0, 5]])
    el = Elicitor(base.X, base.y, base.U, Hyper(tau2=0.5, model="known-coupling-tied"),
                  engine="numpy", candidates=cands)
    np.testing.assert_array_equal(el.data.coupled, coupled_features(base.p, cands))
    np.testing.assert_array_equal(np.flatnonzero(el.data.coupled), [0, 1, 2, 5])
    off = np.flatnonzero(~el.data.coupled)
    K = el.fit.K
    assert np.all(K[np.ix_(off, off)] == np.eye(len(off))) and np.all(K[off][:, [0, 1]] == 0)
    q = el.next_query("sequential", np.random.default_rng(0))   # the fast utility screen
    fit = el.answer(q.i, q.j, "similar")
    assert fit.converged and fit.coupled is el.data.coupled
    # The tied threshold held xi at its prior mean.
    assert abs(el.fit.xi - el.data.m) < 0.05 * el.data.m


def test_estimator_from_answers_keeps_the_model():
    from elicit.estimator import ElicitRegressor

    est = ElicitRegressor.from_answers(np.ones((3, 2)), [], hyper=Hyper(model="tied-threshold"))
    assert est.model == "tied-threshold"


# -- the command line and sweeps -----------------------------------------------------------

def test_models_command_lists_every_model_and_its_programs(capsys):
    assert main(["models"]) == 0
    out = capsys.readouterr().out
    for m in MODELS.values():
        assert f"{m.name}: {m.assumes}" in out
        assert f"stan/{m.stan_name('fixed')}, stan/{m.stan_name('learned')}" in out
    assert "(extra data: coupled)" in out


@pytest.mark.parametrize("argv", [
    ["synthetic", "--runs", "1", "--rounds", "1"],
    ["realdata", "--dataset", "amazon", "--runs", "1", "--rounds", "1"],
])
def test_bogus_model_is_a_one_line_cli_error(argv, tmp_path, capsys):
    assert main([*argv, "--out", str(tmp_path / "o"), "--model", "bogus"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("elicit: error: unknown model 'bogus'; choose one of paper,")
    assert err.count("\n") == 1
    assert not (tmp_path / "o" / "config.json").exists()


def test_session_new_bogus_model_is_a_one_line_error(tmp_path, capsys):
    rng = np.random.default_rng(0)
    npz = tmp_path / "p.npz"
    np.savez(npz, X=rng.normal(size=(8, 4)), y=rng.normal(size=8),
             U=rng.poisson(1.0, (4, 2)).astype(float))
    assert main(["session", "new", "--from-npz", str(npz), "--out", str(tmp_path / "s.json"),
                 "--model", "bogus"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("elicit: error: unknown model 'bogus'") and err.count("\n") == 1


def test_synthetic_sweep_refuses_parts_of_another_model(tmp_path, capsys):
    out = tmp_path / "syn"
    args = ["synthetic", "--runs", "1", "--rounds", "1", "--strategies", "random",
            "--engine", "numpy", "--quiet", "--out", str(out)]
    assert main([*args, "--model", "tied-threshold"]) == 0
    part = json.loads((out / "parts" / "synthetic" / "random" / "run000.json").read_text())
    assert part["model"] == "tied-threshold"
    assert main(args) == 2
    # config.json names the difference before any part is read
    assert ("holds results of other settings (model: 'tied-threshold' there, 'paper' now)"
            in capsys.readouterr().err)
    # the Python sweep gets the same refusal from the folder's config.json
    from elicit.harness.sweep import SweepConfig, sweep

    with pytest.raises(ElicitError, match="model: 'tied-threshold' there, 'paper' now"):
        sweep(None, SweepConfig("synthetic", 1, 1, ("random",), engine="numpy"), out,
              progress=False)


def test_config_without_model_key_counts_as_paper(tmp_path):
    cfg = {"seed": 0, "rounds": 5}
    (tmp_path / "config.json").write_text(json.dumps(cfg))   # a folder of before --model
    SweepStore.open(tmp_path, {**cfg, "model": PAPER})
    with pytest.raises(ElicitError, match=r"model: 'paper' there, 'tied-threshold' now"):
        SweepStore.open(tmp_path, {**cfg, "model": "tied-threshold"})


# -- the Stan programs through PyStan (slow) -------------------------------------------------

@pytest.fixture(scope="module")
def pystan_engines():
    from elicit.engines.pystan_engine import PyStanEngine

    # One engine per tau2 variant: it picks each model's program from the data.
    return {v: PyStanEngine(v) for v in VARIANTS}


def _stan_data(variant: str, model: str, n_f: int, seed: int, **shape) -> ModelData:
    base = make_data(variant, n_f=n_f, seed=seed, **shape)
    c = some_coupled(base.p)
    c[:2] = False   # the answered pairs' features are not all coupled
    return with_model(base, model, coupled=c)


@pytest.mark.slow
@pytest.mark.pystan
@pytest.mark.parametrize("model", NEW_MODELS)
@pytest.mark.parametrize("variant", VARIANTS)
def test_stan_density_of_new_models_matches_numpy(pystan_engines, variant, model):
    data = _stan_data(variant, model, n_f=5, seed=11, n=15, p=12, d=4)
    stan_model, order = pystan_engines[variant].model(data)
    rng = np.random.default_rng(3)
    k = data.d + 1 + (variant == "learned")
    lps, lps_np = [], []
    for _ in range(4):
        theta = np.concatenate([rng.uniform(0.05, 2.0, data.d),
                                [rng.uniform(0.9, 1.1) * data.m],
                                rng.uniform(0.2, 3.0, k - data.d - 1)])
        u = np.log(theta[order]).tolist()
        lps.append(stan_model.log_prob(u, adjust_transform=False))
        g = np.empty(k)
        g[order] = (np.asarray(stan_model.grad_log_prob(u)) - 1.0) / theta[order]
        v_np, g_np = log_density(theta, data)
        np.testing.assert_allclose(g, g_np, rtol=1e-7, atol=1e-8)
        lps_np.append(v_np)
    # Stan drops constants, so only differences between points are comparable.
    np.testing.assert_allclose(np.diff(lps), np.diff(lps_np), rtol=1e-9, atol=1e-8)


@pytest.mark.slow
@pytest.mark.pystan
@pytest.mark.parametrize("model", NEW_MODELS)
@pytest.mark.parametrize("variant", VARIANTS)
def test_pystan_map_of_new_models_matches_numpy(pystan_engines, variant, model):
    data = _stan_data(variant, model, n_f=40, seed=21, n=20, p=25, d=9, counts=False)
    ref = NumpyEngine(variant).fit(data)
    got = pystan_engines[variant].fit(data)
    assert ref.converged and got.converged, (ref.message, got.message)
    assert rel_diff(got, ref, data) <= 1e-4
    np.testing.assert_allclose(got.K, ref.K, atol=1e-4)
    if get_model(model).known_coupling:
        off = np.flatnonzero(~data.coupled)
        assert np.all(got.K[np.ix_(off, off)] == np.eye(len(off)))
