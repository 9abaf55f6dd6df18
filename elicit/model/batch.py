"""Batched warm refits: many hypothetical answers refitted at once.

The fast utility's Laplace screen (:mod:`elicit.utility`) cannot foresee the large moves a
surprising answer causes on small problems, where the posterior of gamma is far from
Gaussian. Refitting each candidate separately is exact but pays Python's overhead per
candidate. Here the log density and gradient of :mod:`elicit.density` are evaluated for a
whole batch of parameter vectors (one per candidate and answer, each with its own extra
feedback term) with stacked numpy operations, and projected Newton runs on all of them
together, as in the numpy engine's warm refit: the base Hessian is frozen at the current MAP,
each iteration maximises the local model whose feedback terms are exact, and each candidate
has its own backtracking step and active set.
"""

from __future__ import annotations

import numpy as np
from scipy.special import gammaln

from elicit.model import terms
from elicit.model.density import Marginal, feedback_terms, log_density, split_theta
from elicit.model.kernel import coupling_matrix, kernel_stack
from elicit.model.spec import ModelData
from elicit.model.terms import prior_terms


def flops_per_eval(data: ModelData) -> float:
    """Rough floating-point cost of one batched density evaluation, per candidate."""
    n, p, d = data.n, data.p, data.d
    return float(p * p * d + 2 * n * p * p + 2 * n * n * p + n**3)


#: Below this :func:`flops_per_eval`, warm refits take plain projected Newton steps instead of
#: solving the local model with exact feedback terms. Solving the model saves density
#: evaluations (kernel work), but costs tens of small numpy calls per step; on problems as
#: small as the synthetic one (p = 25, n = 20: 6e4 flops per evaluation) that Python overhead
#: exceeds the evaluations it saves and doubled the synthetic experiment's time. At Amazon size
#: (4e7 flops) the local model wins.
LOCAL_MODEL_MIN_FLOPS = 1e6


def uses_local_model(data: ModelData, override: bool | None = None) -> bool:
    """Whether warm refits of ``data`` solve the local model: ``override`` if given, else by
    size (see :data:`LOCAL_MODEL_MIN_FLOPS`)."""
    if override is not None:
        return bool(override)
    return flops_per_eval(data) >= LOCAL_MODEL_MIN_FLOPS


class BatchDensity:
    """Log density + gradient for a batch of thetas, each with one extra answer (w_c, f)."""

    def __init__(self, data: ModelData, w_new: np.ndarray, f_new: int) -> None:
        self.data = data
        self.w_new = w_new            # (C, d)
        self.f_new = f_new
        self.learned = data.hyper.variant == "learned"
        self.U2 = data.U * data.U
        self.keep = coupling_matrix(data.kernel_mask)
        self.f_new_arr = np.array([f_new])

    def __call__(self, theta: np.ndarray, idx: np.ndarray):
        """Value (C,), gradient (C, k) and training predictive (mean, var) at ``theta[idx]``."""
        data = self.data
        X, y, U = data.X, data.y, data.U
        n = data.n
        h, lay = data.hyper, data.layout
        th = theta[idx]
        gamma = th[:, lay["gamma"]]
        tau2 = th[:, lay.index("tau2")] if self.learned else np.full(len(th), h.tau2)
        K = kernel_stack(U, gamma, self.keep, self.U2)
        XK = X @ K                                                 # (C, n, p)
        B = tau2[:, None, None] * (XK @ X.T)
        S = B + np.eye(n)
        L, pd = _stacked_cholesky(S)
        S[~pd] = np.eye(n)           # placeholders: these trial points are rejected below
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
        grad[:, lay["gamma"]] = -tau2[:, None] * (r @ self.U2 - np.einsum("pl,cpl->cl", U, RU))
        if self.learned:
            grad[:, lay.index("tau2")] = np.einsum("cij,cij->c", G, B) / tau2
        for name, v, g, _ in prior_terms(th, data):
            value += v
            grad[:, lay.at(name)] += g
        # feedback: the answers so far plus this candidate's hypothetical one
        if len(data.f):
            v, g, _ = terms.feedback_terms(data.link, data.W_f, data.f, th, lay, hess=False)
            value += v
            grad += g
        v, g, _ = terms.feedback_terms(data.link, self.w_new[idx][:, None, :], self.f_new_arr,
                                       th, lay, hess=False)
        value += v
        grad += g
        mean = y[None, :] - alpha
        var = (b_star / (a_star - 1.0))[:, None] * (2.0 - np.einsum("cii->ci", Sinv))
        # A trial point where S = I + tau2 X K X' is not numerically positive definite (a
        # line-search step to an extreme tau2 or gamma) has no density: -inf makes the line
        # search reject it, as the engine's refit does.
        value[~pd] = -np.inf
        grad[~pd] = 0.0
        return value, grad, (mean, var)

    def feedback(self, theta: np.ndarray, hess: bool = True):
        """Value (C,), gradient (C, k) and Hessian (C, k, k) of all feedback terms (the
        answers so far plus each candidate's new one) at the rows of ``theta``."""
        return _feedback_terms(self.data, self.w_new, self.f_new, theta, hess)


def _stacked_cholesky(S: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Cholesky factors of a stack of matrices (C, n, n) and which of them are positive
    definite; a failed one gets the identity as its factor."""
    try:
        return np.linalg.cholesky(S), np.ones(len(S), bool)
    except np.linalg.LinAlgError:
        pass
    L = np.empty_like(S)
    pd = np.ones(len(S), bool)
    for c in range(len(S)):
        try:
            L[c] = np.linalg.cholesky(S[c])
        except np.linalg.LinAlgError:
            L[c], pd[c] = np.eye(S.shape[1]), False
    return L, pd


def _feedback_terms(data: ModelData, w_new: np.ndarray, f_new: int, theta: np.ndarray,
                    hess: bool):
    """The feedback terms of each row c of ``theta``: the answers so far and ``w_new[c]``."""
    C, d = len(theta), data.d
    Wall = np.concatenate([np.broadcast_to(data.W_f, (C, len(data.f), d)),
                           w_new[:, None, :]], axis=1)                 # (C, N_f + 1, d)
    fall = np.append(data.f, f_new).astype(float)
    return terms.feedback_terms(data.link, Wall, fall, theta, data.layout, hess)


def _projected_steps(H: np.ndarray, g: np.ndarray, theta: np.ndarray,
                     lb: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Newton steps of concave quadratic models (Hessians H (C, k, k), gradients g (C, k)),
    parameters on their bounds held there where the gradient pushes them out; decrements."""
    k = g.shape[1]
    eye = np.eye(k)
    A = -H
    free = ~((theta <= lb) & (g < 0))
    # Clamp the parameters on their bounds: identity rows/columns, zero gradient.
    mask = free[:, :, None] & free[:, None, :]
    A = np.where(mask, A, 0.0) + np.where(free, 0.0, 1.0)[:, :, None] * eye[None]
    g = np.where(free, g, 0.0)
    # A tiny ridge keeps stale, slightly indefinite Hessians solvable.
    scale = np.maximum(1.0, np.abs(np.einsum("cii->ci", A)).max(axis=1))
    A = A + (1e-9 * scale)[:, None, None] * eye[None]
    step = np.linalg.solve(A, g[:, :, None])[:, :, 0]
    dec = np.einsum("ci,ci->c", g, step)
    bad = ~np.isfinite(dec) | (dec < 0)
    # A non-ascent direction (indefinite stale Hessian): fall back to a gradient step.
    step[bad] = g[bad] / scale[bad, None]
    dec[bad] = np.einsum("ci,ci->c", g[bad], step[bad])
    return step, dec


def model_steps(data: ModelData, w_new: np.ndarray, f_new: int, theta: np.ndarray,
                g_base: np.ndarray, H_base: np.ndarray, lb: np.ndarray, step0: np.ndarray,
                dec0: np.ndarray, tol: float, max_iter: int = 30) -> np.ndarray:
    """Batched version of the numpy engine's model step: for each row c (a candidate's new
    answer ``w_new[c]``, ``f_new``), the maximiser s of
    ``g_base' s + s' H_base s / 2 + F(theta + s) - F(theta)`` over ``theta + s >= lb``, F the
    feedback terms (exact), by projected Newton from s = 0 (first step ``step0``)."""
    C = len(theta)
    F0 = _feedback_terms(data, w_new, f_new, theta, False)[0]

    def model(rows: np.ndarray, s: np.ndarray) -> np.ndarray:
        Fs = _feedback_terms(data, w_new[rows], f_new, theta[rows] + s, False)[0]
        return (np.einsum("ci,ci->c", g_base[rows], s)
                + 0.5 * np.einsum("ci,ij,cj->c", s, H_base, s) + Fs - F0[rows])

    s = np.zeros_like(theta)
    m = np.zeros(C)
    st, dec = step0.copy(), dec0.copy()
    active = np.ones(C, bool)
    for _ in range(max_iter):
        rows = np.flatnonzero(active)
        if len(rows) == 0:
            break
        t = np.ones(len(rows))
        pending = np.ones(len(rows), bool)
        for _ls in range(30):
            if not pending.any():
                break
            sub = rows[pending]
            trial = np.maximum(theta[sub] + s[sub] + t[pending, None] * st[sub], lb) - theta[sub]
            mt = model(sub, trial)
            ok = mt >= m[sub] + 1e-4 * t[pending] * dec[sub]
            s[sub[ok]], m[sub[ok]] = trial[ok], mt[ok]
            pos = np.flatnonzero(pending)
            pending[pos[ok]] = False
            t[pending] *= 0.5
        active[rows[pending]] = False          # no model ascent left: keep s
        rows = rows[~pending]
        if len(rows) == 0:
            break
        x = theta[rows] + s[rows]
        _, fg, fH = _feedback_terms(data, w_new[rows], f_new, x, True)
        st[rows], dec[rows] = _projected_steps(H_base[None] + fH,
                                               g_base[rows] + s[rows] @ H_base + fg, x, lb)
        fin = rows[~(dec[rows] >= tol)]
        ok = np.isfinite(dec[fin])
        s[fin[ok]] = np.maximum(theta[fin[ok]] + s[fin[ok]] + st[fin[ok]], lb) - theta[fin[ok]]
        active[fin] = False
    return s


def model_step_screen(data: ModelData, theta0: np.ndarray, g0: np.ndarray,
                      hess_base: np.ndarray, lb: np.ndarray, w_new: np.ndarray, f_new: int,
                      tol: float = 1e-10) -> np.ndarray:
    """The first step of each candidate's warm refit, without any kernel work: the maximiser
    of the local model at ``theta0`` (gradient ``g0`` of the log density without the new
    answer, base Hessian ``hess_base``) with the new answer added; shape (C, k)."""
    C = len(w_new)
    theta = np.repeat(theta0[None, :], C, axis=0)
    _, fg, fH = _feedback_terms(data, w_new, f_new, theta, True)
    fg_old = feedback_terms(theta0, data, False)[1]       # the answers so far
    g = g0[None, :] + (fg - fg_old[None, :])              # plus the new answer's gradient
    g_base = g - fg
    step, dec = _projected_steps(hess_base[None] + fH, g, theta, lb)
    s = model_steps(data, w_new, f_new, theta, g_base, hess_base, lb, step, dec, tol)
    done = ~(dec >= tol)
    s[done] = np.maximum(theta[done] + step[done], lb) - theta[done]
    return s


def batched_refit(data: ModelData, theta0: np.ndarray, hess_base: np.ndarray,
                  lb: np.ndarray, w_new: np.ndarray, f_new: int, max_iter: int = 8,
                  tol: float = 1e-7, marginal: Marginal | None = None,
                  local_model: bool | None = None,
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Projected Newton from ``theta0`` for each candidate's extra answer ``f_new``.

    Like the numpy engine's warm refit, each iteration maximises a local model (the base part
    quadratic with the frozen ``hess_base``, the feedback terms exact), so that the batch
    converges to the optimum the engine's refit finds, in one or two evaluations.

    Returns the final thetas (C, k), the Gaussian predictive mean and variance at the
    training inputs (C, n) for each, and which candidates converged (C,). Candidates that have
    not converged after ``max_iter`` iterations, or whose line search failed, keep their last
    iterate (this is a screen; the best candidates are refitted exactly afterwards).

    At the start all candidates share the kernel part: it is evaluated once (from
    ``marginal``, the marginal at ``theta0``, when given) and only the new answer's term
    differs. ``local_model`` as for the numpy engine (None: by :func:`uses_local_model`).
    """
    C = len(w_new)
    bd = BatchDensity(data, w_new, f_new)
    theta = np.repeat(theta0[None, :], C, axis=0)
    gamma0, xi0, tau2_0 = split_theta(theta0, data)
    mg = marginal if marginal is not None else Marginal.from_data(data, gamma0, tau2_0)
    v0, g0 = log_density(theta0, data, mg)
    # the start is shared: only each candidate's new answer term differs
    zn = xi0 - w_new @ gamma0
    value = v0 + data.link.log_lik(zn, f_new)
    rn = data.link.score(zn, f_new)
    lay = data.layout
    grad = np.repeat(g0[None, :], C, axis=0)
    grad[:, lay["gamma"]] -= rn[:, None] * w_new
    grad[:, lay.index("xi")] += rn
    m0, var0 = mg.predictive()
    mean = np.repeat(m0[None, :], C, axis=0)
    var = np.repeat(var0[None, :], C, axis=0)
    active = np.ones(C, bool)
    converged = np.zeros(C, bool)
    local = uses_local_model(data, local_model)
    for _ in range(max_iter):
        idx = np.flatnonzero(active)
        if len(idx) == 0:
            break
        _, fg, fH = _feedback_terms(data, w_new[idx], f_new, theta[idx], True)
        step, dec = _projected_steps(hess_base[None] + fH, grad[idx], theta[idx], lb)
        done = dec < tol
        active[idx[done]] = False
        converged[idx[done]] = True
        keep = ~done
        idx, step, dec, fg = idx[keep], step[keep], dec[keep], fg[keep]
        if len(idx) == 0:
            break
        if local:
            direction = model_steps(data, w_new[idx], f_new, theta[idx], grad[idx] - fg,
                                    hess_base, lb, step, dec, tol=1e-3 * tol)
        else:
            direction = step
        slope = np.einsum("ci,ci->c", grad[idx], direction)
        bad = ~(np.isfinite(slope) & (slope > 0))
        direction[bad], slope[bad] = step[bad], dec[bad]
        t = np.ones(len(idx))
        pending = np.ones(len(idx), bool)
        for _ls in range(12):
            if not pending.any():
                break
            sub = idx[pending]
            trial = np.maximum(theta[sub] + t[pending, None] * direction[pending], lb)
            saved = theta[sub].copy()
            theta[sub] = trial
            v, gr, (mn, vr) = bd(theta, sub)
            ok = v >= value[sub] + 1e-4 * t[pending] * slope[pending]
            acc = sub[ok]
            value[acc], grad[acc], mean[acc], var[acc] = v[ok], gr[ok], mn[ok], vr[ok]
            theta[sub[~ok]] = saved[~ok]
            pos = np.flatnonzero(pending)
            pending[pos[ok]] = False
            t[pending] *= 0.5
        # Candidates whose line search failed stop where they are.
        active[idx[pending]] = False
    return theta, mean, var, converged
