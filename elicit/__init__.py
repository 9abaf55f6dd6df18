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

if TYPE_CHECKING:  # what the names are, for type checkers and editors
    from elicit.elicitation.answers import Answer, Expert, GroupOracle, SignOracle
    from elicit.elicitation.elicitor import Elicitor, Query
    from elicit.elicitation.settings import RoundSettings
    from elicit.engines import get_engine
    from elicit.errors import ElicitError
    from elicit.estimator import ElicitRegressor
    from elicit.model.kernel import kernel
    from elicit.model.posterior import NIGPosterior
    from elicit.model.spec import Hyper, ModelData
    from elicit.session.session import Session


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
