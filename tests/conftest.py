"""Shared fixtures, and what a test needs from the machine.

Fixtures: a small random problem (n = 12, p = 10, d = 3) in both model variants; everything
here is cheap to build (no fitting), so tests get fresh, unshared objects.

Markers (``pyproject.toml``) say what a test needs, and this file skips it, with the reason,
when that is missing: ``data`` (the paper's files in the data directory), ``cmdstan`` (a
CmdStan installation), ``pystan`` (PyStan). ``ELICIT_TEST_REQUIRE=cmdstan,pystan,data`` turns
those skips into failures (CI sets it, so a missing CmdStan cannot pass as a skip).

Stan builds happen once per session, before the first test that needs them: the session
fixtures :func:`_pystan_builds` and :func:`cmdstan_engines` have the engines compile every
shipped program (under the engines' inter-process build lock, with no client timeout), so no
test pays for, or times out on, a compile of a shipped program.
"""

from __future__ import annotations

import contextlib
import functools
import gc
import os
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
from threadpoolctl import threadpool_limits

from elicit.model.spec import Hyper, ModelData, all_pairs, auto_threshold_mean

# The tests' problems are small, where a second OpenBLAS thread only spins (a 100 x 100
# inverse: 14 ms with two, 0.2 ms with one; elicit.internal.threads): one BLAS thread here,
# and in the processes the tests start (about a seventh of the fast suite's CPU time).
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
threadpool_limits(1, user_api="blas")


def _files_in_memory() -> None:
    """The tests' files (``tmp_path``) in a memory file system where there is a roomy one
    (Linux's /dev/shm): every answer, undo and creation of a session is an SQLite commit with
    its fsyncs, which on a disk cost the fast tests about half a second of system CPU and
    many seconds of waiting. What the tests check is the same on any file system; a container's
    small /dev/shm (64 MiB by default) is left alone."""
    shm = "/dev/shm"
    if "PYTEST_DEBUG_TEMPROOT" in os.environ or not os.access(shm, os.W_OK | os.X_OK):
        return
    st = os.statvfs(shm)
    if st.f_bavail * st.f_frsize >= 2**30:
        os.environ["PYTEST_DEBUG_TEMPROOT"] = shm  # where pytest makes its pytest-of-USER


_files_in_memory()


def _share_compiled_templates() -> None:
    """Every Flask app of the tests (a test that loads a page makes one) compiled the page's
    template anew, ~20 ms of CPU each, a second over the fast tests: they share the compiled
    template instead (jinja2's bytecode cache, whose entries are checked against the template's
    source, so a changed template is compiled again). Rendering is unchanged."""
    try:
        import flask
        import jinja2
    except ImportError:  # the web tests skip without Flask
        return

    class Compiled(jinja2.BytecodeCache):
        def __init__(self) -> None:
            self.codes: dict[str, bytes] = {}

        def load_bytecode(self, bucket) -> None:
            if (code := self.codes.get(bucket.key)) is not None:
                bucket.bytecode_from_string(code)

        def dump_bytecode(self, bucket) -> None:
            self.codes[bucket.key] = bucket.bytecode_to_string()

    flask.Flask.jinja_options = {**flask.Flask.jinja_options, "bytecode_cache": Compiled()}


_share_compiled_templates()

N, P, D = 12, 10, 3
N_FEEDBACK = 4


@dataclass
class SmallArrays:
    """Raw inputs of the small problem, for APIs that take arrays (``Elicitor``)."""

    X: np.ndarray
    y: np.ndarray
    U: np.ndarray
    groups: np.ndarray
    m: float


def small_arrays(seed: int = 0, n: int = N, p: int = P, d: int = D) -> SmallArrays:
    """Random regression data whose meta-features contain exact zeros.

    About 40% of the meta-feature entries are 0, as with word counts, so the code paths that
    exploit the sparsity of the columns of U are exercised. The true beta follows the first
    two meta-features, so gamma matters for the fit.
    """
    rng = np.random.default_rng(seed)
    U = rng.uniform(0.2, 1.5, size=(p, d)) * (rng.random((p, d)) < 0.6)
    X = rng.normal(size=(n, p))
    beta = U[:, 0] - U[:, 1] + 0.3 * rng.normal(size=p)
    y = X @ beta + 0.5 * rng.normal(size=n)
    groups = np.argmax(U[:, :2], axis=1)  # a grouping for GroupOracle-based tests
    m = auto_threshold_mean(U, np.ones(d), all_pairs(p))
    return SmallArrays(X, y, U, groups, m)


def make_small_data(variant: str = "fixed", n_feedback: int = N_FEEDBACK, seed: int = 0,
                    tau2: float = 0.5, **shape) -> ModelData:
    """:class:`ModelData` of the small problem with ``n_feedback`` answers.

    Answers follow the meta-features (similar when the gamma = 1 distance is below the
    threshold prior mean), with at least one answer of each kind when ``n_feedback >= 2`` so
    that both branches of the Bernoulli likelihood are present.
    """
    a = small_arrays(seed, **shape)
    rng = np.random.default_rng(seed + 1000)
    pairs = all_pairs(a.X.shape[1])
    asked = pairs[rng.choice(len(pairs), n_feedback, replace=False)]
    f = (((a.U[asked[:, 0]] - a.U[asked[:, 1]]) ** 2).sum(axis=1) < a.m).astype(int)
    if n_feedback >= 2:
        f[0], f[1] = 1, 0
    hyper = Hyper(variant=variant, tau2=tau2, threshold_mean=a.m)
    return ModelData(a.X, a.y, a.U, hyper, asked, f)


@pytest.fixture(params=["fixed", "learned"])
def variant(request) -> str:
    return request.param


@pytest.fixture
def small_data(variant) -> ModelData:
    """The small problem with a few answers, in each variant."""
    return make_small_data(variant)


@pytest.fixture
def small_data_nofb(variant) -> ModelData:
    """The small problem without feedback, in each variant."""
    return make_small_data(variant, n_feedback=0)


@pytest.fixture
def arrays() -> SmallArrays:
    return small_arrays()


@pytest.fixture
def toy():
    """The toy kind of question of tests/toykind.py, registered for the test."""
    import toykind

    with toykind.registered() as kind:
        yield kind


@contextlib.contextmanager
def figures_unsaved() -> Iterator[list]:
    """A sweep's figures drawn but not written to disk, for tests that read only its tables:
    a sweep (``sweep``, ``realdata``, ``synthetic``) still builds its figures from its curves
    (~0.07 s of CPU), but saving the MSE figure costs ~0.1 s more as a PNG and ~0.25 s as a
    PNG and a PDF, more than the rest of a tiny sweep. Yields the paths not written. The
    files are checked where they are the subject: ``tests/harness/test_figures.py`` and the
    tests that call ``assert_png`` on a sweep's figure or read the report's links to them
    (``test_experiment.py``, ``test_realdata.py``, ``test_problems_dir.py``,
    ``test_report_recommended.py``, the slow tests of ``test_realdata_corpus.py``)."""
    from matplotlib.figure import Figure

    unsaved: list = []
    save = Figure.savefig

    def savefig(self, fname, *args, **kw):
        # a sweep's figures only (fig3_K.png, fig4_mse.png, fig5_NAME.png and .pdf): a
        # session's plots and the web pages' images are still made whole
        if isinstance(fname, (str, os.PathLike)) and Path(fname).name.startswith("fig"):
            unsaved.append(Path(fname))
            return None
        return save(self, fname, *args, **kw)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(Figure, "savefig", savefig)
        yield unsaved


@pytest.fixture
def unsaved_figures() -> Iterator[list]:
    """:func:`figures_unsaved` for one test."""
    with figures_unsaved() as unsaved:
        yield unsaved


@pytest.fixture
def one_blas_thread():
    """Limit BLAS to one thread for the test.

    On small matrices multi-threaded OpenBLAS is much slower than one thread (each L-BFGS-B
    iteration of scipy costs ~10 ms instead of ~0.3 ms on two cores), and the library's own
    entry points (``Elicitor``, sweeps) already run single-threaded.
    """
    from elicit.internal.threads import one_blas_thread as limit

    with limit():
        yield


@pytest.fixture
def registries_restored():
    """Whatever the test registers (models, strategies, utilities, kinds of question and their
    answers) is removed afterwards: the registries are global, and a doc's example registers
    from its own code, as a user would."""
    from elicit.elicitation import kinds, strategies, utility
    from elicit.elicitation.answers import Answer
    from elicit.model import variants

    before = {"kinds": set(kinds.KINDS), "strategies": set(strategies.STRATEGY_REGISTRY),
              "utilities": set(utility.UTILITIES), "models": set(variants.MODELS),
              "answers": {a.value for a in Answer}}
    yield
    for name in set(kinds.KINDS) - before["kinds"]:
        kinds.unregister_kind(name)
    for a in [a for a in Answer if a.value not in before["answers"]]:
        Answer.forget(a)
    for name in set(strategies.STRATEGY_REGISTRY) - before["strategies"]:
        strategies.unregister_strategy(name)
    for name in set(utility.UTILITIES) - before["utilities"]:
        utility.unregister_utility(name)
    for name in set(variants.MODELS) - before["models"]:
        variants.unregister_model(name)


# Ten answers of a synthetic run (seed 1, run 3) after which a warm L-BFGS-B refit of the
# numpy engine stops far from the optimum yet reports convergence (see test_engine_numpy).
STALL_PAIRS = np.array([(13, 16), (20, 22), (0, 16), (10, 19), (16, 18), (13, 18), (7, 13),
                        (12, 18), (7, 12), (8, 15)])


def stalled_fit_chain():
    """Yield (data, fit) of a chain of warm L-BFGS-B fits (``init=Params``), one per answer
    of :data:`STALL_PAIRS`, on synthetic run (seed 1, run 3)."""
    from elicit.engines.numpy_engine import NumpyEngine
    from elicit.model.simulate import make_synthetic

    # the data of the synthetic experiment's run 3 with seed 1; similar = same group
    problem = make_synthetic(np.random.default_rng(np.random.SeedSequence([1, 3])))
    g = problem.groups
    f = np.array([int(g[i] == g[j]) for i, j in STALL_PAIRS])
    hyper = Hyper(variant="learned")
    engine = NumpyEngine("learned")
    with threadpool_limits(limits=1, user_api="blas"):
        probe = ModelData(problem.X, problem.y, problem.U, hyper.with_threshold_mean(1.0))
        m = auto_threshold_mean(problem.U, engine.fit(probe).gamma,
                                all_pairs(problem.X.shape[1]))
        base = ModelData(problem.X, problem.y, problem.U, hyper.with_threshold_mean(m))
        fit = engine.fit(base)
        for k in range(1, len(STALL_PAIRS) + 1):
            data = base.with_feedback(STALL_PAIRS[:k], f[:k])
            fit = engine.fit(data, init=fit.params)
            yield data, fit


@pytest.fixture(scope="session")
def stalled_chain() -> list:
    """The (data, fit) pairs of :func:`stalled_fit_chain`, computed once per session."""
    return list(stalled_fit_chain())


#: a session file written by the format-1 code (before several experts), for the migration tests
FORMAT1_SESSION = Path(__file__).resolve().parent / "fixtures" / "format1.session"


# -- sessions: a tiny data set with readable feature names ---------------------------------

SESSION_NAMES = ["price", "quality", "noise", "lid", "handle", "warranty", "colour", "weight"]


def make_session_data(seed: int = 1, n: int = 12, p: int = 8, d: int = 3):
    """(X, y, U) of a tiny regression problem for session tests."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, p))
    U = rng.normal(size=(p, d))
    y = X @ rng.normal(size=p) + 0.1 * rng.normal(size=n)
    return X, y, U


# -- the real data (the paper's matrices in the data directory) -----------------------------


def _real_data_dir():
    from elicit.data import PAPER_FILES, STOPWORDS_FILE, resolve_data_dir
    from elicit.errors import ElicitError

    try:
        return resolve_data_dir(required=[*PAPER_FILES["amazon"][:2], *PAPER_FILES["yelp"][:2],
                                          STOPWORDS_FILE])
    except ElicitError:
        return None


#: the data directory holding the paper's files, or None (tests that need it then skip)
REAL_DATA_DIR = _real_data_dir()
#: marks a test that reads the paper's files (skipped, with the reason, when they are missing)
needs_data = pytest.mark.data


@pytest.fixture(scope="session")
def paper_dataset():
    """``paper_dataset(name)``: ``load_dataset(name, REAL_DATA_DIR)``, loaded once per session
    (a load parses the whole file, ~0.3 s CPU) for the tests that only read it; its arrays are
    read-only, so that no test can change what the next one reads. It is the load that
    ``paper_source`` keeps for the process, so a command or sweep of the data in a later test
    reads it too (and, read-only, cannot change it either). A test of the loading itself
    calls ``load_dataset``."""
    from elicit.data.sources import paper_source

    loaded: dict = {}

    def get(name: str):
        if name not in loaded:
            ds = paper_source(name, REAL_DATA_DIR).load()
            ds.counts.setflags(write=False)
            ds.ratings.setflags(write=False)
            loaded[name] = ds
        return loaded[name]

    return get


# -- what a marked test needs, and skipping it when that is missing ---------------------------

def _pystan_missing() -> str | None:
    # Found, not imported: importing PyStan costs a second and prints marshmallow warnings.
    import importlib.util

    spec = importlib.util.find_spec("stan")
    if spec is None or spec.origin in (None, "namespace"):  # the repository's stan/ folder
        return "PyStan is not installed (pip install 'elicit[pystan]')"
    return None


def _cmdstan_missing() -> str | None:
    from elicit.engines.cmdstan_engine import cmdstan_missing

    why = cmdstan_missing()
    return None if why is None else f"{why}; see docs/stan.md"


def _data_missing() -> str | None:
    if REAL_DATA_DIR is not None:
        return None
    return ("real data directory not found (set ELICIT_DATA or provide <repo>/data or "
            "<repo>/../shared/data with the paper's files)")


def _stanc_missing() -> str | None:
    from elicit.engines.contract import find_stanc
    from elicit.errors import EngineUnavailable

    try:
        find_stanc()
    except EngineUnavailable as exc:
        return str(exc)
    return None


#: marks a test that reads Stan programs with stanc (which PyStan and CmdStan ship) but
#: builds none (skipped, with the reason, without either)
needs_stanc = pytest.mark.skipif(_stanc_missing() is not None,
                                 reason="no stanc: neither PyStan nor CmdStan is installed")


#: marker -> function returning why the machine cannot run such a test (None: it can)
_NEEDS = {"data": _data_missing, "cmdstan": _cmdstan_missing, "pystan": _pystan_missing}


@functools.cache
def missing(marker: str) -> str | None:
    """Why tests marked ``marker`` cannot run here, or None."""
    return _NEEDS[marker]()


def _required() -> set[str]:
    return {m.strip() for m in os.environ.get("ELICIT_TEST_REQUIRE", "").split(",") if m.strip()}


def pytest_configure(config):
    unknown = _required() - set(_NEEDS)
    if unknown:
        raise pytest.UsageError(f"ELICIT_TEST_REQUIRE names unknown markers {sorted(unknown)}; "
                                f"choose among {', '.join(_NEEDS)}")


def pytest_collection_finish(session):
    # The modules and the collected tests live to the end: frozen out of the cyclic garbage
    # collector's way, its full collections scan only what the tests make (a third of a
    # second less over the fast tests).
    gc.collect()
    gc.freeze()


# The cyclic garbage collector runs after 5,000 net allocations instead of 700: the tests
# allocate fast, and most of the collector's passes found nothing to free (its time in the
# tests of tests/session and tests/elicitation: 0.60 -> 0.32 s). Cycles still go, later.
gc.set_threshold(5000, 10, 10)


#: the node ids of the tests that carry each requirement's marker (the summary counts these:
#: a report's keywords also hold its folders' names, and every test in tests/data has "data")
_MARKED: dict[str, set[str]] = {}


@pytest.hookimpl(trylast=True)  # after -m/-k deselection: check only what will run
def pytest_collection_modifyitems(config, items):
    for marker in _NEEDS:
        _MARKED[marker] = {i.nodeid for i in items if i.get_closest_marker(marker) is not None}
    for item in items:
        for marker in _NEEDS:
            if (item.get_closest_marker(marker) is not None and marker not in _required()
                    and (why := missing(marker))):
                item.add_marker(pytest.mark.skip(reason=why))


def pytest_runtest_setup(item):
    for marker in _required():
        if item.get_closest_marker(marker) is not None and (why := missing(marker)):
            pytest.fail(f"ELICIT_TEST_REQUIRE has {marker}, but {why}", pytrace=False)


def pytest_report_header(config):
    lines = []
    for marker in _NEEDS:
        why = missing(marker)
        required = " (required)" if marker in _required() else ""
        lines.append(f"{marker} tests{required}: {'skipped: ' + why if why else 'run'}")
    if missing("cmdstan") is None:
        import cmdstanpy

        lines.append(f"cmdstan: {cmdstanpy.cmdstan_path()}")
    return lines


def pytest_terminal_summary(terminalreporter):
    """One line per marker: how its tests ended (so a CI log shows the CmdStan tests ran)."""
    counts: dict[str, dict[str, int]] = {m: {} for m in _NEEDS}
    for outcome in ("passed", "failed", "skipped", "error", "xfailed", "xpassed"):
        for report in terminalreporter.stats.get(outcome, []):
            if getattr(report, "when", "call") != "call" and outcome == "passed":
                continue
            for marker in _NEEDS:
                if report.nodeid in _MARKED.get(marker, ()):
                    counts[marker][outcome] = counts[marker].get(outcome, 0) + 1
    shown = {m: c for m, c in counts.items() if c}
    if shown:
        terminalreporter.section("tests by requirement")
        for marker, c in shown.items():
            terminalreporter.write_line(
                f"{marker}: " + ", ".join(f"{n} {outcome}" for outcome, n in c.items()))


# -- Stan builds: once per session, before the tests that need them ---------------------------

def _session_needs(request, marker: str) -> bool:
    """Whether a test of the session needs the shipped programs built for ``marker``'s
    engine. A test that needs the engine installed but builds none of its shipped programs
    (a stand-in build, a program refused before any build) says ``builds=False``
    (``pytest.mark.pystan(builds=False)``): the fast tests have only such ones, and loading
    the programs' builds cost them more than a second each call."""
    marks = (item.get_closest_marker(marker) for item in request.session.items)
    return (any(m is not None and m.kwargs.get("builds", True) for m in marks)
            and missing(marker) is None)


def _announce(request, line: str) -> None:
    """Print ``line`` past pytest's output capture (a build can take minutes)."""
    capman = request.config.pluginmanager.getplugin("capturemanager")
    with capman.global_and_fixture_disabled():
        print(f"\n[{line}]", flush=True)


def stan_data(variant: str = "fixed", model: str = "paper", n: int = 6, p: int = 4,
              d: int = 2, seed: int = 0):
    """A tiny :class:`ModelData` of a variant and named model (to pick and build programs)."""
    from elicit.model.spec import Hyper, ModelData

    rng = np.random.default_rng(seed)
    X, U = rng.normal(size=(n, p)), rng.uniform(0.1, 1.0, size=(p, d))
    y = X @ rng.normal(size=p) + 0.3 * rng.normal(size=n)
    hyper = Hyper(variant=variant, threshold_mean=1.0, model=model)
    return ModelData(X, y, U, hyper, np.array([[0, 1], [1, 2]]), np.array([1, 0]))


def _build_every_program(request, engines: dict, use, what: str) -> None:
    """``use(engine, data)`` for every variant and named model, so that each engine picks,
    and compiles, the program of every model (:data:`elicit.model.variants.MODELS`).

    The engines compile each program once, under their inter-process build lock and without
    a client timeout.
    """
    import time

    from elicit.model.variants import MODELS

    t = time.perf_counter()
    for variant, engine in engines.items():
        for model in MODELS:
            use(engine, stan_data(variant, model))
    if (elapsed := time.perf_counter() - t) > 5:
        _announce(request, f"{what} builds of the shipped programs: {elapsed:.0f} s")


@pytest.fixture(scope="session", autouse=True)
def _pystan_builds(request) -> None:
    """Compile the shipped programs for PyStan once, if the session has ``pystan`` tests
    that need them (not ``builds=False``)."""
    if _session_needs(request, "pystan"):
        from elicit.engines.pystan_engine import PyStanEngine

        engines = {v: PyStanEngine(v) for v in ("fixed", "learned")}
        _build_every_program(request, engines, lambda e, data: e.model(data), "PyStan")


@pytest.fixture(scope="session")
def cmdstan_engines(request) -> Iterator[dict]:
    """One :class:`CmdStanEngine` per tau2 variant, with every shipped program compiled.

    The engines pick each model's program from the data; a tiny fit per variant and model
    compiles the ones not compiled yet (CmdStan's compile has no timeout; the engine's lock
    makes a concurrent process wait for it).
    """
    if (why := missing("cmdstan")) is not None:
        pytest.skip(why)
    from elicit.engines.cmdstan_engine import CmdStanEngine

    engines = {v: CmdStanEngine(v) for v in ("fixed", "learned")}
    _build_every_program(request, engines, lambda e, data: e.fit(data), "CmdStan")
    yield engines


def read_only_run(folder: Path, argv: list[str]) -> subprocess.CompletedProcess | None:
    """Run the CLI with ``folder`` read-only: a read-only bind mount (as root, where
    permission bits do not stop writes), else plain permission bits."""
    runs = read_only_runs(folder, argv)
    return None if runs is None else runs[0]


def read_only_runs(folder: Path, *argvs: list[str]) -> list[subprocess.CompletedProcess] | None:
    """``elicit.cli.main.main`` on each of ``argvs``, one after the other, in a child process
    that sees ``folder`` read-only; None where no read-only folder can be made here.

    The child is a fork of the test's process: the read-only mount is its own (a mount
    namespace of its own), and it has the test's imports (a new interpreter spent a second
    importing the command line's libraries before the first command)."""
    if os.geteuid() != 0:
        folder.chmod(0o555)
    try:
        res = _in_a_child(lambda: _read_only_mount(folder), argvs)
    finally:
        if os.geteuid() != 0:
            folder.chmod(0o755)
    if res is None:
        return None
    return [subprocess.CompletedProcess(a, *r) for a, r in zip(argvs, res)]


# <sys/mount.h>, <sched.h>
_CLONE_NEWNS, _MS_RDONLY, _MS_REMOUNT, _MS_BIND, _MS_REC, _MS_PRIVATE = (
    0x20000, 1, 32, 4096, 16384, 1 << 18)


def _read_only_mount(folder: Path) -> bool:
    """In a child: ``folder`` bound read-only onto itself in a mount namespace of the child's
    own, as ``unshare -m sh -c 'mount --bind -o ro DIR DIR'`` does (False: no privilege for
    that). Not root: the permission bits the parent set."""
    if os.geteuid() != 0:
        return True
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    path = os.fsencode(folder)
    # private first, as unshare(1) does: a bind mount must not reach the parent's namespace
    return (libc.unshare(_CLONE_NEWNS) == 0
            and libc.mount(b"none", b"/", None, _MS_REC | _MS_PRIVATE, None) == 0
            and libc.mount(path, path, None, _MS_BIND, None) == 0
            and libc.mount(None, path, None, _MS_REMOUNT | _MS_BIND | _MS_RDONLY, None) == 0)


def _in_a_child(prepare, argvs) -> list | None:
    """``[status, stdout, stderr]`` of ``main`` on each argv, run in a forked child after
    ``prepare()`` (None if it returns False)."""
    import io
    import json
    import select
    import signal

    from elicit.cli.main import main

    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never returns into pytest
        try:
            os.close(r)
            res = None
            if prepare():
                res = []
                for argv in argvs:
                    out, err = io.StringIO(), io.StringIO()
                    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                        try:
                            code = main(argv)
                        except SystemExit as exc:
                            code = exc.code
                    res.append([code or 0, out.getvalue(), err.getvalue()])
            with os.fdopen(w, "w") as fh:
                fh.write(json.dumps(res))
        finally:
            os._exit(0)
    os.close(w)
    chunks = []
    with os.fdopen(r, "rb") as fh:
        while True:
            if not select.select([fh], [], [], 600)[0]:
                os.kill(pid, signal.SIGKILL)
                break
            if not (chunk := os.read(fh.fileno(), 1 << 16)):
                break
            chunks.append(chunk)
    _, status = os.waitpid(pid, 0)
    assert status == 0 and chunks, f"the child ended with status {status}"
    return json.loads(b"".join(chunks))
