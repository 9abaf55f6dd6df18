"""A mutation audit of the engines (numpy, the base, the Stan engines' Python side, the PyStan
build cache) and of the bench command: each test here failed on a small slip in the code that
no other fast test noticed (a key that misses an input, a wrong order, a dropped check).

The Stan engines are run on stand-ins for a compiled program (no Stan build): a stand-in
computes the numpy twin's density in the order and transforms a Stan program would use, so
what is checked is the engine's own bookkeeping around it.
"""

from __future__ import annotations

import statistics
import types
from dataclasses import replace

import numpy as np
import pytest
from conftest import make_small_data, needs_stanc, small_arrays
from helpers import (
    bench_record,
    projected_grad,
    relevance_data,
    theta_point,
    two_modes_after_one_answer,
    with_answers,
)

from elicit.engines.numpy_engine import NumpyEngine
from elicit.errors import ElicitError
from elicit.model.density import hessian_base, log_density
from elicit.model.refit_checks import ColdStartPolicy
from elicit.model.spec import Hyper, ModelData, Params, all_pairs
from elicit.model.theta import theta_of

pytestmark = pytest.mark.usefixtures("one_blas_thread")


# -- the numpy engine ----------------------------------------------------------------------


@pytest.mark.parametrize("change", ["threshold prior mean", "relevance answers"])
def test_a_remembered_refit_is_not_served_for_other_data_of_the_same_problem(change):
    """The threshold's prior mean (a hyper-parameter) and the feature answers are not in the
    problem key: the same arrays, pair answers, start and Hessian with another of them is
    another refit."""
    data0 = relevance_data("fixed")
    engine = NumpyEngine("fixed")
    fit0 = engine.fit(data0)
    H = hessian_base(theta_of(fit0, data0), data0)
    data1 = with_answers(data0, (0, 7), 1)
    if change == "relevance answers":
        moved = data1.with_relevance(np.roll(data1.relevance, 1))
    else:
        moved = ModelData(data1.X, data1.y, data1.U, data1.hyper.with_threshold_mean(
            2.0 * data1.m), data1.pairs, data1.f, relevance=data1.relevance)
    first = engine.fit(data1, init=fit0, hessian=H)
    other = engine.fit(moved, init=fit0, hessian=H)
    fresh = NumpyEngine("fixed").fit(moved, init=fit0, hessian=H)
    assert other is not first
    assert other.xi == fresh.xi and np.array_equal(other.gamma, fresh.gamma)


def test_a_warm_start_for_another_tau2_is_not_checked_by_a_cold_start():
    """A warm start for another fixed tau2 (the tau2 CV's next value) is another problem: the
    refit checks (ColdStartPolicy) are for a refit after answers to the same one."""
    data = make_small_data("fixed", tau2=0.5)
    engine = NumpyEngine("fixed", cold_start=ColdStartPolicy(slack=-np.inf))  # checks all
    fit = engine.fit(data)
    engine.fit(replace_tau2(data, 0.2), init=fit)
    assert engine.cold_starts["warm"] == 0
    engine.fit(with_answers(data, (0, 7), 1), init=fit)           # the same problem: checked
    assert engine.cold_starts["warm"] == 1


def replace_tau2(data: ModelData, tau2: float) -> ModelData:
    return ModelData(data.X, data.y, data.U, replace(data.hyper, tau2=tau2), data.pairs, data.f)


def test_a_warm_fit_of_another_layout_does_not_lend_its_hessian():
    """A warm refit of the paper model carries its base Hessian; as the start of a relevance
    fit (one parameter more) that Hessian is of the wrong size and must not be used."""
    rel = relevance_data("learned")
    paper = ModelData(rel.X, rel.y, rel.U, replace(rel.hyper, model="paper"), rel.pairs[:-1],
                      rel.f[:-1])
    engine = NumpyEngine("learned")
    fit0 = engine.fit(paper)
    warm = engine.fit(paper.with_feedback(rel.pairs, rel.f), init=fit0,
                      hessian=hessian_base(theta_of(fit0, paper), paper))
    assert warm.warm_hessian is not None and warm.warm_hessian.shape[0] < rel.layout.size
    r = engine.fit(rel, init=warm)
    cold = NumpyEngine("learned").fit(rel)
    assert r.converged
    np.testing.assert_allclose(theta_of(r, rel), theta_of(cold, rel), rtol=1e-5, atol=1e-7)


def test_the_cold_start_kept_is_the_cold_fit_itself():
    """The check of a refit is a fit from the prior means, as a new elicitation's: when it is
    kept, the MAP is that fit's, to the last digit (a fit from the warm start reaches the
    same mode, but not the same point)."""
    engine = NumpyEngine("learned")
    el = two_modes_after_one_answer()(engine)
    el.answer(0, 1, "similar")
    assert engine.cold_starts["kept"] == 1
    cold = NumpyEngine("learned").fit(el.data)
    assert np.array_equal(el.fit.gamma, cold.gamma) and el.fit.xi == cold.xi


def test_a_candidate_row_that_did_not_converge_is_not_remembered():
    data = make_small_data("fixed")
    engine = NumpyEngine("fixed")
    fit = engine.fit(data)
    theta = theta_of(fit, data)
    H = hessian_base(theta, data)
    w = (data.U[[0, 1]] - data.U[[7, 9]]) ** 2
    run = engine.refit_candidates(data, w, np.array([1.0, 0.0]), theta, H)
    run.hold(np.array([0]))                   # stopped where it is: not a MAP
    d2 = with_answers(data, (0, 7), 1)
    with pytest.raises(ValueError, match="row 0 of the stack did not converge"):
        engine.remember_candidate(d2, run, 0, theta, H)


def test_the_refit_after_a_rounds_answer_meets_the_engines_tolerance():
    """A query round's engine remembers the refits of its best candidates (Newton decrement
    score_tol, then one more Newton step); the refit after the answer, served from them, is a
    MAP to the engine's own tolerance gtol, as a fresh refit is (docs/benchmarks.md: "the
    refit after the answer still goes on to 1e-10")."""
    from elicit.elicitation.scorer import UtilityScorer
    from elicit.model.density import hessian

    data = make_small_data("fixed")
    engine = NumpyEngine("fixed")
    fit = engine.fit(data)
    pairs = all_pairs(data.p)
    scorer = UtilityScorer(data, fit, engine)
    best = pairs[scorer.score(pairs, "fast", refine=10).best]
    after = with_answers(data, best, 1)
    res = engine.fit(after, init=fit, hessian=scorer.hessian)
    theta = theta_of(res, after)
    assert res.converged and np.all(theta > 0)       # interior: the plain decrement applies
    _, g = log_density(theta, after)
    assert g @ np.linalg.solve(-hessian(theta, after), g) <= engine.gtol


def test_a_fit_whose_last_line_search_failed_at_the_maximum_is_converged():
    """L-BFGS-B may end in an "ABNORMAL" line search at the maximum, where rounding stops its
    progress (here with Newton switched off, as when it fails): the fit is judged by its
    projected gradient, not by L-BFGS-B's own flag."""
    data = make_small_data("fixed", seed=3)
    engine = NumpyEngine("fixed")
    engine.max_newton = 0                     # every Newton run fails: L-BFGS-B decides
    r = engine.fit(data)
    assert np.max(np.abs(projected_grad(theta_of(r, data), data))) < 1e-4
    assert r.converged, r.message


def test_a_cold_fit_reports_the_log_density_of_its_point():
    """To the last digit: the density evaluated at the reported point, not the value before
    the optimiser's last step."""
    for variant in ("fixed", "learned"):
        data = make_small_data(variant)
        r = NumpyEngine(variant).fit(data)
        assert r.log_density == log_density(theta_of(r, data), data)[0]


# -- the engines' base ---------------------------------------------------------------------


def test_a_start_with_too_few_gamma_values_is_refused():
    data = make_small_data("fixed")
    with pytest.raises(ElicitError, match=r"the start point has 2 gamma values; the data has "
                                          r"d = 3 meta-features"):
        NumpyEngine("fixed").fit(data, init=Params(np.ones(2), data.m, 0.5))


# -- the PyStan build cache ----------------------------------------------------------------


@pytest.mark.pystan(builds=False)
def test_the_pystan_build_key_is_of_the_machine(monkeypatch):
    """A build shared between environments is a machine's code: a home folder shared by an
    x86_64 and an ARM machine must not hand one's module to the other."""
    import platform

    from elicit.engines import pystan_cache

    pytest.importorskip("httpstan")
    try:
        key = pystan_cache.build_key("// a program\n")
    except ValueError:
        pytest.skip("no C++ compiler here")
    other = "aarch64" if platform.machine() != "aarch64" else "x86_64"
    monkeypatch.setattr(platform, "machine", lambda: other)
    assert pystan_cache.build_key("// a program\n") != key


# -- the PyStan engine on a stand-in for the compiled program -------------------------------


class StandInProgram:
    """What PyStan's bound model offers the engine, computed by the numpy twin for ``data``:
    Stan's unconstrained vector holds theta[perm], log-transformed where bounded (``shift``:
    a bounded entry declared ``<lower=shift>``, another transform)."""

    def __init__(self, data: ModelData, bound: dict, perm=None, shift: float = 0.0):
        self.data, self.bound, self.shift = data, bound, shift
        lay = data.layout
        self.perm = np.arange(lay.size)[::-1] if perm is None else np.asarray(perm)
        self.b = lay.bounded()[self.perm]          # bounded, in Stan's order

    def _theta(self, u) -> np.ndarray:
        u = np.asarray(u, dtype=float)
        theta = np.empty_like(u)
        theta[self.perm] = np.where(self.b, np.exp(u), u)
        return theta

    def unconstrain_pars(self, pars: dict) -> list:
        theta = np.concatenate([np.atleast_1d(pars[b.stan]) for b in self.data.layout.blocks])
        x = theta[self.perm]
        return list(np.where(self.b, np.log(np.where(self.b, x - self.shift, 1.0)), x))

    def log_prob(self, u, adjust_transform: bool = True) -> float:
        lp = log_density(self._theta(u), self.data)[0]
        return lp + (float(np.sum(np.asarray(u)[self.b])) if adjust_transform else 0.0)

    def grad_log_prob(self, u) -> list:
        theta = self._theta(u)
        g = log_density(theta, self.data)[1][self.perm]
        return list(np.where(self.b, g * theta[self.perm] + 1.0, g))   # with the Jacobian


class RejectingProgram(StandInProgram):
    """A program whose model block rejects every point (Stan's RuntimeError)."""

    def log_prob(self, u, adjust_transform: bool = True) -> float:
        raise RuntimeError("Exception: normal_lpdf: Scale parameter is 0")


@pytest.fixture
def pystan_standin(monkeypatch, tmp_path):
    """``make(data, program=StandInProgram, **kw)``: a PyStanEngine whose builds are stand-ins
    bound to the data they are given (listed in ``builds``); no PyStan build, no cache."""
    pytest.importorskip("stan")
    import elicit.engines.pystan_engine as pe
    from elicit.engines import pystan_cache

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setattr(pystan_cache, "restore", lambda code: False)
    monkeypatch.setattr(pystan_cache, "store", lambda code: False)
    builds: list = []

    def make(data: ModelData, program=StandInProgram, **kw):
        def build(code, stan_data, quiet=False):
            builds.append(stan_data)
            return program(data, stan_data, **kw)

        monkeypatch.setattr(pe, "build_pystan_model", build)
        return pe.PyStanEngine(data.hyper.variant)

    make.builds = builds
    return make


@needs_stanc
@pytest.mark.pystan(builds=False)
def test_pystan_log_prob_is_the_twins_in_theta_order(pystan_standin):
    """Stan's vector in another order than theta, zeta unbounded: the engine's log density
    and gradient at theta are the numpy twin's, entry by entry."""
    data = relevance_data("fixed")
    engine = pystan_standin(data, perm=[2, 4, 0, 3, 1])
    theta = theta_point(data)
    lp, g = engine.log_prob(data, theta)
    lp0, g0 = log_density(theta, data)
    assert lp == pytest.approx(lp0, rel=1e-12)
    np.testing.assert_allclose(g, g0, rtol=1e-9, atol=1e-12 * np.max(np.abs(g0)))


@needs_stanc
@pytest.mark.pystan(builds=False)
def test_pystan_fit_reports_the_maximum_and_its_log_density(pystan_standin):
    data = make_small_data("learned")
    res = pystan_standin(data).fit(data)
    ref = NumpyEngine("learned").fit(data)
    assert res.converged and res.engine == "pystan"
    assert res.log_density == pytest.approx(log_density(theta_of(res, data), data)[0], rel=1e-12)
    assert res.log_density == pytest.approx(ref.log_density, rel=1e-7)


@needs_stanc
@pytest.mark.pystan(builds=False)
def test_pystan_fit_rejected_everywhere_is_not_converged(pystan_standin):
    data = make_small_data("fixed")
    res = pystan_standin(data, program=RejectingProgram).fit(data)
    assert not res.converged


@needs_stanc
@pytest.mark.pystan(builds=False)
def test_pystan_program_with_another_transform_is_refused(pystan_standin):
    """A bounded parameter declared <lower=0.001> (u = log(x - 0.001)) is not the contract's
    <lower=0>: the engine's bounds and gradients would be wrong."""
    data = make_small_data("fixed")
    engine = pystan_standin(data, shift=1e-3)
    with pytest.raises(ElicitError, match="needs exactly the parameters gamma, threshold"):
        engine.fit(data)


@needs_stanc
@pytest.mark.pystan(builds=False)
def test_pystan_binds_a_model_per_data_values(pystan_standin):
    """Two problems of the same shapes: each fit runs on a model bound to its own values."""
    data = make_small_data("fixed")
    other = ModelData(data.X, data.y[::-1].copy(), data.U, data.hyper, data.pairs, data.f)
    engine = pystan_standin(data)
    model_a, _ = engine.model(data)
    model_b, _ = engine.model(other)
    assert engine.model(data)[0] is model_a              # bound once
    assert np.array_equal(model_b.bound["y"], other.y) and len(pystan_standin.builds) == 2


@needs_stanc
@pytest.mark.pystan(builds=False)
def test_pystan_build_failure_is_one_line(pystan_standin, monkeypatch):
    import elicit.engines.pystan_engine as pe

    data = make_small_data("fixed")
    engine = pystan_standin(data)

    def fails(code, stan_data, quiet=False):
        raise RuntimeError("httpstan: C++ compiler failed")

    monkeypatch.setattr(pe, "build_pystan_model", fails)
    with pytest.raises(ElicitError, match=r"PyStan could not build .*compiler failed"):
        engine.fit(data)


# -- the CmdStan engine's Python side (no CmdStan needed) -----------------------------------


def test_cmdstan_programs_are_cached_per_installation(monkeypatch, tmp_path):
    cmdstanpy = pytest.importorskip("cmdstanpy")
    from elicit.engines.cmdstan_engine import cached_program

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    where = {"path": tmp_path / "cmdstan-2.36.0", "version": (2, 36)}
    monkeypatch.setattr(cmdstanpy, "cmdstan_path", lambda: str(where["path"]))
    monkeypatch.setattr(cmdstanpy.utils, "cmdstan_version", lambda: where["version"])
    src = tmp_path / "model.stan"
    first = cached_program(src, "model { }")
    assert cached_program(src, "model { }") == first and first.read_text() == "model { }"
    where["path"] = tmp_path / "cmdstan-2.37.0"
    assert cached_program(src, "model { }") != first
    where["path"], where["version"] = tmp_path / "cmdstan-2.36.0", (2, 37)
    assert cached_program(src, "model { }") != first


def test_a_failed_cmdstan_run_is_summed_up_by_the_programs_exception(monkeypatch, tmp_path):
    import elicit.engines.cmdstan_engine as ce

    monkeypatch.setattr(ce, "cached_program", lambda src, code: tmp_path / "copy.stan")
    program = types.SimpleNamespace(path=tmp_path / "mine.stan", code="",
                                    in_source=lambda text, copy: text)
    error = RuntimeError(
        "Error during optimization! Command '...optimize...' failed: console log output:\n"
        "method = optimize\n  optimize\n    algorithm = lbfgs (Default)\nnum_threads = 1\n\n"
        "Initial log joint probability = -3.2\n"
        "Rejecting initial value:\n"
        "Exception: normal_lpdf: Scale parameter is 0 (in 'mine.stan', line 12)\n"
        "Optimization terminated with error: \n")
    assert ce.console_summary(error, program) == \
        "Exception: normal_lpdf: Scale parameter is 0 (in 'mine.stan', line 12)"


class _StandInOptimizer:
    """CmdStan's optimize on a stand-in program: L-BFGS stops short (line search failed,
    not converged) at the start; Newton converges at ``mode``."""

    def __init__(self, program, data: ModelData, mode: np.ndarray):
        self.program, self.data, self.mode = program, data, mode

    def optimize(self, data, inits, algorithm, **kw):
        lay = self.data.layout
        theta = (np.concatenate([np.atleast_1d(inits[b.stan]) for b in lay.blocks])
                 if algorithm == "lbfgs" else self.mode)
        est = {f"{n}[{k}]" if k else n: theta[i]
               for i, (n, k) in enumerate(self.program.entries(lay))}
        est["lp__"] = log_density(theta, self.data)[0]
        return types.SimpleNamespace(optimized_params_dict=est, converged=algorithm != "lbfgs",
                                     optimized_iterations_np=np.zeros((8, 2)))


@needs_stanc
def test_cmdstan_keeps_newtons_converged_run_over_an_unconverged_lbfgs(monkeypatch):
    import elicit.engines.base as base
    import elicit.engines.cmdstan_engine as ce
    from elicit.engines.contract import find_stanc

    data = make_small_data("fixed")
    mode = theta_of(NumpyEngine("fixed").fit(data), data)
    monkeypatch.setattr(ce, "cmdstan_missing", lambda: None)
    monkeypatch.setattr(base, "find_stanc", lambda engine=None: find_stanc())
    monkeypatch.setattr(ce.CmdStanEngine, "_compile",
                        lambda self, program: _StandInOptimizer(program, data, mode))
    res = ce.CmdStanEngine("fixed").fit(data)
    assert res.converged and res.message.startswith("CmdStan optimize (newton)")
    np.testing.assert_array_equal(theta_of(res, data), mode)


# -- the bench command ---------------------------------------------------------------------


def test_bench_figures_are_medians_over_rounds_and_no_pair_is_asked_twice():
    """The conftest's small problem with p = 4 (6 pairs) benched for 6 rounds of pools of 2:
    every pair is asked once, and each figure is the median of its rounds."""
    from elicit import GroupOracle
    from elicit.paper.bench import BenchProblem, bench

    a = small_arrays(p=4)
    asked: list = []
    oracle = GroupOracle(a.groups)
    expert = types.SimpleNamespace(answer=lambda i, j: asked.append((i, j)) or oracle.answer(i, j))
    prob = BenchProblem("tiny", a.X, a.y, a.U, Hyper(variant="fixed", tau2=0.5), all_pairs(4),
                        pool_size=2, expert=expert, rng=np.random.default_rng(1))
    res = bench(prob, rounds=6, engine="numpy", exact=False, progress=False)
    assert sorted(asked) == [tuple(p) for p in all_pairs(4)]
    rows = res["per_round"]
    for key in ("map_warm_s", "map_warm_cpu_s", "map_refit_s", "round_fast_s"):
        assert res[key] == statistics.median(r[key] for r in rows), key


def test_bench_table_lists_the_figures_not_the_rounds():
    import json

    from elicit.paper.bench import format_table

    result = {"size": "tiny", "map_cold_s": 0.25, "rounds": 2,
              "per_round": [{"map_warm_s": 0.5}, {"map_warm_s": 0.75}]}
    text = format_table(result)
    assert json.loads(text.splitlines()[-1]) == {"size": "tiny", "map_cold_s": 0.25,
                                                  "rounds": 2}
    assert len(text.splitlines()) == 4 and "per_round" not in text


# -- the bench suite -----------------------------------------------------------------------


def test_a_figure_that_was_zero_is_not_called_slower():
    from elicit.paper.bench_suite import compare, format_suite

    before = bench_record("aaa", "2026-01-01T00:00:00+00:00", a=0.0, b=1.0)
    after = bench_record("bbb", "2026-01-02T00:00:00+00:00", a=0.5, b=1.0)
    assert compare(after, before) == []
    assert "no figure more than 20% slower than aaa" in format_suite(after, before)


def test_the_record_names_the_commit_measured_at_the_start(monkeypatch):
    """The checkout may change while the suite measures (minutes): the record names the
    code measured, read before the first figure."""
    import elicit.paper.bench_suite as suite

    version = ["aaa"]

    def step(name, s, out):
        version[0] = "bbb"                     # a commit made meanwhile
        return {"value": 1.0}

    monkeypatch.setattr(suite, "code_version", lambda: version[0])
    monkeypatch.setattr(suite, "measure_step", step)
    rec = suite.run_suite(suite.SuiteSettings(figures=(), steps=("amazon",)))
    assert rec["commit"] == "aaa"


def test_the_reproduction_estimate_is_every_step_times_the_runs(monkeypatch):
    import elicit.paper.bench_suite as suite
    from elicit.paper.steps import STEPS

    cost = {st: 1.0 + k for k, st in enumerate(STEPS)}
    monkeypatch.setattr(suite, "code_version", lambda: "aaa")
    monkeypatch.setattr(suite, "measure_step", lambda st, s, out: {"value": cost[st]})
    rec = suite.run_suite(suite.SuiteSettings(figures=()))
    per_run = sum(cost.values())
    assert rec["figures"]["reproduce_estimate"]["value"] == per_run * suite.REPRODUCE_RUNS

    def one_fails(st, s, out):
        if st == STEPS[0]:
            raise ElicitError("no data directory")
        return {"value": cost[st]}

    monkeypatch.setattr(suite, "measure_step", one_fails)
    rec = suite.run_suite(suite.SuiteSettings(figures=()))
    assert f"step_{STEPS[0]}" in rec["skipped"] and "reproduce_estimate" not in rec["figures"]


def test_a_round_figure_is_the_median_round(monkeypatch):
    import elicit.paper.bench_suite as suite

    monkeypatch.setattr(suite, "_synthetic_run",
                        lambda s: (None, types.SimpleNamespace(rounds=3)))
    monkeypatch.setattr(suite, "elicitation_rounds",
                        lambda problem, cfg, n: {"round_cpu_s": [0.5, 0.25, 3.0]})
    assert suite.measure_round("synthetic_round", suite.SuiteSettings())["value"] == 0.5


def test_a_step_is_estimated_per_answer_from_its_two_runs(monkeypatch, tmp_path):
    """A step's run costs a set-up of 5 s and 0.25 s per answer (a clock that only the stub
    moves): a reproduction run of REPRODUCE_ROUNDS answers is 5 + 0.25 * REPRODUCE_ROUNDS."""
    import elicit.paper.bench_suite as suite

    clock = [0.0]

    def run_step(step, out, st, progress=True):
        clock[0] += 5.0 + 0.25 * st.rounds
        return ""

    monkeypatch.setattr(suite, "run_step", run_step)
    monkeypatch.setattr(suite, "time", types.SimpleNamespace(process_time=lambda: clock[0]))
    res = suite.measure_step("amazon", suite.SuiteSettings(), tmp_path)
    assert res["value"] == 5.0 + 0.25 * suite.REPRODUCE_ROUNDS


def test_a_commit_measured_again_is_compared_with_another_commit(monkeypatch, tmp_path):
    """The record about to be written (the same commit measured again, replacing its file)
    is not its own baseline."""
    import elicit.paper.bench_suite as suite

    suite.write_record(tmp_path, bench_record("old", "2026-01-01T00:00:00+00:00", a=1.0))
    suite.write_record(tmp_path, bench_record("now", "2026-02-01T00:00:00+00:00", a=2.0))
    now = bench_record("now", "2026-03-01T00:00:00+00:00", a=2.0)
    monkeypatch.setattr(suite, "code_version", lambda: "now")
    monkeypatch.setattr(suite, "run_suite", lambda s, progress: now)
    _, previous, text = suite.bench_suite(tmp_path, suite.SuiteSettings())
    assert previous["commit"] == "old" and "a: 1 s -> 2 s (x2.00)" in text
