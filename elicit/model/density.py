"""Analytic log density of the shipped Stan program, with gradient and Hessian.

This is the numpy mirror of ``stan/elicit.stan`` (the single specification of the model), for
every named model
(:mod:`elicit.model.variants`). The parts a model variant supplies are read from it: the
threshold prior and the feedback link through :mod:`elicit.model.terms`, the coupled set of
the kernel as ``data.kernel_mask``, the per-feature scales h of the relevance model from its
covariance; tests check the density against Stan through PyStan.

The parameter vector is ``theta = (gamma_1..gamma_d, xi[, tau2][, zeta][, delta])``
(:mod:`elicit.model.layout`). With
``B = tau2 X K X'``, ``S = I + B``, ``alpha = S^-1 y``, ``a* = a_sigma + n/2`` and
``b* = b_sigma + y' alpha / 2``, the marginal multivariate Student-t likelihood of y
(Afrabandpey et al. 2019, eq. 3, with nu = 2 a_sigma and scale (b_sigma/a_sigma) S) is

    log p(y) = lgamma(a*) - lgamma(a) - n/2 log(2 pi b) - 1/2 log|S| - a* log(b*/b).

Its derivative along a direction with ``dB`` is ``tr(G dB)`` with
``G = (omega alpha alpha' - S^-1) / 2`` and ``omega = a*/b*``; the Hessian adds
``omega t_a t_b / (4 b*) - omega alpha' B_a S^-1 B_b alpha + tr(S^-1 B_a S^-1 B_b) / 2`` with
``t_a = alpha' B_a alpha``. Kernel derivatives use ``dK/dgamma_l = -K o D_l / 2`` where
``D_l[i, j] = (U_il - U_jl)^2``, expanded as ``D_l = u^2 1' + 1 u^2' - 2 u u'`` so that no
p x p x d array is ever formed.

**More rows than features**: with ``X = Q R`` (thin QR), S is ``I_n + Q (S_p - I_p) Q'``
with ``S_p = I_p + tau2 R K R'``, so every formula above runs on (R, Q'y) with p x p arrays,
``a*`` counting the n rows and ``b*`` adding y's residual beside X's columns
(:mod:`elicit.model.tall`; :func:`basis_of` chooses the form, in one place for
:class:`Marginal` and the batched density).

**Per-feature scales** (the relevance model): the prior covariance of beta is
``sigma2 tau2 diag(h) K diag(h)``, so everything above holds with X replaced by
``Xt = X diag(h)`` (:class:`Marginal` keeps the data's X as ``X_data`` and works on ``X = Xt``).
Only the unjudged features' scales depend on zeta, each through its own logit (the
relevance answers of its neighbours move it: :class:`~elicit.model.covariance.RelevanceScales`);
with ``g_j = d log h_j / d zeta`` (0 for the judged features), ``G_d = diag(g)`` and
``P = Xt G_d K Xt'``, the new direction is ``B_zeta = tau2 (P + P')``; with
``R = (Xt' G Xt) o K``, its row sums r and ``q_j = h_j'' / h_j`` the new terms are

    d/dzeta log p(y)       = 2 tau2 sum_j g_j r_j,
    tr(G B_{zeta, zeta})   = 2 tau2 (sum_j q_j r_j + g' R g),
    tr(G B_{gamma_l, zeta}) = -tau2 sum_ij g_i R_ij D_l,ij
                           = -tau2 (sum_i g_i (u_il^2 r_i - 2 u_il (R U)_il)
                                    + sum_j u_jl^2 (R g)_j),
    tr(G B_{tau2, zeta})   = (d/dzeta log p(y)) / tau2.

**A prior mean** (the direction answers, :mod:`elicit.model.direction`): with
``beta ~ N(delta s, ...)`` the residual ``r = y - delta m``, ``m = X s`` (the data's X),
replaces y above (``alpha = S^-1 r``, ``b* = b_sigma + r' alpha / 2``); nothing else moves,
and the predictive mean at the training inputs is still ``y - alpha``. With
``c = m' alpha``:

    d/ddelta log p(y)            = omega c,
    d^2/ddelta^2                 = omega c^2 / b* - omega m' S^-1 m,
    d^2/ddelta dtheta_a          = omega t_a c / (2 b*) - omega (S^-1 m)' B_a alpha.
"""

from __future__ import annotations

from functools import cached_property
from typing import NamedTuple, cast

import numpy as np
import scipy.sparse as sp
from scipy.linalg.lapack import dtrtri
from scipy.special import gammaln

from elicit.internal.cache import LRUCache, arrays_key
from elicit.model import terms
from elicit.model.covariance import ScaledCovariance, Scales
from elicit.model.kernel import kernel, kernel_apply, kernel_tiles, row_blocks
from elicit.model.spec import ModelData, Params
from elicit.model.structure import OffsetSparse, offset_sparse, structure_of
from elicit.model.tall import TallBasis, is_tall, tall_basis
from elicit.model.terms import prior_terms


def split_theta(theta: np.ndarray, data: ModelData) -> tuple[np.ndarray, float, float]:
    """(gamma, xi, tau2) from a parameter vector (tau2 is the fixed value if not learned);
    zeta, if the model has it: :func:`zeta_of`."""
    lay = data.layout
    tau2 = float(theta[lay.index("tau2")]) if "tau2" in lay else data.hyper.tau2
    return theta[lay["gamma"]], float(theta[lay.index("xi")]), tau2


def zeta_of(theta: np.ndarray, data: ModelData) -> float | None:
    """zeta from a parameter vector (``None`` if the model has no zeta)."""
    lay = data.layout
    return float(theta[lay.index("zeta")]) if "zeta" in lay else None


def delta_of(theta: np.ndarray, data: ModelData) -> float | None:
    """delta from a parameter vector (``None`` if the model has no direction mean)."""
    lay = data.layout
    return float(theta[lay.index("delta")]) if "delta" in lay else None


def join_theta(gamma: np.ndarray, xi: float, tau2: float, data: ModelData,
               zeta: float | None = None, delta: float | None = None) -> np.ndarray:
    """The parameter vector of (gamma, xi, tau2[, zeta][, delta]) (tau2 left out unless it
    is learned, zeta and delta unless the model has them; a model with them needs them)."""
    for name, v in (("zeta", zeta), ("delta", delta)):
        if v is None and name in data.layout:
            raise ValueError(f"model {data.hyper.model!r} has the parameter {name}: pass "
                             f"{name}= (or use theta_of with a fit or Params)")
    # zeta and delta are None only when the layout has no such block (above), and join
    # reads only the layout's blocks
    return data.layout.join({"gamma": gamma, "xi": xi, "tau2": tau2,
                             "zeta": cast(float, zeta), "delta": cast(float, delta)})


def theta_of(point, data: ModelData) -> np.ndarray:
    """The parameter vector of a fit (:class:`~elicit.model.result.MAPResult`) or a
    :class:`~elicit.model.spec.Params` point for ``data``'s layout (a point without zeta or
    delta, for a model with them, gets their start: :meth:`ModelData.initial_params`)."""
    zeta, delta = getattr(point, "zeta", None), getattr(point, "delta", None)
    if (zeta is None and "zeta" in data.layout) or (delta is None and "delta" in data.layout):
        start = data.initial_params()
        zeta = start.zeta if zeta is None else zeta
        delta = start.delta if delta is None else delta
    return join_theta(point.gamma, point.xi, point.tau2, data, zeta, delta)


def params_of(theta: np.ndarray, data: ModelData) -> Params:
    """The :class:`~elicit.model.spec.Params` of a parameter vector."""
    gamma, xi, tau2 = split_theta(theta, data)
    return Params(gamma, xi, tau2, zeta_of(theta, data), delta_of(theta, data))


def lower_bounds(data: ModelData) -> np.ndarray:
    """Lower bounds of theta: gamma, xi >= 0, tau2 kept strictly positive, zeta unbounded
    (``-inf``)."""
    return data.layout.lower_bounds()


def data_scales(data: ModelData, zeta: float | None) -> Scales | None:
    """The per-feature scales of ``data``'s model at ``zeta`` (``None``: the model has none)."""
    if not data.model.relevance:
        return None
    if zeta is None:
        raise ValueError(f"model {data.hyper.model!r} scales the features by zeta: pass zeta")
    # model.relevance above: the covariance scales the features; ModelData.__post_init__
    # makes relevance an array
    cov = cast(ScaledCovariance, data.model.covariance)
    return cov.scales(cast(np.ndarray, data.relevance), zeta, data.relevance_signal)


def data_mean(data: ModelData, delta: float | None) -> tuple[np.ndarray, float] | None:
    """The prior mean ``(s, delta)`` of ``data``'s model at ``delta`` (``None``: none)."""
    if not data.model.direction:
        return None
    if delta is None:
        raise ValueError(f"model {data.hyper.model!r} has a direction mean: pass delta")
    return data.direction_signs, float(delta)


class Marginal:
    """The marginal likelihood of y at (gamma, tau2[, zeta]) and the quantities derived from it.

    One factorisation of S serves the log density, its gradient and Hessian, and the
    posterior (:mod:`elicit.model.posterior`), so nothing is computed twice in a query round.

    **Sparse-plus-offset inputs** (``structured``: None, the default, takes the path whenever
    :func:`~elicit.model.structure.structure_of` finds that it pays: thousands of features,
    inputs like standardised word counts, a few meta-features; True forces it, False keeps the
    dense path): with ``X = S + 1 b'`` every quantity is computed without a p x p array. The
    kernel enters only through ``K b``, the quadratic forms ``(b o u_l)' K (b o u_l)`` and the
    rows of K on the columns A that S touches (``S K``, the block ``K_AA``), all from one
    streamed pass over K's tiles (:func:`~elicit.model.kernel.kernel_tiles`), and, for the
    Hessian, ``K (b o u_a u_b)`` (:func:`~elicit.model.kernel.kernel_apply`); the results
    equal the dense path's up to rounding. :attr:`K` is then built only when read.

    With per-feature ``scales`` (the relevance model) every formula runs on ``X diag(h)``:
    :attr:`X` is that scaled design, :attr:`X_data` the data's X (the same array without
    scales).

    **More rows than features** (``tall``: None, the default, takes the p x p form whenever
    n > p off the structured path; True forces it, False keeps the n x n form): with
    ``X = Q R`` (:attr:`basis`, :mod:`elicit.model.tall`) every formula runs on (R, Q'y):
    :attr:`X`, :attr:`alpha`, :attr:`Sinv`, :attr:`B`, :attr:`XK` and :attr:`G` are p x p or
    p long, the value and its derivatives equal the n x n form's, and what lives at the n
    training inputs comes back through :meth:`lift` and :attr:`sinv_diag`.

    With a prior ``mean = (s, delta)`` of beta (``delta s``: the direction answers) the
    residual :attr:`r` ``= y - delta X s`` takes y's place (module docstring); on the p x p
    form ``m = R s = Q' X s``, and y's part beside X's columns is r's too (X s lies in them).
    """

    def __init__(self, X: np.ndarray, y: np.ndarray, U: np.ndarray, gamma: np.ndarray,
                 tau2: float, a_sigma: float, b_sigma: float, K: np.ndarray | None = None,
                 coupled: np.ndarray | None = None, scales: Scales | None = None,
                 structured: bool | None = None, tall: bool | None = None,
                 mean: tuple[np.ndarray, float] | None = None):
        self.X_data = X
        #: the prior mean's signs s and magnitude delta (None: no prior mean)
        self.s: np.ndarray | None = None if mean is None else mean[0]
        self.delta: float | None = None if mean is None else float(mean[1])
        self.scales = scales
        #: zeta of the scales, when :meth:`from_data` built them (else None)
        self.zeta: float | None = None
        #: the per-feature scales h (None: all 1)
        self.h = None if scales is None else scales.h
        self.y, self.U = y, U
        self.gamma = np.asarray(gamma, dtype=float)
        self.tau2 = float(tau2)
        self.a_sigma, self.b_sigma = float(a_sigma), float(b_sigma)
        n = X.shape[0]
        # Everything below (value, gradient, Hessian, predictive) reads K only, so a K masked
        # to the coupled set gets the masked derivatives: D_l enters as K o D_l.
        self.coupled = coupled
        #: the sparse-plus-offset structure of X when the structured path is taken, else None
        #: (:mod:`elicit.model.structure`; never with a coupled set or per-feature scales)
        self.structure: OffsetSparse | None = None
        if structured and (coupled is not None or scales is not None):
            raise ValueError("the structured path takes no coupled set or feature scales")
        if structured is not False and coupled is None and scales is None:
            # structured=True forces the path (the tests compare it with the dense one)
            self.structure = structure_of(X, U.shape[1]) or (offset_sparse(X) if structured
                                                             else None)
        #: the basis X = Q R of the p x p form (more rows than features), else None
        self.basis = basis_of(X, self.structure, tall)
        self._rest = 0.0                                  # y's residual beside X's columns
        if self.basis is not None:
            X = self.basis.R
            y, self._rest = self.basis.reduce(y)
        self._W, self._z = X, y          # the working design (without scales) and target
        #: ``m = X s`` in the working form (``R s`` on the p x p form; None: no prior mean)
        self.m: np.ndarray | None = None if self.s is None else X @ self.s
        #: the residual of the prior mean, y - delta m (y itself without a prior mean)
        self.r = y if self.m is None else y - cast(float, self.delta) * self.m
        self.X = X if scales is None else X * scales.h
        X = self.X
        m = X.shape[0]
        if self.structure is not None:
            self._K = K
            self.XK = self._structured_products()
        else:
            self._K = kernel(U, self.gamma, coupled) if K is None else K
            self.XK = X @ self._K
        B = self.tau2 * (self.XK @ X.T)
        self.B = 0.5 * (B + B.T)
        S = self.B + np.eye(m)
        # S = I + B has all eigenvalues >= 1, so its inverse is well conditioned: from the
        # Cholesky factor, S^-1 = L^-T L^-1 (a triangular inverse and a symmetric product,
        # half the work of a general inverse; L^-1 also gives W = L^-1 X of the gradient).
        self.L = np.linalg.cholesky(S)
        self.Linv = _lower_inverse(self.L)
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

    def _structured_products(self) -> np.ndarray:
        """X K from ``X = S + 1 b'`` (the structured path) in one streamed pass over the
        kernel's tiles (:func:`~elicit.model.kernel.kernel_tiles`), with the columns A that S
        touches first, keeping what the gradient and the Hessian's directions need:
        ``K b``, the quadratic forms ``q_l = (b o u_l)' K (b o u_l)``, the block ``K_AA`` and
        ``(K [b o U, b o U^2])_A``. The rows of K on A (the first tiles' rows, and by symmetry
        the first columns of the others) give ``S K``."""
        st = cast(OffsetSparse, self.structure)
        U, b, A = self.U, st.b, st.cols
        n, p = st.shape
        d, a = U.shape[1], len(A)
        rest = np.ones(p, dtype=bool)
        rest[A] = False
        order = np.concatenate([A, np.flatnonzero(rest)])
        Uo, bo = U[order], b[order]
        bU = bo[:, None] * Uo
        V = np.hstack([bo[:, None], bU])                          # [b, b o U]
        W = np.hstack([bU, bU * Uo])                              # [b o U, b o U^2]
        Kb = np.zeros(p)
        q = np.zeros(d)
        SK = np.zeros((n, p))                                     # columns in `order`
        K_AA = np.empty((a, a))
        KA_W = np.zeros((a, 2 * d))
        S = st.S_cols
        S_of: dict[int, sp.csc_matrix] = {}                       # S's columns of a tile row
        for I, J, E in kernel_tiles(U, self.gamma, order):
            M = E @ V[J]
            Kb[I] += M[:, 0]
            mirror = J.start != I.start
            q += (2.0 if mirror else 1.0) * np.einsum("il,il->l", bU[I], M[:, 1:])
            if mirror:
                Kb[J] += E.T @ bo[I]
            if I.start < a:                                       # rows of K on A
                m = min(I.stop, a) - I.start
                Ia = slice(I.start, I.start + m)
                if I.start not in S_of:
                    S_of[I.start] = S[:, Ia]
                Ea = E[:m]
                SK[:, J] += S_of[I.start] @ Ea
                KA_W[Ia] += Ea @ W[J]
                if J.start < a:
                    ja = min(J.stop, a) - J.start
                    K_AA[Ia, J.start:J.start + ja] = Ea[:, :ja]
                    if mirror:
                        K_AA[J.start:J.start + ja, Ia] = Ea[:, :ja].T
            if mirror and J.start < a:                            # K[J, I] = E' on A
                ja = min(J.stop, a) - J.start
                Ja = slice(J.start, J.start + ja)
                if J.start not in S_of:
                    S_of[J.start] = S[:, Ja]
                Eb = E[:, :ja].T
                SK[:, I] += S_of[J.start] @ Eb
                KA_W[Ja] += Eb @ W[I]
        back = np.empty(p, dtype=int)
        back[order] = np.arange(p)
        self._Kb = Kb[back]
        self._q = q
        self._K_AA = K_AA
        self._KA_bU, self._KA_bU2 = KA_W[:, :d], KA_W[:, d:]
        return SK[:, back] + self._Kb

    @classmethod
    def from_data(cls, data: ModelData, gamma: np.ndarray, tau2: float,
                  K: np.ndarray | None = None, zeta: float | None = None,
                  delta: float | None = None) -> Marginal:
        """The marginal of ``data`` at (gamma, tau2[, zeta][, delta]); ``K`` the kernel at
        gamma if the caller has it. A model with zeta or delta needs it (see also :meth:`at`,
        :meth:`of_fit`). A point computed lately is served from :data:`marginal_cache`."""
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
        marginal_cache.remember(data, mg, key=key)
        return mg

    @classmethod
    def at(cls, theta: np.ndarray, data: ModelData, K: np.ndarray | None = None) -> Marginal:
        """The marginal of ``data`` at the parameter vector ``theta``."""
        gamma, _, tau2 = split_theta(theta, data)
        return cls.from_data(data, gamma, tau2, K=K, zeta=zeta_of(theta, data),
                             delta=delta_of(theta, data))

    @classmethod
    def of_fit(cls, data: ModelData, fit) -> Marginal:
        """The marginal of ``data`` at a fit (:class:`~elicit.model.result.MAPResult`: its
        gamma, tau2, zeta and kernel K)."""
        zeta, delta = getattr(fit, "zeta", None), getattr(fit, "delta", None)
        if marginal_cache.entries_for(data) and "K" not in fit.__dict__:
            # a cached marginal saves building the kernel that fit.K would build
            hit = marginal_cache.lookup(data, fit.gamma, fit.tau2, zeta, delta)
            if hit is not None and type(hit) is cls:
                return hit
        # the structured path never needs the p x p kernel: build it only for the dense one
        K = fit.K if "K" in fit.__dict__ or not takes_structure(data) else None
        return cls.from_data(data, fit.gamma, fit.tau2, K=K, zeta=zeta, delta=delta)

    def lift(self, V: np.ndarray) -> np.ndarray:
        """At the n training inputs, a vector (or columns) of the working form: V itself, or
        ``Q V`` in the p x p form, where ``S^-1 Q w = Q S_p^-1 w`` and ``y - alpha =
        Q (z - alpha_p)``."""
        return V if self.basis is None else self.basis.Q @ V

    @cached_property
    def sinv_diag(self) -> np.ndarray:
        """diag(S^-1) at the n training inputs."""
        return np.diag(self.Sinv) if self.basis is None else self.basis.sinv_diag(self.Sinv)

    @cached_property
    def logdet_S(self) -> float:
        return 2.0 * float(np.sum(np.log(np.diag(self.L))))

    @cached_property
    def value(self) -> float:
        n = self.X_data.shape[0]
        a, b = self.a_sigma, self.b_sigma
        return float(gammaln(self.a_star) - gammaln(a) - 0.5 * n * np.log(2 * np.pi * b)
                     - 0.5 * self.logdet_S - self.a_star * np.log(self.b_star / b))

    @cached_property
    def G(self) -> np.ndarray:
        return 0.5 * (self.omega * np.outer(self.alpha, self.alpha) - self.Sinv)

    @cached_property
    def _R(self) -> np.ndarray:
        # R = (X' G X) o K: contracting it with D_l gives tr(G X (K o D_l) X'). With
        # G = (omega alpha alpha' - S^-1) / 2 and S^-1 = L^-T L^-1, X' G X is a symmetric
        # rank-n product (W = L^-1 X) plus a rank-one term; built in place, no p x p temporary.
        W = self.Linv @ self.X
        xa = self.X.T @ self.alpha
        R = W.T @ W
        c = 0.5 * self.omega
        for blk in row_blocks(len(xa)):
            Rb = R[blk]
            Rb *= -0.5
            Rb += (c * xa[blk])[:, None] * xa[None, :]
            Rb *= self.K[blk]
        return R

    @cached_property
    def _r(self) -> np.ndarray:
        # Row sums of R: r_i = x_i' G (X K)_i, an n x p product instead of a p x p pass.
        return np.einsum("ai,ai->i", self.G @ self.X, self.XK)

    @cached_property
    def _RU(self) -> np.ndarray:
        return self._R @ self.U

    @cached_property
    def _R_AA(self) -> np.ndarray:
        # The structured path's R on the columns A that S touches: (S_A' G S_A) o K_AA.
        S = cast(OffsetSparse, self.structure).S_cols
        return (S.T @ (S.T @ self.G).T) * self._K_AA

    @cached_property
    def _rank_parts(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The rest of X'GX on the structured path: ``c b' + b c' + g0 b b'`` with
        ``c = S'G1`` and ``g0 = 1'G1``; every sum over it weighted by the symmetric
        ``K o D`` is one over ``w b'``, ``w = 2c + g0 b``. Returns (w, K w, c on A), with
        ``K c = (S K)' G 1 = (X K)' G 1 - g0 K b``."""
        st = cast(OffsetSparse, self.structure)
        G1 = self.G.sum(axis=1)
        g0 = float(G1.sum())
        c_A = st.S_cols.T @ G1
        w = g0 * st.b
        w[st.cols] += 2.0 * c_A
        Kw = 2.0 * (self.XK.T @ G1) - g0 * self._Kb
        return w, Kw, c_A

    def grad_gamma(self) -> np.ndarray:
        if self.structure is not None:
            return self._grad_gamma_structured()
        U = self.U
        # sum_ij R_ij D_l,ij = 2 (r . u_l^2 - u_l' R u_l)
        return -self.tau2 * ((U * U).T @ self._r - np.einsum("il,il->l", U, self._RU))

    def _grad_gamma_structured(self) -> np.ndarray:
        # sum_ij R_ij D_l,ij over the block on A (as the dense path) and over the rank part:
        # sum_ij w_i b_j K_ij D_l,ij = (w o u^2)' K b + (b o u^2)' K w - 2 (w o u)' K (b o u)
        st = cast(OffsetSparse, self.structure)
        U = self.U
        UA = U[st.cols]
        R1 = self._R_AA
        block = (UA * UA).T @ R1.sum(axis=1) - np.einsum("il,il->l", UA, R1 @ UA)
        w, Kw, c_A = self._rank_parts
        g0 = float(self.G.sum())
        # (w o u)' K (b o u) = 2 (c o u)_A' (K (b o u))_A + g0 q
        wKbU = 2.0 * np.einsum("i,il,il->l", c_A, UA, self._KA_bU) + g0 * self._q
        rank = (U * U).T @ (w * self._Kb + st.b * Kw) - 2.0 * wKbU
        return -self.tau2 * (block + 0.5 * rank)

    def grad_tau2(self) -> float:
        return float(np.sum(self.G * self.B)) / self.tau2

    def grad_zeta(self) -> float:
        """d value / d zeta (0.0 without scales): ``2 tau2 sum_j g_j r_j``, g_j = d log h_j /
        d zeta (0 for the judged features)."""
        sc = self.scales
        if sc is None or not sc.unasked.any():
            return 0.0
        return float(2.0 * self.tau2 * (sc.dlog_h @ self._r))

    def grad_delta(self) -> float:
        """d value / d delta (0.0 without a prior mean): ``omega m' alpha``."""
        return 0.0 if self.m is None else float(self.omega * (self.m @ self.alpha))

    def _delta_hessian(self, V: np.ndarray, t: np.ndarray) -> tuple[np.ndarray, float]:
        """The Hessian's delta row over the directions a (``V = B_a alpha``, ``t = alpha'
        B_a alpha``) and its (delta, delta) entry (module docstring)."""
        m = cast(np.ndarray, self.m)
        c, Sm, w = float(m @ self.alpha), self.Sinv @ m, self.omega
        return (w * c / (2.0 * self.b_star)) * t - w * (V @ Sm), w * c * c / self.b_star \
            - w * float(m @ Sm)

    @property
    def n_dirs(self) -> int:
        """Number of parameters :meth:`directions` covers without tau2 (d, plus zeta)."""
        return self.U.shape[1] + (self.scales is not None)

    def _B_dirs(self, learned: bool) -> np.ndarray:
        """B_a = dB/dtheta_a for each gamma_l (and tau2, and zeta): shape (k, n, n).

        X (K o D_l) X' = A_l + A_l' - 2 Y_l K Y_l' with A_l = (X o u_l^2') K X' and
        Y_l = X o u_l'. Only the features where u_l != 0 contribute, and meta-features of word
        counts are mostly zero, so each product runs over that support alone.
        """
        if self.structure is not None:
            return self._B_dirs_structured(learned)
        X, U, K, tau2 = self.X, self.U, self.K, self.tau2
        n = X.shape[0]
        d = U.shape[1]
        sc = self.scales
        Bd = np.empty((d + learned + (sc is not None), n, n))
        # Row gathers of contiguous transposes, and take() rather than fancy indexing:
        # gathering the support blocks of K costs as much as the products themselves.
        XT = np.ascontiguousarray(X.T)
        XKT = np.ascontiguousarray(self.XK.T)
        sparse, dense = self._support_split
        for l in sparse:
            S, u = self._supports[l]
            Yt = XT[S] * u[:, None]                       # Y_l' restricted to S
            A = XKT[S].T @ (Yt * u[:, None])
            Bd[l] = A + A.T - 2.0 * Yt.T @ (K.take(S, 0).take(S, 1) @ Yt)
        if len(dense):
            # Columns without much sparsity (embeddings): every Y_l' side by side, so that
            # the two products with K and X K are one matrix product each.
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

    def _B_dirs_structured(self, learned: bool) -> np.ndarray:
        """:meth:`_B_dirs` from ``X = S + 1 b'``: ``X (K o D_l) X'`` is
        ``S_A (K_AA o D_l) S_A' + v 1' + 1 v' + s 1 1'`` with ``v = S (K o D_l) b`` and
        ``s = b' (K o D_l) b``; the first term is ``A + A' - 2 Y K_AA Y'`` with
        ``A = (S diag(u^2)) K_AA S'`` and ``Y = S diag(u)``, sparse products on A."""
        st = cast(OffsetSparse, self.structure)
        U, tau2, b = self.U, self.tau2, st.b
        S = st.S_cols
        n, d = self.X.shape[0], U.shape[1]
        UA = U[st.cols]
        Kb = self._Kb
        Kb_A = Kb[st.cols]
        KS = (S @ self._K_AA).T                                 # K_AA S_A'
        Bd = np.empty((d + learned, n, n))
        for l in range(d):
            u = UA[:, l]
            Y = S @ sp.diags(u)
            A = (S @ sp.diags(u * u)) @ KS
            YKY = Y @ (Y @ self._K_AA).T
            v = S @ (u * u * Kb_A + self._KA_bU2[:, l] - 2.0 * u * self._KA_bU[:, l])
            s_l = 2.0 * ((b * U[:, l] ** 2) @ Kb - self._q[l])
            Bd[l] = A + A.T - 2.0 * YKY + v[:, None] + v[None, :] + s_l
        Bd[:d] *= -0.5 * tau2
        if learned:
            Bd[d] = self.B / tau2
        return Bd

    @cached_property
    def _support_split(self) -> tuple[list[int], list[int]]:
        """The meta-feature columns whose products run over their support alone (zero in
        at least a third of the features: word counts) and the others (embeddings), which
        are stacked into one product."""
        return _support_split(self.U, self._supports)

    @cached_property
    def _supports(self) -> list[tuple[np.ndarray, np.ndarray]]:
        return _column_supports(self.U)

    def directions(self, learned: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(B_a, B_a alpha, alpha' B_a alpha, B_a S^-1) for each parameter a of the kernel part
        (gamma, tau2 if ``learned``, zeta with scales: the order of ``layout.marginal_index``).

        Cached: the Hessian and the predictive Jacobian of one query round share them.
        """
        key = bool(learned)
        if key not in self._dir_cache:
            X = self.X
            n = X.shape[0]
            Bd = self._B_dirs(learned)
            k = Bd.shape[0]
            V = Bd @ self.alpha
            t = V @ self.alpha
            C = (Bd.reshape(k * n, n) @ self.Sinv).reshape(k, n, n)
            self._dir_cache[key] = (Bd, V, t, C)
        return self._dir_cache[key]

    def predictive(self) -> tuple[np.ndarray, np.ndarray]:
        """Gaussian approximation of the Student-t predictive at the training inputs.

        Mean ``X mu* = B S^-1 y = y - alpha`` and variance ``b*/(a*-1) (1 + x' Sigma* x)``
        with ``diag(X Sigma* X') = diag(B S^-1) = 1 - diag(S^-1)`` (paper, appendix A).
        """
        mean = self.lift(self._z - self.alpha)
        var = (self.b_star / (self.a_star - 1.0)) * (2.0 - self.sinv_diag)
        return mean, var

    def _apply_K(self, V: np.ndarray) -> np.ndarray:
        """``K V`` (p x m): the matrix product on the dense path, one streamed pass over the
        kernel's tiles on the structured path (no p x p array)."""
        if self.structure is None:
            return self.K @ V
        return kernel_apply(self.U, self.gamma, V)

    def mean_jacobian(self, learned: bool) -> np.ndarray:
        """d(mean)/d theta_a of :meth:`predictive` (n x k): ``S^-1 B_a alpha``, with each
        ``B_a alpha`` from products of K with a few vectors (no B_a, no Hessian): with
        ``z = Xt' alpha``, ``(K o D_l) z = u_l^2 o K z + K (u_l^2 o z) - 2 u_l o K (u_l o z)``,
        ``B_tau2 alpha = B alpha / tau2`` and ``B_zeta alpha = tau2 Xt (g o K z + K (g o z))``.
        The same columns as :meth:`predictive_jacobian`'s first (a test checks them), in the
        order of ``layout.marginal_index``."""
        X, U, t = self.X, self.U, self.tau2
        z = X.T @ self.alpha
        U2 = U * U
        cols = [z[:, None], U2 * z[:, None], U * z[:, None]]
        sc = self.scales
        if sc is not None:
            cols.append((sc.dlog_h * z)[:, None])
        KM = self._apply_K(np.hstack(cols))
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

    def predictive_jacobian(self, learned: bool) -> tuple[np.ndarray, np.ndarray]:
        """d(mean)/d theta_a and d(var)/d theta_a of :meth:`predictive` (n x k each)."""
        _, V, t, C = self.directions(learned)
        Jm = self.lift(self.Sinv @ V.T)
        c = 1.0 / (self.a_star - 1.0)
        # d diag(S^-1) = -diag(S^-1 B_a S^-1) and d b* = -t_a / 2
        if self.basis is None:
            dg = np.einsum("ij,aji->ia", self.Sinv, C, optimize=True)
        else:
            dg = self.basis.rows_diag(self.Sinv @ C).T
        Jv = c * (-0.5 * t)[None, :] * (2.0 - self.sinv_diag)[:, None] + c * self.b_star * dg
        if self.m is not None:
            # delta moves the mean by S^-1 m and b* by -m' alpha, not S
            Jm = np.hstack([Jm, self.lift((self.Sinv @ self.m)[:, None])])
            Jv = np.hstack([Jv, (-c * float(self.m @ self.alpha))
                            * (2.0 - self.sinv_diag)[:, None]])
        return Jm, Jv

    def hessian(self, learned: bool) -> np.ndarray:
        """Hessian of ``value`` in (gamma[, tau2][, zeta])."""
        U = self.U
        # the dense path's R (p x p) first, as it always was: the peak memory stays where it was
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
            T = self._second_structured()
        else:
            T = _second_terms(cast(np.ndarray, R), self._r, self._RU, U, self._supports,
                              self._support_split)
        H[:d, :d] += 0.25 * self.tau2 * T
        if learned:
            # B_{gamma_l, tau2} = B_l / tau2 and B_{tau2, tau2} = 0.
            g = self.grad_gamma() / self.tau2
            H[:d, d] += g
            H[d, :d] += g
        sc = self.scales
        if sc is not None and sc.unasked.any():
            # tr(G B_ab) of zeta (module docstring)
            # with g = d log h / d zeta (per feature) and Rg = R g:
            #   tr(G B_{gamma_l, zeta}) = -tau2 (sum_i g_i (u_il^2 r_i - 2 u_il (RU)_il)
            #                                    + sum_j u_jl^2 (Rg)_j),
            #   tr(G B_{zeta, zeta})    = 2 tau2 (sum_j (h''/h)_j r_j + g' R g)
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
            row, corner = self._delta_hessian(V, t)
            H = np.block([[H, row[:, None]], [row[None, :], np.array([[corner]])]])
        return H

    def _second_structured(self) -> np.ndarray:
        """``T_ab = sum_ij R_ij D_a,ij D_b,ij`` on the structured path: the block on A as the
        dense path, plus ``sum_ij w_i b_j K_ij D_a D_b`` (:attr:`_rank_parts`). Expanding
        ``D_a D_b`` gives nine sums ``(w o f)' K (b o g)``; each is read with the monomial of
        degree <= 2 on the side of K's product: ``K (b o [1, u_a, u_a u_b])``, ``K w`` and
        ``K (w o u_a)`` (``w = 2c + g0 b``: ``K (c o u_a)`` comes from the same streamed pass
        over K)."""
        st = cast(OffsetSparse, self.structure)
        U, b, A = self.U, st.b, st.cols
        p, d = U.shape
        UA = U[A]
        R1 = self._R_AA
        T = _second_terms(R1, R1.sum(axis=1), R1 @ UA, UA, *_supports_of(UA))
        w, Kw, c_A = self._rank_parts
        # one pass: K (b o u_a), K (b o u_a u_b) for a <= b, and K (c o u_a)
        ia, ib = np.triu_indices(d)
        cU = np.zeros((p, d))
        cU[A] = c_A[:, None] * UA
        P = kernel_apply(U, self.gamma, np.hstack([b[:, None] * U,
                                                   b[:, None] * U[:, ia] * U[:, ib], cU]))
        KbU, KcU = P[:, :d], P[:, -d:]
        KbUU = np.empty((p, d, d))
        KbUU[:, ia, ib] = P[:, d:-d]
        KbUU[:, ib, ia] = KbUU[:, ia, ib]
        KbSq = KbUU[:, np.arange(d), np.arange(d)]               # K (b o u_a^2)
        Kb = self._Kb
        g0 = float(self.G.sum())
        KwU = g0 * KbU + 2.0 * KcU
        U2 = U * U
        wU2, bU2 = w[:, None] * U2, b[:, None] * U2
        t1 = (U2 * (w * Kb + b * Kw)[:, None]).T @ U2
        t2 = wU2.T @ KbSq
        t3 = -2.0 * wU2.T @ (U * KbU) - 2.0 * bU2.T @ (U * KwU)
        t4 = 4.0 * np.einsum("ia,ib,iab->ab", w[:, None] * U, U, KbUU)
        return T + t1 + t2 + t2.T + t3 + t3.T + t4

    def scale_change(self, features, lam) -> ScaleChange:
        """What if feature j's prior variance scale lambda_j were ``lam``: for each j of
        ``features`` (all else fixed, one at a time), the Gaussian predictive at the training
        inputs (as :meth:`predictive`) and the change of :attr:`value`.

        With ``x = X[:, j]``, ``v = (Xt K)[:, j]`` and ``dh = sqrt(lam) - h_j`` the change is
        rank two, ``S' = S + tau2 [x v] M [x v]'`` with ``M = [[dh^2 K_jj, dh], [dh, 0]]``;
        Woodbury and the matrix determinant lemma give S'^-1 and log|S'| per candidate from
        the 2 x 2 matrix ``T = I + tau2 M A``, ``A = [x v]' S^-1 [x v]``: all candidates at
        once, O(n^2) each.

        Parameters
        ----------
        features
            Feature indices (c,).
        lam
            The new scale lambda (a number, or one per feature); 1 and
            :data:`~elicit.model.covariance.IRRELEVANT_SCALE` are the relevance model's
            "relevant" and "irrelevant".
        """
        j = np.asarray(features, dtype=int).reshape(-1)
        lam = np.broadcast_to(np.asarray(lam, dtype=float), j.shape)
        h_j = np.ones(len(j)) if self.h is None else self.h[j]
        dh = np.sqrt(lam) - h_j
        x = self._W[:, j]
        v = self.XK[:, j]
        Kjj = np.ones(len(j))          # the kernel's diagonal (exactly 1, also when masked)
        Si = self.Sinv
        Sx, Sv = Si @ x, Si @ v
        A11 = np.einsum("ic,ic->c", x, Sx)
        A12 = np.einsum("ic,ic->c", x, Sv)
        A22 = np.einsum("ic,ic->c", v, Sv)
        t = self.tau2
        M11, M12 = dh**2 * Kjj, dh                      # M22 = 0
        T11, T12 = 1.0 + t * (M11 * A11 + M12 * A12), t * (M11 * A12 + M12 * A22)
        T21, T22 = t * M12 * A11, 1.0 + t * M12 * A12
        det = T11 * T22 - T12 * T21
        # C = T^-1 tau2 M (symmetric): S'^-1 = S^-1 - S^-1 [x v] C [x v]' S^-1
        C11 = t * (T22 * M11 - T12 * M12) / det
        C12 = t * T22 * M12 / det
        C22 = -t * T21 * M12 / det
        ux, uv = x.T @ self.alpha, v.T @ self.alpha
        c1, c2 = C11 * ux + C12 * uv, C12 * ux + C22 * uv
        alpha = self.alpha[:, None] - (Sx * c1 + Sv * c2)
        Sx, Sv = self.lift(Sx), self.lift(Sv)
        diag = self.sinv_diag[:, None] - (Sx**2 * C11 + 2.0 * Sx * Sv * C12 + Sv**2 * C22)
        b_star = self.b_sigma + 0.5 * (self._rest + self.r @ alpha)
        mean = self.lift(self._z[:, None] - alpha)
        var = (b_star / (self.a_star - 1.0))[None, :] * (2.0 - diag)
        dvalue = -0.5 * np.log(det) - self.a_star * np.log(b_star / self.b_star)
        return ScaleChange(mean, var, dvalue)


def data_structure(data: ModelData) -> OffsetSparse | None:
    """The structure of X with which the marginals of ``data`` take the structured path
    (sparse plus offset: see :class:`Marginal`), or None (the dense path)."""
    if data.kernel_mask is not None or data.model.relevance:
        return None
    return structure_of(data.X, data.d)


def basis_of(X: np.ndarray, structure: OffsetSparse | None,
             tall: bool | None = None) -> TallBasis | None:
    """The basis X = Q R of the p x p form when a marginal of X takes it, else None: with
    more rows than features (:func:`~elicit.model.tall.is_tall`; ``tall`` True or False
    forces the choice) and off the structured path. :class:`Marginal` and the batched
    density both ask here."""
    if structure is not None or not (is_tall(*X.shape) if tall is None else tall):
        return None
    return tall_basis(X)


def data_basis(data: ModelData) -> TallBasis | None:
    """:func:`basis_of` the marginals of ``data`` (see :class:`Marginal`)."""
    return basis_of(data.X, data_structure(data))


def takes_structure(data: ModelData) -> bool:
    """Whether the marginals of ``data`` take the structured path (:func:`data_structure`)."""
    return data_structure(data) is not None


def _column_supports(U: np.ndarray) -> list[tuple[np.ndarray, np.ndarray]]:
    """The nonzero pattern of each meta-feature column and its values there."""
    out = []
    for l in range(U.shape[1]):
        S = np.flatnonzero(U[:, l])
        out.append((S, U[S, l]))
    return out


def _support_split(U: np.ndarray, supports: list) -> tuple[list[int], list[int]]:
    """The meta-feature columns whose products run over their support alone (zero in at least
    a third of the features: word counts) and the others (embeddings), which are stacked into
    one product."""
    p = U.shape[0]
    sparse = [l for l, (S, _) in enumerate(supports) if 3 * len(S) <= 2 * p]
    return sparse, [l for l in range(U.shape[1]) if l not in set(sparse)]


def _supports_of(U: np.ndarray) -> tuple[list, tuple[list[int], list[int]]]:
    """:func:`_column_supports` of U and :func:`_support_split` of them."""
    sup = _column_supports(U)
    return sup, _support_split(U, sup)


def _second_terms(R: np.ndarray, r: np.ndarray, RU: np.ndarray, U: np.ndarray,
                  supports: list, split: tuple[list[int], list[int]]) -> np.ndarray:
    """``T_ab = sum_ij R_ij D_a,ij D_b,ij`` (d x d) for a symmetric R with row sums r and
    ``RU = R U``: expanding ``D_a D_b`` gives
    ``2 (u_a^2 u_b^2)' r + 2 u_a^2' R u_b^2 - 4 (u_a^2 u_b)' R u_b - 4 (u_b^2 u_a)' R u_a
    + 4 (u_a u_b)' R (u_a u_b)``."""
    d = U.shape[1]
    U2 = U * U
    T = 2.0 * (U2.T * r) @ U2 + 2.0 * U2.T @ (R @ U2)
    M3 = U2.T @ (U * RU)
    T -= 4.0 * (M3 + M3.T)
    # sum_ij R_ij U_ia U_ja U_ib U_jb, again over the support of u_a only
    E_full = np.empty((d, d))
    sparse, dense = split
    for a in sparse:
        S, u = supports[a]
        Ua = U[S] * u[:, None]                        # rows u_i o u_ia
        E_full[a] = np.einsum("ib,ib->b", Ua, R.take(S, 0).take(S, 1) @ Ua)
    if len(dense):
        Ua = (U[:, None, :] * U[:, dense, None]).reshape(len(U), -1)  # (p, m d)
        RUa = (R @ Ua).reshape(len(U), len(dense), d)
        E_full[dense] = np.einsum("iab,iab->ab", Ua.reshape(len(U), len(dense), d), RUa)
    T += 4.0 * E_full
    return T


def _lower_inverse(L: np.ndarray) -> np.ndarray:
    """The inverse of a lower-triangular Cholesky factor (LAPACK's triangular inverse)."""
    Linv, info = dtrtri(L, lower=1)
    if info != 0:
        raise np.linalg.LinAlgError(f"singular Cholesky factor (dtrtri info {info})")
    return np.tril(Linv)


class ScaleChange(NamedTuple):
    """:meth:`Marginal.scale_change` of c candidate features."""

    #: Gaussian predictive mean at the n training inputs, one column per candidate (n, c)
    mean: np.ndarray
    #: its variance (n, c)
    var: np.ndarray
    #: the change of the log marginal likelihood of y (c,)
    dvalue: np.ndarray


def _prior_and_feedback(theta: np.ndarray, data: ModelData, hess: bool):
    """Log prior + feedback log likelihood, its gradient and (optionally) Hessian."""
    lay = data.layout
    k = len(theta)
    grad = np.zeros(k)
    H = np.zeros((k, k)) if hess else None
    val = None
    for name, v, g, c in prior_terms(theta, data):
        val = v if val is None else val + v
        sl = lay[name]
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
    """The feedback log likelihood ``sum_k log p(f_k | xi - w_k . gamma)`` under the model's
    link, its gradient and Hessian (:func:`elicit.model.terms.feedback_terms`)."""
    return terms.feedback_terms(data.link, data.W_f, data.f, theta, data.layout, hess)


class MarginalCache:
    """The marginals at the last few points, shared by everyone who asks for one.

    A query round computes the marginal at the current MAP (for the Hessian and the screen),
    every warm refit of the round starts there, the refits' last points are where the
    predictive of each hypothetical answer is read, the refit after the expert's answer is
    one of them, and the posterior after it (the test MSE, the next round) is the marginal
    at that point again. :meth:`Marginal.from_data` looks each point up here first, so each
    of those is computed once; the derived quantities a :class:`Marginal` caches (G, R, the
    Hessian's directions) come along.

    Entries are keyed by the data arrays (X, y, U: their identity and a checksum,
    :func:`~elicit.internal.cache.arrays_key`, so an array modified in place never serves a
    stale value), the hyperparameters of the y-likelihood, the kernel's mask, the
    relevance classes and the exact bytes of (gamma, tau2[, zeta]): two points that differ
    in the last bit are two entries. A marginal holds a few p x p arrays, so the cache holds
    at most ``max_bytes`` of them by the size :func:`marginal_bytes` estimates (none above
    it: at p = 10,000 one kernel alone is 800 MB, but a marginal on the structured path holds
    no p x p array).
    """

    def __init__(self, size: int = 8, max_bytes: float = 256e6) -> None:
        self.size, self.max_bytes = int(size), float(max_bytes)
        self._cache = LRUCache(self.size)

    @staticmethod
    def key(data: ModelData, gamma: np.ndarray, tau2: float, zeta: float | None,
            delta: float | None = None) -> tuple:
        """The key of ``data``'s marginal at (gamma, tau2[, zeta][, delta])."""
        h = data.hyper
        mask = data.kernel_mask
        key: tuple = (arrays_key(data.X, data.y, data.U), float(h.a_sigma),
                      float(h.b_sigma), float(tau2), np.asarray(gamma, dtype=float).tobytes(),
                      b"" if mask is None else np.packbits(mask).tobytes())
        if data.model.relevance:
            # a relevance model's points have a zeta; relevance is an array after
            # ModelData.__post_init__
            key += (h.model, float(cast(float, zeta)),
                    cast(np.ndarray, data.relevance).tobytes())
        if data.model.direction:
            # the signs read the relevance classes too (a relevant feature's neighbours)
            key += (h.model, float(cast(float, delta)), data.direction_signs.tobytes())
        return key

    def entries_for(self, data: ModelData) -> int:
        """How many marginals of ``data``'s size the cache keeps."""
        st = data_structure(data)
        one = marginal_bytes(data.n, data.p, data.d, None if st is None else len(st.cols))
        return min(self.size, int(self.max_bytes // one))

    def remember(self, data: ModelData, mg: Marginal, key: tuple | None = None) -> None:
        """Store ``mg``, a marginal of ``data`` (of its X, y, U and kernel mask, and with the
        relevance model, of its classes' scales at ``mg.zeta``); ``key``: its :meth:`key`, if
        the caller has it."""
        keep = self.entries_for(data)
        if keep == 0:
            return
        if mg.X_data is not data.X or mg.y is not data.y or mg.U is not data.U:
            return
        mask, mine = data.kernel_mask, mg.coupled
        if not (mask is None and mine is None
                or mask is not None and mine is not None and np.array_equal(mine, mask)):
            return  # a marginal of another kernel
        if data.model.relevance:
            # mg.zeta is set exactly when mg has scales (from_data), and data_scales of a
            # relevance model at a zeta returns scales
            if mg.zeta is None or not np.array_equal(cast(np.ndarray, mg.h),
                                                     cast(Scales, data_scales(data, mg.zeta)).h):
                return  # a marginal of other scales
        elif mg.scales is not None:
            return
        if data.model.direction:
            if mg.s is None or not np.array_equal(mg.s, data.direction_signs):
                return  # a marginal of another prior mean
        elif mg.s is not None:
            return
        if key is None:
            key = self.key(data, mg.gamma, mg.tau2, mg.zeta, mg.delta)
        self._cache.put(key, mg, pin=(data.X, data.y, data.U), limit=keep)

    def lookup(self, data: ModelData, gamma: np.ndarray, tau2: float,
               zeta: float | None = None, delta: float | None = None,
               key: tuple | None = None) -> Marginal | None:
        """The marginal of ``data`` at (gamma, tau2[, zeta][, delta]) if it is stored, else
        None (``key``: its :meth:`key`, if the caller has it)."""
        if self.entries_for(data) == 0:
            return None
        if key is None:
            key = self.key(data, gamma, tau2, zeta, delta)
        return self._cache.get(key, refresh=True)

    def clear(self) -> None:
        self._cache.clear()


def marginal_bytes(n: int, p: int, d: int, support: int | None = None) -> float:
    """Rough memory of a :class:`Marginal` with its derived quantities: K, X K and R (p x p
    and n x p each), the n x n factors, and the Hessian's directions (d x n x n, twice).
    On the structured path (``support``: the number of columns the sparse part of X touches)
    the p x p arrays are the blocks of K and R on those columns instead; in the p x p form
    (more rows than features, off the structured path) the n x n factors are p x p."""
    square = 2 * p * p if support is None else 2 * support * support
    m = p if support is None and is_tall(n, p) else n
    return 8.0 * (square + 2 * n * p + 6 * m * m + 2 * (d + 3) * m * m)


#: the process-wide cache of marginals (see :class:`MarginalCache`)
marginal_cache = MarginalCache()


def log_density(theta: np.ndarray, data: ModelData, marginal: Marginal | None = None,
                ) -> tuple[float, np.ndarray]:
    """Log posterior density (no Jacobian, up to a constant) and its gradient in theta
    (``marginal``: the marginal at theta, if the caller has it)."""
    theta = np.asarray(theta, dtype=float)
    gamma, _, tau2 = split_theta(theta, data)
    zeta = zeta_of(theta, data)
    learned = data.hyper.variant == "learned"
    val, grad, _ = _prior_and_feedback(theta, data, hess=False)
    mg = marginal if marginal is not None else Marginal.from_data(
        data, gamma, tau2, zeta=zeta, delta=delta_of(theta, data))
    y_val, g_gamma = mg.value, mg.grad_gamma()
    g_tau2 = mg.grad_tau2() if learned else 0.0
    g_zeta = mg.grad_zeta() if zeta is not None else 0.0
    lay = data.layout
    grad[lay["gamma"]] += g_gamma
    if learned:
        grad[lay.index("tau2")] += g_tau2
    if zeta is not None:
        grad[lay.index("zeta")] += g_zeta
    if "delta" in lay:
        grad[lay.index("delta")] += mg.grad_delta()
    return y_val + val, grad


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
