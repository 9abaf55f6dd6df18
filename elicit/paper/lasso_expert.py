"""A simulated expert from a LASSO fit on held-out reviews (the paper's real-data expert;
its answers and penalty rules: docs/data.md, "The simulated expert")."""

from __future__ import annotations

import warnings

import numpy as np

from elicit.elicitation.answers import GroupOracle
from elicit.errors import ElicitError
from elicit.internal.checks import check_int
from elicit.model.spec import all_pairs

RULES: tuple[str, ...] = ("target", "cv-min", "cv-1se")

_MAX_ITER = 20_000
_TOL = 1e-6


class LassoExpert(GroupOracle):
    """Answers pair questions from the signs of LASSO weights fitted on the expert set
    (``X_expert``, ``y_expert``; an intercept is fitted), feature questions from whether a
    weight is nonzero. ``rule`` and ``n_nonzero`` choose alpha (docs/data.md);
    ``random_state`` is the CV rules' 5-fold split.

    ``coef_`` and ``alpha_`` are the weights and penalty; ``groups`` per feature 0 positive,
    1 negative, -1 zero: it answers as ``GroupOracle(groups, coef_)``.
    """

    def __init__(self, X_expert, y_expert, rule: str = "target", n_nonzero: int = 40,
                 random_state: int | None = 0) -> None:
        if rule not in RULES:
            raise ElicitError(f"unknown LASSO expert rule {rule!r}: use one of {RULES}")
        X = np.asarray(X_expert, dtype=float)
        y = np.asarray(y_expert, dtype=float).reshape(-1)
        if X.ndim != 2 or X.shape[0] != y.shape[0]:
            raise ElicitError(f"X_expert {X.shape} and y_expert {y.shape} do not match")
        if X.shape[0] < 5 or X.shape[1] == 0:
            raise ElicitError(f"the expert set is too small to fit a LASSO: {X.shape[0]} "
                              f"reviews x {X.shape[1]} features (need at least 5)")
        if not (np.all(np.isfinite(X)) and np.all(np.isfinite(y))):
            raise ElicitError("the expert set contains NaN or infinite values")
        self.rule: str = rule
        self.n_nonzero = check_int(n_nonzero, f"n_nonzero must be a positive integer, got "
                                   f"{n_nonzero!r}", 1)
        self.random_state = random_state
        self.alpha_ = (_target_alpha(X, y, self.n_nonzero) if rule == "target"
                       else _cv_alpha(X, y, rule, random_state))
        self._set_coef(_lasso(X, y, self.alpha_))

    @classmethod
    def from_coef(cls, coef, alpha: float = float("nan"), *, rule: str = "given",
                  n_nonzero: int | None = None, random_state: int | None = None,
                  ) -> LassoExpert:
        """An expert with given weights (no fit); the other arguments are what it reports."""
        obj = cls.__new__(cls)
        obj.rule = rule
        obj.n_nonzero = (int(np.count_nonzero(np.asarray(coef))) if n_nonzero is None
                         else int(n_nonzero))
        obj.random_state = random_state
        obj.alpha_ = float(alpha)
        obj._set_coef(np.asarray(coef, dtype=float).reshape(-1))
        return obj

    def _set_coef(self, coef: np.ndarray) -> None:
        self.coef_ = coef
        signs = np.sign(coef).astype(int)
        self.n_positive = int(np.sum(signs > 0))
        self.n_negative = int(np.sum(signs < 0))
        super().__init__(np.where(signs > 0, 0, np.where(signs < 0, 1, -1)), coef)

    @property
    def n_answerable(self) -> int:
        """Number of pairs i < j the expert can answer (both weights nonzero)."""
        k = self.n_positive + self.n_negative
        return k * (k - 1) // 2

    def answerable_pairs(self) -> np.ndarray:
        """The ``(k, 2)`` pairs ``i < j`` with both weights nonzero, in lexicographic order."""
        nz = np.flatnonzero(self.known)
        return np.zeros((0, 2), dtype=int) if nz.size < 2 else nz[all_pairs(nz.size)]

    def summary(self) -> dict:
        """Rule, alpha and sizes, for logs and reports."""
        return {"rule": self.rule, "alpha": self.alpha_, "n_positive": self.n_positive,
                "n_negative": self.n_negative, "n_pairs": self.n_answerable}

    def __repr__(self) -> str:
        return (f"LassoExpert(rule={self.rule!r}, alpha={self.alpha_:.4g}, "
                f"positive={self.n_positive}, negative={self.n_negative}, "
                f"pairs={self.n_answerable})")


def _lasso(X: np.ndarray, y: np.ndarray, alpha: float) -> np.ndarray:
    from sklearn.linear_model import Lasso

    return Lasso(alpha=alpha, max_iter=_MAX_ITER, tol=_TOL).fit(X, y).coef_.copy()


def _target_alpha(X: np.ndarray, y: np.ndarray, target: int) -> float:
    """The alpha whose fit has the number of nonzeros closest to ``target`` (ties: the larger).

    A 200-point path from alpha_max down to 1e-4 alpha_max is scanned first; the count is not
    exactly monotone in alpha, so we then bisect (in log alpha) between the best path point
    and its neighbour on the side of the target, keeping the best alpha seen. The path is
    computed in warm-started chunks (the same points as the whole path) and stops once a
    chunk keeps at least twice the target: its small-alpha end is most of its cost.
    """
    # centred once (sklearn's objective with an intercept) for alpha_max and every chunk
    Xc, yc = X - X.mean(axis=0), y - y.mean()
    a_max = float(np.max(np.abs(Xc.T @ yc)) / X.shape[0])  # the least alpha of no weights
    if a_max <= 0:
        raise ElicitError("the expert-set ratings are constant or uncorrelated with every "
                          "feature: the LASSO keeps no feature at any alpha")
    alphas = np.geomspace(a_max, a_max * 1e-4, 200)
    counts: list[int] = []
    coef = None
    for start in range(0, len(alphas), _PATH_CHUNK):
        chunk = _path(Xc, yc, alphas[start:start + _PATH_CHUNK], coef_init=coef)
        counts += [int(np.count_nonzero(c)) for c in chunk]
        coef = chunk[-1]
        if min(counts[-len(chunk):]) >= 2 * target:
            break
    alphas = alphas[:len(counts)]

    def rank(a: float, k: int) -> tuple[int, float]:  # the smaller, the better
        return abs(k - target), -a

    best = min(range(len(alphas)), key=lambda t: rank(float(alphas[t]), counts[t]))
    best_a, best_k = float(alphas[best]), counts[best]
    if best_k == target:
        return best_a
    # Bracket: alphas decrease along the path, so fewer nonzeros lie towards smaller t.
    if best_k < target and best + 1 < len(alphas):
        hi, lo = alphas[best], alphas[best + 1]      # hi alpha: too few; lo alpha: more
    elif best_k > target and best > 0:
        hi, lo = alphas[best - 1], alphas[best]
    else:
        return best_a
    for _ in range(30):
        mid = float(np.sqrt(hi * lo))
        k = int(np.count_nonzero(_lasso(X, y, mid)))
        if rank(mid, k) < rank(best_a, best_k):
            best_a, best_k = mid, k
        if k == target:
            break
        hi, lo = (mid, lo) if k < target else (hi, mid)
    return best_a


#: Points of the LASSO path computed at a time by :func:`_target_alpha`.
_PATH_CHUNK = 25


def _path(Xc: np.ndarray, yc: np.ndarray, alphas: np.ndarray,
          coef_init: np.ndarray | None = None) -> np.ndarray:
    """Coefficients along ``alphas`` (rows) of the centred ``Xc``, ``yc`` (a fit with an
    intercept), from ``coef_init``."""
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.linear_model import lasso_path

    # the small-alpha end may stop short of tol with many keywords; the expert's alpha is
    # far from it, and hundreds of warnings per sweep would bury the progress output
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        _, coefs, _ = lasso_path(Xc, yc, alphas=alphas, max_iter=_MAX_ITER, tol=_TOL,
                                 coef_init=coef_init)
    return coefs.T


def _cv_alpha(X: np.ndarray, y: np.ndarray, rule: str, random_state: int | None) -> float:
    from sklearn.linear_model import LassoCV
    from sklearn.model_selection import KFold

    folds = KFold(n_splits=5, shuffle=True, random_state=random_state)
    m = LassoCV(cv=folds, max_iter=_MAX_ITER, tol=_TOL).fit(X, y)
    if rule == "cv-min":
        return float(m.alpha_)
    mse = m.mse_path_                       # (n_alphas, n_folds), alphas_ decreasing
    mean = mse.mean(axis=1)
    se = mse.std(axis=1, ddof=1) / np.sqrt(mse.shape[1])
    k = int(np.argmin(mean))
    ok = np.flatnonzero(mean <= mean[k] + se[k])
    # alphas_ is decreasing, so the first qualifying index is the largest alpha.
    return float(m.alphas_[ok.min()])
