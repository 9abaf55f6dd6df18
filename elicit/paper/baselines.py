"""What a real-data run is measured against besides the strategies' curves: the
cross-validated regression baselines (:func:`fit_baselines`, the grey lines of Fig. 5) and the
yardstick of the expert's full knowledge (:func:`expert_yardstick`, docs/realdata.md).
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy.linalg import cho_factor, cho_solve

from elicit.errors import ElicitError
from elicit.model.covariance import IRRELEVANT_SCALE
from elicit.prior.tau2 import SWEEP_TAU2_GRID, cv_search

#: Ridge penalties: wide enough for n = 100 standardised samples and p ~ 250-350 features.
RIDGE_ALPHAS = np.logspace(-2, 5, 60)
#: Elastic-net mixing parameters (1.0: the LASSO's CV, :func:`fit_baselines`).
ENET_L1_RATIOS = (0.1, 0.3, 0.5, 0.7, 0.9, 0.95, 1.0)
#: LASSO / elastic-net CV paths: N_ALPHAS penalties from alpha_max down to CV_EPS * alpha_max
#: (not sklearn's 1e-3: with n < p the weakest are slow near-interpolating fits CV never
#: picks); a run's three baselines then take about 1 s of CPU.
N_ALPHAS = 50
CV_EPS = 1e-2


def fit_baselines(X_train, y_train, X_test, y_test, y_mean: float,
                  random_state: int = 0) -> dict[str, float]:
    """Test MSE of cross-validated LASSO, ridge (RidgeCV) and elastic net (ElasticNetCV), by
    name (``lasso``, ``ridge``, ``elasticnet``); the LASSO's CV is the elastic net's
    ``l1_ratio = 1`` paths (docs/data.md).

    Parameters
    ----------
    X_train, y_train, X_test, y_test, y_mean
        A run's standardised inputs, centred training targets, test targets on the original
        scale and the training mean added back to the predictions.
    random_state
        The shuffled 5-fold split of LASSO and elastic net (ridge: leave-one-out).
    """
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.linear_model import ElasticNetCV, Lasso, RidgeCV
    from sklearn.model_selection import KFold

    X_train, y_train, X_test, y_test = _split_arrays(X_train, y_train, X_test, y_test)
    if X_train.shape[0] < 5:
        raise ElicitError(f"{X_train.shape[0]} training samples are too few for 5-fold CV")

    folds = KFold(n_splits=5, shuffle=True, random_state=random_state)
    path = {"eps": CV_EPS, "alphas": N_ALPHAS, "max_iter": 5000}
    enet = ElasticNetCV(l1_ratio=list(ENET_L1_RATIOS), cv=folds, **path)
    ridge = RidgeCV(alphas=RIDGE_ALPHAS)
    # Small-alpha ends of the CV paths may stop short of tol; the selected fit is fine and
    # the warning would only be noise in experiment logs.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        enet.fit(X_train, y_train)
        ridge.fit(X_train, y_train)
        lasso = Lasso(alpha=_lasso_alpha(enet), max_iter=path["max_iter"], precompute=False)
        lasso.fit(X_train, y_train)
    return {name: float(np.mean((y_test - (model.predict(X_test) + float(y_mean))) ** 2))
            for name, model in (("lasso", lasso), ("ridge", ridge), ("elasticnet", enet))}


def _lasso_alpha(enet) -> float:
    """``LassoCV``'s alpha (the first of equal errors) from ``enet``'s ``l1_ratio = 1`` path."""
    k = list(ENET_L1_RATIOS).index(1.0)
    # mse_path_ is (l1 ratios, alphas, folds); LassoCV averages its (folds, alphas) array
    # over the folds, which adds the same numbers in the same order
    mean = np.mean(np.moveaxis(enet.mse_path_[k], 1, 0), axis=0)
    return float(enet.alphas_[k][int(np.argmin(mean))])


#: The ideal sign kernel's correlation of two relevant keywords of the same sign (PSD: each
#: sign group's block is ``0.1 I + 0.9 11'``).
SIGN_COUPLING = 0.9


@dataclass(frozen=True)
class Yardstick:
    """A run's yardstick: test MSE, the CV's tau^2 and errors, the keywords the expert weights."""

    mse: float
    tau2: float
    n_relevant: int
    cv: dict[float, float]


def yardstick_prior(coef: Sequence[float] | np.ndarray) -> np.ndarray:
    """The yardstick's prior correlation ``L^(1/2) K L^(1/2)`` (p x p) from expert weights:
    ``L_jj`` 1 for a nonzero weight, :data:`~elicit.model.covariance.IRRELEVANT_SCALE` for a
    zero one; ``K_ij`` :data:`SIGN_COUPLING` for two relevant keywords of the same sign, 1 on
    the diagonal, else 0."""
    sign = np.sign(np.asarray(coef, dtype=float).reshape(-1))
    same = (sign[:, None] == sign[None, :]) & (sign[:, None] != 0)
    K = np.where(same, SIGN_COUPLING, 0.0)
    np.fill_diagonal(K, 1.0)
    h = np.sqrt(np.where(sign != 0, 1.0, IRRELEVANT_SCALE))
    return h[:, None] * K * h[None, :]


def prior_posterior_mean(X: np.ndarray, y: np.ndarray, prior: np.ndarray,
                         tau2: float) -> np.ndarray:
    """The posterior mean of beta under ``beta | sigma^2 ~ N(0, sigma^2 tau2 prior)``,
    ``y = X beta + e``, ``e ~ N(0, sigma^2 I)``, in the n x n form
    ``tau2 prior X' (tau2 X prior X' + I)^-1 y`` (no inverse of ``prior``; n = 100 << p)."""
    S = tau2 * (X @ prior @ X.T)
    S[np.diag_indices_from(S)] += 1.0
    alpha = cho_solve(cho_factor(S, lower=True), y)
    return tau2 * (prior @ (X.T @ alpha))


def yardstick_cv_tau2(X: np.ndarray, y: np.ndarray, prior: np.ndarray,
                      grid: Sequence[float] = SWEEP_TAU2_GRID,
                      rng: np.random.Generator | None = None) -> tuple[float, dict[float, float]]:
    """tau^2 of a fixed prior correlation by :func:`~elicit.prior.tau2.cv_tau2`'s 5-fold
    procedure (the same folds, centring, grid extension and ties); returns the choice and the
    held-out MSE of every tau^2 scored."""
    X = np.asarray(X, dtype=float)
    y = np.asarray(y, dtype=float).reshape(-1)
    return cv_search(X, y, grid, 5, rng,
                     lambda X_tr, y_tr, t, _: (prior_posterior_mean(X_tr, y_tr, prior, t), None))


def expert_yardstick(X_train, y_train, X_test, y_test, y_mean: float, coef,
                     rng: np.random.Generator | None = None) -> Yardstick:
    """The yardstick of the expert's full knowledge on one run: the test MSE of the posterior
    mean under the prior of :func:`yardstick_prior` from the LASSO expert's weights ``coef``,
    tau^2 by :func:`yardstick_cv_tau2` (``rng`` shuffles its folds; the arrays as for
    :func:`fit_baselines`)."""
    X_train, y_train, X_test, y_test = _split_arrays(X_train, y_train, X_test, y_test)
    coef = np.asarray(coef, dtype=float).reshape(-1)
    if coef.shape[0] != X_train.shape[1]:
        raise ElicitError(f"the expert has {coef.shape[0]} weights for "
                          f"{X_train.shape[1]} features")
    prior = yardstick_prior(coef)
    tau2, cv = yardstick_cv_tau2(X_train, y_train, prior, rng=rng)
    mu = prior_posterior_mean(X_train, y_train, prior, tau2)
    mse = float(np.mean((X_test @ mu + float(y_mean) - y_test) ** 2))
    return Yardstick(mse, float(tau2), int(np.count_nonzero(coef)), cv)


def _split_arrays(X_train, y_train, X_test, y_test):
    """The arrays as floats (targets flat), or a one-line error when their shapes differ."""
    X_train = np.asarray(X_train, dtype=float)
    X_test = np.asarray(X_test, dtype=float)
    y_train = np.asarray(y_train, dtype=float).reshape(-1)
    y_test = np.asarray(y_test, dtype=float).reshape(-1)
    if X_train.ndim != 2 or X_train.shape[0] != y_train.shape[0]:
        raise ElicitError(f"X_train {X_train.shape} and y_train {y_train.shape} do not match")
    if X_test.ndim != 2 or X_test.shape[0] != y_test.shape[0] \
            or X_test.shape[1] != X_train.shape[1]:
        raise ElicitError(f"X_test {X_test.shape} / y_test {y_test.shape} do not match the "
                          f"training data {X_train.shape}")
    return X_train, y_train, X_test, y_test
