"""Choosing the prior scale tau^2 before any answer: by marginal likelihood (:func:`ml_tau2`,
the estimator's default) or by K-fold CV (:func:`cv_tau2`, the real-data sweeps'), both on
the no-feedback model and both extending their grid by :func:`next_grid_value`."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, cast

import numpy as np

from elicit.engines import get_engine
from elicit.engines.base import Engine
from elicit.errors import ElicitError
from elicit.internal.cache import frozen
from elicit.internal.threads import single_blas_thread
from elicit.model.covariance import RelevanceScales
from elicit.model.density import log_density
from elicit.model.marginal import Marginal
from elicit.model.posterior import NIGPosterior, squared_errors
from elicit.model.priors import ZETA_PRIOR
from elicit.model.result import MAPResult
from elicit.model.spec import ModelData, Params, check_relevance
from elicit.model.theta import theta_of
from elicit.model.variants import PAPER, get_model
from elicit.prior.setup import (
    PLACEHOLDER_THRESHOLD_MEAN,
    coupled_features,
    fixed_hyper,
    no_feedback_data,
)

#: tau2 values of the real-data sweeps' ``--tau2 cv``: roughly log-spaced from 1e-3 to 1e-1,
#: with 3e-3 added because the no-feedback test MSE of both real data sets is lowest near it
#: (docs/data.md).
SWEEP_TAU2_GRID: tuple[float, ...] = (1e-3, 2e-3, 3e-3, 5e-3, 1e-2, 2e-2, 5e-2, 1e-1)
#: Where the CV ends at the lower bound: the largest tau2 this many nats below ML's best.
EVIDENCE_NATS = 1.0
#: After how many answers a sweep with relevance answers chooses tau2 again by its CV, with the
#: classes answered so far: each time the answers double, as each answer moves the CV less
#: (docs/realdata.md, "tau2 chosen again as answers arrive").
TAU2_AGAIN: tuple[int, ...] = (10, 20, 40, 80)
#: tau2 values of the estimator's ``tau2="ml"`` and ``"cv"`` (half-decades, 1e-4 .. 1e2).
#: With standardised X and y the prior signal variance of one sample is sigma2 tau2 x'Kx,
#: between sigma2 tau2 p (K = I) and sigma2 tau2 p^2 (K = 1 1'), so this covers
#: signal-to-noise ratios from 1e-4 p to 1e2 p^2 on a user's own data.
ESTIMATOR_TAU2_GRID: tuple[float, ...] = tuple(float(t) for t in np.logspace(-4, 2, 13))
#: The ways to set tau2 besides a positive number (the estimator's; sweeps take ``"cv"``).
TAU2_MODES: tuple[str, ...] = ("ml", "cv", "learned")
#: The range the grid policy extends a grid within: below 1e-6 the prior of a standardised
#: problem is a point mass at 0 for any p a user has (sigma2 tau2 p^2 < 1e-6 sigma2 for
#: p < 1000), above 1e3 the prior is flat for the n at hand; values beyond are never added
#: (a user's grid may hold them).
TAU2_BOUNDS: tuple[float, float] = (1e-6, 1e3)
TAU2_STEP = float(np.sqrt(10.0))


def next_grid_value(values: Sequence[float], best: float) -> float | None:
    """The grid policy: the tau^2 to score next after ``values`` (``best`` the best of them), half
    a decade beyond the edge it is on (to three significant digits), within :data:`TAU2_BOUNDS`;
    None when the choice is final."""
    lo, hi = min(values), max(values)
    if best == lo and (t := _half_decade(lo, -1)) >= TAU2_BOUNDS[0] and t < lo:
        return t
    if best == hi and (t := _half_decade(hi, +1)) <= TAU2_BOUNDS[1] and t > hi:
        return t
    return None


def _half_decade(t: float, sign: int) -> float:
    # on the lattice 10^(k/2), the next lattice value exactly, so the values do not drift
    k = 2.0 * np.log10(t)
    nxt = 10.0 ** ((round(k) + sign) / 2) if abs(k - round(k)) < 1e-2 else t * TAU2_STEP**sign
    return float(f"{nxt:.3g}")


def check_grid(grid: Sequence[float], what: str = "tau2_grid") -> list[float]:
    """The grid as a sorted list of distinct positive numbers, or a one-line error."""
    try:  # each value as tau2 itself is checked: True or "0.1" is no tau2, nor "15" a grid
        values = [] if isinstance(grid, str) else sorted({float(check_tau2(t, ())) for t in grid})
    except (TypeError, ElicitError):
        values = []
    if not values:
        raise ElicitError(f"{what} must be a list of positive numbers, got {grid!r}")
    return values


def check_tau2(tau2: object, modes: Sequence[str] = ("cv",)) -> float | str:
    """A positive tau^2 as a float, or one of ``modes`` (case-insensitive), else a one-line
    :class:`ElicitError`."""
    choices = " or ".join(["a positive number", *(repr(m) for m in modes)])
    if isinstance(tau2, str):
        if (key := tau2.strip().lower()) in modes:
            return key
    elif not isinstance(tau2, bool) and isinstance(tau2, (int, float, np.integer, np.floating)) \
            and np.isfinite(tau2) and tau2 > 0:
        return float(tau2)
    raise ElicitError(f"tau2 must be {choices}, got {tau2!r}")


@single_blas_thread
def ml_tau2(X: np.ndarray, y: np.ndarray, U: np.ndarray,
            grid: Sequence[float] = ESTIMATOR_TAU2_GRID, a_sigma: float = 2.0,
            b_sigma: float = 0.2, engine: str | Engine = "numpy", model: str = "paper",
            coupled: np.ndarray | None = None, relevance: np.ndarray | None = None,
            ) -> tuple[float, dict[float, float]]:
    """Choose tau^2 by the maximised log posterior of the no-feedback model (type-II ML): each
    tau^2 is scored by ``log p(y | gamma_t, tau^2) + log p(gamma_t)`` at the no-feedback MAP
    ``gamma_t`` (fitted from its neighbour's MAP), the profile of the log posterior over gamma
    (relevance model: gamma and zeta, plus zeta's log prior) under a flat prior on tau^2.

    Parameters
    ----------
    X, y, U
        Standardised inputs (n x p), centred targets (n,), meta-features (p x d).
    grid, a_sigma, b_sigma, engine
        Candidate tau^2 values (extended by :func:`next_grid_value`), the inverse-gamma prior
        of sigma^2, and a ``"fixed"``-variant engine or its name.
    model, coupled, relevance
        The named model, the coupled set J (boolean mask) and the relevance classes.

    Returns
    -------
    best, scores
        The tau^2 with the largest score (ties: the smaller) and the score of every tau^2
        scored, in increasing tau^2."""
    grid = check_grid(grid)
    eng = get_engine(engine, "fixed")

    def score(t: float, start: Params | None) -> tuple[float, Params]:
        data = no_feedback_data(X, y, U, fixed_hyper(t, model, a_sigma=a_sigma,
                                                     b_sigma=b_sigma), coupled, relevance)
        # Params, not the MAPResult: no warm Newton refit, whose Hessian costs d n^2 memory
        fit = eng.fit(data, init=start)
        # xi at its prior mean makes the threshold's prior term exactly 0
        at = Params(fit.gamma, PLACEHOLDER_THRESHOLD_MEAN, t, fit.zeta)
        return log_density(theta_of(at, data), data)[0], at

    return _grid_search(grid, score, lambda scores: max(scores, key=lambda t: (scores[t], -t)))


def _grid_search(grid: list[float], score: Callable[[float, Any], tuple[float, Any]],
                 best: Callable[[dict[float, float]], float]) -> tuple[float, dict[float, float]]:
    """The best tau^2 and the scores of ``grid`` and of what :func:`next_grid_value` adds;
    ``score(t, warm)`` returns the score and the warm start of t's neighbours (``warm``: the
    previous grid value's, None first, or that of the edge the value extends)."""
    scores: dict[float, float] = {}
    warm: dict[float, Any] = {}     # at the lowest and the highest tau2 scored only
    state: Any = None
    for t in grid:
        scores[t], state = score(t, state)
        if t in (grid[0], grid[-1]):
            warm[t] = state
    while (t_next := next_grid_value(list(scores), best(scores))) is not None:
        edge = min(scores) if t_next < min(scores) else max(scores)
        scores[t_next], warm[t_next] = score(t_next, warm[edge])
        warm = {e: warm[e] for e in (min(scores), max(scores))}
    return best(scores), dict(sorted(scores.items()))


@single_blas_thread
def cv_tau2(X: np.ndarray, y: np.ndarray, U: np.ndarray,
            grid: Sequence[float] = SWEEP_TAU2_GRID, folds: int = 5,
            rng: np.random.Generator | None = None, engine: str | Engine = "numpy",
            model: str = "paper", candidates: np.ndarray | None = None,
            relevance: np.ndarray | None = None, gamma: np.ndarray | None = None,
            ) -> tuple[float, dict[float, float]]:
    """Choose tau^2 by K-fold cross-validation of the no-feedback model: for each fold and tau^2
    the MAP is fitted on the other folds (targets centred on their own mean, added back to the
    held-out predictions; X's standardisation and U are label-free) and the held-out squared
    error recorded. A fold's fits are warm-started along the grid.

    Parameters
    ----------
    X, y, U
        Standardised training inputs, centred targets and meta-features.
    grid, folds, rng, engine
        Candidate tau^2 values (extended by :func:`next_grid_value`), the number of folds
        (2 .. n), what shuffles them (default ``default_rng(0)``) and the MAP engine.
    model, candidates
        The named model, and the candidate pairs that set the known-coupling models' J.
    relevance
        The relevance model's classes, cross-validated with zeta at its prior mean as the
        paper's model on ``X diag(h0)`` (with zeta at each fold's MAP the marginal likelihood
        and the held-out error pull the prior variance apart: Amazon run 2 fell to 1e-6).
    gamma
        Hold the kernel at this gamma (the current MAP's, when tau2 is chosen again as answers
        arrive) instead of fitting each fold's MAP: a tenth of the CPU, the same choice in 201
        of 216 (docs/realdata.md, "tau2 chosen again as answers arrive").

    Returns
    -------
    best, scores
        The tau^2 with the smallest mean held-out MSE (ties: the smaller; where that is the
        lower bound, the largest tau^2 within :data:`EVIDENCE_NATS` of the best type-II ML
        score, :func:`ml_tau2`) and the MSE of every tau^2 scored, in increasing tau^2."""
    X = np.asarray(X, dtype=float)
    y = np.asarray(y, dtype=float)
    _check_cv(grid, folds, X.shape[0])  # before the engine: a Stan build takes minutes
    eng = get_engine(engine, "fixed")
    coupled = None if candidates is None else coupled_features(X.shape[1], candidates)
    if get_model(model).relevance:
        # zeta held at its prior mean (see the docstring): the paper model on X diag(h0)
        scaled = cast(RelevanceScales, get_model(model).covariance)
        classes = check_relevance(relevance, X.shape[1])
        X = X * scaled.scales(classes, ZETA_PRIOR.mean, scaled.signal(classes, U)).h
        model, relevance = PAPER, None

    K: list[np.ndarray] = []     # at a given gamma: the kernel, computed once
    built: dict[int, ModelData] = {}    # and a fold's data once (its tau2 is not read: t is)

    def fit(X_tr: np.ndarray, y_tr: np.ndarray, t: float,
            init: MAPResult | None) -> tuple[np.ndarray, MAPResult | None]:
        if gamma is not None:
            # a fold's arrays live as long as the CV, so their ids name the folds
            data = built.get(id(X_tr))
            if data is None or data.X is not X_tr:
                data = built[id(X_tr)] = no_feedback_data(X_tr, y_tr, U, fixed_hyper(t, model),
                                                          coupled, relevance)
            h = data.hyper
            mg = Marginal(data.X, data.y, U, gamma, t, h.a_sigma, h.b_sigma,
                          K=K[0] if K else None, coupled=data.kernel_mask)
            K[:] = [mg.K]
            return NIGPosterior(mg).mu, None
        data = no_feedback_data(X_tr, y_tr, U, fixed_hyper(t, model), coupled, relevance)
        fitted = eng.fit(data, init=init)
        return NIGPosterior.from_map(data, fitted).mu, fitted

    best, scores = cv_search(X, y, grid, folds, rng, fit)
    if best == min(scores):
        # no signal the folds see: a tau2 the evidence does not reject, which answers can move
        h = fixed_hyper(best, model)
        ml = ml_tau2(X, y, U, list(scores), h.a_sigma, h.b_sigma, eng, model, coupled)[1]
        best = max(t for t, v in ml.items() if v >= max(ml.values()) - EVIDENCE_NATS)
    return best, scores


def _check_cv(grid: Sequence[float], folds: int, n: int) -> list[float]:
    checked = check_grid(grid, "the tau2 grid")
    if not (2 <= folds <= n):
        raise ElicitError(f"folds must lie in 2..{n} (the number of training samples), "
                          f"got {folds}")
    return checked


def cv_search(X: np.ndarray, y: np.ndarray, grid: Sequence[float], folds: int,
              rng: np.random.Generator | None,
              fit: Callable[[np.ndarray, np.ndarray, float, Any], tuple[np.ndarray, Any]],
              ) -> tuple[float, dict[float, float]]:
    """:func:`cv_tau2`'s K-fold CV (``rng`` default ``default_rng(0)``) with ``fit(X_tr, y_tr, t,
    init)``, which fits on a fold's training rows (targets centred) and returns the posterior
    mean and the fold's next warm start (``init``: None first); also the yardstick's."""
    n = X.shape[0]
    grid = _check_cv(grid, folds, n)
    rng = rng if rng is not None else np.random.default_rng(0)
    fold_of = rng.permutation(n) % folds
    # a fold's arrays once, read-only, for every tau2: what the model finds once per array
    # (the inputs' sparse rows, checksums) is then found once per fold, not once per fit
    parts = [(frozen(X[tr]), frozen(y[tr] - y[tr].mean()), float(y[tr].mean()), X[~tr], y[~tr])
             for tr in (fold_of != k for k in range(folds))]

    def score(t: float, inits: list[Any] | None) -> tuple[float, list[Any]]:
        # the folds' held-out squared errors summed in fold order; each fold warm-started
        total, states = 0.0, []
        for k, (X_tr, y_tr, mean, X_te, y_te) in enumerate(parts):
            mu, state = fit(X_tr, y_tr, t, None if inits is None else inits[k])
            total += float(np.sum(squared_errors(X_te @ mu + mean, y_te)))
            states.append(state)
        return float(total / n), states

    return _grid_search(grid, score, lambda scores: min(scores, key=lambda t: (scores[t], t)))
