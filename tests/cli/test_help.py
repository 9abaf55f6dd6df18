"""Each command's ``--help`` names only options the user can give there."""

from __future__ import annotations

import argparse
import re

from elicit.cli.main import build_parser


def _commands(p: argparse.ArgumentParser, path: tuple[str, ...] = ()):
    subs = [a for a in p._actions if isinstance(a, argparse._SubParsersAction)]
    if not subs:
        yield " ".join(path), p
    for s in subs:
        for name, sub in s.choices.items():
            yield from _commands(sub, (*path, name))


def test_a_commands_help_names_only_options_it_has_or_another_commands_by_name():
    # the shared --engine help named --stan-file on realdata, bench and session new, which
    # have no such option (only elicit synthetic has)
    parsers = dict(_commands(build_parser()))
    wrong = []
    for name, p in parsers.items():
        texts = [a.help or "" for a in p._actions] + [p.description or "", p.epilog or ""]
        for text in texts:
            for other, opt in re.findall(r"(?:elicit ([a-z0-9]+) )?(--[a-z][a-z0-9-]*)", text):
                owner = parsers.get(other, p)
                if opt not in {o for a in owner._actions for o in a.option_strings}:
                    wrong.append(f"{name}: {opt}")
    assert not wrong
