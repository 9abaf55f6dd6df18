"""The two exceptions every part of elicit raises.

``ElicitError`` is a problem with the user's input (its message says what to fix); the command
line prints it as one ``elicit: error: ...`` line. ``EngineUnavailable`` says an engine cannot
run on this machine (no CmdStan, no PyStan); ``EngineError`` that an engine failed on a fit
(its message is the engine's own).
"""

from __future__ import annotations


class ElicitError(ValueError):
    """A problem with the user's input; the message says what to fix."""


class EngineUnavailable(RuntimeError):
    """The engine cannot run here (for example, no CmdStan installation)."""


class EngineError(RuntimeError):
    """An engine failed to fit (for example, CmdStan's optimiser gave up); the message says why."""
