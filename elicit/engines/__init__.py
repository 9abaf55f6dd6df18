"""Engines that fit the MAP of the Stan model: numpy (default), cmdstan, pystan."""

from elicit.engines.base import Engine
from elicit.engines.registry import ENGINES, get_engine
from elicit.errors import EngineUnavailable
from elicit.model.result import MAPResult

__all__ = ["ENGINES", "Engine", "EngineUnavailable", "MAPResult", "get_engine"]
