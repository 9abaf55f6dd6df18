"""argparse value types shared by the ``elicit`` sub-commands (one message per mistake)."""

from __future__ import annotations

import argparse
import math


def _int(text: str, what: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected {what}, got {text!r}") from None


def positive_int(text: str) -> int:
    v = _int(text, "a positive integer")
    if v < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {v}")
    return v


def nonneg_int(text: str) -> int:
    v = _int(text, "an integer >= 0")
    if v < 0:
        raise argparse.ArgumentTypeError(f"expected an integer >= 0, got {v}")
    return v


def port(text: str) -> int:
    v = _int(text, "a port number")
    if not 0 <= v <= 65535:
        raise argparse.ArgumentTypeError(f"port must be between 0 and 65535, got {v}")
    return v


def strategies(text: str) -> tuple[str, ...]:
    from elicit.elicitation.strategies import STRATEGIES

    out = tuple(s.strip() for s in text.split(",") if s.strip())
    bad = [s for s in out if s not in STRATEGIES]
    if bad or not out:
        raise argparse.ArgumentTypeError(
            f"unknown strategy {bad[0] if bad else text!r}; choose from {', '.join(STRATEGIES)}")
    return out


def threshold_mean(text: str) -> float | str:
    """``--threshold-mean``: ``auto`` or a positive number."""
    if text == "auto":
        return text
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected 'auto' or a number, got {text!r}") from None
    if not v > 0:
        raise argparse.ArgumentTypeError(f"the threshold mean must be positive, got {v}")
    return v


def tau2(text: str) -> float | str:
    """``--tau2``: a positive number or ``cv``."""
    if text.strip().lower() == "cv":
        return "cv"
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"--tau2 must be a positive number or 'cv', got {text!r}") from None
    if not (math.isfinite(v) and v > 0):
        raise argparse.ArgumentTypeError(f"--tau2 must be a positive number or 'cv', got {v}")
    return v


def names(text: str) -> tuple[str, ...]:
    """A comma-separated list of names (sweep folders, say); at least one."""
    out = tuple(s.strip() for s in text.split(",") if s.strip())
    if not out:
        raise argparse.ArgumentTypeError(f"expected comma-separated names, got {text!r}")
    return out
