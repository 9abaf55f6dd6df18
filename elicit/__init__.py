"""elicit: human-in-the-loop active covariance learning (Afrabandpey et al., IJCAI 2019)."""

from elicit.engines import get_engine
from elicit.experts import Answer, Expert, GroupOracle
from elicit.model import ElicitError, Hyper, ModelData, kernel
from elicit.posterior import NIGPosterior
from elicit.query import Elicitor, Query

__version__ = "0.1.0"


def __getattr__(name: str):
    # Session pulls in sqlite and the web stack's helpers: import it only when asked for.
    if name == "Session":
        from elicit.session import Session

        return Session
    raise AttributeError(f"module 'elicit' has no attribute {name!r}")

__all__ = [
    "Answer",
    "ElicitError",
    "Elicitor",
    "Expert",
    "GroupOracle",
    "Hyper",
    "ModelData",
    "NIGPosterior",
    "Query",
    "Session",
    "get_engine",
    "kernel",
]
