"""elicit: human-in-the-loop active covariance learning (Afrabandpey et al., IJCAI 2019)."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

__version__ = "0.1.0"

#: Where each name of the facade lives, imported when first asked for (PEP 562): ``import
#: elicit`` (every command line start) loads no scipy, sqlite or scikit-learn.
_EXPORTS: dict[str, str] = {name: module for module, names in [
    ("elicit.elicitation.answers", ("Answer", "Expert", "GroupOracle", "SignOracle")),
    ("elicit.elicitation.elicitor", ("Elicitor", "Query")),
    ("elicit.elicitation.settings", ("RoundSettings",)),
    ("elicit.engines", ("get_engine",)),
    ("elicit.errors", ("ElicitError",)),
    ("elicit.model.kernel", ("kernel",)),
    ("elicit.model.posterior", ("NIGPosterior",)),
    ("elicit.model.spec", ("Hyper", "ModelData")),
    ("elicit.session.session", ("Session",)),
    ("elicit.estimator", ("ElicitRegressor",)),
] for name in names}

if TYPE_CHECKING:  # what the names are; `X as X` marks each a re-export for type checkers
    from elicit.elicitation.answers import Answer as Answer
    from elicit.elicitation.answers import Expert as Expert
    from elicit.elicitation.answers import GroupOracle as GroupOracle
    from elicit.elicitation.answers import SignOracle as SignOracle
    from elicit.elicitation.elicitor import Elicitor as Elicitor
    from elicit.elicitation.elicitor import Query as Query
    from elicit.elicitation.settings import RoundSettings as RoundSettings
    from elicit.engines import get_engine as get_engine
    from elicit.errors import ElicitError as ElicitError
    from elicit.estimator import ElicitRegressor as ElicitRegressor
    from elicit.model.kernel import kernel as kernel
    from elicit.model.posterior import NIGPosterior as NIGPosterior
    from elicit.model.spec import Hyper as Hyper
    from elicit.model.spec import ModelData as ModelData
    from elicit.session.session import Session as Session


def __getattr__(name: str):
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'elicit' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value     # the next access is a plain attribute
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_EXPORTS])


__all__ = sorted(_EXPORTS)
