"""The result of a MAP fit: what every engine returns and the rest of elicit reads."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

from elicit.model.kernel import kernel
from elicit.model.spec import ModelData, Params
from elicit.model.theta import params_of


@dataclass(frozen=True)
class MAPResult:
    """The MAP of (gamma, xi[, tau2][, zeta][, delta]) found by an engine; immutable.

    Attributes
    ----------
    gamma, xi, tau2, zeta, delta
        The MAP (``tau2`` the fixed value in the fixed variant; zeta, delta ``None`` in a model
        without them).
    log_density
        The log posterior density without the Jacobian of Stan's transforms, up to a constant
        that depends on the engine.
    converged, engine, n_iter, message
        What the optimiser reported.
    warm_hessian
        The numpy engine's base Hessian at an earlier point, for the next warm refit.
    U, coupled, scales
        The meta-features and coupled set, from which :attr:`K` is rebuilt, and the relevance
        model's per-feature prior scales h = sqrt(lambda).
    problem
        What the numpy engine fitted but for the answers: a warm refit is checked for another
        mode only when it refits the same problem."""

    gamma: np.ndarray
    xi: float
    tau2: float
    log_density: float
    converged: bool
    engine: str
    n_iter: int = 0
    message: str = ""
    warm_hessian: np.ndarray | None = field(default=None, repr=False, compare=False)
    U: np.ndarray | None = field(default=None, repr=False, compare=False)
    coupled: np.ndarray | None = field(default=None, repr=False, compare=False)
    zeta: float | None = None
    scales: np.ndarray | None = field(default=None, repr=False, compare=False)
    problem: tuple | None = field(default=None, repr=False, compare=False)
    delta: float | None = None

    @classmethod
    def at(cls, theta: np.ndarray, data: ModelData, **fields) -> MAPResult:
        """The result at ``theta`` (blocks by ``data``'s layout, U from it) and ``fields``."""
        p = params_of(theta, data)
        return cls(gamma=np.array(p.gamma), xi=p.xi, tau2=p.tau2, U=data.U, zeta=p.zeta,
                   delta=p.delta, **fields)

    def __post_init__(self) -> None:
        # read-only arrays: a result is shared (a session's initial fit, a sweep's strategies)
        for name in ("zeta", "delta"):
            if getattr(self, name) is not None:
                object.__setattr__(self, name, float(getattr(self, name)))
        for name in ("gamma", "warm_hessian", "scales"):
            if getattr(self, name) is not None:
                a = np.array(getattr(self, name), dtype=float)
                a.setflags(write=False)
                object.__setattr__(self, name, a)

    @property
    def params(self) -> Params:
        return Params(self.gamma, self.xi, self.tau2, self.zeta, self.delta)

    @cached_property
    def K(self) -> np.ndarray:
        """The kernel matrix at the MAP, rebuilt from gamma and the meta-features."""
        if self.U is None:
            raise RuntimeError("this MAPResult was built without meta-features")
        K = kernel(self.U, self.gamma, self.coupled)
        K.setflags(write=False)
        return K
