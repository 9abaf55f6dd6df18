"""The marginal likelihood of y at (gamma, tau2[, zeta][, delta]), with its gradient, Hessian
and the Gaussian predictive at the training inputs: the y-part of the log density.

With ``B = tau2 X K X'``, ``S = I + B``, ``alpha = S^-1 y``, ``a* = a_sigma + n/2`` and
``b* = b_sigma + y' alpha / 2``, the Student-t marginal of y (Afrabandpey et al. 2019, eq. 3)
is

    log p(y) = lgamma(a*) - lgamma(a) - n/2 log(2 pi b) - 1/2 log|S| - a* log(b*/b).

Its derivative along ``dB`` is ``tr(G dB)``, ``G = (omega alpha alpha' - S^-1) / 2``,
``omega = a*/b*``; with ``t_a = alpha' B_a alpha`` the Hessian adds
``omega t_a t_b / (4 b*) - omega alpha' B_a S^-1 B_b alpha + tr(S^-1 B_a S^-1 B_b) / 2``.
``dK/dgamma_l = -K o D_l / 2``, ``D_l[i, j] = (U_il - U_jl)^2``, is expanded as
``D_l = u^2 1' + 1 u^2' - 2 u u'``: no p x p x d array. With more rows than features every
formula runs on (R, Q'y) (:mod:`elicit.model.tall`).

**Per-feature scales** (relevance): X is replaced by ``Xt = X diag(h)``. With
``g_j = d log h_j / d zeta`` (0 for judged features), ``R = (Xt' G Xt) o K``, its row sums r
and ``q_j = h_j'' / h_j``, ``B_zeta = tau2 (P + P')`` with ``P = Xt diag(g) K Xt'`` and

    d/dzeta log p(y)       = 2 tau2 sum_j g_j r_j,
    tr(G B_{zeta, zeta})   = 2 tau2 (sum_j q_j r_j + g' R g),
    tr(G B_{gamma_l, zeta}) = -tau2 (sum_i g_i (u_il^2 r_i - 2 u_il (R U)_il)
                                    + sum_j u_jl^2 (R g)_j),
    tr(G B_{tau2, zeta})   = (d/dzeta log p(y)) / tau2.

**A prior mean** ``delta s`` (direction answers): the residual ``r = y - delta m``,
``m = X s``, replaces y (``alpha = S^-1 r``); the predictive mean is still ``y - alpha``.
With ``c = m' alpha``:

    d/ddelta log p(y)            = omega c,
    d^2/ddelta^2                 = omega c^2 / b* - omega m' S^-1 m,
    d^2/ddelta dtheta_a          = omega t_a c / (2 b*) - omega (S^-1 m)' B_a alpha.
"""

from __future__ import annotations

from functools import cached_property
from typing import NamedTuple, cast

import numpy as np
from scipy.linalg.lapack import dtrtri
from scipy.special import gammaln

from elicit.model.covariance import Scales
from elicit.model.form import basis_of, data_structure
from elicit.model.kernel import (
    kernel,
    kernel_apply,
    row_blocks,
    second_terms,
    sparse_meta,
    supports_of,
)
from elicit.model.marginal_cache import marginal_cache
from elicit.model.spec import ModelData
from elicit.model.structure import (
    OffsetProducts,
    OffsetSparse,
    SparseRows,
    add_outer,
    offset_sparse,
    sparse_rows,
    structure_of,
)
from elicit.model.theta import data_mean, data_scales, params_of


class Marginal:
    """The marginal likelihood of y at (gamma, tau2[, zeta][, delta]) and what derives from it
    (module docstring): one factorisation of S serves the density, its derivatives and the
    posterior.

    ``structured`` (None: where :func:`~elicit.model.structure.structure_of` finds it pays):
    with ``X = S + 1 b'`` the kernel enters only through
    :class:`~elicit.model.structure.OffsetProducts` and :attr:`K` is built only when read; the
    dense path uses X's sparse rows and U's nonzeros where they pay. ``scales``: :attr:`X` is
    ``X diag(h)``, :attr:`X_data` the data's X. ``tall`` (None: n > p off the structured path):
    the formulas run on (R, Q'y), brought back to the n inputs by :meth:`lift`. ``mean = (s,
    delta)``: the residual :attr:`r` ``= y - delta X s`` takes y's place."""

    def __init__(self, X: np.ndarray, y: np.ndarray, U: np.ndarray, gamma: np.ndarray,
                 tau2: float, a_sigma: float, b_sigma: float, K: np.ndarray | None = None,
                 coupled: np.ndarray | None = None, scales: Scales | None = None,
                 structured: bool | None = None, tall: bool | None = None,
                 mean: tuple[np.ndarray, float] | None = None):
        self.X_data = X
        self.s: np.ndarray | None = None if mean is None else mean[0]
        self.delta: float | None = None if mean is None else float(mean[1])
        self.scales = scales
        #: zeta of the scales, when :meth:`from_data` built them (else None)
        self.zeta: float | None = None
        self.h = None if scales is None else scales.h
        self.y, self.U = y, U
        self.gamma = np.asarray(gamma, dtype=float)
        self.tau2 = float(tau2)
        self.a_sigma, self.b_sigma = float(a_sigma), float(b_sigma)
        n = X.shape[0]
        # everything below reads K only, so a masked K gets the masked derivatives (K o D_l)
        self.coupled = coupled
        self.structure: OffsetSparse | None = None
        if structured and (coupled is not None or scales is not None):
            raise ValueError("the structured path takes no coupled set or feature scales")
        if structured is not False and coupled is None and scales is None:
            self.structure = structure_of(X, U.shape[1]) or (offset_sparse(X) if structured
                                                             else None)
        self.basis = basis_of(X, self.structure, tall)
        self._rest = 0.0                                  # y's residual beside X's columns
        if self.basis is not None:
            X = self.basis.R
            y, self._rest = self.basis.reduce(y)
        self._W, self._z = X, y          # the working design (without scales) and target
        #: ``m = X s`` in the working form (``R s`` on the p x p form; None: no prior mean)
        self.m: np.ndarray | None = None if self.s is None else X @ self.s
        self.r = y if self.m is None else y - cast(float, self.delta) * self.m
        self.X = X if scales is None else X * scales.h
        X = self.X
        m = X.shape[0]
        self._offset: OffsetProducts | None = None        # the structured path's products
        self._rows: SparseRows | None = None              # X's sparse rows where they pay
        if self.structure is not None:
            self._K = K
            self._offset = OffsetProducts.of(self.structure, U, self.gamma)
            self.XK = self._offset.XK
        else:
            self._K = kernel(U, self.gamma, coupled) if K is None else K
            if self.basis is None:
                rows = sparse_rows(self.X_data)
                self._rows = rows if rows is None or scales is None else rows.scaled(scales.h)
            self.XK = X @ self._K if self._rows is None else self._rows.times(self._K)
        B = self.tau2 * (self.XK @ X.T if self._rows is None else self._rows.times(self.XK.T).T)
        self.B = 0.5 * (B + B.T)
        S = self.B + np.eye(m)
        # S = I + B (eigenvalues >= 1) is well conditioned: S^-1 = L^-T L^-1, half the work
        # of a general inverse (L^-1 also gives W = L^-1 X of the gradient)
        self.L = np.linalg.cholesky(S)
        Linv, info = dtrtri(self.L, lower=1)
        if info != 0:
            raise np.linalg.LinAlgError(f"singular Cholesky factor (dtrtri info {info})")
        self.Linv = np.ascontiguousarray(Linv)  # upper triangle: L's zeros, as np.tril made it
        self.Sinv = self.Linv.T @ self.Linv
        self.alpha = self.Sinv @ self.r
        self.a_star = self.a_sigma + 0.5 * n
        self.b_star = self.b_sigma + 0.5 * (self._rest + float(self.r @ self.alpha))
        self.omega = self.a_star / self.b_star
        self._dir_cache: dict = {}

    @property
    def K(self) -> np.ndarray:
        """The kernel matrix at gamma (p x p; on the structured path built when first read)."""
        if self._K is None:
            self._K = kernel(self.U, self.gamma, self.coupled)
        return self._K

    @classmethod
    def from_data(cls, data: ModelData, gamma: np.ndarray, tau2: float,
                  K: np.ndarray | None = None, zeta: float | None = None,
                  delta: float | None = None) -> Marginal:
        """The marginal of ``data`` at (gamma, tau2[, zeta][, delta]), from :data:`marginal_cache`
        if there; ``K`` the data's own kernel if built (for another K use :class:`Marginal`)."""
        key = marginal_cache.key(data, gamma, tau2, zeta, delta)
        hit = marginal_cache.lookup(data, gamma, tau2, zeta, key=key)
        if hit is not None and type(hit) is cls:
            return hit
        h = data.hyper
        mg = cls(data.X, data.y, data.U, gamma, tau2, h.a_sigma, h.b_sigma, K=K,
                 coupled=data.kernel_mask, scales=data_scales(data, zeta),
                 mean=data_mean(data, delta))
        # scales only when zeta was given (data_scales raises otherwise)
        mg.zeta = None if mg.scales is None else float(cast(float, zeta))
        marginal_cache.remember(data, mg, key=key, scaled=True)
        return mg

    @classmethod
    def at(cls, theta: np.ndarray, data: ModelData, K: np.ndarray | None = None) -> Marginal:
        """The marginal of ``data`` at the parameter vector ``theta``."""
        p = params_of(theta, data)
        return cls.from_data(data, p.gamma, p.tau2, K=K, zeta=p.zeta, delta=p.delta)

    @classmethod
    def of_fit(cls, data: ModelData, fit) -> Marginal:
        """The marginal of ``data`` at a fit (:class:`~elicit.model.result.MAPResult`)."""
        zeta, delta = getattr(fit, "zeta", None), getattr(fit, "delta", None)
        if marginal_cache.entries_for(data) and "K" not in fit.__dict__:
            # a cached marginal saves building the kernel that fit.K would build
            hit = marginal_cache.lookup(data, fit.gamma, fit.tau2, zeta, delta)
            if hit is not None and type(hit) is cls:
                return hit
        # fit.K only if it applies this data's J (an engine's fit); the structured path needs no K
        K = (fit.K if getattr(fit, "coupled", None) is data.kernel_mask
             and ("K" in fit.__dict__ or data_structure(data) is None) else None)
        return cls.from_data(data, fit.gamma, fit.tau2, K=K, zeta=zeta, delta=delta)

    def lift(self, V: np.ndarray) -> np.ndarray:
        """Columns of the working form at the n training inputs: V, or ``Q V`` in the p x p form."""
        return V if self.basis is None else self.basis.Q @ V

    @cached_property
    def sinv_diag(self) -> np.ndarray:
        """diag(S^-1) at the n training inputs."""
        return np.diag(self.Sinv) if self.basis is None else self.basis.sinv_diag(self.Sinv)

    @cached_property
    def value(self) -> float:
        n = self.X_data.shape[0]
        logdet_S = 2.0 * float(np.sum(np.log(np.diag(self.L))))
        a, b = self.a_sigma, self.b_sigma
        return float(gammaln(self.a_star) - gammaln(a) - 0.5 * n * np.log(2 * np.pi * b)
                     - 0.5 * logdet_S - self.a_star * np.log(self.b_star / b))

    @cached_property
    def G(self) -> np.ndarray:
        return 0.5 * (self.omega * np.outer(self.alpha, self.alpha) - self.Sinv)

    @cached_property
    def _R(self) -> np.ndarray:
        # R = (X' G X) o K (contracted with D_l: tr(G X (K o D_l) X')); X' G X is a symmetric
        # rank-n product (W = L^-1 X) plus a rank-one term, built in place
        rows = self._rows
        if rows is not None:
            # X' G X = S' (G X) + b (1' G X): one sparse product, one in-place rank-one update
            GX = self._GX
            R = add_outer(rows.ST @ GX, rows.b, GX.sum(axis=0))
            for blk in row_blocks(len(R)):
                R[blk] *= self.K[blk]
            return R
        c = 0.5 * self.omega
        W = self.Linv @ self.X
        xa = self.X.T @ self.alpha
        R = W.T @ W
        for blk in row_blocks(len(xa)):
            Rb = R[blk]
            Rb *= -0.5
            Rb += (c * xa[blk])[:, None] * xa[None, :]
            Rb *= self.K[blk]
        return R

    @cached_property
    def _GX(self) -> np.ndarray:
        return self.G @ self.X if self._rows is None else self._rows.left(self.G)

    @cached_property
    def _r(self) -> np.ndarray:
        # row sums of R: r_i = x_i' G (X K)_i, an n x p product instead of a p x p pass
        return np.einsum("ai,ai->i", self._GX, self.XK)

    @cached_property
    def _RU(self) -> np.ndarray:
        Us = sparse_meta(self.U)
        return self._R @ self.U if Us is None else (Us @ self._R.T).T

    @property
    def _path(self) -> OffsetProducts:
        return cast(OffsetProducts, self._offset)

    @cached_property
    def _R_AA(self) -> np.ndarray:
        return self._path.R_AA(self.G)

    @cached_property
    def _rank_parts(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        return self._path.rank_parts(self.G)

    def grad_gamma(self) -> np.ndarray:
        if self.structure is not None:
            return self._path.grad_gamma(self.G, self.tau2, self._R_AA, self._rank_parts)
        U = self.U
        # sum_ij R_ij D_l,ij = 2 (r . u_l^2 - u_l' R u_l)
        return -self.tau2 * ((U * U).T @ self._r - np.einsum("il,il->l", U, self._RU))

    def grad_tau2(self) -> float:
        return float(np.sum(self.G * self.B)) / self.tau2

    def grad_zeta(self) -> float:
        """d value / d zeta (0.0 without scales): ``2 tau2 sum_j g_j r_j``."""
        sc = self.scales
        if sc is None or not sc.unasked.any():
            return 0.0
        return float(2.0 * self.tau2 * (sc.dlog_h @ self._r))

    def grad_delta(self) -> float:
        """d value / d delta (0.0 without a prior mean): ``omega m' alpha``."""
        return 0.0 if self.m is None else float(self.omega * (self.m @ self.alpha))

    def _B_dirs(self, learned: bool) -> np.ndarray:
        """B_a = dB/dtheta_a for gamma_l (and tau2, zeta), (k, n, n): ``X (K o D_l) X' = A_l + A_l'
        - 2 Y_l K Y_l'``, ``A_l = (X o u_l^2') K X'``, ``Y_l = X o u_l'``, over u_l's support."""
        if self.structure is not None:
            return self._path.B_dirs(self.B, self.tau2, learned)
        X, U, K, tau2 = self.X, self.U, self.K, self.tau2
        n = X.shape[0]
        d = U.shape[1]
        sc = self.scales
        Bd = np.empty((d + learned + (sc is not None), n, n))
        # row gathers of contiguous transposes and take(): gathering K's support blocks costs
        # as much as the products
        XT = np.ascontiguousarray(X.T)
        XKT = np.ascontiguousarray(self.XK.T)
        supports, (sparse, dense) = self._supports
        for l in sparse:
            S, u = supports[l]
            Yt = XT[S] * u[:, None]                       # Y_l' restricted to S
            A = XKT[S].T @ (Yt * u[:, None])
            Bd[l] = A + A.T - 2.0 * Yt.T @ (K.take(S, 0).take(S, 1) @ Yt)
        if len(dense):
            # dense columns (embeddings): every Y_l' side by side, one product with K and X K
            Ud = U[:, dense]
            Yt = (XT[:, None, :] * Ud[:, :, None]).reshape(len(XT), -1)   # (p, m n)
            KY = (K @ Yt).reshape(len(XT), len(dense), n)
            A = (self.XK @ (Yt.reshape(len(XT), len(dense), n) * Ud[:, :, None])
                 .reshape(len(XT), -1)).reshape(n, len(dense), n)
            Yt = Yt.reshape(len(XT), len(dense), n)
            for m, l in enumerate(dense):
                Bd[l] = A[:, m] + A[:, m].T - 2.0 * Yt[:, m].T @ KY[:, m]
        Bd[:d] *= -0.5 * tau2
        if learned:
            Bd[d] = self.B / tau2
        if sc is not None:
            # B_zeta = tau2 (P + P'), P = Xt diag(g) K Xt' = (Xt o g') (Xt K)'
            u = sc.unasked
            P = (X[:, u] * sc.dlog_h[u]) @ self.XK[:, u].T
            Bd[-1] = tau2 * (P + P.T)
        return Bd

    @cached_property
    def _supports(self) -> tuple[list, tuple[list[int], list[int]]]:
        return supports_of(self.U)

    def directions(self, learned: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(B_a, B_a alpha, alpha' B_a alpha, B_a S^-1) for each parameter a of the kernel part
        (the order of ``layout.marginal_index``), cached per value of ``learned``."""
        key = bool(learned)
        if key not in self._dir_cache:
            n = self.X.shape[0]
            Bd = self._B_dirs(learned)
            k = Bd.shape[0]
            V = Bd @ self.alpha
            t = V @ self.alpha
            C = (Bd.reshape(k * n, n) @ self.Sinv).reshape(k, n, n)
            self._dir_cache[key] = (Bd, V, t, C)
        return self._dir_cache[key]

    def predictive(self) -> tuple[np.ndarray, np.ndarray]:
        """Gaussian approximation of the Student-t predictive at the training inputs: mean
        ``y - alpha``, variance ``b*/(a*-1) (2 - diag(S^-1))`` (paper, appendix A)."""
        mean = self.lift(self._z - self.alpha)
        var = (self.b_star / (self.a_star - 1.0)) * (2.0 - self.sinv_diag)
        return mean, var

    def mean_jacobian(self, learned: bool) -> np.ndarray:
        """d(mean)/d theta_a of :meth:`predictive` (n x k, ``layout.marginal_index`` order):
        ``S^-1 B_a alpha``, each ``B_a alpha`` from products of K with a few vectors: with
        ``z = Xt' alpha``, ``(K o D_l) z = u_l^2 o K z + K (u_l^2 o z) - 2 u_l o K (u_l o z)`` and
        ``B_zeta alpha = tau2 Xt (g o K z + K (g o z))``."""
        X, U, t = self.X, self.U, self.tau2
        z = X.T @ self.alpha
        U2 = U * U
        cols = [z[:, None], U2 * z[:, None], U * z[:, None]]
        sc = self.scales
        if sc is not None:
            cols.append((sc.dlog_h * z)[:, None])
        M = np.hstack(cols)
        KM = self.K @ M if self.structure is None else kernel_apply(self.U, self.gamma, M)
        d = U.shape[1]
        Kz, KU2z, KUz = KM[:, 0], KM[:, 1:1 + d], KM[:, 1 + d:1 + 2 * d]
        inner = U2 * Kz[:, None] + KU2z - 2.0 * U * KUz              # (K o D_l) z, (p, d)
        V = [-0.5 * t * (X @ inner)]                                  # B_l alpha, (n, d)
        if learned:
            V.append((self.B @ self.alpha / t)[:, None])
        if sc is not None:
            V.append((t * X @ (sc.dlog_h * Kz + KM[:, -1]))[:, None])
        if self.m is not None:
            # d(y - alpha)/d delta = S^-1 m
            V.append(self.m[:, None])
        return self.lift(self.Sinv @ np.hstack(V))

    def hessian(self, learned: bool) -> np.ndarray:
        """Hessian of ``value`` in (gamma[, tau2][, zeta])."""
        U = self.U
        # the dense path's R (p x p) first: the peak memory stays where it was
        R = self._R if self.structure is None else None
        d = U.shape[1]
        n = self.X.shape[0]
        _, V, t, C = self.directions(learned)
        k = C.shape[0]
        trCC = C.reshape(k, n * n) @ C.transpose(0, 2, 1).reshape(k, n * n).T
        H = (self.omega / (4 * self.b_star)) * np.outer(t, t) \
            - self.omega * (V @ self.Sinv @ V.T) + 0.5 * trCC
        # tr(G B_ab): second kernel derivatives, d^2 K / dgamma_a dgamma_b = K o D_a o D_b / 4
        if self.structure is not None:
            T = self._path.second(self.G, self._R_AA, self._rank_parts)
        else:
            T = second_terms(cast(np.ndarray, R), self._r, self._RU, U, *self._supports)
        H[:d, :d] += 0.25 * self.tau2 * T
        if learned:
            # B_{gamma_l, tau2} = B_l / tau2 and B_{tau2, tau2} = 0.
            g = self.grad_gamma() / self.tau2
            H[:d, d] += g
            H[d, :d] += g
        sc = self.scales
        if sc is not None and sc.unasked.any():
            # tr(G B_ab) of zeta (module docstring), g = d log h / d zeta, Rg = R g
            z, g = k - 1, sc.dlog_h
            R, r, RU, U2 = self._R, self._r, self._RU, U * U   # scales: the dense path
            Rg = R @ g
            cross = -self.tau2 * (U2.T @ (g * r + Rg) - 2.0 * (U * RU).T @ g)
            H[:d, z] += cross
            H[z, :d] += cross
            if learned:
                gz = self.grad_zeta() / self.tau2
                H[d, z] += gz
                H[z, d] += gz
            H[z, z] += 2.0 * self.tau2 * (sc.d2h_over_h @ r + g @ Rg)
        H = 0.5 * (H + H.T)
        if self.m is not None:
            # the delta row and corner (module docstring)
            m, w = self.m, self.omega
            c, Sm = float(m @ self.alpha), self.Sinv @ m
            row = (w * c / (2.0 * self.b_star)) * t - w * (V @ Sm)
            corner = w * c * c / self.b_star - w * float(m @ Sm)
            H = np.block([[H, row[:, None]], [row[None, :], np.array([[corner]])]])
        return H

    def scale_change(self, features, lam) -> ScaleChange:
        """What if feature j's prior variance scale lambda_j were ``lam`` (a number or one per
        feature; 1 and :data:`~elicit.model.covariance.IRRELEVANT_SCALE` are "relevant" and
        "irrelevant"): for each j of ``features``, one at a time, the Gaussian predictive at the
        training inputs and the change of :attr:`value`.

        With ``x = X[:, j]``, ``v = (Xt K)[:, j]`` and ``dh = sqrt(lam) - h_j`` the change is rank
        two, ``S' = S + tau2 [x v] M [x v]'``, ``M = [[dh^2 K_jj, dh], [dh, 0]]``; Woodbury and the
        matrix determinant lemma give S'^-1 and log|S'| from ``T = I + tau2 M A``,
        ``A = [x v]' S^-1 [x v]``: O(n^2) a candidate."""
        j = np.asarray(features, dtype=int).reshape(-1)
        lam = np.broadcast_to(np.asarray(lam, dtype=float), j.shape)
        h_j = np.ones(len(j)) if self.h is None else self.h[j]
        dh = np.sqrt(lam) - h_j
        if (key := ("scale_change", j.tobytes())) not in self._dir_cache:  # both answers share
            x, v = self._W[:, j], self.XK[:, j]
            Sx, Sv = self.Sinv @ x, self.Sinv @ v
            Lx, Lv = self.lift(Sx), self.lift(Sv)      # and the products of diag(S'^-1) below
            self._dir_cache[key] = (Sx, Sv, np.einsum("ic,ic->c", x, Sx),
                                    np.einsum("ic,ic->c", x, Sv), np.einsum("ic,ic->c", v, Sv),
                                    x.T @ self.alpha, v.T @ self.alpha, Lx**2, 2.0 * Lx * Lv, Lv**2)
        Sx, Sv, A11, A12, A22, ux, uv, Sx2, SxSv2, Sv2 = self._dir_cache[key]
        t = self.tau2
        M11, M12 = dh**2, dh           # dh^2 K_jj, K_jj = 1 (also when masked); M22 = 0
        T11, T12 = 1.0 + t * (M11 * A11 + M12 * A12), t * (M11 * A12 + M12 * A22)
        T21, T22 = t * M12 * A11, 1.0 + t * M12 * A12
        det = T11 * T22 - T12 * T21
        # C = T^-1 tau2 M (symmetric): S'^-1 = S^-1 - S^-1 [x v] C [x v]' S^-1
        C11 = t * (T22 * M11 - T12 * M12) / det
        C12 = t * T22 * M12 / det
        C22 = -t * T21 * M12 / det
        c1, c2 = C11 * ux + C12 * uv, C12 * ux + C22 * uv
        alpha = self.alpha[:, None] - (Sx * c1 + Sv * c2)
        diag = self.sinv_diag[:, None] - (Sx2 * C11 + SxSv2 * C12 + Sv2 * C22)
        b_star = self.b_sigma + 0.5 * (self._rest + self.r @ alpha)
        mean = self.lift(self._z[:, None] - alpha)
        var = (b_star / (self.a_star - 1.0))[None, :] * (2.0 - diag)
        dvalue = -0.5 * np.log(det) - self.a_star * np.log(b_star / self.b_star)
        return ScaleChange(mean, var, dvalue)


class ScaleChange(NamedTuple):
    """:meth:`Marginal.scale_change` of c candidate features: the predictive mean and variance
    (n, c) and the change of the log marginal likelihood (c,)."""

    mean: np.ndarray
    var: np.ndarray
    dvalue: np.ndarray
