"""Query strategies: which pair to ask next."""

from __future__ import annotations

from typing import Literal

Strategy = Literal["random", "nonsequential", "sequential"]
STRATEGIES: tuple[str, ...] = ("random", "nonsequential", "sequential")
