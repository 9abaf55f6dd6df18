"""The package's layers hold: every import points down (docs/architecture.md).

Every ``import`` of an ``elicit`` module counts, wherever it stands: at the top of a file,
inside a function (a lazy import) or under ``if TYPE_CHECKING:``. A subpackage may import its
own modules and those of lower layers; two subpackages on the same layer import neither
each other. A new module's layer is its subpackage's; a new subpackage must be given one here
and in docs/architecture.md.

Within a subpackage the modules form no circle either: no chain of imports that run (at the
top of a file or inside a function; ``TYPE_CHECKING`` imports only name types) leads from a
module back to itself. Two modules that need each other share a third, below both.
"""

from __future__ import annotations

import ast
import functools
import sys
from pathlib import Path
from typing import NamedTuple

import pytest

import elicit

PACKAGE = Path(elicit.__file__).resolve().parent
DOC = PACKAGE.parent / "docs" / "architecture.md"

#: the layer of each subpackage (or top-level module), lowest first
LAYERS: dict[str, int] = {
    "errors": 0,
    "internal": 1,
    "model": 2, "data": 2,
    "engines": 3,
    "prior": 4,
    "elicitation": 5,
    "estimator": 6, "harness": 6,
    "session": 7, "paper": 7,
    "report": 8,
    "__init__": 9,          # the facade: `from elicit import Elicitor, Session, ...`
    "cli": 10,
    "__main__": 11,
}


def _unit(module: str) -> str:
    """The subpackage (or top-level module) of a dotted ``elicit`` module name."""
    parts = module.split(".")
    return "__init__" if len(parts) == 1 else parts[1]


def _module_of(path: Path) -> str:
    rel = path.relative_to(PACKAGE.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


class Import(NamedTuple):
    """One import of an ``elicit`` module."""

    src: str    #: the importing module
    dst: str    #: the imported module (``from a import b`` of a module ``a.b``: ``a.b``)
    line: int
    runs: bool  #: False under ``if TYPE_CHECKING:`` (it never runs)


def _type_checking_nodes(nodes: list[ast.AST]) -> set[int]:
    """The ids of the nodes under ``if TYPE_CHECKING:`` (or ``typing.TYPE_CHECKING``), among
    ``nodes``: every node of a module (one walk of it serves both this and the imports)."""
    out: set[int] = set()
    for node in nodes:
        if isinstance(node, ast.If) and ast.unparse(node.test).endswith("TYPE_CHECKING"):
            out.update(id(n) for stmt in node.body for n in ast.walk(stmt))
    return out


def imports() -> list[Import]:
    """Every import of an ``elicit`` module in the package."""
    return list(_imports_in(PACKAGE))


@functools.cache
def _imports_in(package: Path) -> tuple[Import, ...]:
    # parsed once per folder for the tests that read it (each parse walks every module)
    modules = {_module_of(p) for p in package.rglob("*.py")}
    out = []
    for path in sorted(package.rglob("*.py")):
        here = _module_of(path)
        package = here if path.name == "__init__.py" else here.rsplit(".", 1)[0]
        tree = ast.parse(path.read_text(), str(path))
        nodes = list(ast.walk(tree))
        typing_only = _type_checking_nodes(nodes)
        for node in nodes:
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:   # relative: resolve against the importing package
                    base = package.split(".")[: len(package.split(".")) - node.level + 1]
                    names = [".".join(base + ([node.module] if node.module else []))]
                else:
                    names = [node.module or ""]
                # ``from a import b`` of a module b imports a.b; when every name is a module,
                # a itself is only run first (as for ``import a.b``), no name read from it
                subs = [f"{names[0]}.{a.name}" for a in node.names
                        if f"{names[0]}.{a.name}" in modules]
                names = subs if len(subs) == len(node.names) else names + subs
            else:
                continue
            out += [Import(here, n, node.lineno, id(node) not in typing_only) for n in names
                    if n == "elicit" or n.startswith("elicit.")]
    return tuple(out)


def runtime_graph() -> dict[str, dict[str, int]]:
    """module -> {module whose code an import in it runs: the line}, for the imports that run
    (at the top or inside a function). Importing ``a.b.c`` runs the packages ``a`` and
    ``a.b`` first, except those of the importer, which are running already; a name imported
    from the importer's own package (``from a.b import f`` in ``a.b.c``) needs that package's
    code to have run up to it, so that edge is kept: it closes a circle through the package's
    ``__init__``."""
    modules = {_module_of(p) for p in PACKAGE.rglob("*.py")}
    graph: dict[str, dict[str, int]] = {}
    for src, dst, line, runs in imports():
        if not runs:
            continue
        parts = dst.split(".")
        for n in range(1, len(parts) + 1):
            ran = ".".join(parts[:n])
            mine = src == ran or src.startswith(ran + ".")
            if ran in modules and (not mine or (ran == dst and ran != src)):
                graph.setdefault(src, {}).setdefault(ran, line)
    return graph


def circles(graph: dict[str, dict[str, int]]) -> list[list[str]]:
    """The modules of each import circle: the strongly connected components of ``graph`` with
    more than one module, or one that imports itself (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in graph.get(v, {}):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            part = []
            while True:
                w = stack.pop()
                part.append(w)
                if w == v:
                    break
            if len(part) > 1 or v in graph.get(v, {}):
                out.append(sorted(part))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def test_every_subpackage_has_a_layer():
    units = {_unit(_module_of(p)) for p in PACKAGE.rglob("*.py")}
    assert units - set(LAYERS) == set(), "give the new subpackage a layer here and in the docs"


def test_imports_only_point_down():
    bad = []
    for src, dst, line, _ in imports():
        a, b = _unit(src), _unit(dst)
        if a == b:
            continue
        if LAYERS[b] >= LAYERS[a]:
            bad.append(f"{src}:{line} imports {dst} ({a} is layer {LAYERS[a]}, {b} is "
                       f"layer {LAYERS[b]})")
    assert not bad, "\n".join(bad)


def test_the_checker_sees_lazy_and_type_checking_imports(tmp_path, monkeypatch):
    """The walk finds imports inside functions and TYPE_CHECKING blocks (so the test above
    can fail on them)."""
    found: dict[tuple[str, str], set[bool]] = {}
    for src, dst, _, runs in imports():
        found.setdefault((src, dst), set()).add(runs)
    # TYPE_CHECKING: the facade names its classes for type checkers, and loads them by name
    assert found[("elicit", "elicit.session.session")] == {False}
    # lazy: a kind of question reads the models' registry only when asked
    assert found[("elicit.elicitation.kinds.relevance", "elicit.model.variants")] == {True}
    # `from a import b` of a module b imports a.b (a is run first: runtime_graph)
    assert ("elicit.model.density", "elicit.model.terms") in found


def test_a_circle_through_a_packages_init_is_found(tmp_path, monkeypatch):
    """A module that reads a name from its own package while the package's __init__ imports
    it is a circle; one that imports a sibling module through the package is not."""
    pkg = tmp_path / "elicit" / "pkg"
    pkg.mkdir(parents=True)
    (tmp_path / "elicit" / "__init__.py").write_text("")
    (pkg / "__init__.py").write_text("from elicit.pkg.base import f\n\ng = 1\n")
    (pkg / "base.py").write_text("def f():\n    from elicit.pkg import g\n    return g\n")
    (pkg / "other.py").write_text("from elicit.pkg import base\n")
    monkeypatch.setattr(sys.modules[__name__], "PACKAGE", tmp_path / "elicit")
    graph = runtime_graph()
    assert circles(graph) == [["elicit.pkg", "elicit.pkg.base"]]
    assert set(graph["elicit.pkg.other"]) == {"elicit.pkg.base"}


def test_no_import_circle_within_a_subpackage():
    graph = runtime_graph()
    bad = [" <-> ".join(c) + "\n" + "\n".join(
        f"    {a}:{graph[a][b]} imports {b}" for a in c for b in graph[a] if b in c)
        for c in circles(graph)]
    assert not bad, "import circles (imports that run, lazy ones included):\n" + "\n".join(bad)


def test_the_circle_finder_finds_circles():
    """A circle through a lazy import is found, and so is one through a package's __init__;
    a chain is not a circle."""
    assert circles({"a": {"b": 1}, "b": {"c": 1}, "c": {"a": 1}, "d": {"a": 1}}) == [
        ["a", "b", "c"]]
    assert circles({"a": {"b": 1}, "b": {"c": 1}}) == []
    assert circles({"a": {"a": 1}}) == [["a"]]


@pytest.mark.parametrize("unit", sorted(u for u in LAYERS if not u.startswith("__")))
def test_the_architecture_page_names_every_subpackage(unit):
    text = DOC.read_text()
    assert f"{unit}/" in text or f"{unit}.py" in text, f"docs/architecture.md lacks {unit}"
