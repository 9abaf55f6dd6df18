"""The result of a MAP fit: what every engine returns and the rest of elicit reads.

It lives with the model, not with the engines, because the posterior
(:class:`~elicit.model.posterior.NIGPosterior`), the utilities and the sessions read it
without caring which engine made it.
"""

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
        The log posterior density without the Jacobian of Stan's constraining transforms
        (``jacobian=False``), up to a constant that depends on the engine.
    converged
        Whether the optimiser met its convergence test.
    engine, n_iter, message
        Which engine, how many iterations, and what the optimiser said.
    warm_hessian
        The Hessian of the non-feedback part of the log density (the y-likelihood and the
        priors) that the numpy engine's Newton iterations used, in the order
        (gamma, xi[, tau2]). It was computed at an earlier point, not necessarily at this MAP,
        and serves as a preconditioner for the next warm refit. ``None`` for other engines.
    U
        The meta-features, from which :attr:`K` is rebuilt (Stan does not emit K).
    coupled
        The coupled set of a known-coupling model (``ModelData.kernel_mask``; ``None``: the
        full kernel), which :attr:`K` applies; :meth:`Engine.fit` sets it.
    zeta
        The relevance model's zeta at the MAP (the logit of the share of relevant features
        among the unjudged ones); ``None`` for the other models.
    delta
        The direction models' delta at the MAP (the magnitude of the prior mean ``delta s``
        of beta); ``None`` for the other models.
    scales
        The relevance model's per-feature prior scales h = sqrt(lambda) at the MAP (the prior
        covariance of beta is ``sigma2 tau2 diag(h) K diag(h)``; :attr:`K` stays the prior
        correlation); ``None`` (all 1) for the other models. :meth:`Engine.fit` sets it.
    problem
        What the numpy engine fitted, but for the answers (its data arrays and the
        hyperparameters): a warm refit from this result is checked for another mode only
        when it is a refit of the same problem after answers, not a start for another
        tau2 or other data (:class:`~elicit.model.refit_checks.ColdStartPolicy`). ``None`` for
        other engines.
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
        """The result at the parameter vector ``theta`` of ``data``'s model: gamma, xi, tau2
        and the model's own blocks (zeta, delta) read from ``theta`` by its layout, ``U``
        from ``data``; ``fields`` the rest (``log_density``, ``converged``, ``engine``, ...).
        Every engine builds its results here."""
        gamma, xi, tau2 = split_theta(theta, data)
        return cls(gamma=np.array(gamma), xi=xi, tau2=tau2, U=data.U,
                   zeta=zeta_of(theta, data), delta=delta_of(theta, data), **fields)

    def __post_init__(self) -> None:
        # Read-only arrays: a result can be shared (the session's initial fit, a sweep's
        # strategies) without any caller changing it for the others.
        gamma = np.array(self.gamma, dtype=float)
        gamma.setflags(write=False)
        object.__setattr__(self, "gamma", gamma)
        if self.warm_hessian is not None:
            H = np.array(self.warm_hessian, dtype=float)
            H.setflags(write=False)
            object.__setattr__(self, "warm_hessian", H)
        for name in ("zeta", "delta"):
            if getattr(self, name) is not None:
                object.__setattr__(self, name, float(getattr(self, name)))
        if self.scales is not None:
            h = np.array(self.scales, dtype=float)
            h.setflags(write=False)
            object.__setattr__(self, "scales", h)

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
