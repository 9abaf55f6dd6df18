"""Batched warm refits: many hypothetical answers refitted at once (the fast utility's Laplace
screen cannot foresee the large moves a surprising answer causes on small problems, and
separate refits pay Python's overhead per candidate). :class:`BatchDensity` evaluates the log
density and gradient for a stack of thetas, each with its own extra answer, and
:class:`~elicit.model.newton.NewtonRun` runs projected Newton on all of them together.
"""

from __future__ import annotations

from dataclasses import replace
from typing import cast

import numpy as np
from scipy.special import gammaln

from elicit.model import terms
from elicit.model.covariance import RelevanceScales, unasked_lambda
from elicit.model.density import log_density
from elicit.model.form import basis_of, data_structure
from elicit.model.kernel import coupling_matrix, kernel_stack
from elicit.model.linalg import stacked_cholesky
from elicit.model.marginal import Marginal
from elicit.model.newton import CONVERGED, NewtonProblem, NewtonRun, NewtonSettings
from elicit.model.spec import ModelData
from elicit.model.theta import split_theta


def flops_per_eval(data: ModelData) -> float:
    """Rough floating-point cost of one batched density evaluation, per candidate."""
    n, p, d = data.n, data.p, data.d
    return float(p * p * d + 2 * n * p * p + 2 * n * n * p + n**3)


#: Below this :func:`flops_per_eval`, warm refits take plain projected Newton steps instead of
#: solving the local model, whose small numpy calls cost more than the evaluations they save
#: (synthetic: 6e4 flops; Amazon: 4e7, where the local model wins; docs/benchmarks.md).
LOCAL_MODEL_MIN_FLOPS = 1e6


def uses_local_model(data: ModelData, override: bool | None = None) -> bool:
    """Whether warm refits of ``data`` solve the local model: ``override`` if given, else by
    size (:data:`LOCAL_MODEL_MIN_FLOPS`)."""
    if override is not None:
        return bool(override)
    return flops_per_eval(data) >= LOCAL_MODEL_MIN_FLOPS


#: The stacked arrays of one :meth:`BatchDensity.at` call (C x p x p, C x n x p, C x n x n) are
#: kept near this size, a core's L2 cache here (docs/benchmarks.md, "Stacks that fit in cache").
CHUNK_BYTES = 1 << 20


class BatchDensity:
    """Log density + gradient for a batch of thetas, each with one extra answer (w_c, f_c)."""

    def __init__(self, data: ModelData, w_new: np.ndarray, f_new: int | np.ndarray) -> None:
        self.data = data
        self.w_new = w_new            # (C, d)
        self.f_new = np.broadcast_to(np.asarray(f_new, dtype=float), (len(w_new),))
        self.learned = data.hyper.variant == "learned"
        self.U2 = data.U * data.U
        self.keep = coupling_matrix(data.kernel_mask)
        self.relevance: RelevanceScales | None = (
            cast(RelevanceScales, data.model.covariance) if data.model.relevance else None)
        self.basis = basis_of(data.X, data_structure(data))
        #: rows evaluated at once: each stacked array of a chunk fits in a core's cache
        #: (:data:`CHUNK_BYTES`); a row's value does not depend on the others in its chunk,
        #: but its last bits can on the chunk's size (one BLAS call per product picks its kernel)
        self.chunk = max(1, CHUNK_BYTES // (8 * (data.p * data.p + data.n * data.p
                                                 + data.n * data.n)))
        #: m = X s of the prior mean delta s in the working form (``R s`` on the p x p form)
        self.m = None
        if data.model.direction:
            self.m = (data.X if self.basis is None else self.basis.R) @ data.direction_signs
        # what does not depend on theta, once (a one-row call is mostly fixed overhead):
        # the working form (R, Q'y) on the p x p form (module elicit.model.tall), else (X, y)
        self.X, self.y, self.rest = data.X, data.y, 0.0
        if self.basis is not None:
            self.X, (self.y, self.rest) = self.basis.R, self.basis.reduce(data.y)
        self.eye, h = np.eye(self.X.shape[0]), data.hyper
        self.a_star = h.a_sigma + 0.5 * data.n
        self.c0 = (gammaln(self.a_star) - gammaln(h.a_sigma)
                   - 0.5 * data.n * np.log(2 * np.pi * h.b_sigma))
        self.priors = [(data.layout.at(b.name), pr, b.vector) for b, pr in terms.priors_of(data)]

    def at(self, th: np.ndarray, idx: np.ndarray):
        """Value (C,), gradient (C, k) and training predictive (mean, var) at the thetas ``th`` of
        the candidates ``idx``, in chunks of at most :attr:`chunk` rows."""
        if len(th) <= self.chunk:
            return self._at(th, idx)
        parts = [self._at(th[q], idx[q])
                 for q in np.array_split(np.arange(len(th)), -(-len(th) // self.chunk))]
        return (np.concatenate([v for v, _, _ in parts]),
                np.concatenate([g for _, g, _ in parts]),
                tuple(np.concatenate([e[i] for _, _, e in parts]) for i in range(2)))

    def _at(self, th: np.ndarray, idx: np.ndarray):
        data, basis, rest, a_star = self.data, self.basis, self.rest, self.a_star
        X, y, U = self.X, self.y, data.U
        n = X.shape[0]
        h, lay = data.hyper, data.layout
        gamma = th[:, lay["gamma"]]
        tau2 = th[:, lay.index("tau2")] if self.learned else np.full(len(th), h.tau2)
        K = kernel_stack(U, gamma, self.keep, self.U2)
        rel = self.relevance
        if rel is not None:
            # each row its own scales: X diag(h_c) (module marginal, "Per-feature scales")
            zeta = th[:, lay.index("zeta")]
            classes = cast(np.ndarray, data.relevance)  # an array after ModelData.__post_init__
            signal = data.relevance_signal
            lam_u, dlam, _ = unasked_lambda(rel.logits(zeta, signal), rel.irrelevant_scale)
            X = X[None, :, :] * np.sqrt(rel.lambdas(classes, zeta, signal, lam_u))[:, None, :]
            XT = X.transpose(0, 2, 1)
        else:
            XT = X.T
        C, p = len(th), data.p
        if rel is None:
            # one matrix product for every row: K is symmetric, so (X K_c)' = K_c X'
            XK = (K.reshape(C * p, p) @ XT).reshape(C, p, n).transpose(0, 2, 1)  # (C, n, p)
            B = (XK.reshape(C * n, p) @ XT).reshape(C, n, n)
        else:
            XK = X @ K                                             # (C, n, p)
            B = XK @ XT
        B *= tau2[:, None, None]
        S = B + self.eye
        L, pd = stacked_cholesky(S)
        if not (every_pd := pd.all()):
            S[~pd] = self.eye        # placeholders: these trial points are rejected below
        logdet = 2.0 * np.log(L.diagonal(axis1=1, axis2=2)).sum(axis=1)
        Sinv = np.linalg.inv(S)
        if self.m is None:
            alpha = np.einsum("cij,j->ci", Sinv, y)
            b_star = h.b_sigma + 0.5 * (rest + alpha @ y)
        else:
            # each row's residual y - delta_c m replaces y (module marginal, "A prior mean");
            # y's part beside X's columns (rest) is the residual's too: X s lies in them
            resid = y[None, :] - th[:, lay.index("delta")][:, None] * self.m[None, :]
            alpha = np.einsum("cij,cj->ci", Sinv, resid)
            b_star = h.b_sigma + 0.5 * (rest + np.einsum("ci,ci->c", alpha, resid))
        omega = a_star / b_star
        value = self.c0 - 0.5 * logdet - a_star * np.log(b_star / h.b_sigma)
        # G = (omega alpha alpha' - S^-1) / 2, in place (the same operations in the same order)
        G = (omega[:, None] * alpha)[:, :, None] * alpha[:, None, :]
        G -= Sinv
        G *= 0.5
        if rel is None:
            GX = (G.reshape(C * n, n) @ X).reshape(C, n, p)
            R = XT @ GX
        else:
            R = XT @ G @ X
        R *= K
        r = R.sum(axis=2)
        RU = (R.reshape(C * p, p) @ U).reshape(C, p, -1)
        grad = np.zeros_like(th)
        grad[:, lay["gamma"]] = -tau2[:, None] * (r @ self.U2 - np.einsum("pl,cpl->cl", U, RU))
        if self.learned:
            grad[:, lay.index("tau2")] = np.einsum("cij,cij->c", G, B) / tau2
        if rel is not None:
            # 2 tau2 sum_{unjudged j} g_j r_j, g_j = d log h_j / d zeta = lambda_j' / (2 lambda_j)
            unasked = cast(np.ndarray, data.relevance) < 0
            grad[:, lay.index("zeta")] = tau2 * np.einsum(
                "cj,cj->c", np.where(unasked, dlam / lam_u, 0.0), r)
        if self.m is not None:
            grad[:, lay.index("delta")] = omega * (alpha @ self.m)
        for at, prior, vector in self.priors:
            v, g, _ = prior.terms(th[:, at], summed=vector)
            value += v
            grad[:, at] += g
        if len(data.f):
            v, g, _ = terms.feedback_terms(data.link, data.W_f, data.f, th, lay, hess=False)
            value += v
            grad += g
        v, g, _ = terms.feedback_terms(data.link, self.w_new[idx][:, None, :],
                                       self.f_new[idx][:, None], th, lay, hess=False)
        value += v
        grad += g
        mean = y[None, :] - alpha
        if basis is None:
            var = (b_star / (a_star - 1.0))[:, None] * (2.0 - Sinv.diagonal(axis1=1, axis2=2))
        else:
            mean = mean @ basis.Q.T
            var = (b_star / (a_star - 1.0))[:, None] * (2.0 - basis.sinv_diag(Sinv))
        # where S is not numerically positive definite (a trial step to an extreme tau2 or
        # gamma) there is no density: -inf makes the line search reject it
        if not every_pd:
            value[~pd] = -np.inf
            grad[~pd] = 0.0
        return value, grad, (mean, var)


class CandidateRefits(NewtonProblem):
    """The refits of candidate answers as a :class:`~elicit.model.newton.NewtonProblem`: row c
    is ``data`` with ``w_new[c]`` answered ``f_new[c]`` (or ``f_new``)."""

    single = False

    def __init__(self, data: ModelData, w_new: np.ndarray, f_new: int | np.ndarray) -> None:
        self.density = BatchDensity(data, w_new, f_new)
        self.data, self.w_new, self.f_new = data, w_new, self.density.f_new
        self.lb = data.layout.lower_bounds()

    def feedback(self, rows: np.ndarray, theta: np.ndarray, hess: bool):
        data, C, d = self.data, len(theta), self.data.d
        Wall = np.concatenate([np.broadcast_to(data.W_f, (C, len(data.f), d)),
                               self.w_new[rows][:, None, :]], axis=1)          # (C, N_f + 1, d)
        fall = np.concatenate([np.broadcast_to(data.f.astype(float), (C, len(data.f))),
                               np.asarray(self.f_new[rows], dtype=float).reshape(C, 1)], axis=1)
        return terms.feedback_terms(data.link, Wall, fall, theta, data.layout, hess, not hess)

    def evaluate(self, rows: np.ndarray, theta: np.ndarray):
        return self.density.at(theta, rows)


#: the candidates' refits: a fixed ridge for the stacked solves, one base Hessian for all, and
#: a failed line search stops the candidate (a screen: the best are refitted exactly later)
CANDIDATE_REFIT = NewtonSettings(tol=1e-7, max_iter=8, ridge=1e-9, final_step=False,
                                 line_search_trials=12, refresh_at=None, stall_tol=None,
                                 model_max_iter=30, model_trials=30)


def candidate_run(data: ModelData, theta0: np.ndarray, hess_base: np.ndarray,
                  w_new: np.ndarray, f_new: int | np.ndarray, settings: NewtonSettings,
                  marginal: Marginal | None = None) -> NewtonRun:
    """The refits of ``data`` with one more answer each (``w_new[c]`` answered ``f_new[c]``) from
    ``theta0`` with the base Hessian ``hess_base``, as one stack (the kernel part evaluated once,
    from ``marginal`` if given); the run's ``extras`` hold each row's Gaussian predictive (mean,
    variance (C, n)) at its last accepted point."""
    C = len(w_new)
    theta = np.repeat(theta0[None, :], C, axis=0)
    gamma0, xi0, _ = split_theta(theta0, data)
    mg = marginal if marginal is not None else Marginal.at(theta0, data)
    v0, g0 = log_density(theta0, data, mg)
    problem = CandidateRefits(data, w_new, f_new)
    zn = xi0 - w_new @ gamma0
    value = v0 + data.link.log_lik(zn, problem.f_new)
    rn = data.link.score(zn, problem.f_new)
    lay = data.layout
    grad = np.repeat(g0[None, :], C, axis=0)
    grad[:, lay["gamma"]] -= rn[:, None] * w_new
    grad[:, lay.index("xi")] += rn
    mean, var = (np.repeat(a[None, :], C, axis=0) for a in mg.predictive())
    return NewtonRun(problem, theta, value, grad, hess_base, settings, extras=(mean, var))


def batched_refit(data: ModelData, theta0: np.ndarray, hess_base: np.ndarray,
                  w_new: np.ndarray, f_new: int, max_iter: int = 8,
                  tol: float = 1e-7, marginal: Marginal | None = None,
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Projected Newton from ``theta0`` for each candidate's extra answer ``f_new``, a screen
    (:data:`CANDIDATE_REFIT` with ``tol`` and ``max_iter``; the local model by
    :func:`uses_local_model`). Returns the final thetas (C, k), the Gaussian predictive mean and
    variance at the training inputs (C, n), and which candidates converged (C,)."""
    settings = replace(CANDIDATE_REFIT, tol=tol, max_iter=max_iter,
                       local_model=uses_local_model(data))
    run = candidate_run(data, theta0, hess_base, w_new, f_new, settings, marginal)
    run.advance()
    # given at the start (extras=...), so never None
    mean, var = cast(tuple[np.ndarray, ...], run.extras)
    return run.theta, mean, var, run.status == CONVERGED
