"""The command line starts without the library: ``elicit --help`` and the import of
``elicit.cli.main`` load neither the model nor scipy, pandas or scikit-learn (the command's
own options and work load what they need)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import elicit

ROOT = Path(elicit.__file__).resolve().parent.parent
#: what a start without a command must not load: each costs 0.1-0.3 s
HEAVY = ("scipy", "pandas", "sklearn", "matplotlib", "elicit.model", "elicit.engines",
         "elicit.data", "elicit.paper", "elicit.session")

PROBE = """
import json, os, sys
class Until:  # the import of {until!r} starts: what is loaded then, and the end of the probe
    def find_spec(self, name, path=None, target=None):
        if name == {until!r}:
            print(json.dumps(sorted([*sys.modules, name])), file=sys.stderr, flush=True)
            os._exit(0)
if {until!r} is not None:
    sys.meta_path.insert(0, Until())
{code}
print(json.dumps(sorted(sys.modules)), file=sys.stderr)
"""


def _loaded(code: str, until: str | None = None) -> list[str]:
    """The modules loaded by ``code`` in a fresh interpreter that imports this checkout; with
    ``until``, those loaded when the import of the module ``until`` starts (it is listed), and
    the interpreter ends there: a probe that expects a load need not pay for all the library
    loads after it (scipy, scikit-learn: most of a second)."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get(
        "PYTHONPATH", "")])}
    res = subprocess.run([sys.executable, "-c", PROBE.format(code=code, until=until)], env=env,
                         capture_output=True, text=True, cwd=ROOT, timeout=120)
    return json.loads(res.stderr.strip().splitlines()[-1])


def _heavy(modules: list[str]) -> list[str]:
    return [m for m in modules if any(m == h or m.startswith(h + ".") for h in HEAVY)]


def test_importing_the_command_line_loads_no_library():
    mods = _loaded("import elicit.cli.main")
    assert "elicit.cli.main" in mods
    assert _heavy(mods) == []


def test_help_loads_no_library():
    mods = _loaded("from elicit.cli.main import main\n"
                   "try:\n    main(['--help'])\nexcept SystemExit:\n    pass")
    assert _heavy(mods) == []


@pytest.mark.parametrize("command", [["realdata", "--help"], ["session", "new", "--help"]])
def test_a_command_builds_its_own_options(command):
    """The probe can fail: a command's own help does load what its options name (engines,
    models, data sets), and prints them."""
    mods = _loaded("from elicit.cli.main import main\n"
                   f"try:\n    main({command!r})\nexcept SystemExit:\n    pass",
                   until="elicit.engines")
    assert "elicit.engines" in mods


@pytest.mark.slow
@pytest.mark.parametrize("command", [["ask", "S.elicit"], ["history", "S.elicit"],
                                     ["ask", "--help"]])
def test_a_session_command_parses_without_the_library(command):
    """Bug (2026-11-30): the session commands' ``--engine`` choices imported the engines and
    with them the model and scipy, 0.5 s before ``elicit ask`` or ``history`` even opened the
    file (and for ``ask --help``). The probe can fail: it parses as ``main`` does."""
    mods = _loaded("from elicit.cli.main import build_parser\n"
                   f"try:\n    build_parser({{{command[0]!r}}}).parse_args({command!r})\n"
                   "except SystemExit:\n    pass")
    assert "elicit.cli.session" in mods
    # the engines' names come from their registry, which builds an engine only when asked
    assert _heavy([m for m in mods if m not in ("elicit.engines", "elicit.engines.registry")]) \
        == []


@pytest.mark.slow
def test_ask_batch_parses_without_the_model():
    """Bug (2026-11-30): ``--batch K`` was checked against the largest batch imported from
    ``elicit.session.session``, with it the model and scipy, before ``elicit ask --batch``
    opened the file; the bound is the record's (which reads the file without the model)."""
    mods = _loaded("from elicit.cli.main import build_parser\n"
                   "build_parser({'ask'}).parse_args(['ask', 'S.elicit', '--batch', '3'])")
    assert "elicit.session.record" in mods
    assert {"scipy", "pandas", "elicit.model.spec", "elicit.engines.base"} & set(mods) == set()


@pytest.mark.slow
@pytest.mark.parametrize("extra", [[], ["--csv"], ["--agreement"]])
def test_history_reads_the_record_without_the_model(tmp_path, extra):
    """Issue 23: ``elicit history`` loaded the model, scipy and pandas (0.8 s of CPU) to print
    the record. ``--agreement`` reads the record too (its table is a DataFrame: pandas, and
    the export module's scipy), and builds no model: the probe can fail there as well."""
    from tests.helpers import create_session

    path = tmp_path / "s.session"
    with create_session(path) as s:
        s.answer(s.next_query(), "similar", comment="a comment")
    mods = _loaded(f"from elicit.cli.main import main\nmain(['history', {str(path)!r}, *{extra}])")
    assert "elicit.session.terminal" in mods
    # (the parser's engine names come from the registry alone: see the test above)
    heavy = {"scipy", "pandas", "elicit.model.spec", "elicit.engines.base"}
    assert heavy & set(mods) == ({"scipy", "pandas"} if extra == ["--agreement"] else set())


ORDER = """
import io, json, sys
seen = []
class Watch:  # notes the first import of scipy, then lets the normal import go on
    def find_spec(self, name, path=None, target=None):
        if name == "scipy" and "scipy" not in seen:
            seen.append("scipy")
sys.meta_path.insert(0, Watch())
class Out(io.StringIO):
    def write(self, text):
        if "── Question" in text and "question" not in seen:
            seen.append("question")
        return super().write(text)
sys.stdin, sys.stdout = io.StringIO("q\\n"), Out()
from elicit.cli.main import main
status = main({argv!r})
print(json.dumps([status, seen]), file=sys.stderr)
"""


@pytest.mark.slow
def test_ask_shows_a_stored_question_before_the_model_loads(tmp_path):
    """Issue 23: ``elicit ask`` loaded the model (0.9 s of CPU) before it showed the question
    the file holds: one shown and not answered (also the first of a stored batch, for ``ask
    --batch K``, whose parser loaded the model for the largest batch), or a new session's
    first question, kept by ``elicit session new``, printed once (the loop's own choice, to
    the bit, is not shown again). The probe can fail: a question not known yet (a session
    with none stored, a new batch) must load the model (scipy) first, since the model
    chooses it."""
    from conftest import make_session_data

    from elicit.cli.main import main
    from tests.helpers import create_session

    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get(
        "PYTHONPATH", "")])}
    np.savez(tmp_path / "data.npz", **dict(zip("XyU", make_session_data())))
    first = tmp_path / "first.session"  # a new session, as the command line makes it
    assert main(["session", "new", "--from-npz", str(tmp_path / "data.npz"), "--out",
                 str(first)]) == 0
    for stored in ("shown", "none", "batch"):
        with create_session(tmp_path / f"{stored}.session") as s:
            if stored == "shown":
                s.next_query()  # shown, then the expert quit: stored
            elif stored == "batch":
                s.batch(3)
    # (in this order: each call records its question, shown, in the file)
    for name, extra, early in (("first", ["--batch", "3"], False), ("first", [], True),
                               ("shown", [], True), ("none", [], False),
                               ("batch", ["--batch", "3"], True)):
        argv = ["ask", str(tmp_path / f"{name}.session"), *extra]
        res = subprocess.run([sys.executable, "-c", ORDER.format(argv=argv)], env=env,
                             capture_output=True, text=True, cwd=ROOT, timeout=120)
        status, seen = json.loads(res.stderr.strip().splitlines()[-1])
        assert status == 0
        assert seen == (["question", "scipy"] if early else ["scipy", "question"]), argv


def test_the_facade_names_load_when_asked_for():
    mods = _loaded("import elicit")
    assert _heavy(mods) == []
    mods = _loaded("import elicit\nelicit.Elicitor", until="elicit.elicitation.elicitor")
    assert "elicit.elicitation.elicitor" in mods
    assert elicit.Elicitor.__module__ == "elicit.elicitation.elicitor"
    assert {"Elicitor", "Session", "ElicitRegressor", "get_engine"} <= set(dir(elicit))
    with pytest.raises(AttributeError, match="has no attribute 'nothing'"):
        _ = elicit.nothing


def test_every_facade_name_is_a_re_export_a_strict_type_checker_sees():
    """Bug (2026-11-30): ``__all__`` made from ``_EXPORTS`` at run time is invisible to type
    checkers, so under mypy's ``--no-implicit-reexport`` (and pyright on a py.typed package)
    ``from elicit import Elicitor`` was an error. Each name needs ``from M import X as X``,
    under TYPE_CHECKING, from the module ``_EXPORTS`` loads it from."""
    import ast

    tree = ast.parse(Path(elicit.__file__).read_text())
    block = next(n for n in tree.body if isinstance(n, ast.If)
                 and ast.unparse(n.test) == "TYPE_CHECKING")
    seen = {(a.name, node.module) for node in block.body if isinstance(node, ast.ImportFrom)
            for a in node.names if a.asname == a.name}
    assert seen == {(name, module) for name, module in elicit._EXPORTS.items()}
    assert sorted(elicit.__all__) == sorted(elicit._EXPORTS)


def test_every_option_of_every_command_says_what_it_does():
    """Bug (2026-11-30): ``--runs`` of ``elicit realdata`` and ``elicit table1`` had no help
    line, so ``--help`` listed it without what it is or its default."""
    import argparse

    from elicit.cli.main import build_parser

    def bare(parser, name):
        for a in parser._actions:
            if isinstance(a, argparse._SubParsersAction):
                yield from (x for n, sub in a.choices.items() for x in bare(sub, f"{name} {n}"))
            elif not a.help:
                yield f"{name} {'/'.join(a.option_strings) or a.dest}"

    assert list(bare(build_parser(), "elicit")) == []


def test_version_names_the_code_and_only_version_asks_for_it(monkeypatch, capsys):
    """``elicit --version`` printed the release alone, "elicit 0.1.0" at every commit. The code
    (``code_version``: git in a checkout) is asked for only when --version is given: argparse
    builds a version text with the parser, so a plain one would run git at every start."""
    from elicit.cli.main import main
    from elicit.internal import provenance

    code = provenance.code_version()

    def asked() -> str:
        raise AssertionError("the code's version was asked for without --version")

    monkeypatch.setattr(provenance, "code_version", asked)
    with pytest.raises(SystemExit):
        main(["--help"])
    with pytest.raises(SystemExit):
        main(["models", "--help"])
    monkeypatch.setattr(provenance, "code_version", lambda: code)
    capsys.readouterr()
    with pytest.raises(SystemExit) as done:
        main(["--version"])
    assert done.value.code == 0
    assert capsys.readouterr().out == f"elicit {elicit.__version__} (code {code})\n"


def test_the_version_help_holds_for_an_installed_copy():
    """``--help`` said --version names the code by "its commit"; an installed copy has no git
    and names it ``elicit+`` and a hash of its source."""
    from elicit.cli.main import build_parser

    action = next(a for a in build_parser()._actions if "--version" in a.option_strings)
    assert "hash" in action.help
