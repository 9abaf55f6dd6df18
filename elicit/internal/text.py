"""Text that reaches a terminal: never a raw control character. What experts and data files
wrote may hold escape sequences (``ESC ]0;...`` retitles a terminal, a newline forges a line
of output, U+202E reverses what follows); :func:`printable` shows them as visible escapes.
"""

from __future__ import annotations

import shlex
import unicodedata
from collections.abc import Sequence

#: Unicode's explicit bidirectional formatting characters (embeddings, overrides, isolates and
#: marks): they reorder how the text after them is displayed.
BIDI_CONTROLS = frozenset("\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e"
                          "\u2066\u2067\u2068\u2069")


def is_control(ch: str) -> bool:
    """True for a character a terminal would act on rather than show: control characters
    (Cc), line and paragraph separators (Zl, Zp) and bidirectional formatting characters."""
    return unicodedata.category(ch) in ("Cc", "Zl", "Zp") or ch in BIDI_CONTROLS


def has_control(text: str) -> bool:
    """True if ``text`` holds any character :func:`is_control` refuses to print raw."""
    return any(is_control(ch) for ch in text)


def printable(text: object) -> str:
    """``str(text)`` with every :func:`is_control` character written as ``repr`` writes it
    (``\\x1b``, ``\\n``, ``\\u202e``); backslashes are left alone."""
    # repr escapes every such character (Cc, Zl, Zp, bidi formats: not printable) as \x, \u
    return "".join(repr(ch)[1:-1] if is_control(ch) else ch for ch in str(text))


def printable_line(text: str) -> str:
    """``text`` with its control characters escaped, except its leading newlines (ours)."""
    body = text.lstrip("\n")
    return "\n" * (len(text) - len(body)) + printable(body)


def command_line(*words: object) -> str:
    """A command for the user to type: each word quoted for a POSIX shell where needed, then
    :func:`printable`."""
    return printable(" ".join(shlex.quote(str(w)) for w in words))


def listing(items: Sequence[object], limit: int = 8) -> str:
    """At most ``limit`` items for a one-line message, each as its ``repr``, then how many
    more there are: ``'a', 'b' and 3 more``."""
    shown = ", ".join(repr(s) for s in items[:limit])
    return shown + (f" and {len(items) - limit} more" if len(items) > limit else "")
