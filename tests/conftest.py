"""Shared fixtures: a small random problem (n = 12, p = 10, d = 3) in both model variants.

Everything here is cheap to build (no fitting), so tests get fresh, unshared objects.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest

from elicit.model.spec import Hyper, ModelData, all_pairs, auto_threshold_mean

N, P, D = 12, 10, 3
N_FEEDBACK = 4


@dataclass
class SmallArrays:
    """Raw inputs of the small problem, for APIs that take arrays (``Elicitor``)."""

    X: np.ndarray
    y: np.ndarray
    U: np.ndarray
    groups: np.ndarray
    m: float


def small_arrays(seed: int = 0, n: int = N, p: int = P, d: int = D) -> SmallArrays:
    """Random regression data whose meta-features contain exact zeros.

    About 40% of the meta-feature entries are 0, as with word counts, so the code paths that
    exploit the sparsity of the columns of U are exercised. The true beta follows the first
    two meta-features, so gamma matters for the fit.
    """
    rng = np.random.default_rng(seed)
    U = rng.uniform(0.2, 1.5, size=(p, d)) * (rng.random((p, d)) < 0.6)
    X = rng.normal(size=(n, p))
    beta = U[:, 0] - U[:, 1] + 0.3 * rng.normal(size=p)
    y = X @ beta + 0.5 * rng.normal(size=n)
    groups = np.argmax(U[:, :2], axis=1)  # a grouping for GroupOracle-based tests
    m = auto_threshold_mean(U, np.ones(d), all_pairs(p))
    return SmallArrays(X, y, U, groups, m)


def make_small_data(variant: str = "fixed", n_feedback: int = N_FEEDBACK, seed: int = 0,
                    tau2: float = 0.5, **shape) -> ModelData:
    """:class:`ModelData` of the small problem with ``n_feedback`` answers.

    Answers follow the meta-features (similar when the gamma = 1 distance is below the
    threshold prior mean), with at least one answer of each kind when ``n_feedback >= 2`` so
    that both branches of the Bernoulli likelihood are present.
    """
    a = small_arrays(seed, **shape)
    rng = np.random.default_rng(seed + 1000)
    pairs = all_pairs(a.X.shape[1])
    asked = pairs[rng.choice(len(pairs), n_feedback, replace=False)]
    f = (((a.U[asked[:, 0]] - a.U[asked[:, 1]]) ** 2).sum(axis=1) < a.m).astype(int)
    if n_feedback >= 2:
        f[0], f[1] = 1, 0
    hyper = Hyper(variant=variant, tau2=tau2, threshold_mean=a.m)
    return ModelData(a.X, a.y, a.U, hyper, asked, f)


@pytest.fixture(params=["fixed", "learned"])
def variant(request) -> str:
    return request.param


@pytest.fixture
def small_data(variant) -> ModelData:
    """The small problem with a few answers, in each variant."""
    return make_small_data(variant)


@pytest.fixture
def small_data_nofb(variant) -> ModelData:
    """The small problem without feedback, in each variant."""
    return make_small_data(variant, n_feedback=0)


@pytest.fixture
def arrays() -> SmallArrays:
    return small_arrays()


@pytest.fixture
def one_blas_thread():
    """Limit BLAS to one thread for the test.

    On small matrices multi-threaded OpenBLAS is much slower than one thread (each L-BFGS-B
    iteration of scipy costs ~10 ms instead of ~0.3 ms on two cores), and the library's own
    entry points (``Elicitor``, sweeps) already run single-threaded.
    """
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=1, user_api="blas"):
        yield


# Ten answers of a synthetic run (seed 1, run 3) after which a warm L-BFGS-B refit of the
# numpy engine stops far from the optimum yet reports convergence (see test_engine_numpy).
STALL_PAIRS = np.array([(13, 16), (20, 22), (0, 16), (10, 19), (16, 18), (13, 18), (7, 13),
                        (12, 18), (7, 12), (8, 15)])


def stalled_fit_chain():
    """Yield (data, fit) of a chain of warm L-BFGS-B fits (``init=Params``), one per answer
    of :data:`STALL_PAIRS`, on synthetic run (seed 1, run 3)."""
    from threadpoolctl import threadpool_limits

    from elicit.engines.numpy_engine import NumpyEngine
    from elicit.paper.synthetic import synthetic_problem

    problem = synthetic_problem(1, 3)
    f = np.array([problem.expert.answer(i, j).f for i, j in STALL_PAIRS])
    engine = NumpyEngine("learned")
    with threadpool_limits(limits=1, user_api="blas"):
        probe = ModelData(problem.X, problem.y, problem.U,
                          problem.hyper.with_threshold_mean(1.0))
        m = auto_threshold_mean(problem.U, engine.fit(probe).gamma,
                                all_pairs(problem.X.shape[1]))
        base = ModelData(problem.X, problem.y, problem.U, problem.hyper.with_threshold_mean(m))
        fit = engine.fit(base)
        for k in range(1, len(STALL_PAIRS) + 1):
            data = base.with_feedback(STALL_PAIRS[:k], f[:k])
            fit = engine.fit(data, init=fit.params)
            yield data, fit


@pytest.fixture(scope="session")
def stalled_chain() -> list:
    """The (data, fit) pairs of :func:`stalled_fit_chain`, computed once per session."""
    return list(stalled_fit_chain())


# -- sessions: a tiny data set with readable feature names ---------------------------------

SESSION_NAMES = ["price", "quality", "noise", "lid", "handle", "warranty", "colour", "weight"]


def make_session_data(seed: int = 1, n: int = 12, p: int = 8, d: int = 3):
    """(X, y, U) of a tiny regression problem for session tests."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, p))
    U = rng.normal(size=(p, d))
    y = X @ rng.normal(size=p) + 0.1 * rng.normal(size=n)
    return X, y, U


# -- the real data (the paper's matrices in the data directory) -----------------------------


def _real_data_dir():
    from elicit.data import PAPER_FILES, STOPWORDS_FILE, resolve_data_dir
    from elicit.errors import ElicitError

    try:
        return resolve_data_dir(required=[*PAPER_FILES["amazon"][:2], *PAPER_FILES["yelp"][:2],
                                          STOPWORDS_FILE])
    except ElicitError:
        return None


#: the data directory holding the paper's files, or None (tests that need it then skip)
REAL_DATA_DIR = _real_data_dir()
needs_data = pytest.mark.skipif(
    REAL_DATA_DIR is None,
    reason="real data directory not found (set ELICIT_DATA or provide <repo>/data or "
           "<repo>/../shared/data with the paper's files)")
