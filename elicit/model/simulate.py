"""Data drawn from the model, the true weights from its prior: the paper's synthetic problem
(Afrabandpey et al. 2019, Sec. 4.1, as in the authors' code: p = 25 features in four groups,
d = 9 meta-feature columns each describing one group, the last pure noise; with
gamma_opt = [1,1,0,1,0,1,0,0,0] K_opt is near 1 within groups and near 0 across them) and
Amazon-size random problems. Beyond the paper, ``irrelevant=N`` sets the weight of N random
features to 0 (group -1)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from elicit.errors import ElicitError
from elicit.model.kernel import kernel

GROUPS = np.repeat([0, 1, 2, 3], [10, 5, 5, 5])
#: The number of features p of the paper's synthetic data.
N_FEATURES = len(GROUPS)
GAMMA_OPT = np.array([1, 1, 0, 1, 0, 1, 0, 0, 0], dtype=float)
# (group described by the column, distribution of the group's entries); None = all U(1, 10)
_COLUMNS = [(0, "near"), (1, "near"), (0, "far"), (2, "near"), (1, "far"), (3, "near"),
            (2, "far"), (3, "far"), (None, "far")]


@dataclass
class SyntheticData:
    """One synthetic data set; ``groups`` -1 marks an irrelevant feature (weight 0)."""

    X: np.ndarray
    y: np.ndarray
    X_test: np.ndarray
    y_test: np.ndarray
    U: np.ndarray
    beta: np.ndarray
    groups: np.ndarray
    K_opt: np.ndarray


def meta_features(rng: np.random.Generator) -> np.ndarray:
    """The 25 x 9 meta-feature matrix U."""
    p = len(GROUPS)
    U = rng.uniform(2.0, 2.25, size=(p, len(_COLUMNS)))
    for col, (group, kind) in enumerate(_COLUMNS):
        rows = np.arange(p) if group is None else np.flatnonzero(GROUPS == group)
        lo, hi = (0.0, 0.25) if kind == "near" else (1.0, 10.0)
        U[rows, col] = rng.uniform(lo, hi, size=len(rows))
    return U


def make_synthetic(rng: np.random.Generator, n_train: int = 20, n_test: int = 1000,
                   sigma2: float = 5.0, tau2: float = 1.0, irrelevant: int = 0,
                   ) -> SyntheticData:
    """Draw one synthetic data set: beta ~ N(0, sigma2 tau2 K_opt), ``n_train`` (20 as in the
    paper; the authors' code used 15) and ``n_test`` rows of N(0, I) inputs, N(0, sigma2) noise;
    ``irrelevant`` features, drawn without replacement right after beta, get weight 0."""
    if n_train < 1 or n_test < 1:
        raise ElicitError(f"n_train and n_test must be positive, got {n_train} and {n_test}")
    if not 0 <= irrelevant <= len(GROUPS):
        raise ElicitError(f"irrelevant must lie in 0..{len(GROUPS)}, got {irrelevant}")
    U = meta_features(rng)
    p = U.shape[0]
    K_opt = kernel(U, GAMMA_OPT)
    # A tiny jitter: K_opt is near-singular within groups.
    L = np.linalg.cholesky(sigma2 * tau2 * K_opt + 1e-9 * np.eye(p))
    beta = L @ rng.standard_normal(p)
    groups = GROUPS.copy()
    if irrelevant:
        off = rng.choice(p, size=irrelevant, replace=False)
        beta[off] = 0.0
        groups[off] = -1
    X = rng.standard_normal((n_train, p))
    X_test = rng.standard_normal((n_test, p))
    y = X @ beta + np.sqrt(sigma2) * rng.standard_normal(n_train)
    y_test = X_test @ beta + np.sqrt(sigma2) * rng.standard_normal(n_test)
    return SyntheticData(X, y, X_test, y_test, U, beta, groups, K_opt)


def random_problem(seed: int = 0, n: int = 100, p: int = 340, d: int = 100,
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """An Amazon-size random problem: ``X, y, U, beta`` with word-count-like (Poisson, sparse)
    meta-features, ten of which matter, beta from their kernel, standard normal X, centred y."""
    rng = np.random.default_rng(seed)
    rate = np.exp(rng.uniform(np.log(0.02), np.log(0.5), size=p))
    U = rng.poisson(rate[:, None], size=(p, d)).astype(float)
    gamma_true = np.zeros(d)
    gamma_true[rng.choice(d, 10, replace=False)] = 1.0
    K = kernel(U, gamma_true)
    L = np.linalg.cholesky(0.01 * K + 1e-8 * np.eye(p))
    beta = 10.0 * (L @ rng.standard_normal(p))
    X = rng.standard_normal((n, p))
    y = X @ beta + rng.standard_normal(n)
    y -= y.mean()
    return X, y, U, beta
