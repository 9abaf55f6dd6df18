"""The engine interface: one small abstract backend, as in prophet's ``IStanBackend``."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from elicit.model.kernel import kernel
from elicit.model.spec import ModelData, Params


@dataclass
class MAPResult:
    """The MAP of (gamma, xi[, tau2]) and what was learned on the way.

    ``log_density`` is the log posterior density without the Jacobian of Stan's constraining
    transforms (``jacobian=False``), up to a constant that depends on the engine.
    ``hess_base`` is, when an engine provides it, the Hessian of the non-feedback part of the
    log density (the y-likelihood and the priors) at the MAP, in the order (gamma, xi[, tau2]);
    the numpy engine uses it to warm-start Newton refits.
    """

    gamma: np.ndarray
    xi: float
    tau2: float
    log_density: float
    converged: bool
    engine: str
    n_iter: int = 0
    message: str = ""
    hess_base: np.ndarray | None = field(default=None, repr=False)
    #: a recent base Hessian, not necessarily at this MAP: a preconditioner for warm refits
    warm_hessian: np.ndarray | None = field(default=None, repr=False)
    _K: np.ndarray | None = field(default=None, repr=False)
    _U: np.ndarray | None = field(default=None, repr=False)

    @property
    def params(self) -> Params:
        return Params(self.gamma, self.xi, self.tau2)

    @property
    def K(self) -> np.ndarray:
        """The kernel matrix at the MAP, rebuilt in Python from gamma (Stan does not emit it)."""
        if self._K is None:
            if self._U is None:
                raise RuntimeError("this MAPResult was built without meta-features")
            self._K = kernel(self._U, self.gamma)
        return self._K


class Engine(ABC):
    """Fits the MAP of a model variant to :class:`~elicit.model.ModelData`."""

    #: short name used on the command line
    name: str = "abstract"

    @abstractmethod
    def fit(self, data: ModelData, init: Params | MAPResult | None = None) -> MAPResult:
        """Return the MAP, warm-started from ``init`` (a previous MAP) when given."""


def shipped_stan_file(variant: str) -> Path:
    """Path of the shipped Stan program of a variant (``fixed`` or ``learned``).

    Installed, the programs are package data in ``elicit/stan/``; in a source checkout (and an
    editable install) they are the top-level ``stan/`` folder. That folder has no
    ``__init__.py`` on purpose: a regular package named ``stan`` at the repository root would
    shadow PyStan's ``stan`` whenever the root is on ``sys.path``.
    """
    import elicit

    name = f"elicit_{variant}_tau.stan"
    pkg = Path(elicit.__file__).resolve().parent
    for folder in (pkg / "stan", pkg.parent / "stan"):
        if (folder / name).is_file():
            return folder / name
    raise FileNotFoundError(f"the shipped Stan program {name} is missing from {pkg / 'stan'}; "
                            "reinstall elicit")
