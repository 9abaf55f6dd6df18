"""Table 1's ``act`` loop scores every pool row by ``x' Sigma* x`` from the rows' sparse
structure (elicit.paper.samples._PoolQuadForms): the same numbers as the dense formula."""

from __future__ import annotations

import numpy as np
import pytest

from elicit.paper.samples import _PoolQuadForms


def _pool(seed: int, m: int = 400, p: int = 50):
    """Standardised counts: mostly zeros, one row empty, one row with every keyword."""
    rng = np.random.default_rng(seed)
    counts = rng.poisson(0.08, (m, p)).astype(float)
    counts[3] = 0.0
    counts[5] = rng.integers(1, 4, p)
    mean, scale = counts.mean(axis=0), counts.std(axis=0) + 0.05
    return (counts - mean) / scale, (0.0 - mean) / scale


@pytest.mark.parametrize("seed", [0, 1])
def test_quadratic_forms_match_the_dense_formula(seed):
    X, zero = _pool(seed)
    rng = np.random.default_rng(10 + seed)
    B = rng.standard_normal((X.shape[1], X.shape[1]))
    A = B @ B.T / X.shape[1]
    q = _PoolQuadForms(X, zero)(A)
    dense = np.einsum("ij,ij->i", X @ A, X)
    # rel 1e-10: the two sum the same products in another order (rounding ~1e-15 of the
    # largest term); a wrong term (a pair counted once, the offset left out) is O(1) off
    np.testing.assert_allclose(q, dense, rtol=1e-10, atol=1e-12)
    assert int(np.argmax(q)) == int(np.argmax(dense))


def test_quadratic_forms_of_rows_that_are_not_sparse():
    """Rows need not be sparse around the offset: the forms stay exact, only slower."""
    rng = np.random.default_rng(3)
    X = rng.standard_normal((60, 12))
    A = np.cov(rng.standard_normal((12, 40)))
    q = _PoolQuadForms(X, np.zeros(12) + 0.3)(A)
    np.testing.assert_allclose(q, np.einsum("ij,ij->i", X @ A, X), rtol=1e-10, atol=1e-12)
