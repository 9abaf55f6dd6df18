"""What ``pip install elicit`` installs: the wheel holds every module and every file the code
reads at run time, and ``pyproject.toml`` can be built by the setuptools it names.

The tests of this checkout import ``elicit`` from the source folders, where a module or data
file left out of the package list is still found; an installed copy then fails at its first
import of it (``No module named 'elicit.session.web'``). The fast tests compare the
declaration with the folders; the slow one builds the wheel and lists it.
"""

from __future__ import annotations

import fnmatch
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

import elicit

tomllib = pytest.importorskip("tomllib", reason="reading pyproject.toml needs Python >= 3.11")

ROOT = Path(elicit.__file__).resolve().parent.parent
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
SETUPTOOLS = PYPROJECT["tool"]["setuptools"]


def _folder(package: str) -> Path:
    """The source folder of ``package`` under the declared ``package-dir`` mapping."""
    mapped = SETUPTOOLS.get("package-dir", {})
    parts = package.split(".")
    for k in range(len(parts), 0, -1):
        head = ".".join(parts[:k])
        if head in mapped:
            return ROOT / mapped[head] / Path(*parts[k:])
    return ROOT / Path(*parts)


def _source_packages() -> set[str]:
    """Every package of the source: a folder under ``elicit/`` with an ``__init__.py``, and the
    Stan programs' folder, installed as ``elicit.stan``."""
    found = {".".join(p.parent.relative_to(ROOT).parts) for p in (ROOT / "elicit").rglob(
        "__init__.py")}
    return found | {"elicit.stan"}


def _shipped_files() -> dict[str, Path]:
    """What the wheel must hold beside the modules: every other file in a package's own
    folder (``py.typed``, the stop list and its provenance, the Stan programs), by its path
    inside the wheel."""
    out = {}
    for package in _source_packages():
        for f in _folder(package).iterdir():
            if f.is_file() and f.suffix not in (".py", ".pyc"):
                out["/".join([*package.split("."), f.name])] = f
    return out


def test_every_package_of_the_source_is_declared():
    missing = sorted(_source_packages() - set(SETUPTOOLS["packages"]))
    assert not missing, f"pyproject.toml [tool.setuptools] packages leaves out {missing}"


def test_every_data_file_in_a_package_folder_is_package_data():
    globs = PYPROJECT["tool"]["setuptools"].get("package-data", {})
    left_out = [name for name, f in sorted(_shipped_files().items())
                if not any(fnmatch.fnmatch(f.name, g)
                           for g in globs.get(name.rsplit("/", 1)[0].replace("/", "."), []))]
    assert not left_out, f"not declared as package data, so not installed: {left_out}"


def test_the_files_the_code_reads_are_in_package_folders():
    # the stop list and the Stan programs are found next to the code that reads them; a file
    # found only through the checkout's layout would be missing from an installed copy
    from elicit.data.files import SHIPPED_STOPWORDS
    from elicit.engines.contract import stan_folder

    shipped = {f.resolve() for f in _shipped_files().values()}
    read = [SHIPPED_STOPWORDS, *stan_folder().glob("*.stan")]
    assert len(read) >= 2 and not [f for f in read if f.resolve() not in shipped]


def test_the_build_requirement_can_read_the_license_field():
    # a license given as an SPDX expression (license = "MIT") is read by setuptools 77 and
    # later; an older one stops the build with "project.license must be valid exactly by
    # one definition"
    if not isinstance(PYPROJECT["project"].get("license"), str):
        return
    floor = [r for r in PYPROJECT["build-system"]["requires"] if r.startswith("setuptools")]
    assert floor and floor[0].startswith("setuptools>=")
    version = tuple(int(v) for v in floor[0].removeprefix("setuptools>=").split("."))
    license = PYPROJECT["project"]["license"]
    assert version >= (77,), f"{floor[0]} cannot build license = {license!r}"


def test_the_license_the_metadata_names_is_a_file_the_wheel_ships():
    # pyproject.toml said license = "MIT" while no file held the licence text or a copyright
    # holder, so neither the wheel nor the checkout carried them; the files named in
    # license-files go into the wheel's .dist-info/licenses/ (the slow test lists it)
    named = PYPROJECT["project"].get("license-files", [])
    found = sorted(f for pattern in named for f in ROOT.glob(pattern))
    assert found, f"pyproject.toml's license-files {named} names no file of the checkout"
    text = found[0].read_text()
    assert PYPROJECT["project"]["license"] == "MIT" and text.startswith("MIT License")
    assert re.search(r"^Copyright \(c\) \d{4} \S", text, re.M), "no copyright holder"


def test_make_dist_empties_build_first():
    # a wheel built in the checkout packs whatever build/lib holds: a module deleted since an
    # earlier build came back (measured: a file left in build/lib/elicit was in the wheel)
    make = (ROOT / "Makefile").read_text()
    # target -> (prerequisites, recipe lines)
    rules = {m[0]: (m[1], m[2]) for m in re.findall(
        r"^([\w-]+):([^\n]*)\n((?:\t[^\n]*\n)*)", make, re.M)}
    prerequisites, recipe = rules["dist"]
    assert "clean" in prerequisites.split() and "pip wheel" in recipe
    assert re.search(r"rm -rf .*\bbuild\b", rules["clean"][1])


@pytest.mark.slow
def test_the_built_wheel_holds_every_module_and_data_file(tmp_path):
    # built from a copy, so the checkout gets no build/ or egg-info folder; with the build
    # isolation pip fetches the build requirement named in pyproject.toml (from PyPI)
    src = tmp_path / "src"
    src.mkdir()
    for name in ("elicit", "stan"):
        shutil.copytree(ROOT / name, src / name, ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("pyproject.toml", "README.md", *PYPROJECT["project"].get("license-files", [])):
        shutil.copy(ROOT / name, src / name)
    res = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w",
                          str(tmp_path / "dist"), str(src)], capture_output=True, text=True,
                         timeout=600)
    if res.returncode and "No matching distribution" in res.stderr:
        pytest.skip("pip cannot fetch the build requirement (no package index)")
    assert res.returncode == 0, res.stderr[-2000:]
    (wheel,) = (tmp_path / "dist").glob("elicit-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    modules = {p.relative_to(ROOT).as_posix() for p in (ROOT / "elicit").rglob("*.py")}
    assert not sorted(modules - names)
    assert not sorted(set(_shipped_files()) - names)
    assert [n for n in names if n.endswith(".dist-info/licenses/LICENSE")], sorted(names)[-8:]
    extra = sorted(n for n in names - modules - set(_shipped_files())
                   if not n.startswith("elicit-") and ".dist-info/" not in n)
    assert not extra, f"the wheel holds files the package does not have: {extra}"


@pytest.mark.slow
def test_an_installed_copy_in_a_git_project_names_no_commit(tmp_path):
    # pip installs elicit into a virtual environment that often lives inside the user's own
    # git project (project/.venv): the commit of that project is not elicit's code version
    if shutil.which("git") is None:
        pytest.skip("needs git")
    import importlib.util

    project = tmp_path / "project"
    site = project / ".venv" / "lib" / "python3" / "site-packages"
    (site / "elicit" / "internal").mkdir(parents=True)
    copy = site / "elicit" / "internal" / "provenance.py"
    shutil.copy(ROOT / "elicit" / "internal" / "provenance.py", copy)
    git = ["git", "-C", str(project), "-c", "user.name=u", "-c", "user.email=u@example.org"]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "commit", "-q", "--allow-empty", "-m", "a project"], check=True)
    spec = importlib.util.spec_from_file_location("installed_provenance", copy)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.code_version().startswith("elicit+")


def test_the_installed_version_is_the_one_elicit_reports():
    # `elicit --version` and a session's elicit_version (the installed distribution's
    # metadata) name one version only if the two places that state it agree
    assert PYPROJECT["project"]["version"] == elicit.__version__
