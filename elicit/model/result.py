"""The result of a MAP fit: what every engine returns and the rest of elicit reads (with the
model, so that the posterior, the utilities and the sessions need not know the engine)."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

from elicit.model.kernel import kernel
from elicit.model.spec import ModelData, Params
from elicit.model.theta import delta_of, split_theta, zeta_of


@dataclass(frozen=True)
class MAPResult:
    """The MAP of (gamma, xi[, tau2][, zeta][, delta]) found by an engine; immutable.

    Attributes
    ----------
    gamma, xi, tau2
        The MAP (``tau2`` is the fixed value in the fixed-tau2 variant).
    log_density
        The log posterior density without the Jacobian of Stan's constraining transforms,
        up to a constant that depends on the engine.
    converged, engine, n_iter, message
        Whether the optimiser met its convergence test, which engine, how many iterations,
        and what the optimiser said.
    warm_hessian
        The numpy engine's base Hessian (y-likelihood and priors, order (gamma, xi[, tau2])),
        computed at an earlier point: a preconditioner for the next warm refit.
    U, coupled
        The meta-features and a known-coupling model's coupled set (``None``: the full
        kernel), from which :attr:`K` is rebuilt (Stan does not emit K).
    zeta, delta, scales
        The relevance model's zeta and per-feature prior scales h = sqrt(lambda), the
        direction models' delta at the MAP (``None`` for the other models).
    problem
        What the numpy engine fitted but for the answers (data arrays, hyperparameters): a
        warm refit is checked for another mode only when it refits the same problem
        (:class:`~elicit.model.refit_checks.ColdStartPolicy`).

    Fields the engine does not set are ``None``.
    """

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
        """The result at ``theta`` (its blocks read by ``data``'s layout, ``U`` from ``data``);
        ``fields`` the rest (``log_density``, ``converged``, ``engine``, ...)."""
        gamma, xi, tau2 = split_theta(theta, data)
        return cls(gamma=np.array(gamma), xi=xi, tau2=tau2, U=data.U,
                   zeta=zeta_of(theta, data), delta=delta_of(theta, data), **fields)

    def __post_init__(self) -> None:
        # read-only arrays: a result is shared (a session's initial fit, a sweep's strategies)
        gamma = np.array(self.gamma, dtype=float)
        gamma.setflags(write=False)
        object.__setattr__(self, "gamma", gamma)
        for name in ("zeta", "delta"):
            if getattr(self, name) is not None:
                object.__setattr__(self, name, float(getattr(self, name)))
        for name in ("warm_hessian", "scales"):
            if getattr(self, name) is not None:
                a = np.array(getattr(self, name), dtype=float)
                a.setflags(write=False)
                object.__setattr__(self, name, a)

    @property
    def params(self) -> Params:
        return Params(self.gamma, self.xi, self.tau2, self.zeta, self.delta)

    @cached_property
    def K(self) -> np.ndarray:
        """The kernel matrix at the MAP, rebuilt from gamma and the meta-features: the prior
        correlation of beta in every model (see :attr:`scales`)."""
        if self.U is None:
            raise RuntimeError("this MAPResult was built without meta-features")
        K = kernel(self.U, self.gamma, self.coupled)
        K.setflags(write=False)
        return K
