"""Engines that fit the MAP of the Stan model: numpy (default), cmdstan, pystan."""

from elicit.engines.registry import ENGINES, get_engine

__all__ = ["ENGINES", "get_engine"]
