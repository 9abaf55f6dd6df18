"""Sparse-plus-offset inputs, ``X = S + 1 b'`` with S sparse, found exactly in the data
(:func:`offset_sparse`: bag-of-words inputs standardised with a larger corpus's statistics map
each column's zero count to one value ``b_j``). Where it pays (:func:`structure_of`) the
marginal reads K only on the columns S touches plus ``K b``, in one streamed pass
(:class:`OffsetProducts`); smaller problems keep the dense kernel but multiply by X over S's
nonzeros (:class:`SparseRows`).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np
import scipy.sparse as sp
from scipy.linalg.blas import dger

from elicit.internal.cache import LRUCache
from elicit.model.kernel import kernel_apply, kernel_tiles, second_terms, supports_of
from elicit.model.tall import is_tall

#: The structured path is used from this many features on (below, dense BLAS is fast) ...
STRUCTURED_MIN_P = 1000
#: ... with at most this share of S's entries nonzero (a full review vocabulary: ~0.3%) ...
STRUCTURED_MAX_DENSITY = 0.05
#: ... and at most this many meta-features: the Hessian multiplies K by (d + 1)(d + 2) / 2
#: columns, which for larger d costs more than it saves.
STRUCTURED_MAX_D = 20


@dataclass(frozen=True)
class OffsetSparse:
    """``X = S + 1 b'``: the offset ``b`` (p,), the sorted columns ``cols`` where S has a nonzero
    and S on them, ``S_cols`` (compressed sparse columns)."""

    b: np.ndarray
    cols: np.ndarray
    S_cols: sp.csc_matrix

    @property
    def shape(self) -> tuple[int, int]:
        return (self.S_cols.shape[0], len(self.b))

    @property
    def density(self) -> float:
        """The share of S's entries that are nonzero."""
        n, p = self.shape
        return self.S_cols.nnz / float(n * p)


def column_modes(X: np.ndarray) -> np.ndarray:
    """The most frequent value of each column of ``X`` (ties: the smallest)."""
    n = X.shape[0]
    Xs = np.sort(X, axis=0)
    rows = np.arange(n)[:, None]
    new = np.ones_like(Xs, dtype=bool)
    new[1:] = Xs[1:] != Xs[:-1]
    # where each entry's run of equal values starts, so each run's length; the first longest wins
    start = np.maximum.accumulate(np.where(new, rows, 0), axis=0)
    length = rows - start
    return Xs[np.argmax(length, axis=0), np.arange(X.shape[1])]


def offset_sparse(X: np.ndarray) -> OffsetSparse:
    """The decomposition ``X = S + 1 b'`` with ``b`` the column modes (module docstring)."""
    X = np.asarray(X, dtype=float)
    b = column_modes(X)
    mask = X != b
    cols = np.flatnonzero(mask.any(axis=0))
    Xc = X[:, cols]
    S = np.where(mask[:, cols], Xc - b[cols], 0.0)
    return OffsetSparse(b, cols, sp.csc_matrix(S))


#: 8, not 4: a tau2 CV's five fold arrays beside the run's own X (with 4 every fold's
#: fit found them again)
_found = LRUCache(8)


def may_be_structured(n: int, p: int, d: int) -> bool:
    """Whether the structured path may be taken (more rows than features: the p x p form)."""
    return p >= STRUCTURED_MIN_P and d <= STRUCTURED_MAX_D and not is_tall(n, p)


def structure_of(X: np.ndarray, d: int) -> OffsetSparse | None:
    """The sparse-plus-offset structure of ``X`` if the structured path pays for it (with ``d``
    meta-features), else None; found once per array."""
    if not may_be_structured(X.shape[0], X.shape[1], d):
        return None

    def paying(X: np.ndarray) -> OffsetSparse | None:
        st = offset_sparse(X)
        return st if st.density <= STRUCTURED_MAX_DENSITY else None

    return _found.of_array(X, paying)


@dataclass(frozen=True, eq=False)
class OffsetProducts:
    """What the structured path reads of the kernel at gamma (A: the columns S touches), from one
    streamed pass over its tiles, and the marginal's gradient and Hessian sums from them."""

    structure: OffsetSparse
    U: np.ndarray
    gamma: np.ndarray
    XK: np.ndarray
    Kb: np.ndarray
    q: np.ndarray
    K_AA: np.ndarray
    KA_bU: np.ndarray
    KA_bU2: np.ndarray

    @classmethod
    def of(cls, st: OffsetSparse, U: np.ndarray, gamma: np.ndarray) -> OffsetProducts:
        """X K in one streamed pass over the kernel's tiles (the columns A first), keeping ``K b``,
        ``q_l = (b o u_l)' K (b o u_l)``, ``K_AA`` and ``(K [b o U, b o U^2])_A``. The rows of K
        on A (the first tiles' rows, by symmetry the first columns of the others) give ``S K``."""
        b, A = st.b, st.cols
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
        for I, J, E in kernel_tiles(U, gamma, order):
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
        Kb = Kb[back]
        return cls(st, U, gamma, SK[:, back] + Kb, Kb, q, K_AA, KA_W[:, :d], KA_W[:, d:])

    def R_AA(self, G: np.ndarray) -> np.ndarray:
        """R on the columns A that S touches: ``(S_A' G S_A) o K_AA``."""
        S = self.structure.S_cols
        return (S.T @ (S.T @ G).T) * self.K_AA

    def rank_parts(self, G: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The rest of X'GX: ``c b' + b c' + g0 b b'`` with ``c = S'G1``, ``g0 = 1'G1``; a sum over
        it weighted by the symmetric ``K o D`` is one over ``w b'``, ``w = 2c + g0 b``. Returns
        (w, K w, c on A), ``K c = (X K)' G 1 - g0 K b``."""
        st = self.structure
        G1 = G.sum(axis=1)
        g0 = float(G1.sum())
        c_A = st.S_cols.T @ G1
        w = g0 * st.b
        w[st.cols] += 2.0 * c_A
        Kw = 2.0 * (self.XK.T @ G1) - g0 * self.Kb
        return w, Kw, c_A

    def grad_gamma(self, G: np.ndarray, tau2: float, R_AA: np.ndarray,
                   parts: tuple[np.ndarray, np.ndarray, np.ndarray]) -> np.ndarray:
        """d value / d gamma (``R_AA``, ``parts``: :meth:`R_AA`, :meth:`rank_parts` of G)."""
        # sum_ij R_ij D_l,ij over the block on A (as the dense path) and over the rank part:
        # sum_ij w_i b_j K_ij D_l,ij = (w o u^2)' K b + (b o u^2)' K w - 2 (w o u)' K (b o u)
        st = self.structure
        U = self.U
        UA = U[st.cols]
        R1 = R_AA
        block = (UA * UA).T @ R1.sum(axis=1) - np.einsum("il,il->l", UA, R1 @ UA)
        w, Kw, c_A = parts
        g0 = float(G.sum())
        # (w o u)' K (b o u) = 2 (c o u)_A' (K (b o u))_A + g0 q
        wKbU = 2.0 * np.einsum("i,il,il->l", c_A, UA, self.KA_bU) + g0 * self.q
        rank = (U * U).T @ (w * self.Kb + st.b * Kw) - 2.0 * wKbU
        return -tau2 * (block + 0.5 * rank)

    def B_dirs(self, B: np.ndarray, tau2: float, learned: bool) -> np.ndarray:
        """The Hessian's directions ``B_a`` (``B``: the marginal's): ``X (K o D_l) X'`` is
        ``S_A (K_AA o D_l) S_A' + v 1' + 1 v' + s 1 1'`` (``v = S (K o D_l) b``,
        ``s = b' (K o D_l) b``), the first term ``A + A' - 2 Y K_AA Y'`` with
        ``A = (S diag(u^2)) K_AA S'`` and ``Y = S diag(u)``."""
        st = self.structure
        U, b = self.U, st.b
        S = st.S_cols
        n, d = B.shape[0], U.shape[1]
        UA = U[st.cols]
        Kb = self.Kb
        Kb_A = Kb[st.cols]
        KS = (S @ self.K_AA).T                                 # K_AA S_A'
        Bd = np.empty((d + learned, n, n))
        for l in range(d):
            u = UA[:, l]
            Y = S @ sp.diags(u)
            A = (S @ sp.diags(u * u)) @ KS
            YKY = Y @ (Y @ self.K_AA).T
            v = S @ (u * u * Kb_A + self.KA_bU2[:, l] - 2.0 * u * self.KA_bU[:, l])
            s_l = 2.0 * ((b * U[:, l] ** 2) @ Kb - self.q[l])
            Bd[l] = A + A.T - 2.0 * YKY + v[:, None] + v[None, :] + s_l
        Bd[:d] *= -0.5 * tau2
        if learned:
            Bd[d] = B / tau2
        return Bd

    def second(self, G: np.ndarray, R_AA: np.ndarray,
               parts: tuple[np.ndarray, np.ndarray, np.ndarray]) -> np.ndarray:
        """``T_ab = sum_ij R_ij D_a,ij D_b,ij``: the block on A as the dense path, plus
        ``sum_ij w_i b_j K_ij D_a D_b`` (:meth:`rank_parts`), nine sums ``(w o f)' K (b o g)`` each
        read with the monomial of degree <= 2 on K's side: ``K (b o [1, u_a, u_a u_b])``, ``K w``
        and ``K (w o u_a)``."""
        st = self.structure
        U, b, A = self.U, st.b, st.cols
        p, d = U.shape
        UA = U[A]
        R1 = R_AA
        T = second_terms(R1, R1.sum(axis=1), R1 @ UA, UA, *supports_of(UA))
        w, Kw, c_A = parts
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
        Kb = self.Kb
        g0 = float(G.sum())
        KwU = g0 * KbU + 2.0 * KcU
        U2 = U * U
        wU2, bU2 = w[:, None] * U2, b[:, None] * U2
        t1 = (U2 * (w * Kb + b * Kw)[:, None]).T @ U2
        t2 = wU2.T @ KbSq
        t3 = -2.0 * wU2.T @ (U * KbU) - 2.0 * bU2.T @ (U * KwU)
        t4 = 4.0 * np.einsum("ia,ib,iab->ab", w[:, None] * U, U, KbUU)
        return T + t1 + t2 + t2.T + t3 + t3.T + t4


#: The dense path's products with X use its sparse rows (:class:`SparseRows`) from this many
#: features on, when at most :data:`SPARSE_ROWS_MAX_DENSITY` of S is nonzero.
SPARSE_ROWS_MIN_P = 100
SPARSE_ROWS_MAX_DENSITY = 0.1


@dataclass(frozen=True, eq=False)
class SparseRows:
    """``X = S + 1 b'`` with S in compressed sparse rows: products with X at the cost of S's
    nonzeros."""

    S: sp.csr_matrix
    b: np.ndarray

    def scaled(self, h: np.ndarray) -> SparseRows:
        """``X diag(h)``."""
        S = self.S
        return SparseRows(sp.csr_matrix((S.data * h[S.indices], S.indices, S.indptr),
                                        shape=S.shape), self.b * h)

    @cached_property
    def ST(self) -> sp.csc_matrix:
        """``S'``, built once (each evaluation multiplies by it twice)."""
        return self.S.T

    def times(self, A: np.ndarray) -> np.ndarray:
        """``X A`` (A: p x k or p)."""
        out = self.S @ A
        out += self.b @ A
        return out

    def left(self, A: np.ndarray) -> np.ndarray:
        """``A X`` (A: k x n or n)."""
        SA = self.ST @ A.T
        if A.ndim == 1:
            return SA + A.sum() * self.b
        return add_outer(SA.T, A.sum(axis=-1), self.b)


def add_outer(M: np.ndarray, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """``M + x y'`` by BLAS's ``dger`` into M in its storage order (use the result, not M)."""
    if M.flags.f_contiguous:
        return dger(1.0, x, y, a=M, overwrite_a=1)
    return dger(1.0, y, x, a=np.ascontiguousarray(M).T, overwrite_a=1).T


_rows_found = LRUCache(8)


def sparse_rows(X: np.ndarray) -> SparseRows | None:
    """:class:`SparseRows` of ``X`` if it is large and sparse enough, else None (once per array)."""
    n, p = X.shape
    if p < SPARSE_ROWS_MIN_P or is_tall(n, p):
        return None
    return _rows_found.of_array(X, _sparse_rows)


def _sparse_rows(X: np.ndarray) -> SparseRows | None:
    # offset_sparse's decomposition, S's columns put back in place and stored by rows
    st = offset_sparse(X)
    if st.density > SPARSE_ROWS_MAX_DENSITY:
        return None
    coo = st.S_cols.tocoo()
    return SparseRows(sp.csr_matrix((coo.data, (coo.row, st.cols[coo.col])), shape=st.shape), st.b)
