"""elicit: human-in-the-loop active covariance learning (Afrabandpey et al., IJCAI 2019)."""

from elicit.engines import get_engine
from elicit.experts import Answer, Expert, GroupOracle
from elicit.model import ElicitError, Hyper, ModelData, kernel
from elicit.posterior import NIGPosterior
from elicit.query import Elicitor, Query

__version__ = "0.1.0"

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
    "get_engine",
    "kernel",
]
