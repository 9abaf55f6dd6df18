"""The exceptions elicit raises for problems it can state in one line.

Every one of them is an :class:`ElicitError`, so a caller (the command line included) catches
one class and prints one ``elicit: error: ...`` line:

* :class:`ElicitError` itself: a problem with the user's input; the message says what to fix.
  It is a ``ValueError``, as scikit-learn expects of bad parameters and data.
* :class:`EngineUnavailable`: an engine cannot run on this machine (no CmdStan, no PyStan).
* :class:`EngineError`: an engine failed on a fit; the message is the engine's own.

The last two are also ``RuntimeError``s: a fault of the machine or of an engine rather than of
the values given, and code that caught them as such keeps working.
"""

from __future__ import annotations


class ElicitError(ValueError):
    """A problem elicit reports in one line; for bad input the message says what to fix."""


class EngineUnavailable(ElicitError, RuntimeError):
    """The engine cannot run here (for example, no CmdStan installation)."""


class EngineError(ElicitError, RuntimeError):
    """An engine failed to fit (for example, CmdStan's optimiser gave up); the message says why."""
