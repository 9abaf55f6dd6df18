"""The two exceptions every part of elicit raises.

``ElicitError`` is a problem with the user's input (its message says what to fix); the command
line prints it as one ``elicit: error: ...`` line. ``EngineUnavailable`` says an engine cannot
run on this machine (no CmdStan, no PyStan).
"""

from __future__ import annotations


class ElicitError(ValueError):
    """A problem with the user's input; the message says what to fix."""


class EngineUnavailable(RuntimeError):
    """The engine cannot run here (for example, no CmdStan installation)."""
