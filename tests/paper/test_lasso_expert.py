"""Tests of the simulated LASSO expert."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import REAL_DATA_DIR, needs_data

from elicit.data import prepare_run
from elicit.elicitation.answers import Answer, Expert, GroupOracle
from elicit.errors import ElicitError
from elicit.paper.lasso_expert import LassoExpert

REAL = REAL_DATA_DIR

S, D, U = Answer.SIMILAR, Answer.DISSIMILAR, Answer.DONT_KNOW


def test_answer_table_from_coef():
    coef = [1.5, -0.2, 0.0, 2.0, -3.0, 0.0]
    e = LassoExpert.from_coef(coef)
    assert isinstance(e, Expert)
    assert (e.n_positive, e.n_negative, e.n_answerable) == (2, 2, 6)
    expected = {
        (0, 3): S, (1, 4): S,                 # ++ and --
        (0, 1): D, (0, 4): D, (3, 1): D,      # opposite signs
        (0, 2): U, (2, 4): U, (2, 5): U,      # a zero weight
    }
    for (i, j), a in expected.items():
        assert e.answer(i, j) is a
        assert e.answer(j, i) is a            # symmetric
    assert e.answerable_pairs().tolist() == [[0, 1], [0, 3], [0, 4], [1, 3], [1, 4], [3, 4]]
    oracle = GroupOracle(e.groups)            # same answers as a group oracle
    for i in range(6):
        for j in range(6):
            if i != j:
                assert oracle.answer(i, j) is e.answer(i, j)
    with pytest.raises(ElicitError, match="out of range"):
        e.answer(0, 6)
    assert LassoExpert.from_coef([0.0, 1.0]).answerable_pairs().shape == (0, 2)


def _synthetic(n=400, p=60, k=10, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, p))
    beta = np.zeros(p)
    beta[:k] = rng.uniform(0.5, 1.5, k)
    beta[k:2 * k] = -rng.uniform(0.5, 1.5, k)
    y = 3.0 + X @ beta + 0.5 * rng.standard_normal(n)
    return X, y, beta


def test_target_rule_hits_count_and_signs():
    X, y, beta = _synthetic()
    e = LassoExpert(X, y, rule="target", n_nonzero=20)
    assert abs(np.count_nonzero(e.coef_) - 20) <= 1
    nz = e.coef_ != 0
    assert np.all(np.sign(e.coef_[nz]) == np.sign(beta[nz]))
    # a smaller target gives a larger penalty and fewer features
    e10 = LassoExpert(X, y, rule="target", n_nonzero=10)
    assert e10.alpha_ > e.alpha_ and abs(np.count_nonzero(e10.coef_) - 10) <= 1
    assert len(e.answerable_pairs()) == e.n_answerable


def test_cv_rules():
    X, y, _ = _synthetic(seed=1)
    mn = LassoExpert(X, y, rule="cv-min", random_state=0)
    se = LassoExpert(X, y, rule="cv-1se", random_state=0)
    assert se.alpha_ >= mn.alpha_
    assert np.count_nonzero(se.coef_) <= np.count_nonzero(mn.coef_)
    assert np.count_nonzero(se.coef_) >= 15      # the 20 true features are strong
    again = LassoExpert(X, y, rule="cv-1se", random_state=0)
    assert again.alpha_ == se.alpha_


def test_bad_inputs():
    X, y, _ = _synthetic(n=50, p=5, k=2)
    with pytest.raises(ElicitError, match="unknown LASSO expert rule"):
        LassoExpert(X, y, rule="bic")
    with pytest.raises(ElicitError, match="too small"):
        LassoExpert(np.zeros((0, 5)), np.zeros(0))
    with pytest.raises(ElicitError, match="do not match"):
        LassoExpert(X, y[:-1])
    with pytest.raises(ElicitError, match="n_nonzero"):
        LassoExpert(X, y, n_nonzero=0)


@needs_data
@pytest.mark.parametrize("name", ["amazon", "yelp"])
def test_target_rule_on_real_data(name, paper_dataset):
    run = prepare_run(paper_dataset(name), seed=0)
    e = LassoExpert(run.X_expert, run.y_expert)          # default: target 40
    k = e.n_positive + e.n_negative
    assert abs(k - 40) <= 2
    assert e.n_positive >= 5 and e.n_negative >= 5       # both groups present
    assert len(e.answerable_pairs()) == k * (k - 1) // 2
    i, j = e.answerable_pairs()[0]
    assert e.answer(i, j) in (S, D)
    z = int(np.flatnonzero(e.coef_ == 0)[0])
    assert e.answer(z, i) is U


def _alpha_max(X, y):
    """The least alpha whose LASSO (with an intercept) keeps no weight."""
    return float(np.max(np.abs((X - X.mean(0)).T @ (y - y.mean()))) / X.shape[0])


def test_path_in_chunks_is_the_whole_path():
    """Chunks warm-started from the previous chunk's last point are the whole path's points."""
    from elicit.paper.lasso_expert import _path

    X, y, _ = _synthetic(seed=3)
    X, y = X - X.mean(0), y - y.mean()       # _path takes centred data
    a = np.geomspace(_alpha_max(X, y), 1e-3 * _alpha_max(X, y), 60)
    whole = _path(X, y, a)
    first = _path(X, y, a[:25])
    rest = _path(X, y, a[25:], coef_init=first[-1])
    np.testing.assert_array_equal(np.vstack([first, rest]), whole)


@pytest.mark.parametrize("seed,target", [(0, 20), (4, 8), (5, 30)])
def test_target_alpha_stops_early_without_changing_the_choice(seed, target):
    """The target search stops the path once a chunk keeps twice the target; a scan of the
    whole 200-point path (written out here) picks the same path point to bisect from."""
    from sklearn.linear_model import lasso_path

    from elicit.paper.lasso_expert import _target_alpha

    X, y, _ = _synthetic(seed=seed)
    alphas = np.geomspace(_alpha_max(X, y), 1e-4 * _alpha_max(X, y), 200)
    _, coefs, _ = lasso_path(X - X.mean(0), y - y.mean(), alphas=alphas, max_iter=20_000,
                             tol=1e-6)
    nnz = np.count_nonzero(coefs, axis=0)
    dist = np.abs(nnz - target)
    best = alphas[np.flatnonzero(dist == dist.min())[0]]     # closest; ties: largest alpha
    chosen = _target_alpha(X, y, target)
    # the bisection only ever moves between the best point and its neighbour
    i = int(np.flatnonzero(alphas == best)[0])
    lo, hi = alphas[min(i + 1, 199)], alphas[max(i - 1, 0)]
    assert lo <= chosen <= hi
    if nnz[i] == target:
        assert chosen == best
