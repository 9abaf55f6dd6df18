"""How the command line reports a failure: one ``elicit: error: ...`` line (exit status 2) for
an ElicitError, an SQLite or an operating system error; anything else keeps its traceback."""

from __future__ import annotations

import argparse
import os
import sqlite3
import sys
from collections.abc import Callable

from elicit.errors import ElicitError, EngineUnavailable
from elicit.internal.text import printable


def error_line(exc: BaseException) -> str | None:
    """The line the command line prints for ``exc``, or None if ``exc`` is a bug."""
    if isinstance(exc, EngineUnavailable):
        return f"{exc} (choose another engine with --engine numpy)"
    if isinstance(exc, ElicitError):  # the library's min_df=N is the option --min-df N here
        return str(exc).replace("min_df=", "--min-df ")
    if isinstance(exc, ModuleNotFoundError) and exc.name == "flask":  # the optional extra
        return "the web page (elicit serve) needs Flask: pip install 'elicit[web]'"
    if isinstance(exc, sqlite3.Error):
        return f"session file problem: {exc}"
    if isinstance(exc, OSError):
        return f"{exc.strerror or exc}: {exc.filename or ''}".rstrip(": ")
    return None


def run_command(func: Callable[[argparse.Namespace], int | None],
                args: argparse.Namespace) -> int:
    """Run ``func(args)`` and return its exit status (None is 0; 2 after a one-line error)."""
    try:
        return int(func(args) or 0)
    except BrokenPipeError:
        # standard output to the null device, so the final flush prints no second error
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
            os.close(devnull)
        except (OSError, ValueError, AttributeError):
            pass  # no real file descriptor (a captured stream): nothing will be flushed to it
        return 141  # 128 + SIGPIPE: the reader of the output has gone
    except KeyboardInterrupt as e:
        # A front end that stops on a signal carries its own status (128 + the signal).
        print("elicit: interrupted", file=sys.stderr)
        return int(getattr(e, "code", 130))  # Ctrl-C: 128 + SIGINT
    except Exception as e:
        if (line := error_line(e)) is None:
            raise
        print(f"elicit: error: {printable(line)}", file=sys.stderr)
        return 2  # the status of argparse's option errors
