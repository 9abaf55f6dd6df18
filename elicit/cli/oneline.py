"""How the command line reports a failure: one ``elicit: error: ...`` line, exit status 2.

The library raises an :class:`~elicit.errors.ElicitError` (engines included:
:class:`~elicit.errors.EngineUnavailable`, :class:`~elicit.errors.EngineError`) for every
problem it can state in one line. A session file's SQLite errors and the operating system's
errors (a missing, unreadable or unwritable file) are reported the same way. Anything else is
a bug and keeps its traceback.
"""

from __future__ import annotations

import argparse
import sqlite3
import sys
from collections.abc import Callable

from elicit.errors import ElicitError, EngineUnavailable
from elicit.internal.text import printable

#: The exit status of a reported error (argparse's, for the option errors).
ERROR_STATUS = 2
#: The exit status after Ctrl-C (128 + SIGINT).
INTERRUPTED_STATUS = 130


def error_line(exc: BaseException) -> str | None:
    """The line the command line prints for ``exc``, or None if ``exc`` is a bug."""
    if isinstance(exc, EngineUnavailable):
        return f"{exc} (choose another engine with --engine numpy)"
    if isinstance(exc, ElicitError):
        return str(exc)
    if isinstance(exc, sqlite3.Error):
        return f"session file problem: {exc}"
    if isinstance(exc, OSError):
        return f"{exc.strerror or exc}: {exc.filename or ''}".rstrip(": ")
    return None


def run_command(func: Callable[[argparse.Namespace], int | None],
                args: argparse.Namespace) -> int:
    """Run one command, ``func(args)``, and return its exit status: its own (None is 0), 2
    after printing the one-line error of a failure, 130 after Ctrl-C."""
    try:
        return int(func(args) or 0)
    except KeyboardInterrupt as e:
        # A front end that stops on a signal carries its own status (128 + the signal).
        print("elicit: interrupted", file=sys.stderr)
        return int(getattr(e, "code", INTERRUPTED_STATUS))
    except Exception as e:
        line = error_line(e)
        if line is None:
            raise
        print(f"elicit: error: {printable(line)}", file=sys.stderr)
        return ERROR_STATUS
