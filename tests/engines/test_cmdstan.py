"""The CmdStan engine, run for real: every shipped program and named model against the numpy
twin, a user's Stan file with the exact utility, the compile lock, cmdstanpy's logging and
the command line.

Marked ``cmdstan`` (skipped without a CmdStan installation, an error under
``ELICIT_TEST_REQUIRE=cmdstan``) and ``slow``. The shipped programs are compiled once per
machine before the first of these tests (the ``cmdstan_engines`` fixture of conftest.py);
the user's program below is compiled once per session by the compile-lock fixture. How to run
them: docs/stan.md, "Running the CmdStan tests".
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import textwrap
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
from conftest import stan_data
from helpers import own_program

from elicit.engines.cmdstan_engine import CmdStanEngine
from elicit.engines.numpy_engine import NumpyEngine
from elicit.model.density import log_density
from elicit.model.result import MAPResult
from elicit.model.spec import Hyper, ModelData, all_pairs, auto_threshold_mean
from elicit.model.variants import MODELS

pytestmark = [pytest.mark.cmdstan, pytest.mark.slow]

VARIANTS = ("fixed", "learned")
CASES = [(v, m) for v in VARIANTS for m in MODELS]

#: cmdstanpy's per-run INFO lines ("Chain [1] start processing", "... done processing") and
#: the warning its stan_variable() logs for every scalar it returns
CHAIN_LINE = "processing"
SCALAR_WARNING = "stan_variable() will change"


def problem(variant: str, model: str, n_f: int, seed: int = 20) -> ModelData:
    """A synthetic-size problem (n = 20, p = 25, d = 9) in a variant and named model.

    The answers call a pair similar when it is close in the first two meta-features, so 40
    of them move gamma well away from its prior mean. For the known-coupling models a third
    of the features (two of them in answered pairs) are outside the coupled set.
    """
    rng = np.random.default_rng(seed + n_f)
    n, p, d = 20, 25, 9
    U, X = rng.normal(size=(p, d)), rng.normal(size=(n, p))
    y = X @ (np.sin(2 * U[:, 0]) + U[:, 1]) + 0.5 * rng.normal(size=n)
    pairs = all_pairs(p)
    m = auto_threshold_mean(U, np.ones(d), pairs)
    asked = pairs[rng.choice(len(pairs), n_f, replace=False)]
    f = (4 * ((U[asked[:, 0], :2] - U[asked[:, 1], :2]) ** 2).sum(axis=1) < m).astype(int)
    coupled = rng.random(p) < 2 / 3
    if n_f:
        coupled[asked[:2, 0]] = False
    hyper = Hyper(variant=variant, threshold_mean=m, model=model)
    # relevance classes of every kind (only the relevance models read them), direction
    # answers of every kind (only the direction models read them)
    relevance = np.array([(1, 0, -1, -1, -1)[j % 5] for j in range(p)])
    direction = np.array([(1, -1, 0)[j % 3] for j in range(p)])
    return ModelData(X, y, U, hyper, asked, f, coupled=coupled, relevance=relevance,
                     direction=direction)


def theta_of(r: MAPResult, variant: str) -> np.ndarray:
    return np.concatenate([r.gamma, [r.xi], [r.tau2] if variant == "learned" else [],
                           [] if r.zeta is None else [r.zeta],
                           [] if r.delta is None else [r.delta]])


def stan_log_prob(engine: CmdStanEngine, data: ModelData, theta: np.ndarray):
    """CmdStan's own log density (jacobian-free) and its gradient in u = log(theta), at theta.

    Through the engine's compiled program of ``data`` (``_compile`` returns the cached
    ``CmdStanModel``), with all 18 significant digits (CmdStan writes 6 by default).
    """
    program = engine.program(data)
    model = engine._compile(program)
    lay = data.layout
    params = program.params_to_stan(lay, theta)
    row = model.log_prob(params, program.stan_data(data.to_stan()), jacobian=False,
                         sig_figs=18).iloc[0]
    grad = np.array([row[f"g_{n}.{k}" if k else f"g_{n}"] for n, k in program.entries(lay)])
    return float(row["lp__"]), grad


# -- the shipped programs and every named model against the numpy twin ---------------------

def test_the_cases_run_the_one_shipped_program(cmdstan_engines):
    # Every variant and named model runs the one shipped program (the other files of its
    # folder are its includes), so the tests below, which go through the engines' own
    # program choice, cover it for every model.
    from elicit.engines.base import shipped_stan_file

    chosen = {cmdstan_engines[v].program(stan_data(v, m)).path.resolve() for v, m in CASES}
    assert chosen == {shipped_stan_file().resolve()}
    folder = {p.name for p in shipped_stan_file().parent.glob("*.stan")}
    assert folder == {"elicit.stan", "elicit_kernel.stan", "elicit_functions.stan"}


@pytest.mark.parametrize("n_f", [0, 40])
@pytest.mark.parametrize(("variant", "model"), CASES)
def test_map_and_log_density_match_the_numpy_twin(cmdstan_engines, variant, model, n_f):
    data = problem(variant, model, n_f)
    engine = cmdstan_engines[variant]
    got = engine.fit(data)
    ref = NumpyEngine(variant).fit(data)
    assert got.converged and ref.converged, (got.message, ref.message)
    assert got.engine == "cmdstan"
    t_got, t_ref = theta_of(got, variant), theta_of(ref, variant)

    # The same density: at the same points CmdStan's log_prob and the twin's formula differ
    # by one constant (Stan drops constant terms) and have the same gradient.
    rng = np.random.default_rng(3)
    far = t_ref * rng.uniform(0.5, 1.5, t_ref.size)
    points = [t_got, t_ref, far]
    stan = [stan_log_prob(engine, data, t) for t in points]
    twin = [log_density(t, data) for t in points]
    lp_stan, lp_twin = np.array([s[0] for s in stan]), np.array([v for v, _ in twin])
    np.testing.assert_allclose(np.diff(lp_stan), np.diff(lp_twin), rtol=1e-9, atol=1e-7)
    bounded = data.layout.bounded()
    for t, (_, g_stan), (_, g_twin) in zip(points, stan, twin):
        # d/du = theta d/dx for x = exp(u); d/du = d/dx for the unbounded zeta (u = x)
        np.testing.assert_allclose(g_stan, np.where(bounded, t, 1.0) * g_twin, rtol=1e-6,
                                   atol=1e-6)

    # The same MAP: CmdStan stops on its own tolerances (and writes 6 significant digits),
    # so its point is close to the twin's and at most a little lower in density, never
    # higher (the twin's optimiser converges more tightly; a higher density would be
    # another mode).
    scale = np.ones_like(t_ref)
    scale[data.d] = data.m  # xi on the scale of its prior mean, like gamma
    rel = np.linalg.norm((t_got - t_ref) / scale) / np.linalg.norm(t_ref / scale)
    assert rel <= 3e-3, f"MAPs differ by {rel:.2e} (relative)"
    assert lp_twin[1] - 1e-3 <= lp_twin[0] <= lp_twin[1] + 1e-6, lp_twin[:2]


def other_form(variant: str, model: str, form: str) -> ModelData:
    """The problem on a form the cases above do not reach: more rows than features (the
    p x p form: n = 30, p = 8), or sparse word counts with p = 120 (the structured path for
    the models it admits once the threshold is lowered, else the dense path's sparse rows)."""
    rng = np.random.default_rng(7)
    if form == "tall":
        n, p = 30, 8
        X = rng.normal(size=(n, p))
    else:
        n, p = 24, 120
        C = np.where(rng.random((120, p)) < 0.3 / (1.0 + np.arange(p) / 10.0),
                     1 + rng.poisson(0.3, (120, p)), 0)
        C[-1, C.sum(axis=0) == 0] = 1
        X = (C[:n] - C.mean(axis=0)) / C.std(axis=0)
    U = rng.normal(size=(p, 3))
    y = X @ (np.sin(2 * U[:, 0]) + U[:, 1]) + 0.5 * rng.normal(size=n)
    pairs = all_pairs(p)
    asked = pairs[rng.choice(len(pairs), 12, replace=False)]
    f = (4 * ((U[asked[:, 0], :2] - U[asked[:, 1], :2]) ** 2).sum(axis=1)
         < np.median(((U[pairs[:, 0]] - U[pairs[:, 1]]) ** 2).sum(axis=1))).astype(int)
    coupled = np.arange(p) % 3 != 2
    return ModelData(X, y - y.mean(), U, Hyper(variant=variant, model=model,
                                               threshold_mean=auto_threshold_mean(
                                                   U, np.ones(3), pairs)),
                     asked, f, coupled=coupled, relevance=np.resize([1, 0, -1, -1, -1], p),
                     direction=np.resize([1, -1, 0], p))


@pytest.mark.parametrize("form", ["tall", "sparse"])
@pytest.mark.parametrize(("variant", "model"), CASES)
def test_the_other_forms_log_density_and_map_match_cmdstan(cmdstan_engines, monkeypatch,
                                                           variant, model, form):
    """The numpy twin's other forms of the marginal against CmdStan's dense program at the
    same points (log density differences, gradient) and their MAPs."""
    import elicit.model.structure as structure_mod
    from elicit.model.marginal import Marginal

    monkeypatch.setattr(structure_mod, "STRUCTURED_MIN_P", 100)
    monkeypatch.setattr(structure_mod, "STRUCTURED_MAX_DENSITY", 0.2)
    data = other_form(variant, model, form)
    engine = cmdstan_engines[variant]
    ref = NumpyEngine(variant).fit(data)
    mg = Marginal.at(theta_of(ref, variant), data)
    if form == "tall":
        assert mg.basis is not None
    else:
        assert (mg.structure is not None) or (mg._rows is not None)
    got = engine.fit(data)
    assert got.converged and ref.converged, (got.message, ref.message)
    t_got, t_ref = theta_of(got, variant), theta_of(ref, variant)
    far = t_ref * np.random.default_rng(3).uniform(0.5, 1.5, t_ref.size)
    points = [t_got, t_ref, far]
    stan = [stan_log_prob(engine, data, t) for t in points]
    twin = [log_density(t, data) for t in points]
    np.testing.assert_allclose(np.diff([s[0] for s in stan]), np.diff([v for v, _ in twin]),
                               rtol=1e-9, atol=1e-7)
    bounded = data.layout.bounded()
    for t, (_, g_stan), (_, g_twin) in zip(points, stan, twin):
        np.testing.assert_allclose(g_stan, np.where(bounded, t, 1.0) * g_twin, rtol=1e-6,
                                   atol=1e-6)
    scale = np.ones_like(t_ref)
    scale[data.d] = data.m
    rel = np.linalg.norm((t_got - t_ref) / scale) / np.linalg.norm(t_ref / scale)
    assert rel <= 3e-3, f"MAPs differ by {rel:.2e} (relative)"


def test_a_warm_start_on_the_boundary_gamma_0_reaches_the_map(cmdstan_engines):
    # The numpy engine can return gamma_l = 0 exactly; a refit may start there. CmdStan
    # optimises u = log(gamma), where the gradient is gamma * d/dgamma: from a start moved
    # to only 1e-8 it was below CmdStan's tolerance at once, and the fit "converged" there.
    data = problem("fixed", "paper", 4, seed=8)
    ref = NumpyEngine("fixed").fit(data)
    start = MAPResult(np.zeros(data.d), data.m, data.hyper.tau2, 0.0, True, "test")
    got = cmdstan_engines["fixed"].fit(data, init=start)
    assert got.converged
    lp = log_density(theta_of(got, "fixed"), data)[0]
    assert lp >= ref.log_density - 1e-3, (lp, ref.log_density, got.gamma)


#: make_session_data(seed, n, p, d) of the small problems below
SMALL = (4, 12, 6, 3)


def _two_modes(cmdstan_engines):
    """A small problem whose posterior has a MAP with gamma_2 = 0 and, 0.12 lower, an
    interior local maximum that CmdStan's cold fit reaches: (data, the twin's fit, CmdStan's
    cold fit)."""
    from conftest import make_session_data

    from elicit.elicitation.elicitor import Elicitor

    X, y, U = make_session_data(*SMALL)
    twin = Elicitor(X, y, U, Hyper(variant="learned"), engine="numpy")
    twin.answer(0, 1, "similar")
    twin.answer(2, 5, "dissimilar")
    return twin.data, twin.fit, cmdstan_engines["learned"].fit(twin.data)


def test_a_map_on_the_boundary_gamma_0_and_a_second_mode(cmdstan_engines):
    """CmdStan's cold fit does not stop short of the boundary MAP: it ends in another local
    maximum of the same density, which the numpy twin's L-BFGS-B (from the same start) steps
    over. From a start in the boundary mode's basin CmdStan reaches that mode."""
    from elicit.model.density import feedback_terms, hessian_base

    data, ref, cold = _two_modes(cmdstan_engines)
    assert ref.gamma.min() <= 1e-8, ref.gamma  # the MAP is on the boundary
    t = theta_of(cold, "learned")
    lp, g = log_density(t, data)
    assert cold.converged and cold.gamma.min() > 0.1, cold.gamma
    # a stationary point of the twin's density, with a negative definite Hessian: a mode
    assert np.max(np.abs(g * np.maximum(t, 1.0))) < 1e-3, g
    H = hessian_base(t, data) + feedback_terms(t, data, True)[2]
    assert np.linalg.eigvalsh(H).max() < 0, np.linalg.eigvalsh(H)
    assert ref.log_density - 0.2 < lp < ref.log_density - 0.05, (lp, ref.log_density)

    warm = cmdstan_engines["learned"].fit(data, init=ref)
    assert warm.converged and warm.gamma.min() < 1e-6, warm.gamma
    lp_warm = log_density(theta_of(warm, "learned"), data)[0]
    assert lp_warm >= ref.log_density - 1e-6, (lp_warm, ref.log_density)


def test_the_map_and_lp_are_not_rounded_to_six_digits(cmdstan_engines):
    # CmdStan writes 6 significant digits unless told otherwise: the MAP and lp__ were
    # rounded (lp__ by up to 5e-5 here). The fit's lp__ must be the program's log density at
    # the MAP it reports, to rounding.
    data = problem("learned", "paper", 40)
    engine = cmdstan_engines["learned"]
    got = engine.fit(data)
    t = theta_of(got, "learned")
    lp_u, grad_u = stan_log_prob(engine, data, t)
    assert got.log_density == pytest.approx(lp_u, rel=0, abs=1e-9)
    # the engine's own log_prob (--check-engine's): the gradient in theta, CmdStan's in
    # u = log(theta) divided by theta
    lp, grad = engine.log_prob(data, t)
    assert lp == pytest.approx(lp_u, rel=0, abs=1e-12)
    np.testing.assert_allclose(grad * t, grad_u, rtol=1e-9, atol=1e-12)


# -- the compiled programs: one per program text and CmdStan installation, one lock ----------

def _cmdstan_tree_copy(root: Path) -> Path:
    """Another valid CmdStan installation: a folder of links to the real one's entries."""
    import cmdstanpy

    real = Path(cmdstanpy.cmdstan_path())
    copy = root / "cmdstan-copy"
    copy.mkdir()
    for entry in real.iterdir():
        (copy / entry.name).symlink_to(entry)
    return copy


def test_compiled_programs_are_keyed_by_the_cmdstan_installation(cmdstan_engines, tmp_path,
                                                                 monkeypatch):
    # An executable links to its installation's TBB by absolute path: one compiled by a
    # tree that was moved or deleted fails with "libtbb.so.2: cannot open shared object
    # file". Each installation must compile its own.
    import cmdstanpy

    compiled: list[Path] = []

    class Recorder:  # stands in for the compiler: which .stan file would it compile?
        def __init__(self, stan_file: str) -> None:
            compiled.append(Path(stan_file))

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setattr(cmdstanpy, "CmdStanModel", Recorder)
    CmdStanEngine("fixed")
    CmdStanEngine("fixed")  # the same installation: the same program file
    monkeypatch.setenv("CMDSTAN", str(_cmdstan_tree_copy(tmp_path)))
    CmdStanEngine("fixed")
    assert compiled[0] == compiled[1]
    assert compiled[2] != compiled[0], compiled
    assert compiled[2].read_text() == compiled[0].read_text()


def test_every_compile_waits_for_the_one_compile_lock(cmdstan_engines, caplog):
    # CmdStan's precompiled header is shared by every program: two first compiles of
    # *different* programs in a fresh installation both built it. So one lock serves every
    # program: while it is held, another program's engine waits (and says so).
    from elicit.engines.cmdstan_engine import compile_lock

    done = threading.Event()
    failed: list[BaseException] = []

    def build() -> None:
        try:
            CmdStanEngine("learned")  # the learned-tau2 program; the holder's is none
        except BaseException as exc:  # noqa: BLE001  (reported below)
            failed.append(exc)
        done.set()

    caplog.set_level(logging.WARNING, logger="elicit.engines.cmdstan_engine")
    with compile_lock():
        worker = threading.Thread(target=build)
        worker.start()
        # until the builder reports that it waits, or (wrongly) finishes
        deadline = time.monotonic() + 600
        while not done.is_set() and "waiting for a CmdStan compile" not in caplog.text:
            assert time.monotonic() < deadline, "the builder neither waited nor finished"
            time.sleep(0.05)
        finished_while_held = done.is_set()
    worker.join()
    assert not failed, failed
    assert not finished_while_held, "a compile ran while another held the compile lock"
    assert "waiting for a CmdStan compile" in caplog.text


# -- a user's program: compiled by two workers at once, then fitted -------------------------

#: a user's program: a learned-tau2 program of the paper's model (tau and its one-entry data
#: declared as scalars) with a guard of its own
GUARD = 'if (threshold_mean > 1e6) reject("threshold_mean ", threshold_mean, " is too large");'

_WORKER = textwrap.dedent("""
    import sys
    from elicit.engines.cmdstan_engine import CmdStanEngine
    CmdStanEngine("learned", stan_file=sys.argv[1])
    print("built", flush=True)
""")


@dataclass
class UserProgram:
    path: Path
    cache: Path        #: XDG_CACHE_HOME holding its compiled executable
    workers: list      #: (returncode, stdout, stderr) of the two workers that compiled it


@pytest.fixture(scope="session")
def user_program(cmdstan_engines, tmp_path_factory) -> UserProgram:
    """A user's Stan file, compiled by two worker processes started together into an empty
    cache: the engine's compile lock must make one wait for the other's build.

    Depends on ``cmdstan_engines``, so that the workers' wait is for this program, not for
    the shipped ones.
    """
    code = own_program(learned=True)
    assert code.count("model {") == 1
    code = code.replace("model {", "model {\n  " + GUARD, 1)
    root = tmp_path_factory.mktemp("user_program")
    path = root / "my_model.stan"
    path.write_text("// my_model.stan: a user's program\n" + code)
    env = {**os.environ, "XDG_CACHE_HOME": str(root / "cache")}
    procs = [subprocess.Popen([sys.executable, "-c", _WORKER, str(path)], env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for _ in range(2)]
    workers = [(p.wait(), p.stdout.read(), p.stderr.read()) for p in procs]
    return UserProgram(path, root / "cache", workers)


def test_two_workers_compile_a_program_once(user_program):
    for rc, out, err in user_program.workers:
        assert rc == 0 and out.strip() == "built", err[-3000:]
        assert "Text file busy" not in err
    # cmdstanpy announces each compile at INFO ("compiling stan file ..."); the worker that
    # waited for the lock found the executable up to date.
    compiles = [err.count("compiling stan file") for _, _, err in user_program.workers]
    assert sorted(compiles) == [0, 1], [err for _, _, err in user_program.workers]
    exes = [p for p in (user_program.cache / "elicit" / "stan").iterdir()
            if p.is_file() and os.access(p, os.X_OK)]
    assert len(exes) == 1, exes


def test_a_users_stan_file_with_the_exact_utility(user_program, monkeypatch):
    from conftest import make_session_data

    from elicit.elicitation.elicitor import Elicitor

    monkeypatch.setenv("XDG_CACHE_HOME", str(user_program.cache))  # its compiled executable
    X, y, U = make_session_data(*SMALL)
    hyper = Hyper(variant="learned")
    mine = Elicitor(X, y, U, hyper, engine="cmdstan", stan_file=user_program.path,
                    utility="exact")
    twin = Elicitor(X, y, U, hyper, engine="numpy", utility="exact")
    assert isinstance(mine.engine, CmdStanEngine) and mine.engine.custom
    assert mine.hyper.threshold_mean == pytest.approx(twin.hyper.threshold_mean, rel=1e-3)
    for el in (mine, twin):
        el.answer(0, 1, "dissimilar")
        el.answer(2, 5, "similar")
    assert mine.fit.engine == "cmdstan"
    # An interior MAP (see test_a_map_on_the_boundary_gamma_0 for why that matters).
    assert twin.fit.gamma.min() > 0.1, twin.fit.gamma
    pairs = twin.unasked()
    got, ref = mine.score(pairs), twin.score(pairs)
    assert got.exact.all() and ref.exact.all()
    # Every candidate's expected gain, from two refits each on the user's program. CmdStan
    # stops on its own tolerances, so a gain is known to a share of the largest one: gains
    # 1e4 times below it (4.5e-8 against 4e-4) differed by 2% on one CI machine.
    np.testing.assert_allclose(got.utility, ref.utility, rtol=2e-2,
                               atol=1e-3 * np.abs(ref.utility).max())
    assert np.argmax(got.utility) == np.argmax(ref.utility)


def test_a_users_stan_file_on_the_command_line(user_program, tmp_path):
    """`elicit synthetic --stan-file ... --utility exact` on problems of one's own."""
    rng = np.random.default_rng(5)
    problems = tmp_path / "problems"
    problems.mkdir()
    X, U = rng.normal(size=(16, 6)), rng.normal(size=(6, 3))
    beta = U[:, 0] - U[:, 1]
    np.savez(problems / "run000.npz", X=X[:12], y=X[:12] @ beta + 0.3 * rng.normal(size=12),
             U=U, X_test=X[12:], y_test=X[12:] @ beta, groups=(U[:, 0] > 0).astype(int))
    out = tmp_path / "out"
    res = _elicit(["synthetic", "--problems", str(problems), "--rounds", "2",
                   "--strategies", "sequential", "--engine", "cmdstan",
                   "--stan-file", str(user_program.path), "--utility", "exact",
                   "--quiet", "--out", str(out)],
                  {"XDG_CACHE_HOME": str(user_program.cache)})
    assert res.returncode == 0, res.stderr[-3000:]
    _assert_quiet(res.stderr)
    config = json.loads((out / "config.json").read_text())
    assert Path(config["stan_file"]).name == "my_model.stan" and config["utility"] == "exact"


def test_a_failed_fit_is_one_line_and_its_output_goes_to_a_log_file(user_program,
                                                                    monkeypatch):
    # The error used to embed CmdStan's whole console output, twice (about 60 lines): the
    # command, its argument listing and, at the end, what went wrong.
    from elicit.errors import EngineError

    monkeypatch.setenv("XDG_CACHE_HOME", str(user_program.cache))
    engine = CmdStanEngine("learned", stan_file=user_program.path)
    data = stan_data("learned")
    bad = ModelData(data.X, data.y, data.U, data.hyper.with_threshold_mean(1e7))
    with pytest.raises(EngineError) as err:
        engine.fit(bad)
    msg = str(err.value)
    assert "\n" not in msg and len(msg) < 600, msg
    assert "threshold_mean 1e+07 is too large" in msg, msg
    # located in the user's file, not in the inlined copy CmdStan compiled
    at = user_program.path.read_text().split("\n").index("  " + GUARD) + 1
    assert f"(in '{user_program.path}', line {at}, column " in msg, msg
    log = err.value.log_file
    assert log is not None and log.is_file() and str(log) in msg, msg
    text = log.read_text()
    for what in ("--- lbfgs", "--- newton", "method = optimize", "threshold_mean 1e+07"):
        assert what in text, what


def test_a_fit_stopped_by_the_iteration_limit_is_not_called_converged(cmdstan_engines):
    # CmdStan notes "Maximum number of iterations hit, may not be at an optima" and cmdstanpy
    # still says converged: such a fit was reported as a MAP.
    data = problem("fixed", "paper", 20)
    full = cmdstan_engines["fixed"].fit(data)
    short = CmdStanEngine("fixed")
    short.max_iter = 2
    cut = short.fit(data)
    assert full.converged and full.n_iter > 2
    assert not cut.converged and "iteration limit (2)" in cut.message, cut.message


# -- cmdstanpy's logging -------------------------------------------------------------------

_FITS = textwrap.dedent("""
    import sys
    import numpy as np
    from elicit.engines.cmdstan_engine import CmdStanEngine
    from elicit.errors import EngineError
    from elicit.model.spec import Hyper, ModelData

    engine = CmdStanEngine("learned", stan_file=sys.argv[1])
    print("--- fits", file=sys.stderr, flush=True)
    rng = np.random.default_rng(0)
    X, U = rng.normal(size=(8, 5)), rng.uniform(0.1, 1.0, size=(5, 2))
    data = ModelData(X, X @ rng.normal(size=5), U, Hyper(variant="learned", threshold_mean=1.0),
                     np.array([[0, 1], [2, 3]]), np.array([1, 0]))
    for _ in range(3):
        fit = engine.fit(data)
    print("fit", fit.converged, fit.xi, fit.tau2, flush=True)
    bad = ModelData(X, data.y, U, data.hyper.with_threshold_mean(1e7))
    try:
        engine.fit(bad)
    except EngineError as exc:
        print("error", exc, flush=True)
""")


def test_fits_log_no_chain_lines_and_no_scalar_warning_but_errors_reach_the_user(
        user_program):
    # A fresh process, as a user's: cmdstanpy sets its logger up the first time it logs.
    env = {**os.environ, "XDG_CACHE_HOME": str(user_program.cache)}
    res = subprocess.run([sys.executable, "-c", _FITS, str(user_program.path)], env=env,
                         capture_output=True, text=True)
    assert res.returncode == 0, res.stderr[-3000:]
    fits = res.stderr.split("--- fits\n", 1)[1].splitlines()
    ok = [line for line in res.stdout.splitlines() if line.startswith("fit ")]
    assert ok and ok[0].startswith("fit True"), res.stdout
    # Not a line from cmdstanpy, though the good fits read the scalars xi and tau2 and the
    # failing one ends in cmdstanpy's ERROR records ("Chain [1] error: code '1' Operation
    # not permitted", an errno text for exit code 1): the exception says what went wrong
    # and where the whole output is.
    logged = [line for line in fits if "cmdstanpy" in line]
    assert not logged, fits
    error = [line for line in res.stdout.splitlines() if line.startswith("error ")]
    assert error and "CmdStan optimisation failed" in error[0], res.stdout
    assert "threshold_mean 1e+07 is too large" in res.stdout, res.stdout
    _assert_quiet(res.stderr)


# -- the command line ----------------------------------------------------------------------

def _elicit(args: list[str], env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "elicit", *args], capture_output=True,
                          text=True, env={**os.environ, **(env or {})})


def _assert_quiet(stderr: str) -> None:
    chain = [line for line in stderr.splitlines() if CHAIN_LINE in line]
    assert not chain, f"{len(chain)} cmdstanpy chain lines, e.g. {chain[:2]}"
    assert SCALAR_WARNING not in stderr


def test_a_cmdstan_sweep_with_two_workers_prints_no_chain_lines(cmdstan_engines, tmp_path):
    res = _elicit(["synthetic", "--engine", "cmdstan", "--runs", "2", "--rounds", "2",
                   "--jobs", "2", "--seed", "0", "--out", str(tmp_path / "out")])
    assert res.returncode == 0, res.stderr[-3000:]
    _assert_quiet(res.stderr)
    parts = sorted((tmp_path / "out").glob("parts/**/run*.json"))
    assert len(parts) == 6, parts  # 2 runs x 3 strategies


def test_check_engine_run_finishes(cmdstan_engines, tmp_path):
    # The multimodal synthetic problem: CmdStan's warm refits and the twin's end in
    # different stationary points after some answers (every run used to stop there).
    res = _elicit(["synthetic", "--engine", "cmdstan", "--check-engine", "--runs", "2",
                   "--rounds", "5", "--seed", "0", "--out", str(tmp_path / "out")])
    assert res.returncode == 0, res.stderr[-3000:]
    _assert_quiet(res.stderr)
    assert "is not a stationary point" not in res.stderr


def test_check_engine_continues_from_the_higher_of_two_modes(cmdstan_engines):
    # The problem of test_a_map_on_the_boundary_gamma_0_and_a_second_mode: after the second
    # answer CmdStan's warm refit ends in the interior mode, the twin's in the boundary mode,
    # 0.12 higher. Checked, the fit is the twin's point, as a result of the cmdstan engine
    # with CmdStan's lp__ there.
    from conftest import make_session_data

    from elicit.elicitation.elicitor import Elicitor
    from elicit.engines.checked import CheckedEngine

    engine = cmdstan_engines["learned"]
    checked = CheckedEngine(engine)
    el = Elicitor(*make_session_data(*SMALL), Hyper(variant="learned"), engine=checked)
    el.answer(0, 1, "similar")
    assert checked.records == []
    el.answer(2, 5, "dissimilar")
    rec = checked.records[-1]
    assert rec.n_answers == 2 and rec.kept == "twin"
    assert rec.lp_twin - rec.lp_engine == pytest.approx(0.117, abs=0.01)
    got = el.fit
    assert got.engine == "cmdstan" and got.gamma.min() == 0.0, got
    t = theta_of(got, "learned")
    assert log_density(t, el.data)[0] == pytest.approx(rec.lp_twin, abs=1e-9)
    lp = engine.log_prob(el.data, np.maximum(t, 1e-12))[0]
    assert got.log_density == pytest.approx(lp, abs=1e-6)
