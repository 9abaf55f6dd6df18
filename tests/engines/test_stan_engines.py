"""The Stan programs and the PyStan / CmdStan engines, checked against the numpy mirror.

Each shipped program is compiled once per session through PyStan (about a minute the first
time on a machine, then httpstan's cache makes it seconds). The tests that build or run a
PyStan model are marked slow, the CmdStan ones cmdstan (and slow).
"""

from __future__ import annotations

import asyncio
import os
import re
import sys

import numpy as np
import pytest
from conftest import needs_stanc
from helpers import make_data, own_program, rel_diff

from elicit.engines.base import shipped_stan_file
from elicit.engines.cmdstan_engine import CmdStanEngine
from elicit.engines.contract import check_stan_contract
from elicit.engines.pystan_engine import PyStanEngine
from elicit.errors import ElicitError, EngineUnavailable
from elicit.model.result import MAPResult
from elicit.model.spec import Hyper, ModelData
from elicit.model.variants import MODELS, get_model

VARIANTS = ("fixed", "learned")


@pytest.fixture(scope="module")
def engines() -> dict[str, PyStanEngine]:
    """One PyStan engine per shipped variant (each compiles its program once)."""
    return {v: PyStanEngine(v) for v in VARIANTS}


# -- the Stan program ----------------------------------------------------------------------

@needs_stanc
@pytest.mark.parametrize("variant", VARIANTS)
def test_the_shipped_program_follows_the_contract(variant):
    prog = check_stan_contract(shipped_stan_file(), variant)
    # K must stay local to the model block (a transformed parameter would put p^2 columns
    # into CmdStan's output CSV).
    assert not re.search(r"transformed parameters\s*{", prog.code)
    assert "#include" not in prog.code  # inlined: what PyStan and CmdStan compile


@needs_stanc
def test_the_programs_data_block_is_the_composition_of_the_parts():
    """stan/elicit.stan declares the fields of SHIPPED_PARTS, in their order, each with the
    type (int or real) and dimensions of its contract type; its parameters are the blocks of
    theta the parts declare, in theta's order."""
    from dataclasses import fields

    from elicit.model.layout import BLOCKS
    from elicit.model.stan_data import SHIPPED_PARTS, Declared, declared

    prog = check_stan_contract(shipped_stan_file(), "fixed")
    want = {f.name: declared(f.metadata["type"])
            for part in SHIPPED_PARTS for f in fields(part)}
    assert list(prog.data.items()) == list(want.items())
    params = [BLOCKS[n] for part in SHIPPED_PARTS for n in part.params]
    assert list(prog.params) == [b.stan for b in params]
    assert prog.params["gamma"] == Declared("real", 1)


@pytest.mark.slow
@pytest.mark.pystan
@pytest.mark.parametrize("n", [15, 8])
@pytest.mark.parametrize("model", list(MODELS))
@pytest.mark.parametrize("n_f", [0, 5])
@pytest.mark.parametrize("variant", VARIANTS)
def test_stan_density_matches_numpy(engines, variant, n_f, model, n):
    """The numpy twin against Stan's log density and gradient, for every named model (the
    paper's program, or the general one with the model's knobs), on both forms of the
    marginal (15 rows, 12 features: the p x p form; 8 rows: the n x n form)."""
    from elicit.model.density import log_density
    from elicit.model.marginal import Marginal

    base = make_data(variant, n=n, p=12, d=4, n_f=n_f, seed=10 + n_f)
    coupled = np.ones(base.p, dtype=bool)
    coupled[[0, 1, 9]] = False      # answered pairs both inside and outside J
    relevance = np.array([1, 0, -1, -1] * 3)   # every class (the relevance model reads it)
    data = ModelData(base.X, base.y, base.U, Hyper(variant=variant, threshold_mean=base.m,
                                                   model=model),
                     base.pairs, base.f, coupled=coupled, relevance=relevance,
                     direction=np.array([1, -1, 0] * 4))
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
                          "zeta": rng.uniform(-3.0, 1.0), "delta": rng.uniform(0.05, 1.0)})
        # bounded parameters: u = log(x); the relevance model's zeta: u = x
        u = np.where(bounded, np.log(np.abs(theta[order])), theta[order]).tolist()
        lp = stan_model.log_prob(u, adjust_transform=False)
        # grad_log_prob includes the log-Jacobian sum(u) of x = exp(u); undo it.
        g = np.empty(k)
        gu = np.asarray(stan_model.grad_log_prob(u))
        g[order] = np.where(bounded, (gu - 1.0) / theta[order], gu)
        assert (Marginal.at(theta, data).basis is None) == (n < data.p)
        v_np, g_np = log_density(theta, data)
        np.testing.assert_allclose(g, g_np, rtol=1e-7, atol=1e-8)
        lps.append(lp)
        lps_np.append(v_np)
    # Stan drops constants (propto), so only differences between points are comparable.
    np.testing.assert_allclose(np.diff(lps), np.diff(lps_np), rtol=1e-9, atol=1e-8)


def test_docs_contract_table_is_the_parts():
    """docs/stan.md's table of data names is the parts' dataclasses (the contract), part by
    part in the program's order."""
    import re
    from dataclasses import fields
    from pathlib import Path

    from elicit.model.stan_data import SHIPPED_PARTS

    text = (Path(__file__).parents[2] / "docs" / "stan.md").read_text()
    table = text.split("| part | data name | type | meaning |", 1)[1].split("\n\n", 1)[0]
    documented = []
    part = None
    for row in re.findall(r"^\|([^|]*)\| `(\w+)` \| `([^`]*)` \|", table, flags=re.M):
        part = row[0].strip().strip("`") or part
        documented.append((part, row[1], row[2]))
    want = [(p.__name__, f.name, f.metadata["type"]) for p in SHIPPED_PARTS for f in fields(p)]
    assert documented == want


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

@needs_stanc
def test_contract_names_every_missing_name(tmp_path):
    # a valid program (stanc reads it) that lacks W_f, b_tau and threshold (it calls xi so)
    bad = tmp_path / "bad.stan"
    bad.write_text("data {\n  int<lower=1> N;\n  int<lower=1> M;\n  int<lower=1> d;\n"
                   "  vector[N] y;\n  matrix[N, M] X;\n  matrix[M, d] FD;\n"
                   "  real<lower=0> a_sigma;\n  real<lower=0> b_sigma;\n  int<lower=0> N_f;\n"
                   "  array[N_f] int<lower=0, upper=1> f;\n  real<lower=0> threshold_mean;\n"
                   "  real<lower=0> a_tau;\n}\n"
                   "parameters {\n  vector<lower=0>[d] gamma;\n  real<lower=0> xi;\n"
                   "  real<lower=0> tau;\n}\nmodel {\n  gamma ~ normal(1, 0.5);\n}\n")
    with pytest.raises(ElicitError, match="does not follow the elicit Stan contract") as err:
        check_stan_contract(bad, "learned")
    msg = str(err.value)
    assert "\n" not in msg
    assert "data block lacks W_f, b_tau; parameters block lacks threshold." in msg
    with pytest.raises(ElicitError, match="parameters block lacks threshold"):
        PyStanEngine("learned", stan_file=bad)
    with pytest.raises(ElicitError, match=r"Stan file .*missing.stan does not exist"):
        check_stan_contract(tmp_path / "missing.stan", "fixed")
    # a folder (--stan-file stan/, say) was called missing: "Stan file stan does not exist"
    with pytest.raises(ElicitError, match=r"^Stan .* is a folder, not a file; give the path of "):
        check_stan_contract(tmp_path, "fixed")


@needs_stanc
def test_contract_knows_the_tau2_variant_of_a_program(tmp_path):
    """A program of one's own states one tau2 variant: checked as the other, the error says
    which it is; the shipped program states both."""
    learned, fixed = tmp_path / "learned.stan", tmp_path / "fixed.stan"
    learned.write_text(own_program(learned=True))
    fixed.write_text(own_program(learned=False))
    check_stan_contract(learned, "learned")
    check_stan_contract(fixed, "fixed")
    with pytest.raises(ElicitError, match=r"data block lacks tau_fixed; data block declares "
                                          r"a_tau as a scalar \(the fixed-tau2 variant of model "
                                          r"'paper' has none\), b_tau as a scalar .*is this a "
                                          r"learned-tau2 program\? use variant 'learned'"):
        check_stan_contract(learned, "fixed")
    with pytest.raises(ElicitError, match=r"data block lacks a_tau, b_tau; parameters block "
                                          r"lacks tau; data block declares tau_fixed as a "
                                          r"scalar \(the learned-tau2 variant of model 'paper' "
                                          r"has none\) \(tau_fixed is data there: is this a "
                                          r"fixed-tau2 program\? use variant 'fixed'\)"):
        check_stan_contract(fixed, "learned")
    for variant in VARIANTS:
        check_stan_contract(shipped_stan_file(), variant)


@needs_stanc
def test_contract_refuses_data_elicit_cannot_supply(tmp_path):
    """Data elicit does not supply, or supplies in another shape, is named up front (not at
    the build); the old name of the fixed tau^2 gets a hint."""
    old = tmp_path / "old.stan"
    old.write_text(own_program(learned=False)
                   .replace("real<lower=0> tau_fixed;", "real<lower=0> tau;\n  real extra;")
                   .replace("add_diag(tau_fixed", "add_diag(tau")
                   .replace("array[N_f] int<lower=0, upper=1> f;", "array[N_f] real f_real;\n"
                            "  array[N_f] int<lower=0, upper=1> f;\n  vector[M] coupled;")
                   .replace("real<lower=0> a_sigma;", "int<lower=1> a_sigma;"))
    with pytest.raises(ElicitError) as err:
        check_stan_contract(old, "fixed")
    msg = str(err.value)
    # (a vector of reals takes the ints of coupled, as Stan reads them)
    assert ("data block lacks tau_fixed; data block declares f_real (elicit supplies no such "
            "data), a_sigma as a scalar int (elicit supplies real<lower=0>), tau (elicit "
            "supplies no such data), extra (elicit supplies no such data) (tau^2 of the fixed "
            "variant is the data tau_fixed)") in msg, msg


@needs_stanc
def test_a_program_stanc_refuses_is_one_line(tmp_path):
    broken = tmp_path / "broken.stan"
    broken.write_text(own_program(learned=True).replace("real<lower=0> b_sigma;",
                                                        "real<lower=0> b_sigma"))
    with pytest.raises(ElicitError) as err:
        check_stan_contract(broken, "learned")
    msg = str(err.value)
    assert "\n" not in msg
    assert msg.startswith(f"{broken} is not a valid Stan program: Syntax error in "), msg
    assert msg.endswith('";" expected after variable declaration.'), msg
    nowhere = tmp_path / "nowhere.stan"
    nowhere.write_text("functions {\n#include not_there.stan\n}\nmodel {\n}\n")
    with pytest.raises(ElicitError, match=f"{nowhere}: #include not_there.stan is in none of "
                                          f"{tmp_path}, "):
        check_stan_contract(nowhere, "fixed")


@needs_stanc
def test_includes_are_found_beside_the_program_then_in_the_shipped_folder(tmp_path):
    """A program's includes come from its own folder first (a file there replaces the
    shipped one of that name), then from the shipped folder; the engines compile the
    inlined text."""
    from elicit.engines.contract import read_program, stan_folder

    mine = tmp_path / "mine.stan"
    mine.write_text(own_program(learned=False))
    kernel = (stan_folder() / "elicit_kernel.stan").read_text()
    assert kernel.strip() in read_program(mine).code
    (tmp_path / "elicit_kernel.stan").write_text(
        "  // my kernel\n" + kernel.replace("-0.5 *", "-0.25 *"))
    code = read_program(mine).code
    assert "// my kernel" in code and "-0.25 *" in code and "#include" not in code


def test_a_line_of_the_inlined_program_is_traced_to_the_file_it_was_written_in(tmp_path):
    """CmdStan compiles (and Stan's messages name the lines of) a copy with the includes
    inlined: each of its lines is traced to the user's file, or to the included file, and
    line, that holds it; a message naming the copy's line names that file and line."""
    from elicit.engines.contract import StanProgramFile, include_paths, inline_includes

    inner, part = tmp_path / "inner.stan", tmp_path / "part.stan"
    inner.write_text("  // inner, line 1\n  real two() { return 2; }\n\n\n")
    part.write_text("  // part, line 1\n#include inner.stan\n  // part, line 3\n")
    mine = tmp_path / "mine.stan"
    mine.write_text('// 1\nfunctions {\n#include part.stan\n}\nmodel {\n  reject("no");\n}\n')
    code, lines = inline_includes(mine, include_paths(mine))
    assert "#include" not in code and len(lines) == code.count("\n") + 1
    for text, (file, k) in zip(code.split("\n"), lines):
        assert file.read_text().split("\n")[k - 1] == text, (file, k)
    prog = StanProgramFile(mine, code, {}, {}, lines)
    copy = tmp_path / "cache" / "mine_0123456789ab.stan"
    at = code.split("\n").index('  reject("no");') + 1
    got = prog.in_source(f"Exception: no (in '{copy.name}', line {at}, column 2 to column 15)",
                         copy)
    assert got == f"Exception: no (in '{mine}', line 6, column 2 to column 15)"
    at = code.split("\n").index("  real two() { return 2; }") + 1
    assert prog.in_source(f"(in '{copy}', line {at}, column 3)", copy) == \
        f"(in '{inner}', line 2, column 3)"


@pytest.mark.slow
@pytest.mark.pystan
def test_custom_stan_file_runs_in_pystan(engines, tmp_path):
    # A program of one's own: the learned variant only, the parameters declared in another
    # order after a block comment (the engine must find where each one sits), tau and the
    # one-entry data as scalars, the kernel included from the shipped folder.
    custom = tmp_path / "my_model.stan"
    custom.write_text(own_program(learned=True, reorder=True))
    check_stan_contract(custom, "learned")
    data = make_data("learned", n=20, p=25, d=9, n_f=20, seed=7, counts=False)
    got = PyStanEngine("learned", stan_file=custom).fit(data)
    ref = engines["learned"].fit(data)
    assert got.converged
    assert rel_diff(got, ref, data) <= 1e-6


# -- the CmdStan engine ------------------------------------------------------------------

def test_cmdstan_unavailable_explains_install(tmp_path, monkeypatch):
    # Runs where CmdStan is installed too: the installation is hidden (no CMDSTAN, a home
    # without ~/.cmdstan), as on a machine that never had one.
    monkeypatch.delenv("CMDSTAN", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    with pytest.raises(EngineUnavailable, match="install_cmdstan") as err:
        CmdStanEngine("fixed")
    assert "CMDSTAN" in str(err.value)


@pytest.mark.cmdstan
@pytest.mark.slow
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
def test_cmdstan_warm_start_from_boundary():
    from elicit.engines.numpy_engine import NumpyEngine

    data = make_data("fixed", n=20, p=25, d=9, n_f=4, seed=8, counts=False)
    ref = NumpyEngine("fixed").fit(data)
    start = MAPResult(np.zeros(9), data.m, data.hyper.tau2, 0.0, True, "test")
    got = CmdStanEngine("fixed").fit(data, init=start)  # gamma = 0 start must be accepted
    assert got.converged and rel_diff(got, ref, data) <= 1e-3
