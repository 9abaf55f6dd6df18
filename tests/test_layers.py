"""The package's layers hold: every import points down (docs/architecture.md).

Every ``import`` of an ``elicit`` module counts, wherever it stands: at the top of a file,
inside a function (a lazy import) or under ``if TYPE_CHECKING:``. A subpackage may import its
own modules and those of lower layers; two subpackages on the same layer import neither
each other. A new module's layer is its subpackage's; a new subpackage must be given one here
and in docs/architecture.md.
"""

from __future__ import annotations

import ast
from pathlib import Path

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


def imports() -> list[tuple[str, str, int]]:
    """(importing module, imported elicit module, line) for every import in the package."""
    out = []
    for path in sorted(PACKAGE.rglob("*.py")):
        here = _module_of(path)
        package = here if path.name == "__init__.py" else here.rsplit(".", 1)[0]
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:   # relative: resolve against the importing package
                    base = package.split(".")[: len(package.split(".")) - node.level + 1]
                    names = [".".join(base + ([node.module] if node.module else []))]
                else:
                    names = [node.module or ""]
            else:
                continue
            out += [(here, n, node.lineno) for n in names
                    if n == "elicit" or n.startswith("elicit.")]
    return out


def test_every_subpackage_has_a_layer():
    units = {_unit(_module_of(p)) for p in PACKAGE.rglob("*.py")}
    assert units - set(LAYERS) == set(), "give the new subpackage a layer here and in the docs"


def test_imports_only_point_down():
    bad = []
    for src, dst, line in imports():
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
    found = {(s, d) for s, d, _ in imports()}
    # lazy: the facade imports the session only when asked for it
    assert ("elicit", "elicit.session.session") in found


@pytest.mark.parametrize("unit", sorted(u for u in LAYERS if not u.startswith("__")))
def test_the_architecture_page_names_every_subpackage(unit):
    text = DOC.read_text()
    assert f"{unit}/" in text or f"{unit}.py" in text, f"docs/architecture.md lacks {unit}"
