"""Non-Bayesian baselines of the real-data figures: LASSO, ridge and elastic net.

:func:`fit_baselines` gives the test MSE of cross-validated LASSO, ridge and elastic net on one
run, on the original rating scale: what a regression of the 100 training reviews achieves
without any expert (the horizontal lines of Fig. 5).
"""

from __future__ import annotations

import warnings

import numpy as np

from elicit.errors import ElicitError

#: Ridge penalties: wide enough for n = 100 standardised samples and p ~ 250-350 features.
RIDGE_ALPHAS = np.logspace(-2, 5, 60)
#: Elastic-net mixing parameters (1.0 is the LASSO).
ENET_L1_RATIOS = (0.1, 0.3, 0.5, 0.7, 0.9, 0.95, 1.0)
#: LASSO / elastic-net CV paths: N_ALPHAS log-spaced penalties from alpha_max down to
#: CV_EPS * alpha_max. With n = 100 < p the weakest penalties are near-interpolating fits
#: that CV never picks and that converge slowly, so the path stops at 1e-2 (not sklearn's
#: 1e-3); this keeps a run's three baselines at about 2 s.
N_ALPHAS = 50
CV_EPS = 1e-2


def fit_baselines(X_train, y_train, X_test, y_test, y_mean: float, random_state: int = 0,
                  cv: int = 5) -> dict[str, float]:
    """Test MSE of LassoCV, RidgeCV and ElasticNetCV.

    Parameters
    ----------
    X_train, y_train
        Standardised training inputs and centred targets (``RunData``).
    X_test, y_test
        Test inputs (training standardisation) and targets on the original scale.
    y_mean
        The training mean that was subtracted from ``y_train``; added back to predictions.
    random_state
        Seeds the shuffled K-fold split shared by LASSO and elastic net; everything else is
        deterministic. Ridge uses efficient leave-one-out CV.
    cv
        Number of folds for LASSO and elastic net.

    Returns
    -------
    dict
        ``{"lasso": mse, "ridge": mse, "elasticnet": mse}`` on the original rating scale.
    """
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.linear_model import ElasticNetCV, LassoCV, RidgeCV
    from sklearn.model_selection import KFold

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
    if X_train.shape[0] < cv:
        raise ElicitError(f"{X_train.shape[0]} training samples are too few for {cv}-fold CV")

    folds = KFold(n_splits=cv, shuffle=True, random_state=random_state)
    path = {"eps": CV_EPS, **_n_alphas_kw(N_ALPHAS), "max_iter": 5000}
    models = {
        "lasso": LassoCV(cv=folds, **path),
        "ridge": RidgeCV(alphas=RIDGE_ALPHAS),
        "elasticnet": ElasticNetCV(l1_ratio=list(ENET_L1_RATIOS), cv=folds, **path),
    }
    out: dict[str, float] = {}
    for name, model in models.items():
        # Small-alpha ends of the CV paths may stop short of tol; the selected fit is fine
        # and the warning would only be noise in experiment logs.
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            model.fit(X_train, y_train)
        pred = model.predict(X_test) + float(y_mean)
        out[name] = float(np.mean((y_test - pred) ** 2))
    return out


def _n_alphas_kw(n: int) -> dict:
    """The number-of-alphas keyword: ``alphas=int`` from scikit-learn 1.7, ``n_alphas``
    before (the old name is deprecated in 1.7+)."""
    import sklearn

    major, minor = (int(x) for x in sklearn.__version__.split(".")[:2])
    return {"alphas": n} if (major, minor) >= (1, 7) else {"n_alphas": n}
