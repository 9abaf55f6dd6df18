"""Choosing an engine, and building Stan programs from several processes at once."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time

import pytest

from elicit.engines import get_engine
from elicit.engines.numpy_engine import NumpyEngine
from elicit.errors import ElicitError, EngineUnavailable
from elicit.internal.locks import file_lock


def test_auto_runs_the_shipped_programs_on_numpy_even_when_cmdstan_is_installed(monkeypatch):
    import elicit.engines.cmdstan_engine as ce

    monkeypatch.setattr(ce, "cmdstan_missing", lambda: None)
    for variant in ("fixed", "learned"):
        eng = get_engine("auto", variant)
        assert isinstance(eng, NumpyEngine) and eng.variant == variant


def test_auto_runs_a_custom_program_on_pystan_without_cmdstan(monkeypatch, tmp_path):
    pytest.importorskip("stan")
    import elicit.engines.cmdstan_engine as ce
    from elicit.engines.base import shipped_stan_file
    from elicit.engines.pystan_engine import PyStanEngine

    monkeypatch.setattr(ce, "cmdstan_missing", lambda: "no CmdStan")
    monkeypatch.delenv("CMDSTAN", raising=False)  # a set CMDSTAN is refused, not passed over
    custom = tmp_path / "mine.stan"
    custom.write_text(shipped_stan_file().read_text())
    eng = get_engine("auto", "fixed", stan_file=custom)
    assert isinstance(eng, PyStanEngine) and eng.stan_file == custom


def test_a_wrong_cmdstan_folder_is_named_with_what_is_wrong(monkeypatch, tmp_path):
    """CMDSTAN set to a typo, or to an unbuilt CmdStan, was answered "cmdstanpy found none
    ... point CMDSTAN at an installation" (it is set) or blamed on a missing PyStan; and
    ``auto`` with a custom program went on to a minute-long PyStan build without a word."""
    from elicit.engines.base import shipped_stan_file
    from elicit.engines.cmdstan_engine import CmdStanEngine

    custom = tmp_path / "mine.stan"
    custom.write_text(shipped_stan_file().read_text())
    folder = tmp_path / "cmdstan-2.35.0"
    monkeypatch.setenv("CMDSTAN", str(folder))
    for step, why in enumerate(("no such folder", "no makefile in it",
                                "not built (no bin/stanc)")):
        if step == 1:
            folder.mkdir()
        if step == 2:
            (folder / "makefile").touch()
        for build in (lambda: CmdStanEngine("fixed"),
                      lambda: get_engine("auto", "fixed", stan_file=custom)):
            with pytest.raises(EngineUnavailable) as err:
                build()
            assert str(folder) in str(err.value) and why in str(err.value), str(err.value)
            assert "\n" not in str(err.value) and "PyStan" not in str(err.value)


def test_unknown_engine_and_variant_are_refused():
    with pytest.raises(ElicitError, match="unknown engine 'stanx'; choose one of auto"):
        get_engine("stanx")
    with pytest.raises(ElicitError, match="variant must be 'fixed' or 'learned', got 'free'"):
        get_engine("numpy", "free")


_HOLDER = textwrap.dedent("""
    import sys, time
    from elicit.internal.locks import file_lock
    with file_lock("test-holder.lock"):
        print(f"{time.time():.6f}", flush=True)
        time.sleep(float(sys.argv[1]))
        print(f"{time.time():.6f}", flush=True)
""")


def test_file_lock_excludes_other_processes(tmp_path, monkeypatch):
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path)}
    procs = [subprocess.Popen([sys.executable, "-c", _HOLDER, "0.5"], env=env,
                              stdout=subprocess.PIPE, text=True) for _ in range(2)]
    spans = []
    for p in procs:
        out, _ = p.communicate(timeout=600)
        assert p.returncode == 0
        start, end = map(float, out.split())
        spans.append((start, end))
    (s1, e1), (s2, e2) = sorted(spans)
    assert e1 <= s2, f"the two holders overlapped: {spans}"
    # the lock is released with the process: the holders' lock file is taken again without
    # waiting (on_wait is called only if another holder has it)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    waited = []
    with file_lock("test-holder.lock", on_wait=waited.append) as path:
        assert path == tmp_path / "elicit" / "locks" / "test-holder.lock"
    assert waited == []


_BUILD = textwrap.dedent("""
    import numpy as np
    from elicit.engines.pystan_engine import build_pystan_model, PyStanEngine
    from elicit.model.spec import Hyper, ModelData
    rng = np.random.default_rng(0)
    X = rng.normal(size=(6, 4)); y = rng.normal(size=6); U = rng.normal(size=(4, 2))
    data = ModelData(X, y, U, Hyper(threshold_mean=2.0))
    fit = PyStanEngine("fixed", stan_file=__import__("sys").argv[1]).fit(data)
    print("ok", fit.converged)
""")


@pytest.mark.slow
@pytest.mark.pystan
def test_two_processes_compile_one_program_into_an_empty_cache(tmp_path):
    """The compile race: two processes build the same program into an empty httpstan cache.

    Without the build lock one of them fails (a missing ``stderr.log`` or a build timeout);
    with it the second waits and reuses the first one's build. A third process, in another
    virtual environment, then reuses that build too (elicit's cache of builds).
    """
    pytest.importorskip("stan")
    from elicit.engines.base import shipped_stan_file

    # A program no other test builds (a comment changes its hash), so the cache is cold.
    program = tmp_path / "race.stan"
    program.write_text(f"// race test {time.time_ns()}\n" + shipped_stan_file().read_text())
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache")}
    procs = [subprocess.Popen([sys.executable, "-c", _BUILD, str(program)], env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for _ in range(2)]
    for p in procs:
        out, err = p.communicate(timeout=1800)
        assert p.returncode == 0, err[-3000:]
        assert out.strip().splitlines()[-1] == "ok True"

    # A new virtual environment (another interpreter path: another key in httpstan's cache)
    # finds the build in elicit's cache (pystan_cache) instead of compiling it again.
    python = _another_virtual_environment(tmp_path / "venv2")
    r = subprocess.run([str(python), "-c", _REUSE + _BUILD, str(program)], env=env,
                       capture_output=True, text=True, timeout=1800)
    assert r.returncode == 0, r.stderr[-3000:]
    lines = r.stdout.strip().splitlines()
    assert lines[0] == f"{python} restored True", r.stdout
    assert lines[-1] == "ok True"


_REUSE = textwrap.dedent("""
    import sys
    from elicit.engines import pystan_cache
    from elicit.engines.contract import read_program
    code = read_program(sys.argv[1]).code  # the text the engine builds (includes inlined)
    print(sys.executable, "restored", pystan_cache.restore(code))
""")


def _another_virtual_environment(folder):
    """A virtual environment at ``folder`` that sees this one's packages and this elicit;
    its interpreter (path)."""
    import sysconfig

    import elicit

    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(folder)], check=True)
    python = folder / ("Scripts/python.exe" if os.name == "nt" else "bin/python")
    own = subprocess.run([str(python), "-c", "import sysconfig; "
                          "print(sysconfig.get_paths()['purelib'])"],
                         capture_output=True, text=True, check=True).stdout.strip()
    # a .pth line starting with "import" runs: the other site folder, its .pth files included
    lines = [str(os.path.dirname(os.path.dirname(elicit.__file__))),
             f"import site; site.addsitedir({sysconfig.get_paths()['purelib']!r})"]
    with open(os.path.join(own, "parent-environment.pth"), "w") as fh:
        fh.write("\n".join(lines) + "\n")
    return python


def test_a_custom_program_with_the_fast_utility_is_refused_before_any_build(monkeypatch,
                                                                           tmp_path):
    import numpy as np

    import elicit.elicitation.elicitor as el_mod

    def no_build(*args, **kwargs):
        raise AssertionError("an engine was built before the options were checked")

    monkeypatch.setattr(el_mod, "get_engine", no_build)
    rng = np.random.default_rng(0)
    with pytest.raises(ElicitError, match="fast utility screen uses the shipped model's"):
        el_mod.Elicitor(rng.normal(size=(5, 4)), rng.normal(size=5), rng.normal(size=(4, 2)),
                        engine="pystan", stan_file=tmp_path / "mine.stan", utility="fast")


def _small_data(n_feedback: int = 3):
    import numpy as np

    from elicit.model.spec import Hyper, ModelData

    rng = np.random.default_rng(4)
    X, U = rng.normal(size=(12, 6)), rng.uniform(0, 1, size=(6, 3))
    y = X @ rng.normal(size=6) + 0.3 * rng.normal(size=12)
    pairs = np.array([[0, 1], [2, 3], [1, 4]])[:n_feedback]
    return ModelData(X, y - y.mean(), U, Hyper(threshold_mean=2.0), pairs,
                     np.array([1, 0, 1])[:n_feedback])


@pytest.mark.slow
@pytest.mark.pystan
def test_check_engine_passes_when_pystan_and_numpy_agree_and_reports_a_disagreement():
    pytest.importorskip("stan")
    import numpy as np

    from elicit.engines.checked import CheckedEngine
    from elicit.engines.pystan_engine import PyStanEngine
    from elicit.errors import EngineError
    from elicit.model.spec import Params

    data = _small_data()
    checked = get_engine("pystan", "fixed", check=True)
    fit = checked.fit(data)
    assert checked.checks == 1 and fit.engine == "pystan"
    # Both engines' densities were evaluated at both points (PyStan's log_prob).
    assert checked.records == []
    # An engine stopped after one iteration from a start far from the MAP: its point is no
    # stationary point of the twin's density, which rises by a reported amount nearby.
    early = CheckedEngine(PyStanEngine("fixed", max_iter=1))
    with pytest.raises(EngineError, match=r"after 3 answers pystan's MAP is not a stationary "
                                          r"point of the twin's density: it rises by "
                                          r"[\d.e+-]+ nearby \(log density -?\d+\.\d+; "
                                          r"tolerance .*\): pystan stopped early"):
        early.fit(data, init=Params(np.full(3, 3.0), 5.0, 0.01))


def test_check_engine_with_a_custom_program_is_refused_before_any_build(tmp_path):
    with pytest.raises(ElicitError, match="--check-engine compares every fit with the numpy"):
        get_engine("pystan", "fixed", stan_file=tmp_path / "mine.stan", check=True)
