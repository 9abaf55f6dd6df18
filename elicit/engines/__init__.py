"""Engines that fit the MAP of the Stan model: numpy (default), cmdstan, pystan.

``get_engine("auto")`` picks CmdStan when an installation is found and the numpy engine
otherwise. A custom ``.stan`` file needs an engine that runs Stan (cmdstan or pystan).
"""

from elicit.engines.base import Engine, MAPResult
from elicit.engines.registry import ENGINES, get_engine
from elicit.errors import EngineUnavailable

__all__ = ["ENGINES", "Engine", "EngineUnavailable", "MAPResult", "get_engine"]
