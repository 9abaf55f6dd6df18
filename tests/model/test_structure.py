"""Sparse-plus-offset inputs (:mod:`elicit.model.structure`) and the structured path of
:class:`~elicit.model.marginal.Marginal`.

The structured path is checked three ways: against the dense path at the same point (every
quantity, to 1e-10 relative), its gradient against finite differences of its value and its
Hessian against finite differences of its gradient. The kernel's tiles are made small so that
every branch of the streamed passes runs (several tiles, a support that ends inside a tile).
"""

from __future__ import annotations

import numpy as np
import pytest
from helpers import (
    assert_derivatives_match_finite_differences,
    dense_log_density,
    fd_grad,
    some_direction,
    some_relevance,
    theta_point,
)

import elicit.model.kernel as kernel_mod
import elicit.model.structure as structure_mod
from elicit.model.density import hessian, log_density
from elicit.model.form import data_structure
from elicit.model.kernel import kernel, kernel_apply, kernel_tiles, sparse_meta
from elicit.model.marginal import Marginal
from elicit.model.marginal_cache import MarginalCache, marginal_bytes, marginal_cache
from elicit.model.posterior import NIGPosterior
from elicit.model.spec import Hyper, ModelData, all_pairs, is_all_pairs
from elicit.model.structure import column_modes, offset_sparse, sparse_rows, structure_of
from elicit.model.theta import split_theta
from elicit.model.variants import MODELS


def review_inputs(n: int = 24, p: int = 150, d: int = 3, n_model: int = 120,
                  seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Standardised word counts (Zipf-like frequencies, statistics of a larger set of rows:
    X = S + 1 b'), unit-row meta-features and a target."""
    rng = np.random.default_rng(seed)
    q = 0.3 / (1.0 + np.arange(p) / 10.0)
    C = np.where(rng.random((n_model, p)) < q, 1 + rng.poisson(0.3, (n_model, p)), 0)
    C[-1, C.sum(axis=0) == 0] = 1             # a row outside X: every column varies
    mean, sd = C.mean(axis=0), C.std(axis=0)
    X = (C[:n] - mean) / sd
    U = rng.standard_normal((p, d))
    U /= np.linalg.norm(U, axis=1, keepdims=True)
    y = X[:, :5] @ rng.standard_normal(5) + rng.standard_normal(n)
    return X, y - y.mean(), U


@pytest.fixture
def small_tiles(monkeypatch):
    """Tiles of 16 features: a problem of a hundred features spans many tiles."""
    monkeypatch.setattr(kernel_mod, "TILE", 16)


@pytest.fixture
def structured_from_small_p(monkeypatch):
    """The structured path taken automatically from p = 50 on (instead of 1000) and up to a
    density of 20% (a small vocabulary's keywords are more frequent)."""
    monkeypatch.setattr(structure_mod, "STRUCTURED_MIN_P", 50)
    monkeypatch.setattr(structure_mod, "STRUCTURED_MAX_DENSITY", 0.2)


def _rel(a, b) -> float:
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    return float(np.max(np.abs(a - b)) / np.max(np.abs(b)))


# -- finding the structure -----------------------------------------------------------------


def test_column_modes_take_the_most_frequent_value_and_the_smallest_on_ties():
    X = np.array([[1.0, 5.0, 2.0],
                  [1.0, 4.0, 3.0],
                  [2.0, 4.0, 2.0],
                  [2.0, 5.0, 3.0],
                  [3.0, 4.0, 7.0]])
    assert np.array_equal(column_modes(X), [1.0, 4.0, 2.0])


def test_offset_sparse_finds_the_offset_and_the_pattern_exactly():
    rng = np.random.default_rng(3)
    n, p = 12, 40
    b = rng.normal(size=p)
    pattern = rng.random((n, p)) < 0.15
    pattern[:, 7] = False                       # a constant column: no entry of S
    S = np.where(pattern, rng.normal(size=(n, p)) + 3.0, 0.0)
    X = S + b
    st = offset_sparse(X)
    assert np.array_equal(st.b, b)
    assert np.array_equal(st.cols, np.flatnonzero(pattern.any(axis=0)))
    assert 7 not in st.cols
    found = np.zeros((n, p), dtype=bool)
    found[:, st.cols] = st.S_cols.toarray() != 0
    assert np.array_equal(found, pattern)
    assert st.density == pattern.sum() / (n * p)
    dense = np.broadcast_to(st.b, (n, p)).copy()
    dense[:, st.cols] += st.S_cols.toarray()
    np.testing.assert_allclose(dense, X, rtol=1e-15, atol=1e-15)


def test_structured_path_is_taken_only_where_it_pays():
    X, _, U = review_inputs(n=10, p=1200, d=3, n_model=60)
    assert structure_of(X, 3) is not None
    assert structure_of(X, structure_mod.STRUCTURED_MAX_D + 1) is None   # too many meta-features
    assert structure_of(X[:, :300], 3) is None                           # too few features
    dense = np.random.default_rng(0).normal(size=(10, 1200))
    assert structure_of(dense, 3) is None                                # no sparse part
    # an array changed in place is looked at again
    X2 = X.copy()
    assert structure_of(X2, 3) is not None
    X2[:] = dense
    assert structure_of(X2, 3) is None


# -- the streamed kernel -------------------------------------------------------------------


def test_kernel_tiles_reassemble_the_permuted_kernel(small_tiles):
    rng = np.random.default_rng(1)
    p, d = 70, 3
    U = rng.normal(size=(p, d))
    U[50:60] = U[:10]                # coinciding rows: K = 1 up to rounding off the diagonal
    gamma = np.array([0.4, 1.7, 0.0])
    order = rng.permutation(p)
    K = kernel(U, gamma)[order][:, order]
    got = np.full((p, p), np.nan)
    for I, J, E in kernel_tiles(U, gamma, order):
        assert I.start <= J.start and E.shape[0] <= 16 and E.shape[1] <= 16
        got[I, J] = E
        got[J, I] = E.T
    np.testing.assert_allclose(got, K, rtol=1e-13, atol=1e-15)
    assert np.all(np.diag(got) == 1.0)
    V = rng.normal(size=(p, 4))
    np.testing.assert_allclose(kernel_apply(U, gamma, V), kernel(U, gamma) @ V, rtol=1e-12)
    np.testing.assert_allclose(kernel_apply(U, gamma, V[:, 0]), kernel(U, gamma) @ V[:, 0],
                               rtol=1e-12)


# -- the structured marginal against the dense one -----------------------------------------


@pytest.mark.parametrize("learned", [False, True])
def test_structured_marginal_equals_the_dense_path(small_tiles, learned):
    X, y, U = review_inputs(p=150)
    st = offset_sparse(X)
    assert 16 < len(st.cols) < 150 and len(st.cols) % 16 != 0   # A ends inside a tile
    gamma, tau2 = np.array([0.6, 1.4, 0.9]), 0.3
    dense = Marginal(X, y, U, gamma, tau2, 2.0, 7.0, structured=False)
    mg = Marginal(X, y, U, gamma, tau2, 2.0, 7.0, structured=True)
    assert mg.structure is not None and dense.structure is None
    assert mg._K is None                                        # no p x p kernel built
    for name in ("XK", "B", "alpha"):
        assert _rel(getattr(mg, name), getattr(dense, name)) < 1e-10, name
    assert abs(mg.value - dense.value) < 1e-10 * abs(dense.value)
    assert _rel(mg.grad_gamma(), dense.grad_gamma()) < 1e-10
    assert abs(mg.grad_tau2() - dense.grad_tau2()) < 1e-10 * abs(dense.grad_tau2())
    assert _rel(mg.directions(learned)[0], dense.directions(learned)[0]) < 1e-10
    assert _rel(mg.hessian(learned), dense.hessian(learned)) < 1e-10
    assert _rel(mg.mean_jacobian(learned), dense.mean_jacobian(learned)) < 1e-10
    ch, cd = mg.scale_change([3, 40, 149], 0.2), dense.scale_change([3, 40, 149], 0.2)
    for a, b in zip(ch, cd):
        assert _rel(a, b) < 1e-10
    post, post_d = NIGPosterior(mg), NIGPosterior(dense)
    assert _rel(post.mu, post_d.mu) < 1e-10
    X_new = X[:5] + 0.1
    pred, pred_d = post.predict(X_new), post_d.predict(X_new)
    assert _rel(pred.mean, pred_d.mean) < 1e-10 and _rel(pred.scale2, pred_d.scale2) < 1e-10
    # the kernel itself, built on request
    assert _rel(post.K, dense.K) < 1e-13


@pytest.mark.parametrize("variant", ["fixed", "learned"])
def test_structured_derivatives_match_finite_differences(small_tiles, structured_from_small_p,
                                                         variant):
    X, y, U = review_inputs(p=120, seed=4)
    pairs = np.array([[0, 5], [3, 90], [17, 18], [40, 119]])
    data = ModelData(X, y, U, Hyper(variant=variant, tau2=0.2, threshold_mean=1.1),
                     pairs, np.array([1, 0, 1, 0]))
    assert data_structure(data) is not None
    theta = theta_point(data)
    assert Marginal.at(theta, data).structure is not None
    assert_derivatives_match_finite_differences(data)
    # and the same numbers as the dense path through the public functions
    gamma, _, tau2 = split_theta(theta, data)
    dense = Marginal(X, y, U, gamma, tau2, data.hyper.a_sigma, data.hyper.b_sigma,
                     structured=False)
    v, g = log_density(theta, data)
    v_d, g_d = log_density(theta, data, marginal=dense)
    assert abs(v - v_d) < 1e-10 * abs(v_d) and _rel(g, g_d) < 1e-10
    assert _rel(hessian(theta, data), hessian(theta, data, marginal=dense)) < 1e-10


def test_structured_hessian_matches_finite_differences_of_the_gradient(small_tiles):
    X, y, U = review_inputs(p=130, d=4, seed=6)
    gamma0 = np.array([0.5, 1.2, 0.8, 1.6])

    def grad(g):
        return Marginal(X, y, U, g, 0.4, 2.0, 7.0, structured=True).grad_gamma()

    def value(g):
        return Marginal(X, y, U, g, 0.4, 2.0, 7.0, structured=True).value

    g = grad(gamma0)
    np.testing.assert_allclose(g, fd_grad(value, gamma0), rtol=1e-6, atol=1e-7 * np.abs(g).max())
    H = Marginal(X, y, U, gamma0, 0.4, 2.0, 7.0, structured=True).hessian(False)
    H_fd = fd_grad(grad, gamma0)
    np.testing.assert_allclose(H, H_fd, rtol=1e-6, atol=1e-7 * np.abs(H).max())


def test_structured_path_refuses_a_coupled_set_or_scales():
    X, y, U = review_inputs()
    with pytest.raises(ValueError, match="structured path"):
        Marginal(X, y, U, np.ones(3), 0.3, 2.0, 7.0, coupled=np.ones(X.shape[1], bool),
                 structured=True)


def test_of_fit_builds_no_kernel_on_the_structured_path(structured_from_small_p):
    X, y, U = review_inputs(p=120, seed=2)
    data = ModelData(X, y, U, Hyper(variant="fixed", tau2=0.2, threshold_mean=1.0))

    class Fit:
        gamma = np.array([0.7, 1.1, 0.4])
        tau2 = 0.2
        zeta = None

        @property
        def K(self):
            raise AssertionError("the structured path read fit.K")

    mg = Marginal.of_fit(data, Fit())
    assert mg.structure is not None and mg._K is None


def test_marginal_cache_counts_a_structured_marginal_by_its_blocks(structured_from_small_p):
    X, y, U = review_inputs(p=120, seed=2)
    data = ModelData(X, y, U, Hyper(variant="fixed", tau2=0.2, threshold_mean=1.0))
    a = len(offset_sparse(X).cols)
    one = marginal_bytes(data.n, data.p, data.d, a)
    assert one < marginal_bytes(data.n, data.p, data.d)
    assert MarginalCache(size=8, max_bytes=2.5 * one).entries_for(data) == 2


# -- the dense path's sparse products ------------------------------------------------------


def count_meta_features(p: int, d: int, seed: int = 0) -> np.ndarray:
    """Word-count-like meta-features: ~5% of the entries nonzero (small counts)."""
    rng = np.random.default_rng(seed)
    return np.where(rng.random((p, d)) < 0.05, 1.0 + rng.poisson(0.5, (p, d)), 0.0)


@pytest.fixture
def dense_products(monkeypatch):
    """Switch the dense path's sparse products off (the reference they are checked against)."""
    def off():
        monkeypatch.setattr(structure_mod, "SPARSE_ROWS_MIN_P", 10**9)
        monkeypatch.setattr(kernel_mod, "SPARSE_U_MIN_P", 10**9)
    return off


def test_sparse_rows_products_equal_the_dense_ones():
    X, _, _ = review_inputs(p=150)
    rows = sparse_rows(X)
    assert rows is not None and rows.S.nnz < 0.1 * X.size
    np.testing.assert_allclose(rows.S.toarray() + rows.b, X, rtol=1e-15, atol=1e-15)
    rng = np.random.default_rng(2)
    n, p = X.shape
    A, L, v = rng.normal(size=(p, 7)), rng.normal(size=(5, n)), rng.normal(size=n)
    G = rng.normal(size=(n, n))
    G = G + G.T
    assert _rel(rows.times(A), X @ A) < 1e-13
    assert _rel(rows.left(L), L @ X) < 1e-13
    assert _rel(rows.left(v), v @ X) < 1e-13
    # X' G X as the marginal forms it: S' (G X) + b (1' G X)
    GX = rows.left(G)
    assert _rel(rows.S.T @ GX + np.outer(rows.b, GX.sum(axis=0)), X.T @ G @ X) < 1e-12
    h = rng.uniform(0.1, 1.0, p)
    assert _rel(rows.scaled(h).times(A), (X * h) @ A) < 1e-13


def test_sparse_rows_only_where_they_pay():
    X, _, _ = review_inputs(p=150)
    assert sparse_rows(X[:, :90]) is None                                 # too few features
    assert sparse_rows(np.random.default_rng(0).normal(size=X.shape)) is None   # not sparse
    assert sparse_rows(np.vstack([X] * 8)) is None                        # more rows than features


def test_kernel_of_sparse_meta_features_equals_the_dense_product(dense_products):
    U = count_meta_features(150, 40)
    assert sparse_meta(U) is not None and sparse_meta(np.ones((150, 40))) is None
    gamma = np.random.default_rng(1).uniform(0.2, 2.0, 40)
    K = kernel(U, gamma)
    assert np.array_equal(K, K.T) and np.all(np.diag(K) == 1.0)
    dense_products()
    assert sparse_meta(U) is None
    assert _rel(K, kernel(U, gamma)) < 1e-13


@pytest.mark.parametrize("model", ["paper", "relevance", "direction"])
@pytest.mark.parametrize("variant", ["fixed", "learned"])
def test_marginal_with_sparse_products_equals_the_dense_path(dense_products, model, variant):
    X, y, _ = review_inputs(p=140, seed=5)
    # 12 meta-features, not 30: the finite differences take 2 evaluations per gamma
    U = count_meta_features(140, 12, seed=5)
    p = X.shape[1]
    pairs = np.array([[0, 5], [3, 90], [17, 18], [40, 139]])
    data = ModelData(X, y, U, Hyper(variant=variant, tau2=0.2, threshold_mean=1.1, model=model),
                     pairs, np.array([1, 0, 1, 0]), relevance=some_relevance(p),
                     direction=some_direction(p))
    theta = theta_point(data)
    mg = Marginal.at(theta, data)
    assert mg._rows is not None and sparse_meta(U) is not None and mg.structure is None
    assert_derivatives_match_finite_differences(data)
    v, g = log_density(theta, data)
    H = hessian(theta, data)
    dense_products()
    marginal_cache.clear()
    assert Marginal.at(theta, data)._rows is None
    v_d, g_d = log_density(theta, data)
    assert abs(v - v_d) < 1e-10 * abs(v_d) and _rel(g, g_d) < 1e-10
    assert _rel(H, hessian(theta, data)) < 1e-10


# -- all pairs -----------------------------------------------------------------------------


@pytest.mark.parametrize("p", [0, 1, 2, 3, 7, 50])
def test_all_pairs_are_the_upper_triangle_in_row_order(p):
    i, j = np.triu_indices(p, k=1)
    pairs = all_pairs(p)
    assert np.array_equal(pairs, np.column_stack([i, j])) and pairs.shape == (len(i), 2)
    assert is_all_pairs(pairs, p)
    if len(pairs) > 1:
        swapped = pairs.copy()
        swapped[[0, -1]] = swapped[[-1, 0]]
        assert not is_all_pairs(swapped, p)
        assert not is_all_pairs(pairs[:-1], p)


def test_add_outer_adds_the_rank_one_term_in_either_storage_order():
    from elicit.model.structure import add_outer

    rng = np.random.default_rng(5)
    x, y = rng.normal(size=6), rng.normal(size=4)
    base = rng.normal(size=(6, 4))
    for M in (base.copy(), np.asfortranarray(base), rng.normal(size=(6, 8))[:, ::2]):
        want = M + np.outer(x, y)
        contiguous = M.flags.c_contiguous or M.flags.f_contiguous
        out = add_outer(M, x, y)
        np.testing.assert_allclose(out, want, rtol=1e-15, atol=1e-15)
        assert np.shares_memory(out, M) == contiguous          # in place unless it must copy


@pytest.mark.parametrize("learned", [False, True])
def test_structured_path_with_a_direction_mean_equals_the_dense_one(small_tiles,
                                                                    structured_from_small_p,
                                                                    learned):
    """A direction prior mean (delta s) keeps the structured path (a coupled set or relevance
    scales do not), yet every test above ran the paper model there."""
    X, y, U = review_inputs(p=120, seed=4)
    s = np.array([(1, -1, 0)[j % 3] for j in range(X.shape[1])])
    args = (X, y, U, np.array([0.6, 1.4, 0.9]), 0.3, 2.0, 7.0)
    st = Marginal(*args, structured=True, mean=(s, 0.45))
    de = Marginal(*args, structured=False, mean=(s, 0.45))
    assert st.structure is not None and de.structure is None
    # the same quantities by two paths: rounding only (measured: 1e-14 at worst)
    for a, b in [(st.value, de.value), (st.grad_gamma(), de.grad_gamma()),
                 (st.grad_delta(), de.grad_delta()), (st.hessian(learned), de.hessian(learned)),
                 (st.mean_jacobian(learned), de.mean_jacobian(learned)),
                 (NIGPosterior(st).mu, NIGPosterior(de).mu), *zip(st.predictive(),
                                                                   de.predictive())]:
        assert _rel(a, b) < 1e-9
    data = ModelData(X, y, U, Hyper(variant="learned" if learned else "fixed", tau2=0.2,
                                    threshold_mean=1.1, model="direction"),
                     np.array([[0, 5], [3, 90], [17, 18], [40, 119]]), np.array([1, 0, 1, 0]),
                     direction=s)
    theta = theta_point(data)
    assert data_structure(data) is not None and Marginal.at(theta, data).structure is not None
    _, g = log_density(theta, data)
    assert _rel(g, fd_grad(lambda t: log_density(t, data)[0], theta)) < 1e-5
    assert _rel(hessian(theta, data), fd_grad(lambda t: log_density(t, data)[1], theta)) < 1e-5


@pytest.mark.parametrize("model", list(MODELS))
def test_sparse_and_structured_paths_match_the_independent_formula(structured_from_small_p,
                                                                   model):
    """Each model's value on the path it takes for sparse word counts (the structured path
    where it admits the model, else the dense path's sparse rows) against the density written
    out with dense K, slogdet and solve (helpers.dense_log_density), not against the dense
    path. The models no test above differentiates there (a coupled set's mask on sparse rows,
    relevance scales with a direction mean) get their derivatives checked too."""
    X, y, U = review_inputs(p=120, seed=4)
    p = X.shape[1]
    coupled = np.ones(p, dtype=bool)
    coupled[-30:] = False                        # pair [40, 119] crosses J's border
    spec = MODELS[model]
    data = ModelData(X, y, U, Hyper(variant="learned", tau2=0.2, threshold_mean=1.1,
                                    model=model),
                     np.array([[0, 5], [3, 90], [17, 18], [40, 119]]), np.array([1, 0, 1, 0]),
                     coupled=coupled, relevance=some_relevance(p), direction=some_direction(p))
    theta = theta_point(data)
    mg = Marginal.at(theta, data)
    takes_structured = not (spec.known_coupling or spec.relevance)
    assert (mg.structure is not None) == takes_structured
    assert takes_structured or mg._rows is not None
    own = dense_log_density(theta, data, spec.threshold_sd,
                            coupled if spec.known_coupling else None,
                            relevance=data.relevance if spec.relevance else None,
                            direction=data.direction if spec.direction else None)
    assert log_density(theta, data)[0] == pytest.approx(own, rel=1e-10)
    if model in ("known-coupling", "relevance-direction"):
        assert_derivatives_match_finite_differences(data)
