"""The exceptions elicit raises for problems it can state in one line.

Every one is an :class:`ElicitError` (a ``ValueError``, as scikit-learn expects of bad
input), so a caller catches one class and prints one ``elicit: error: ...`` line.
:class:`EngineUnavailable` and :class:`EngineError` are also ``RuntimeError``s: faults of the
machine or an engine rather than of the values given.
"""

from __future__ import annotations


class ElicitError(ValueError):
    """A problem elicit reports in one line; for bad input the message says what to fix."""


class EngineUnavailable(ElicitError, RuntimeError):
    """The engine cannot run here (for example, no CmdStan installation)."""


class EngineError(ElicitError, RuntimeError):
    """An engine failed to fit (for example, CmdStan's optimiser gave up); the message says why."""
