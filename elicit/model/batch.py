"""Batched warm refits: many hypothetical answers refitted at once.

The fast utility's Laplace screen (:mod:`elicit.utility`) cannot foresee the large moves a
surprising answer causes on small problems, where the posterior of gamma is far from
Gaussian. Refitting each candidate separately is exact but pays Python's overhead per
candidate. Here the log density and gradient of :mod:`elicit.density` are evaluated for a
whole batch of parameter vectors (one per candidate and answer, each with its own extra
feedback term) with stacked numpy operations, and projected Newton runs on all of them
together: the base Hessian is frozen at the current MAP, the feedback curvature is exact at
every iterate, and each candidate has its own backtracking step and active set.
"""

from __future__ import annotations

import numpy as np
from scipy.special import expit, gammaln, log_expit

from elicit.model.spec import GAMMA_MEAN, GAMMA_SD, ModelData


def flops_per_eval(data: ModelData) -> float:
    """Rough floating-point cost of one batched density evaluation, per candidate."""
    n, p, d = data.n, data.p, data.d
    return float(p * p * d + 2 * n * p * p + 2 * n * n * p + n**3)


class BatchDensity:
    """Log density + gradient for a batch of thetas, each with one extra answer (w_c, f)."""

    def __init__(self, data: ModelData, w_new: np.ndarray, f_new: int) -> None:
        self.data = data
        self.w_new = w_new            # (C, d)
        self.f_new = f_new
        self.learned = data.hyper.variant == "learned"
        self.U2 = data.U * data.U

    def __call__(self, theta: np.ndarray, idx: np.ndarray):
        """Value (C,), gradient (C, k) and training predictive (mean, var) at ``theta[idx]``."""
        data = self.data
        X, y, U = data.X, data.y, data.U
        n, d = data.n, data.d
        h = data.hyper
        th = theta[idx]
        gamma = th[:, :d]
        xi = th[:, d]
        tau2 = th[:, d + 1] if self.learned else np.full(len(th), h.tau2)
        # kernel (C, p, p)
        sq = self.U2 @ gamma.T                                     # (p, C)
        cross = (U[None, :, :] * gamma[:, None, :]) @ U.T
        D = sq.T[:, :, None] + sq.T[:, None, :] - 2.0 * cross
        K = np.exp(-0.5 * np.maximum(D, 0.0))
        XK = X @ K                                                 # (C, n, p)
        B = tau2[:, None, None] * (XK @ X.T)
        S = B + np.eye(n)
        L = np.linalg.cholesky(S)
        logdet = 2.0 * np.sum(np.log(np.einsum("cii->ci", L)), axis=1)
        Sinv = np.linalg.inv(S)
        alpha = np.einsum("cij,j->ci", Sinv, y)
        a_star = h.a_sigma + 0.5 * n
        b_star = h.b_sigma + 0.5 * alpha @ y
        omega = a_star / b_star
        value = (gammaln(a_star) - gammaln(h.a_sigma) - 0.5 * n * np.log(2 * np.pi * h.b_sigma)
                 - 0.5 * logdet - a_star * np.log(b_star / h.b_sigma))
        G = 0.5 * (omega[:, None, None] * alpha[:, :, None] * alpha[:, None, :] - Sinv)
        R = (X.T @ G @ X) * K
        r = R.sum(axis=2)
        RU = R @ U
        grad = np.zeros_like(th)
        grad[:, :d] = -tau2[:, None] * (r @ self.U2 - np.einsum("pl,cpl->cl", U, RU))
        if self.learned:
            grad[:, d + 1] = np.einsum("cij,cij->c", G, B) / tau2
        # priors
        value += -0.5 * np.sum((gamma - GAMMA_MEAN) ** 2, axis=1) / GAMMA_SD**2
        grad[:, :d] += -(gamma - GAMMA_MEAN) / GAMMA_SD**2
        m = data.m
        value += -0.5 * (xi - m) ** 2 / (m / 2) ** 2
        grad[:, d] += -(xi - m) / (m / 2) ** 2
        if self.learned:
            value += -(h.a_tau + 1.0) * np.log(tau2) - h.b_tau / tau2
            grad[:, d + 1] += -(h.a_tau + 1.0) / tau2 + h.b_tau / tau2**2
        # feedback: the answers so far plus this candidate's hypothetical one
        W, f = data.W_f, data.f
        if len(f):
            z = xi[:, None] - gamma @ W.T                           # (C, N_f)
            value += np.sum(f * log_expit(z) + (1 - f) * log_expit(-z), axis=1)
            res = f - expit(z)
            grad[:, :d] -= res @ W
            grad[:, d] += res.sum(axis=1)
        wn = self.w_new[idx]
        zn = xi - np.einsum("cl,cl->c", gamma, wn)
        value += log_expit(zn) if self.f_new == 1 else log_expit(-zn)
        rn = self.f_new - expit(zn)
        grad[:, :d] -= rn[:, None] * wn
        grad[:, d] += rn
        mean = y[None, :] - alpha
        var = (b_star / (a_star - 1.0))[:, None] * (2.0 - np.einsum("cii->ci", Sinv))
        return value, grad, (mean, var)

    def feedback_curvature(self, theta: np.ndarray, idx: np.ndarray) -> np.ndarray:
        """Hessian of all feedback terms (old + the candidate's new one): (C, k, k)."""
        data = self.data
        d = data.d
        th = theta[idx]
        gamma, xi = th[:, :d], th[:, d]
        k = th.shape[1]
        Wall = np.concatenate([np.broadcast_to(data.W_f, (len(th), len(data.f), d)),
                               self.w_new[idx][:, None, :]], axis=1)  # (C, N_f + 1, d)
        z = xi[:, None] - np.einsum("cfl,cl->cf", Wall, gamma)
        s = expit(z)
        c = s * (1.0 - s)
        V = np.zeros((len(th), Wall.shape[1], k))
        V[:, :, :d] = -Wall
        V[:, :, d] = 1.0
        return -np.einsum("cf,cfi,cfj->cij", c, V, V, optimize=True)


def batched_refit(data: ModelData, theta0: np.ndarray, hess_base: np.ndarray,
                  lb: np.ndarray, w_new: np.ndarray, f_new: int, max_iter: int = 8,
                  tol: float = 1e-7) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Projected Newton from ``theta0`` for each candidate's extra answer ``f_new``.

    Returns the final thetas (C, k) and the Gaussian predictive mean and variance at the
    training inputs (C, n) for each. Candidates that have not converged after ``max_iter``
    iterations keep their last iterate (this is a screen; the best candidates are refitted
    exactly afterwards).
    """
    C = len(w_new)
    k = len(theta0)
    bd = BatchDensity(data, w_new, f_new)
    theta = np.repeat(theta0[None, :], C, axis=0)
    all_idx = np.arange(C)
    value, grad, (mean, var) = bd(theta, all_idx)
    active = np.ones(C, bool)
    eye = np.eye(k)
    for _ in range(max_iter):
        idx = np.flatnonzero(active)
        if len(idx) == 0:
            break
        A = -(hess_base[None] + bd.feedback_curvature(theta, idx))
        g = grad[idx]
        free = ~((theta[idx] <= lb) & (g < 0))
        # Clamp the parameters on their bounds: identity rows/columns, zero gradient.
        mask = free[:, :, None] & free[:, None, :]
        A = np.where(mask, A, 0.0) + np.where(free, 0.0, 1.0)[:, :, None] * eye[None]
        g = np.where(free, g, 0.0)
        # A tiny ridge keeps stale, slightly indefinite Hessians solvable.
        scale = np.maximum(1.0, np.abs(np.einsum("cii->ci", A)).max(axis=1))
        A = A + (1e-9 * scale)[:, None, None] * eye[None]
        step = np.linalg.solve(A, g[:, :, None])[:, :, 0]
        dec = np.einsum("ci,ci->c", g, step)
        done = dec < tol
        bad = ~np.isfinite(dec) | (dec < 0)
        # A non-ascent direction (indefinite stale Hessian): fall back to a gradient step.
        step[bad] = g[bad] / scale[bad, None]
        dec[bad] = np.einsum("ci,ci->c", g[bad], step[bad])
        active[idx[done]] = False
        idx, step, dec = idx[~done], step[~done], dec[~done]
        t = np.ones(len(idx))
        pending = np.ones(len(idx), bool)
        for _ls in range(12):
            if not pending.any():
                break
            sub = idx[pending]
            trial = np.maximum(theta[sub] + t[pending, None] * step[pending], lb)
            saved = theta[sub].copy()
            theta[sub] = trial
            v, gr, (mn, vr) = bd(theta, sub)
            ok = v >= value[sub] + 1e-4 * t[pending] * dec[pending]
            acc = sub[ok]
            value[acc], grad[acc], mean[acc], var[acc] = v[ok], gr[ok], mn[ok], vr[ok]
            theta[sub[~ok]] = saved[~ok]
            pos = np.flatnonzero(pending)
            pending[pos[ok]] = False
            t[pending] *= 0.5
        # Candidates whose line search failed stop where they are.
        active[idx[pending]] = False
    return theta, mean, var
