"""The log prior and the feedback log likelihood, for one theta ``(k,)`` (the scalar log density)
and for a stack ``(C, k)`` (the batched refits), each with the operations it has always used
(a matrix-vector product and floats for one theta, ``einsum`` / ``matmul`` for a stack), so
that results stay bit for bit: refits on a multimodal posterior can amplify a last-bit change.
"""

from __future__ import annotations

import numpy as np

from elicit.model.layout import Block, ParamLayout
from elicit.model.link import Link
from elicit.model.priors import GAMMA_PRIOR, ZETA_PRIOR, InvGamma, Normal
from elicit.model.spec import ModelData


def block(theta: np.ndarray, lay: ParamLayout, name: str):
    """Block ``name`` of one theta or of each row of a stack: a vector block as an array, a
    one-entry block as a numpy float (whose square far out overflows to inf instead of raising)
    or a (C,) array."""
    at = lay.at(name)
    if isinstance(at, slice):
        return theta[..., at]
    return np.float64(theta[at]) if theta.ndim == 1 else theta[:, at]


def priors_of(data: ModelData) -> list[tuple[Block, Normal | InvGamma]]:
    """Each block of theta with its prior, in the layout's order (callers add the values in it);
    ``prior.terms(block, summed=b.vector)`` is ``(value, gradient, curvature)``, gamma's value
    summed, its curvature (the diagonal of the prior's Hessian) per entry."""
    priors: dict[str, Normal | InvGamma] = {
        "gamma": GAMMA_PRIOR, "xi": data.model.xi_prior.at(data.m),
        "tau2": InvGamma(data.hyper.a_tau, data.hyper.b_tau), "zeta": ZETA_PRIOR}
    if "delta" in data.layout:
        priors["delta"] = Normal(0.0, data.delta_sd)  # half-normal: delta >= 0
    return [(b, priors[b.name]) for b in data.layout.blocks]


def feedback_terms(link: Link, W: np.ndarray, f: np.ndarray, theta: np.ndarray,
                   lay: ParamLayout, hess: bool = True, value: bool = True):
    """``sum_k log p(f_k | z_k)``, ``z_k = xi - gamma . w_k``, under ``link``, with its gradient
    and Hessian (None unless ``hess``) in theta; for a stack, the value is None unless ``value``
    (the log likelihood costs more than the gradient and the Hessian together).

    ``W`` is (N_f, d) for one theta (k,) or shared by every row of a stack (C, k), or
    (C, N_f, d), each row its own answers. Shapes ``()``, ``(k,)``, ``(k, k)`` for one theta;
    ``(C,)``, ``(C, k)``, ``(C, k, k)`` for a stack."""
    gs, ix = lay["gamma"], lay.index("xi")
    gamma, xi = block(theta, lay, "gamma"), block(theta, lay, "xi")
    if theta.ndim == 1:
        k = len(theta)
        grad = np.zeros(k)
        H = np.zeros((k, k)) if hess else None
        if len(f) == 0:
            return 0.0, grad, H
        z = xi - W @ gamma
        # the arrays' own sums: np.sum's dispatch costs more than these short sums
        total = float(link.log_lik(z, f).sum())
        r = link.score(z, f)
        grad[gs] = -W.T @ r
        grad[ix] = r.sum()
        if H is not None:
            c = link.curvature(z, f)
            H[gs, gs] = -(W.T * c) @ W
            H[gs, ix] = H[ix, gs] = W.T @ c
            H[ix, ix] = -np.sum(c)
        return total, grad, H
    C, k = theta.shape
    shared = W.ndim == 2
    z = xi[:, None] - (gamma @ W.T if shared else np.einsum("cfl,cl->cf", W, gamma))
    loglik = link.log_lik(z, f).sum(axis=1) if value else None
    r = link.score(z, f)
    grad = np.zeros((C, k))
    grad[:, gs] = -(r @ W) if shared else -np.einsum("cf,cfl->cl", r, W)
    grad[:, ix] = r.sum(axis=1)
    H = None
    if hess:
        # z = a' theta with a = (-w, 1) on (gamma, xi): H = -sum_k c_k a_k a_k'
        c = link.curvature(z, f)
        V = np.zeros((C, z.shape[1], k))
        V[:, :, gs] = -W
        V[:, :, ix] = 1.0
        H = -np.matmul(V.transpose(0, 2, 1) * c[:, None, :], V)
    return loglik, grad, H
