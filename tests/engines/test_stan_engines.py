"""The Stan programs and the PyStan / CmdStan engines, checked against the numpy mirror.

Each shipped program is compiled once per session through PyStan (about a minute the first
time on a machine, then httpstan's cache makes it seconds). The tests that build or run a
PyStan model are marked slow, the CmdStan ones cmdstan (and slow).
"""

from __future__ import annotations

import asyncio
import os
import sys

import numpy as np
import pytest
from helpers import make_data, rel_diff

from elicit.engines.base import shipped_stan_file
from elicit.engines.cmdstan_engine import CmdStanEngine, cmdstan_available
from elicit.engines.contract import check_stan_contract
from elicit.engines.pystan_engine import PyStanEngine
from elicit.errors import ElicitError, EngineUnavailable
from elicit.model.result import MAPResult
from elicit.model.spec import Hyper, ModelData
from elicit.model.variants import MODELS, get_model

VARIANTS = ("fixed", "learned")
needs_cmdstan = pytest.mark.skipif(
    not cmdstan_available(),
    reason="CmdStan is not installed (cmdstanpy.cmdstan_path() failed); see README")


@pytest.fixture(scope="module")
def engines() -> dict[str, PyStanEngine]:
    """One PyStan engine per shipped variant (each compiles its program once)."""
    return {v: PyStanEngine(v) for v in VARIANTS}


# -- the Stan programs ---------------------------------------------------------------------

@pytest.mark.parametrize("variant", VARIANTS)
def test_shipped_programs_follow_contract(variant):
    path = shipped_stan_file(variant)
    check_stan_contract(path, variant)
    code = path.read_text()
    # K must stay local to the model block (a transformed parameter would put p^2 columns
    # into CmdStan's output CSV).
    assert "transformed parameters" not in code


@pytest.mark.slow
@pytest.mark.pystan
@pytest.mark.parametrize("model", list(MODELS))
@pytest.mark.parametrize("n_f", [0, 5])
@pytest.mark.parametrize("variant", VARIANTS)
def test_stan_density_matches_numpy(engines, variant, n_f, model):
    """The numpy twin against Stan's log density and gradient, for every named model (the
    paper's program, or the general one with the model's knobs)."""
    from elicit.model.density import log_density

    base = make_data(variant, n=15, p=12, d=4, n_f=n_f, seed=10 + n_f)
    coupled = np.ones(base.p, dtype=bool)
    coupled[[0, 1, 9]] = False      # answered pairs both inside and outside J
    relevance = np.array([1, 0, -1, -1] * 3)   # every class (the relevance model reads it)
    data = ModelData(base.X, base.y, base.U, Hyper(variant=variant, threshold_mean=base.m,
                                                   model=model),
                     base.pairs, base.f, coupled=coupled, relevance=relevance)
    stan_model, order = engines[variant].model(data)
    rng = np.random.default_rng(3)
    lay = data.layout
    k = lay.size
    bounded = lay.bounded()[order]
    # xi within the bulk of its prior (a tied threshold's is 0.02 m wide)
    lo, hi = (0.3, 2.0) if get_model(model).threshold_sd >= 0.5 else (0.9, 1.1)
    lps, lps_np = [], []
    for _ in range(4):
        theta = lay.join({"gamma": rng.uniform(0.05, 2.0, data.d),
                          "xi": rng.uniform(lo, hi) * data.m, "tau2": rng.uniform(0.2, 3.0),
                          "zeta": rng.uniform(-3.0, 1.0)})
        # bounded parameters: u = log(x); the relevance model's zeta: u = x
        u = np.where(bounded, np.log(np.abs(theta[order])), theta[order]).tolist()
        lp = stan_model.log_prob(u, adjust_transform=False)
        # grad_log_prob includes the log-Jacobian sum(u) of x = exp(u); undo it.
        g = np.empty(k)
        gu = np.asarray(stan_model.grad_log_prob(u))
        g[order] = np.where(bounded, (gu - 1.0) / theta[order], gu)
        v_np, g_np = log_density(theta, data)
        np.testing.assert_allclose(g, g_np, rtol=1e-7, atol=1e-8)
        lps.append(lp)
        lps_np.append(v_np)
    # Stan drops constants (propto), so only differences between points are comparable.
    np.testing.assert_allclose(np.diff(lps), np.diff(lps_np), rtol=1e-9, atol=1e-8)


def test_docs_contract_table_is_stan_data():
    """docs/stan.md's table of data names is the StanData dataclass (the contract)."""
    import re
    from dataclasses import fields
    from pathlib import Path

    from elicit.model.spec import StanData

    text = (Path(__file__).parents[2] / "docs" / "stan.md").read_text()
    table = text.split("| data name | type | meaning |", 1)[1].split("\n\n", 1)[0]
    documented = {}
    for names, stan_type in re.findall(r"^\| (`[^|]*`) \| `([^`]*)` \|", table, flags=re.M):
        for name in re.findall(r"`(\w+)`", names):
            documented[name] = stan_type
    want = {f.name: f.metadata["type"] for f in fields(StanData)}
    assert documented == want


@pytest.mark.slow
def test_general_program_with_the_papers_knobs_is_the_papers_program():
    """elicit_general_*.stan with threshold_sd = 0.5 and every feature coupled gives the log
    density and gradient of the paper's elicit_*.stan at random points."""
    from elicit.engines.pystan_engine import build_pystan_model

    for variant in VARIANTS:
        data = make_data(variant, n=15, p=12, d=4, n_f=5, seed=31)
        paper = build_pystan_model(shipped_stan_file(variant).read_text(), data.to_stan())
        general = build_pystan_model(
            shipped_stan_file(variant, "tied-threshold").read_text(),
            {**data.to_stan(), "threshold_sd": 0.5, "coupled": np.ones(data.p, dtype=int)})
        rng = np.random.default_rng(5)
        k = data.d + 1 + (variant == "learned")
        for _ in range(4):
            u = rng.normal(size=k).tolist()
            assert general.log_prob(u) == pytest.approx(paper.log_prob(u), rel=1e-13, abs=1e-11)
            np.testing.assert_allclose(general.grad_log_prob(u), paper.grad_log_prob(u),
                                       rtol=1e-12, atol=1e-11)


# -- the PyStan engine -------------------------------------------------------------------

@pytest.mark.slow
@pytest.mark.pystan
@pytest.mark.parametrize("n_f", [0, 40])
@pytest.mark.parametrize("variant", VARIANTS)
def test_pystan_map_matches_numpy(engines, variant, n_f):
    from elicit.engines.numpy_engine import NumpyEngine

    data = make_data(variant, n=20, p=25, d=9, n_f=n_f, seed=20 + n_f, counts=False)
    ref = NumpyEngine(variant).fit(data)
    got = engines[variant].fit(data)
    assert ref.converged and got.converged, (ref.message, got.message)
    assert got.engine == "pystan" and got.n_iter > 0
    assert rel_diff(got, ref, data) <= 1e-4
    np.testing.assert_allclose(got.K, ref.K, atol=1e-4)


@pytest.mark.slow
@pytest.mark.pystan
def test_pystan_warm_start_and_model_cache(engines):
    data = make_data("learned", n=20, p=25, d=9, n_f=0, seed=4)
    eng = engines["learned"]
    cold = eng.fit(data)
    model = eng.model(data)[0]
    # Restarting at the MAP must stop at once: the start point is honoured.
    again = eng.fit(data, init=cold)
    assert again.converged and again.n_iter <= 2 < cold.n_iter
    assert rel_diff(again, cold, data) <= 1e-6
    assert eng.model(data)[0] is model  # same data: not rebuilt
    more = make_data("learned", n=20, p=25, d=9, n_f=20, seed=4)  # same X, y, U; answers
    warm = eng.fit(more, init=cold)
    assert eng.model(more)[0] is not model
    assert warm.converged and rel_diff(warm, eng.fit(more), more) <= 1e-4


@pytest.mark.slow
@pytest.mark.pystan
def test_pystan_build_leaves_cwd_clean(engines, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    engines["fixed"].model(make_data("fixed", n=15, p=12, d=4, n_f=1, seed=99))
    assert os.getcwd() == str(tmp_path)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.slow
@pytest.mark.pystan
def test_pystan_fit_inside_running_event_loop(engines):
    data = make_data("fixed", n=15, p=12, d=4, n_f=2, seed=5)
    plain = engines["fixed"].fit(data)

    async def in_loop():  # as in Jupyter, where asyncio.run() cannot be nested
        r = engines["fixed"].fit(data)
        await asyncio.sleep(0)  # the outer loop still works afterwards
        assert asyncio.get_event_loop() is asyncio.get_running_loop()
        return r

    assert rel_diff(asyncio.run(in_loop()), plain, data) == 0.0


@pytest.mark.slow
@pytest.mark.pystan
def test_pystan_rejects_wrong_variant(engines):
    with pytest.raises(ElicitError, match="the 'fixed' variant got data of the 'learned'"):
        engines["fixed"].fit(make_data("learned", n=15, p=12, d=4, n_f=0, seed=1))


def test_pystan_build_has_no_client_timeout(monkeypatch):
    """Bug: PyStan's HTTP client gave up on a compile after aiohttp's default 5 minutes, which
    a loaded machine exceeds; a build then failed with a TimeoutError. During a build the
    client session has no total timeout; afterwards PyStan's module is as it was."""
    import stan.common

    import stan
    from elicit.engines.pystan_engine import build_pystan_model

    seen = {}

    async def session_timeout():
        async with stan.common.aiohttp.ClientSession() as session:
            return session.timeout.total

    def fake_build(program_code, data):          # stands in for the compile
        seen["total"] = asyncio.run(session_timeout())
        return "model"

    monkeypatch.setattr(stan, "build", fake_build)
    assert build_pystan_model("program", {}) == "model"
    assert seen["total"] is None
    assert asyncio.run(session_timeout()) == 300        # aiohttp's default, restored


def test_pystan_unavailable_message(monkeypatch):
    monkeypatch.setitem(sys.modules, "stan", None)  # makes `import stan` fail
    with pytest.raises(EngineUnavailable, match=r"pip install 'elicit\[pystan\]'"):
        PyStanEngine("fixed")


# -- custom Stan files -------------------------------------------------------------------

def test_contract_names_every_missing_name(tmp_path):
    code = shipped_stan_file("learned").read_text()
    code = code.replace("  matrix[N_f, d] W_f;", "").replace("  real<lower=0> b_tau;", "")
    code = code.replace("real<lower=0> threshold;", "real<lower=0> xi;")
    bad = tmp_path / "bad.stan"
    bad.write_text(code)
    with pytest.raises(ElicitError, match="does not follow the elicit Stan contract") as err:
        check_stan_contract(bad, "learned")
    msg = str(err.value)
    for name in ("W_f", "b_tau", "threshold"):
        assert name in msg
    assert "gamma" not in msg.split("lacks", 1)[1]  # present names are not reported
    with pytest.raises(ElicitError, match="is this a learned-tau2 program"):
        check_stan_contract(shipped_stan_file("learned"), "fixed")  # tau is a parameter
    with pytest.raises(ElicitError, match=r"Stan file .*missing.stan does not exist"):
        check_stan_contract(tmp_path / "missing.stan", "fixed")
    with pytest.raises(ElicitError, match="parameters block lacks threshold"):
        PyStanEngine("learned", stan_file=bad)


@pytest.mark.slow
@pytest.mark.pystan
def test_custom_stan_file_runs_in_pystan(engines, tmp_path):
    # A contract-honouring program that declares the parameters in another order and with
    # a block comment: the engine must find where each parameter sits.
    code = shipped_stan_file("learned").read_text()
    block = ("  vector<lower=0>[d] gamma;                  // inverse squared length scales\n"
             "  real<lower=0> threshold;                   // the paper's xi\n"
             "  real<lower=0> tau;                         // tau^2 (a variance, as in the "
             "authors' code)\n")
    assert block in code
    code = code.replace(block, "  /* reordered */ real<lower=0> tau;\n  real<lower=0> threshold;\n"
                               "  vector<lower=0>[d] gamma;\n")
    custom = tmp_path / "my_model.stan"
    custom.write_text(code)
    check_stan_contract(custom, "learned")
    data = make_data("learned", n=20, p=25, d=9, n_f=20, seed=7, counts=False)
    got = PyStanEngine("learned", stan_file=custom).fit(data)
    ref = engines["learned"].fit(data)
    assert got.converged
    assert rel_diff(got, ref, data) <= 1e-6


# -- the CmdStan engine ------------------------------------------------------------------

@pytest.mark.skipif(cmdstan_available(), reason="CmdStan is installed")
def test_cmdstan_unavailable_explains_install():
    with pytest.raises(EngineUnavailable, match="install_cmdstan") as err:
        CmdStanEngine("fixed")
    assert "CMDSTAN" in str(err.value)


@pytest.mark.cmdstan
@pytest.mark.slow
@needs_cmdstan
@pytest.mark.parametrize("n_f", [0, 40])
@pytest.mark.parametrize("variant", VARIANTS)
def test_cmdstan_map_matches_numpy(variant, n_f):
    from elicit.engines.numpy_engine import NumpyEngine

    data = make_data(variant, n=20, p=25, d=9, n_f=n_f, seed=20 + n_f, counts=False)
    ref = NumpyEngine(variant).fit(data)
    got = CmdStanEngine(variant).fit(data)
    assert got.converged, got.message
    assert got.engine == "cmdstan"
    # CmdStan's L-BFGS stops on its own relative tolerances in log space, so looser than
    # the 1e-4 of the PyStan engine, which uses the numpy engine's optimiser settings.
    assert rel_diff(got, ref, data) <= 1e-3


@pytest.mark.cmdstan
@pytest.mark.slow
@needs_cmdstan
def test_cmdstan_warm_start_from_boundary():
    from elicit.engines.numpy_engine import NumpyEngine

    data = make_data("fixed", n=20, p=25, d=9, n_f=4, seed=8, counts=False)
    ref = NumpyEngine("fixed").fit(data)
    start = MAPResult(np.zeros(9), data.m, data.hyper.tau2, 0.0, True, "test")
    got = CmdStanEngine("fixed").fit(data, init=start)  # gamma = 0 start must be accepted
    assert got.converged and rel_diff(got, ref, data) <= 1e-3
