"""Analytic log density of the shipped Stan program, with gradient and Hessian: the numpy
mirror of ``stan/elicit.stan`` for every named model, the marginal likelihood of y
(:class:`~elicit.model.marginal.Marginal`) plus the log priors and the feedback log
likelihood (:mod:`elicit.model.terms`).
"""

from __future__ import annotations

import numpy as np
from scipy.linalg import cho_solve

from elicit.model import terms
from elicit.model.linalg import damped_cho_factor
from elicit.model.link import scalar_step
from elicit.model.marginal import Marginal
from elicit.model.spec import ModelData
from elicit.model.terms import priors_of
from elicit.model.theta import split_theta


def _prior_and_feedback(theta: np.ndarray, data: ModelData, hess: bool):
    """Log prior + feedback log likelihood, its gradient and (optionally) Hessian."""
    lay = data.layout
    k = len(theta)
    grad = np.zeros(k)
    H = np.zeros((k, k)) if hess else None
    val = None
    for b, prior in priors_of(data):
        v, g, c = prior.terms(terms.block(theta, lay, b.name), summed=b.vector)
        val = v if val is None else val + v
        sl = lay[b.name]
        grad[sl] = g
        if H is not None:
            i = np.arange(sl.start, sl.stop)
            H[i, i] = c
    fb_val, fb_grad, fb_H = feedback_terms(theta, data, hess)
    grad += fb_grad
    if hess:
        H += fb_H
    return val + fb_val, grad, H


def feedback_terms(theta: np.ndarray, data: ModelData, hess: bool = True):
    """The feedback log likelihood under the model's link, its gradient and Hessian."""
    return terms.feedback_terms(data.link, data.W_f, data.f, theta, data.layout, hess)


def log_density(theta: np.ndarray, data: ModelData, marginal: Marginal | None = None,
                ) -> tuple[float, np.ndarray]:
    """Log posterior density (no Jacobian, up to a constant) and its gradient in theta
    (``marginal``: the marginal at theta, if the caller has it)."""
    theta = np.asarray(theta, dtype=float)
    val, grad, _ = _prior_and_feedback(theta, data, hess=False)
    mg = marginal if marginal is not None else Marginal.at(theta, data)
    lay = data.layout
    grad[lay["gamma"]] += mg.grad_gamma()
    if data.hyper.variant == "learned":
        grad[lay.index("tau2")] += mg.grad_tau2()
    if "zeta" in lay:
        grad[lay.index("zeta")] += mg.grad_zeta()
    if "delta" in lay:
        grad[lay.index("delta")] += mg.grad_delta()
    return mg.value + val, grad


def hessian_base(theta: np.ndarray, data: ModelData,
                 marginal: Marginal | None = None) -> np.ndarray:
    """Hessian of the y-likelihood and the priors (everything but the feedback terms)."""
    theta = np.asarray(theta, dtype=float)
    mg = marginal if marginal is not None else Marginal.at(theta, data)
    no_fb = data.with_feedback(np.zeros((0, 2), dtype=int), np.zeros(0, dtype=int))
    _, _, H = _prior_and_feedback(theta, no_fb, hess=True)
    Hy = mg.hessian(data.hyper.variant == "learned")
    idx = data.layout.marginal_index
    H[np.ix_(idx, idx)] += Hy
    return H


def hessian(theta: np.ndarray, data: ModelData, marginal: Marginal | None = None) -> np.ndarray:
    """Full Hessian of :func:`log_density`."""
    return hessian_base(theta, data, marginal) + feedback_terms(theta, data, True)[2]


class LaplaceMoves:
    """Where the MAP ``theta`` moves after one more answer, for each row of ``w`` (C, d), under
    the Laplace approximation at ``theta`` (``hess_base``: the base Hessian there).

    With ``A = -H`` and ``v = (-w, 1[, 0])`` the answer's term moves the MAP along ``A^-1 v`` by
    the root t of ``t = score(z0 + q t, f)``, ``q = v' A^-1 v``
    (:func:`~elicit.model.link.scalar_step`). Parameters on their bounds stay there, a move is
    clipped onto the bounds, and one factorisation serves every row."""

    def __init__(self, data: ModelData, theta: np.ndarray, hess_base: np.ndarray,
                 w: np.ndarray) -> None:
        self.data, self.theta, self.lb = data, theta, data.layout.lower_bounds()
        H = hess_base + feedback_terms(theta, data, True)[2]
        #: the parameters off their bounds, which the move may change
        self.free = theta > self.lb
        d = data.d
        V = np.zeros((len(theta), len(w)))
        V[:d] = -w.T
        V[d] = 1.0
        V = V[self.free]
        #: A^-1 v on the free parameters (n_free, C), and q = v' A^-1 v (C,)
        self.Y = (cho_solve(damped_cho_factor(-H[np.ix_(self.free, self.free)]), V,
                            check_finite=False) if V.shape[0] else V)
        self.q = np.einsum("ic,ic->c", V, self.Y)
        gamma, xi, _ = split_theta(theta, data)
        self.z0 = xi - w @ gamma

    def steps(self) -> np.ndarray:
        """The moves (2, k, C) after the answer 0 and after 1, from one elementwise bisection."""
        link, C = self.data.link, len(self.z0)
        t = scalar_step(np.repeat([0, 1], C), np.tile(self.z0, 2), np.tile(self.q, 2), link)
        step = np.zeros((2, len(self.theta), C))
        step[:, self.free] = self.Y * t.reshape(2, 1, C)
        return np.maximum(step, (self.lb - self.theta)[:, None])
