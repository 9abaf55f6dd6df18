"""One grid policy for every tau2 choice (elicit.prior.tau2.next_grid_value): while the best
value sits on an edge of the values tried, the next half-decade beyond that edge is tried too,
within TAU2_BOUNDS."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import small_arrays

from elicit.model.spec import Hyper
from elicit.prior.tau2 import (
    EVIDENCE_NATS,
    TAU2_BOUNDS,
    cv_tau2,
    ml_tau2,
    next_grid_value,
)


def test_next_value_steps_half_decades_on_the_lattice_and_stops_at_the_bounds():
    assert next_grid_value([1e-3, 0.1], 1e-3) == 3.16e-4
    assert next_grid_value([3.16e-4, 1e-3, 0.1], 3.16e-4) == 1e-4       # no drift
    assert next_grid_value([1e-3, 0.1], 0.1) == 0.316
    assert next_grid_value([1e-3, 0.01, 0.1], 0.01) is None              # inside
    assert next_grid_value([0.03, 0.1], 0.03) == 0.00949                  # off the lattice
    assert next_grid_value([0.01], 0.01) == 0.00316                       # one value: down first
    lo, hi = TAU2_BOUNDS
    assert next_grid_value([lo, 1.0], lo) is None
    assert next_grid_value([1.0, hi], hi) is None
    assert next_grid_value([1e-7, 1.0], 1e-7) is None                     # a user's value beyond
    # walking down from 1e-3 reaches the bound in half-decades
    values, best = [1e-3, 0.1], 1e-3
    while (t := next_grid_value(values, best)) is not None:
        values.append(t)
        best = t
    assert sorted(values)[:7] == [1e-6, 3.16e-6, 1e-5, 3.16e-5, 1e-4, 3.16e-4, 1e-3]


@pytest.fixture
def arrays():
    return small_arrays(seed=4, n=20, p=12, d=3)


@pytest.fixture(scope="module")
def wide_cv() -> tuple[float, dict[float, float]]:
    """The CV on a wide grid of the problem of ``arrays``, for both edges (read only)."""
    a = small_arrays(seed=4, n=20, p=12, d=3)
    return cv_tau2(a.X, a.y, a.U, [1e-3, 1e-2, 0.1, 1.0, 10.0], folds=4)


@pytest.mark.parametrize("edge", ["low", "high"])
def test_cv_extends_the_grid_until_the_optimum_is_inside(arrays, wide_cv, edge):
    a = arrays
    best0, full = wide_cv
    assert min(full) < best0 < max(full)           # an interior optimum on the wide grid
    # a grid entirely above (below) the optimum
    grid = [t for t in full if t > best0 * 3] if edge == "low" else [t for t in full
                                                                      if t < best0 / 3]
    best, scores = cv_tau2(a.X, a.y, a.U, grid, folds=4)
    assert set(grid) < set(scores)
    assert min(scores) < best < max(scores)
    assert best == min(scores, key=lambda t: (scores[t], t))
    # half-decade steps from the edge
    added = sorted(set(scores) - set(grid))
    chain = added + [min(grid)] if edge == "low" else [max(grid)] + added
    np.testing.assert_allclose(np.diff(np.log10(chain)), 0.5, atol=2e-3)


def test_ml_extends_the_grid_until_the_optimum_is_inside(arrays):
    a = arrays
    best0, full = ml_tau2(a.X, a.y, a.U, [1e-3, 1e-2, 0.1, 1.0, 10.0, 100.0])
    assert min(full) < best0 < max(full)
    grid = [t for t in full if t > 3 * best0]
    best, scores = ml_tau2(a.X, a.y, a.U, grid)
    assert set(grid) < set(scores) and min(scores) < best < max(scores)
    assert best == max(scores, key=lambda t: (scores[t], -t))


def test_an_optimum_beyond_the_bounds_stops_at_them():
    """Pure noise: the CV wants no signal at all, its walk goes down to the lower bound and
    stops there; a strong signal: up to the upper bound. (Each CV error is monotone over the
    values scored, so the walk ends at the bound, not at an interior optimum.) At the lower
    bound the choice is the largest tau2 within EVIDENCE_NATS of the best type-II ML score."""
    rng = np.random.default_rng(0)
    X, U = rng.normal(size=(200, 6)), rng.normal(size=(6, 2))
    noise = rng.normal(size=200)
    signal = X @ (10 * rng.normal(size=6)) + 0.01 * noise
    for y, grid, bound in ((noise, [1e-5, 1e-4], TAU2_BOUNDS[0]),
                           (signal, [10.0, 100.0], TAU2_BOUNDS[1])):
        best, scores = cv_tau2(X, y - y.mean(), U, grid, folds=4)
        assert min(scores, key=lambda t: (scores[t], t)) == bound, scores  # reached the bound
        assert TAU2_BOUNDS[0] <= min(scores) and max(scores) <= TAU2_BOUNDS[1]  # not beyond
    assert best == TAU2_BOUNDS[1]                     # the upper bound is the CV's choice
    assert TAU2_BOUNDS == (1e-6, 1e3)                             # the documented bounds


def test_at_the_lower_bound_the_choice_is_the_largest_tau2_the_evidence_does_not_reject():
    """Where the CV ends at the lower bound (a start no answer moves: issue 25), the choice is
    the largest scored tau2 whose type-II ML score (cv_tau2's hyperparameters, the same grid)
    is within EVIDENCE_NATS of the best; with the CV's choice inside the grid nothing changes.
    It used to keep the bound."""
    rng = np.random.default_rng(0)
    X, U = rng.normal(size=(200, 6)), rng.normal(size=(6, 2))
    y = rng.normal(size=200)
    y -= y.mean()
    best, scores = cv_tau2(X, y, U, [1e-5, 1e-4], folds=4)
    assert min(scores, key=scores.get) == TAU2_BOUNDS[0]
    h = Hyper(variant="fixed", tau2=1.0)
    ml = ml_tau2(X, y, U, sorted(scores), h.a_sigma, h.b_sigma)[1]
    assert set(ml) == set(scores)
    top = max(ml.values())
    assert ml[best] >= top - EVIDENCE_NATS
    assert all(ml[t] < top - EVIDENCE_NATS for t in ml if t > best)
    assert best > TAU2_BOUNDS[0], ml                  # the bound itself is not kept here
    a = small_arrays()           # an interior CV choice: the smallest held-out error, as before
    best, scores = cv_tau2(a.X, a.y - a.y.mean(), a.U, [0.01, 0.1, 1.0], folds=4)
    assert TAU2_BOUNDS[0] < min(scores) and best == min(scores, key=lambda t: (scores[t], t))


def test_cv_tau2_checks_grid_and_folds_before_the_engine():
    """A bad grid or folds is the error reported, also with a bad engine: both are checked
    before any engine is built (a Stan build takes minutes; found in review, 2026-11-29)."""
    from elicit.errors import ElicitError

    a = small_arrays()
    X, y, U = a.X, a.y, a.U
    with pytest.raises(ElicitError, match="tau2 grid must be a list of positive numbers"):
        cv_tau2(X, y, U, grid=[], engine="bogus")
    with pytest.raises(ElicitError, match="folds must lie in 2"):
        cv_tau2(X, y, U, folds=1, engine="bogus")
