"""elicit's cache of PyStan builds, shared by every virtual environment (pystan_cache).

httpstan keys its builds by the interpreter's path, so a new virtual environment rebuilds
every program; elicit's cache keys them by what the module depends on. These tests move the
files of a stand-in build (the real build and restore: the slow compile-race test in
test_engine_registry.py).
"""

from __future__ import annotations

import sys
from importlib.machinery import EXTENSION_SUFFIXES

import pytest

from elicit.engines import pystan_cache
from elicit.engines.base import shipped_stan_file

pytestmark = pytest.mark.pystan(builds=False)  # stand-in builds: no shipped program built


@pytest.fixture
def httpstan_models(tmp_path, monkeypatch):
    """Both caches under ``tmp_path``; a module "loads" if its bytes say so (the stand-in
    for importing a compiled module), and the names loaded are listed."""
    import httpstan.cache
    import httpstan.models

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    loaded: list[str] = []

    def load(name):
        module = pystan_cache._module_in(httpstan.cache.model_directory(name))
        if module.read_bytes() != b"a module":
            raise ImportError("libtbb.so.2: cannot open shared object file")
        loaded.append(name)

    monkeypatch.setattr(httpstan.models, "import_services_extension_module", load)
    monkeypatch.setattr(pystan_cache, "_preload_httpstan_libraries", lambda: None)
    return loaded


def _build(code: str, module: bytes = b"a module") -> None:
    """What an httpstan build leaves in its cache for this interpreter."""
    name, folder = pystan_cache._httpstan_model_dir(code)
    folder.mkdir(parents=True)
    (folder / f"stan_services_model_{name.split('/')[1]}{EXTENSION_SUFFIXES[0]}").write_bytes(
        module)
    (folder / "stanc.log").write_text("stanc's warnings")
    (folder / "stderr.log").write_text("compiler output")


def _use_another_interpreter(monkeypatch, tmp_path, name: str = "other") -> None:
    monkeypatch.setattr(sys, "executable", str(tmp_path / name / "bin" / "python"))


def test_the_key_ignores_the_interpreter_path_but_not_the_program(monkeypatch, tmp_path):
    import httpstan
    import httpstan.models

    code = shipped_stan_file().read_text()
    key, name = pystan_cache.build_key(code), httpstan.models.calculate_model_name(code)
    _use_another_interpreter(monkeypatch, tmp_path)
    assert httpstan.models.calculate_model_name(code) != name  # httpstan's key moves
    assert pystan_cache.build_key(code) == key                  # elicit's does not
    assert pystan_cache.build_key(code + "\n// a comment\n") != key
    monkeypatch.setattr(httpstan, "__version__", "0.0.0")
    assert pystan_cache.build_key(code) != key
    monkeypatch.undo()
    monkeypatch.setenv("CXX", sys.executable)  # another "compiler" that says its version
    pystan_cache.compiler_id.cache_clear()
    try:
        assert pystan_cache.build_key(code) != key
        # an unknown compiler (not on PATH): no key, so nothing is restored or stored
        monkeypatch.setenv("CXX", "/nonexistent/c++")
        pystan_cache.compiler_id.cache_clear()
        with pytest.raises(ValueError, match="compiler could not be identified"):
            pystan_cache.build_key(code)
    finally:
        monkeypatch.undo()
        pystan_cache.compiler_id.cache_clear()
    assert pystan_cache.build_key(code) == key


def test_a_build_stored_by_one_interpreter_is_restored_for_another(httpstan_models,
                                                                   monkeypatch, tmp_path):
    code = "// a program\n"
    assert not pystan_cache.restore(code)      # nothing cached yet: httpstan builds
    _build(code)
    assert pystan_cache.store(code)
    assert not pystan_cache.store(code)        # kept once
    _use_another_interpreter(monkeypatch, tmp_path)
    name, folder = pystan_cache._httpstan_model_dir(code)
    assert not folder.exists()
    assert pystan_cache.restore(code)
    assert httpstan_models == [name]           # imported once, as a check
    assert pystan_cache._module_in(folder).read_bytes() == b"a module"
    assert (folder / "stanc.log").read_text() == "stanc's warnings"
    assert (folder / "stderr.log").read_text() == "compiler output"
    assert not pystan_cache.restore(code)      # httpstan has it now
    assert not pystan_cache.restore("// another program\n")
    assert sorted(p.name for p in folder.parent.parent.iterdir()) == ["models"]  # no debris


def test_a_cached_build_that_does_not_load_is_removed_for_a_normal_build(httpstan_models,
                                                                         monkeypatch, tmp_path):
    code = "// a program\n"
    _build(code, module=b"a module linked to a library that is gone")
    assert pystan_cache.store(code)
    _use_another_interpreter(monkeypatch, tmp_path)
    _, folder = pystan_cache._httpstan_model_dir(code)
    assert not pystan_cache.restore(code)
    assert not folder.exists()                 # httpstan then builds into an empty folder
    assert httpstan_models == []


def test_an_incomplete_build_is_neither_stored_nor_restored(httpstan_models, monkeypatch,
                                                            tmp_path):
    code = "// a program\n"
    _build(code)
    _, folder = pystan_cache._httpstan_model_dir(code)
    (folder / "stderr.log").unlink()           # httpstan writes it after the module
    assert not pystan_cache.store(code)
    (folder / "stderr.log").write_text("compiler output")
    assert pystan_cache.store(code)
    (pystan_cache.cache_dir() / pystan_cache.build_key(code) / "stanc.log").unlink()
    _use_another_interpreter(monkeypatch, tmp_path)
    assert not pystan_cache.restore(code)
    assert not pystan_cache._httpstan_model_dir(code)[1].exists()


def test_the_cache_keeps_the_most_recently_used_builds(httpstan_models, monkeypatch, tmp_path):
    """Every edited program is a new entry of 75-85 MB: beyond KEEP the least recently used
    go (a restore counts as a use); a staging folder of another process is not touched."""
    import os

    monkeypatch.setattr(pystan_cache, "KEEP", 2)
    codes = [f"// program {k}\n" for k in range(3)]
    for t, code in enumerate(codes[:2]):
        _build(code)
        assert pystan_cache.store(code)
        os.utime(pystan_cache.cache_dir() / pystan_cache.build_key(code), (t, t))
    staging = pystan_cache.cache_dir() / "0123.tmp-1-abcd"
    staging.mkdir()
    os.utime(staging, (0, 0))
    _use_another_interpreter(monkeypatch, tmp_path)
    assert pystan_cache.restore(codes[0])     # the older one used again
    _build(codes[2])
    assert pystan_cache.store(codes[2])       # the third: program 1 is the least recent
    kept = {p.name for p in pystan_cache.cache_dir().iterdir()}
    assert kept == {pystan_cache.build_key(codes[0]), pystan_cache.build_key(codes[2]),
                    staging.name}
    assert pystan_cache.prune(keep=1) == [pystan_cache.cache_dir()
                                          / pystan_cache.build_key(codes[0])]
