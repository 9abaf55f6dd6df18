"""elicit: human-in-the-loop active covariance learning (Afrabandpey et al., IJCAI 2019)."""

from elicit.elicitation.answers import Answer, Expert, GroupOracle, SignOracle
from elicit.elicitation.elicitor import Elicitor, Query
from elicit.engines import get_engine
from elicit.errors import ElicitError
from elicit.model.kernel import kernel
from elicit.model.posterior import NIGPosterior
from elicit.model.spec import Hyper, ModelData

__version__ = "0.1.0"


def __getattr__(name: str):
    # Session pulls in sqlite and the web stack's helpers, ElicitRegressor scikit-learn (about
    # a second): import them only when asked for, so that every command starts fast.
    if name == "Session":
        from elicit.session.session import Session

        return Session
    if name == "ElicitRegressor":
        from elicit.estimator import ElicitRegressor

        return ElicitRegressor
    raise AttributeError(f"module 'elicit' has no attribute {name!r}")

__all__ = [
    "Answer",
    "ElicitError",
    "ElicitRegressor",
    "Elicitor",
    "Expert",
    "GroupOracle",
    "Hyper",
    "ModelData",
    "NIGPosterior",
    "Query",
    "Session",
    "SignOracle",
    "get_engine",
    "kernel",
]
