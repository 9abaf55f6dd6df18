"""Direction answers: beta's prior mean ``delta s``, s the expert's signs and ``delta ~
N+(0, rms(y))`` learned (:func:`delta_prior_sd`: on standardised inputs no single weight
exceeds the spread of y); docs/models.md, "Direction answers", has the model and the
alternatives measured.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

#: direction answers (``ModelData.direction``): the outcome goes up, down, or not known
RAISES, LOWERS, UNJUDGED = 1, -1, 0


@dataclass(frozen=True)
class DirectionMean:
    """The prior mean ``delta s`` (module docstring); s is 0 for a feature without an answer."""

    name: str = "direction mean"


DIRECTION = DirectionMean()


def delta_prior_sd(y: np.ndarray) -> float:
    """The prior sd of delta: the root mean square of y (1 when y is all zeros)."""
    rms = float(np.sqrt(np.mean(np.square(y))))
    return rms if rms > 0 else 1.0
