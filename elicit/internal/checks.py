"""Checks of arguments shared across the package."""

from __future__ import annotations

import numpy as np

from elicit.errors import ElicitError


def check_int(value: object, message: str, low: int | None = None) -> int:
    """``value`` as an ``int`` if it is an integer (Python or NumPy, not a bool) of at least
    ``low`` (when given), else an :class:`ElicitError` with ``message``."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) \
            or (low is not None and value < low):
        raise ElicitError(message)
    return int(value)


def check_bool(value: object, name: str) -> bool:
    """``value`` if it is True or False (NumPy's too): a string such as ``"no"`` is truthy."""
    if not isinstance(value, (bool, np.bool_)):
        raise ElicitError(f"{name} must be True or False, got {value!r}")
    return bool(value)
