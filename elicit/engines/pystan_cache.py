"""PyStan's compiled programs, shared by every virtual environment of a user (docs/stan.md).

httpstan keys its build cache by the program text *and the Python executable's path*; this
module keeps each build under :func:`build_key` (what the compiled module depends on) and puts
it where httpstan looks before a build (:func:`restore`). The module finds TBB through an
rpath naming the *building* environment, so this environment's copy is loaded first. Every
change is a rename of a complete folder (atomic), under the engine's per-program build lock.
"""

from __future__ import annotations

import ctypes
import functools
import hashlib
import logging
import os
import platform
import shlex
import shutil
import subprocess
import sys
import sysconfig
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from importlib.machinery import EXTENSION_SUFFIXES
from pathlib import Path

from elicit.internal.locks import user_cache

logger = logging.getLogger(__name__)

#: bumped when an entry's layout changes (old entries are then never read)
_FORMAT = "1"

#: httpstan's record of a build besides the module (its views read both on a cache hit)
_LOGS = ("stanc.log", "stderr.log")

#: How many builds the cache keeps, the most recently used (about 75-85 MB each; every edit
#: of a program is a new entry).
KEEP = 12


def cache_dir() -> Path:
    return user_cache("pystan")


@functools.cache
def compiler_id() -> str | None:
    """The C++ compiler a build would use and its ``--version`` line; None if it fails."""
    cxx = os.environ.get("CXX") or sysconfig.get_config_var("CXX") or "c++"
    try:
        exe = shlex.split(cxx)[0]
        out = subprocess.run([exe, "--version"], capture_output=True, text=True, timeout=60)
    except (OSError, ValueError, IndexError, subprocess.SubprocessError):
        return None
    lines = out.stdout.strip().splitlines()
    if out.returncode != 0 or not lines:
        return None
    return f"{cxx}: {lines[0]}"


def build_key(program_code: str) -> str:
    """A hash of all a build depends on but the interpreter's path (ValueError: no compiler)."""
    import httpstan

    if (compiler := compiler_id()) is None:
        raise ValueError("the C++ compiler could not be identified")

    parts = [_FORMAT, program_code, httpstan.__version__, sys.platform, platform.machine(),
             str(sys.maxsize), sys.version, sys.implementation.cache_tag or "",
             EXTENSION_SUFFIXES[0], " ".join(platform.libc_ver()), compiler]
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()[:32]


def _httpstan_model_dir(program_code: str) -> tuple[str, Path]:
    """httpstan's name of the program's model for this interpreter, and its folder."""
    import httpstan.cache
    import httpstan.models

    name = httpstan.models.calculate_model_name(program_code)
    return name, httpstan.cache.model_directory(name)


def _module_in(folder: Path) -> Path | None:
    """The compiled extension module in ``folder`` (httpstan's test: the suffix), or None."""
    try:
        return next((p for p in folder.iterdir() if p.suffix in EXTENSION_SUFFIXES), None)
    except OSError:
        return None


def _preload_httpstan_libraries() -> None:
    """Load this environment's ``libtbb.so.2`` (``*.dylib``) before a foreign module's rpath."""
    import httpstan

    lib = Path(httpstan.__file__).parent / "lib"
    # Only versioned names (the sonames the modules record): loading libtbb.so as well,
    # a copy of libtbb.so.2, would load a second TBB.
    for path in sorted(lib.glob("lib*.so.*")) + sorted(lib.glob("lib*.dylib")):
        ctypes.CDLL(str(path))


@contextmanager
def _staging(parent: Path, prefix: str) -> Iterator[Path]:
    """A fresh folder to fill and rename into place; removed if that fails."""
    tmp = parent / f"{prefix}-{os.getpid()}-{uuid.uuid4().hex[:8]}"
    tmp.mkdir(parents=True)
    try:
        yield tmp
    except OSError:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def restore(program_code: str) -> bool:
    """Put the cached build where httpstan looks, if it has none; True if restored (and
    importable). Never raises for a cache problem."""
    try:
        name, target = _httpstan_model_dir(program_code)
        if _module_in(target) is not None:
            return False  # httpstan has its own build (or an earlier restore)
        entry = cache_dir() / build_key(program_code)
        module = _module_in(entry)
        if module is None or not all((entry / log).is_file() for log in _LOGS):
            return False
        os.utime(entry)  # used now: the last to go when the cache is pruned
        with _staging(target.parent.parent, "elicit-restore") as tmp:
            # httpstan finds the module by its suffix; the name says whose model it is
            suffix = module.name[module.name.index("."):]
            dst = tmp / f"stan_services_model_{name.split('/')[1]}{suffix}"
            # A hard link costs no space (a module is about 75 MB); httpstan never writes into
            # a built module (it deletes the model's folder before a build): sharing it is safe.
            try:
                os.link(module, dst)
            except OSError:
                shutil.copy2(module, dst)
            for log in _LOGS:
                shutil.copy2(entry / log, tmp / log)
            # a folder without a module (an interrupted httpstan build) goes
            shutil.rmtree(target, ignore_errors=True)
            target.parent.mkdir(parents=True, exist_ok=True)
            os.rename(tmp, target)
    except (OSError, ValueError, ImportError) as exc:
        logger.debug("no PyStan build restored from the cache: %s", exc)
        return False
    try:
        import httpstan.models

        _preload_httpstan_libraries()
        httpstan.models.import_services_extension_module(name)
    except Exception as exc:  # an unloadable module: build it afresh  # noqa: BLE001
        logger.warning("a cached PyStan build did not load (%s); building the program again", exc)
        shutil.rmtree(target, ignore_errors=True)
        return False
    return True


def store(program_code: str) -> bool:
    """Keep httpstan's build in the cache if it has none; True if stored. Never raises."""
    try:
        entry = cache_dir() / build_key(program_code)
        if _module_in(entry) is not None:
            return False
        _, source = _httpstan_model_dir(program_code)
        module = _module_in(source)
        if module is None or not all((source / log).is_file() for log in _LOGS):
            return False
        with _staging(entry.parent, f"{entry.name}.tmp") as tmp:
            # a copy, not a link: the entry must outlive httpstan's folder, which httpstan
            # may delete and rebuild
            for f in (module, *(source / log for log in _LOGS)):
                shutil.copy2(f, tmp / f.name)
            os.rename(tmp, entry)  # fails if a concurrent process stored it first
    except (OSError, ValueError, ImportError) as exc:
        logger.debug("PyStan build not stored in the cache: %s", exc)
        return False
    prune()
    return True


def prune(keep: int | None = None) -> list[Path]:
    """Remove and return all but the ``keep`` (:data:`KEEP`) most recently used builds."""
    try:
        entries = [p for p in cache_dir().iterdir()
                   if p.is_dir() and len(p.name) == 32 and "." not in p.name]
        entries.sort(key=lambda p: p.stat().st_mtime, reverse=True)
    except OSError:
        return []
    gone = entries[KEEP if keep is None else keep:]
    for p in gone:
        shutil.rmtree(p, ignore_errors=True)
    return gone
