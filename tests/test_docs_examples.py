"""The Python examples of the docs, run as written, so that an example cannot rot.

Each document's ```` ```python ```` blocks run in order in one namespace (a later block may use
what an earlier one made), in an empty working folder. A block that cannot run in a test says
so in the document, in an HTML comment right above it that a reader does not see:
``<!-- docs-test: skip (why) -->``; its imports are still run, so a module that moved is
caught. ``<!-- docs-test: argv ARG ... -->`` gives a script its command-line arguments
(``{tmp}`` is the working folder).

The documents of :data:`DOCS` are covered here (those that read the paper's data or take
seconds in the slow suite); tests/harness/test_extending.py also checks what
docs/extending.md's example made, and tests/model/test_models.py runs docs/models.md's model
of one's own in the fast suite. docs/simulations.md's blocks run (slow, fewer runs) in
tests/paper/test_experiment.py. Not run by any test: the blocks of scaling.md (they need
dask-jobqueue and a cluster) and benchmarks.md (measurements that import modules of tests/).
A model an example registers is unregistered afterwards.
"""

from __future__ import annotations

import ast
import re
import shlex
import sys
import types
from pathlib import Path

import pytest

from elicit.model.variants import MODELS, unregister_model

ROOT = Path(__file__).resolve().parent.parent

#: (document, pytest marks): documents whose examples need nothing but the package run always
DOCS = [
    ("README.md", ()),
    ("docs/session.md", ()),
    ("docs/estimator.md", ()),
    # registers a model, a strategy, a utility and a kind of question (removed afterwards),
    # then runs a two-run sweep with them; tests/harness/test_extending.py checks what it made
    ("docs/extending.md", ()),
    # the durability script times 1000 answers with fsync: slow on a busy disk
    ("docs/reliability.md", (pytest.mark.slow,)),
    # a program of one's own and a variant's own program, fitted through PyStan (compiled
    # once per machine)
    ("docs/stan.md", (pytest.mark.slow, pytest.mark.pystan)),
    # its one example reads a corpus of one's own: its imports are checked
    ("docs/data.md", ()),
    # measurements on the paper's data: seconds to a minute each
    ("docs/metafeatures.md", (pytest.mark.slow, pytest.mark.data)),
    ("docs/realdata.md", (pytest.mark.slow, pytest.mark.data)),
    ("docs/models.md", (pytest.mark.slow, pytest.mark.data)),
]

_BLOCK = re.compile(r"(?:<!--\s*docs-test:\s*(?P<mark>.*?)\s*-->\s*\n)?"
                    r"^```python[ \t]*\n(?P<code>.*?)^```", re.S | re.M)


def examples(doc: str) -> list[tuple[int, str, str]]:
    """``(line, marker, code)`` of each Python block of ``doc``, in order."""
    text = (ROOT / doc).read_text(encoding="utf-8")
    return [(text.count("\n", 0, m.start("code")) + 1, m.group("mark") or "", m.group("code"))
            for m in _BLOCK.finditer(text)]


def _imports_only(code: str, name: str):
    tree = ast.parse(code, name)
    tree.body = [n for n in tree.body if isinstance(n, (ast.Import, ast.ImportFrom))]
    return compile(tree, name, "exec", dont_inherit=True)


@pytest.mark.parametrize("doc", [pytest.param(d, marks=m, id=d) for d, m in DOCS])
@pytest.mark.usefixtures("registries_restored")
def test_the_python_examples_of_a_doc_run_as_written(doc, tmp_path, monkeypatch, capsys):
    pytest.importorskip("matplotlib")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("MPLBACKEND", "Agg")
    monkeypatch.setattr(sys, "argv", [doc])
    blocks = examples(doc)
    assert blocks, f"{doc} has no Python example any more; drop it from DOCS"
    # The examples' namespace is a module's, and their code does not inherit this file's
    # `from __future__ import annotations`: a dataclass defined there resolves its string
    # annotations through sys.modules, as in a user's script.
    module = types.ModuleType("__docs__")
    monkeypatch.setitem(sys.modules, module.__name__, module)
    namespace = module.__dict__
    skipped: list[str] = []
    registered = set(MODELS)
    try:
        _run(doc, blocks, namespace, skipped, monkeypatch, tmp_path)
    finally:
        for name in set(MODELS) - registered:
            unregister_model(name)
    out = capsys.readouterr().out
    # Examples that print a check print True (and never False).
    assert "False" not in out, out
    if skipped:
        print(f"{doc}: imports only for {', '.join(skipped)}")


def _run(doc, blocks, namespace, skipped, monkeypatch, tmp_path) -> None:
    """Run ``blocks`` of ``doc`` in ``namespace`` (an imports-only block's name goes to
    ``skipped``)."""
    for line, mark, code in blocks:
        name = f"{doc}:{line}"
        if mark.startswith("skip"):
            assert re.fullmatch(r"skip \(.+\).*", mark), f"{name}: say why it is skipped"
            exec(_imports_only(code, name), {})
            skipped.append(name)
            continue
        if mark.startswith("argv"):
            args = shlex.split(mark.removeprefix("argv"))
            monkeypatch.setattr(sys, "argv", [doc, *(a.format(tmp=tmp_path) for a in args)])
        else:
            assert not mark, f"{name}: unknown docs-test marker {mark!r}"
        exec(compile(code, name, "exec", dont_inherit=True), namespace)

