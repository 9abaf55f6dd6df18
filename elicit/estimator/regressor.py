"""A scikit-learn regressor for the model of Afrabandpey, Peltola & Kaski (IJCAI 2019), on a
user's raw data (standardised and mapped back); ``docs/estimator.md`` has the model, the
steps of a fit and the choice of the default tau2.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Any, Literal

import numpy as np
import pandas as pd
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.utils.validation import check_is_fitted, validate_data

from elicit.data.splits import standardise
from elicit.elicitation.answers import Answer
from elicit.elicitation.kinds.relevance import RELEVANCE
from elicit.engines import get_engine
from elicit.engines.base import Engine
from elicit.errors import ElicitError
from elicit.estimator.feedback import (
    Feedback,
    as_float_2d,
    candidate_pairs,
    check_list,
    few,
    is_feature_answer,
    name_of,
    relevance_classes,
    resolve_feedback,
    resolve_meta_features,
)
from elicit.estimator.fitting import choose_tau2, fit_map
from elicit.internal.checks import check_bool
from elicit.internal.threads import single_blas_thread
from elicit.model.posterior import NIGPosterior
from elicit.model.spec import Hyper, Variant, validate_regression
from elicit.model.variants import PAPER, get_model
from elicit.prior.setup import coupled_features
from elicit.prior.tau2 import ESTIMATOR_TAU2_GRID, TAU2_MODES, check_grid, check_tau2


class ElicitRegressor(RegressorMixin, BaseEstimator):
    """Linear regression with an expert-elicited feature-similarity prior.

    The model of :class:`~elicit.elicitation.elicitor.Elicitor` (``docs/estimator.md``), with
    the answers given up front. With no answers it is a Bayesian linear regression whose prior
    correlations between features are learned from the meta-features.

    Parameters
    ----------
    meta_features : array (p, d), DataFrame or None
        The meta-features U, one row per feature; a DataFrame is indexed by feature name.
        ``None``: the paper's recipe, the transposed raw training matrix.
    feedback : list of (feature_i, feature_j, answer) or None
        Expert answers; features are names or column indices, answers ``"similar"``,
        ``"dissimilar"``, ``"dont_know"``, 1 or 0 (``Answer.parse``).
    tau2 : float or {"ml", "cv", "learned"}, default "ml"
        The prior scale tau^2 on the standardised problem: chosen on the no-feedback model by
        type-II ML or 5-fold CV over ``tau2_grid`` (default
        :data:`elicit.prior.tau2.ESTIMATOR_TAU2_GRID`), learned, or fixed.
    a_sigma, b_sigma : float, default 2.0 and 0.2
        ``sigma2 ~ InvGamma(a_sigma, b_sigma)`` on the scale of the target the model sees.
    a_tau, b_tau : float, default 2.0 and 4.0
        The prior of tau^2 when ``tau2="learned"``.
    threshold_mean : "auto" or float, default "auto"
        Prior mean m of the threshold, ``xi ~ N+(m, m/2)``; ``"auto"``: the mean of
        ``gamma0 . w_ij`` over the candidate pairs at the no-feedback MAP.
    standardize, normalize_y, fit_intercept : bool, default True
        Scale X's columns to unit variance, divide the centred y by its root mean square,
        centre X and y (else ``intercept_ = 0``), with the training statistics.
    engine : str or Engine, default "auto"
        An engine name or an engine of the variant (``"learned"`` for ``tau2="learned"``).
    model : str, default "paper"
        The named model (:mod:`elicit.model.variants`).
    coupled : sequence of feature names or indices, or None
        The coupled set J of the known-coupling models (None: the answered features).
    relevant, irrelevant : sequence of feature names or indices, or None
        The relevance model's expert classes of features.

    Attributes
    ----------
    coef_, intercept_ : ndarray (p,), float
        The posterior mean on the original scales: ``predict(X) = X @ coef_ + intercept_``.
    gamma_, xi_, tau2_, zeta_, sigma2_, K_
        The MAP (``xi_`` is ``nan`` without a similar/dissimilar answer, ``zeta_`` outside the
        relevance model), the posterior mean noise variance on y's original scale and the
        prior correlations K.
    threshold_mean_, tau2_scores_, coupled_, relevance_, meta_features_, feedback_
        What the fit used: the threshold prior mean, the tau2 grid's scores (``"ml"``: the
        maximised log posterior; ``"cv"``: the held-out MSE; else None), J as a mask, the
        relevance classes, U and the answers as ``(i, j, Answer)`` with i < j.
    posterior_, map_, x_mean_, x_scale_, y_mean_, y_scale_
        The posterior and the engine's MAP on the standardised problem, and its transformation
        ``(X - x_mean_) / x_scale_``, ``(y - y_mean_) / y_scale_``.

    Examples
    --------
    >>> from sklearn.datasets import load_diabetes
    >>> X, y = load_diabetes(return_X_y=True, as_frame=True)
    >>> est = ElicitRegressor(feedback=[("s1", "s2", "similar")]).fit(X[:50], y[:50])
    >>> est.predict(X[50:52]).shape
    (2,)
    """

    def __init__(self, meta_features: Any = None, feedback: Feedback | None = None, *,
                 tau2: float | str = "ml", tau2_grid: Sequence[float] | None = None,
                 a_sigma: float = 2.0, b_sigma: float = 0.2, a_tau: float = 2.0,
                 b_tau: float = 4.0, threshold_mean: float | Literal["auto"] = "auto",
                 standardize: bool = True, normalize_y: bool = True,
                 fit_intercept: bool = True, engine: str | Engine = "auto",
                 model: str = PAPER, coupled: Sequence[Any] | None = None,
                 relevant: Sequence[Any] | None = None,
                 irrelevant: Sequence[Any] | None = None) -> None:
        # scikit-learn convention: store the parameters untouched; fit() checks them.
        self.meta_features = meta_features
        self.feedback = feedback
        self.tau2 = tau2
        self.tau2_grid = tau2_grid
        self.a_sigma = a_sigma
        self.b_sigma = b_sigma
        self.a_tau = a_tau
        self.b_tau = b_tau
        self.threshold_mean = threshold_mean
        self.standardize = standardize
        self.normalize_y = normalize_y
        self.fit_intercept = fit_intercept
        self.engine = engine
        self.model = model
        self.coupled = coupled
        self.relevant = relevant
        self.irrelevant = irrelevant

    @classmethod
    def from_answers(cls, meta_features: Any, answers: Feedback, *,
                     feature_names: Sequence[str] | None = None, hyper: Hyper | None = None,
                     engine: str | Engine = "auto", **params: Any) -> ElicitRegressor:
        """The (unfitted) estimator whose ``fit(X, y)`` on X and y as given fits exactly the
        model of ``Elicitor(X, y, meta_features, hyper).set_answers(answers)``.

        Parameters
        ----------
        meta_features : array (p, d), or a DataFrame indexed by feature name (as feature_names)
        answers : list of (i, j, answer)
            E.g. ``Session.active_answers()``. An answer with ``j`` None is about feature ``i``
            alone: relevant and irrelevant ones become ``relevant`` and ``irrelevant`` (unless
            ``params`` give those), don't know ones are dropped.
        feature_names : sequence of str, optional
            The p feature names, so that the estimator fits a DataFrame X by column name.
        hyper : Hyper, optional
            The model's hyperparameters and named model (default ``Hyper()``).
        engine, **params
            The engine and other constructor parameters (those of ``hyper`` overridden).
        """
        hyper = hyper if hyper is not None else Hyper()
        if not isinstance(hyper, Hyper):
            raise ElicitError(f"hyper must be an elicit.Hyper, got {type(hyper).__name__}")
        U = as_float_2d(meta_features, "meta_features")
        if answers is not None:
            check_list(answers, "answers", "(feature_i, feature_j, answer) tuples")
        answers = [] if answers is None else list(answers)
        feedback = [a for a in answers if not is_feature_answer(a)]
        # the relevance answers are the parameters of the same names
        for answer in RELEVANCE.answers:
            said = [a[0] for a in answers if is_feature_answer(a)
                    and Answer.parse(a[2], RELEVANCE) is answer]
            if said and answer.value not in params:
                params[answer.value] = said
        meta: Any = U
        if feature_names is None and isinstance(meta_features, pd.DataFrame):
            feature_names = list(meta_features.index)  # matched to X's columns by name, as in fit
        if feature_names is not None:
            check_list(feature_names, "feature_names", "names")
            names = [str(n) for n in feature_names]
            if len(names) != U.shape[0]:
                raise ElicitError(f"got {len(names)} feature names for {U.shape[0]} rows of "
                                  "meta_features; give one name per feature")
            meta = pd.DataFrame(U, index=names)
            feedback = [(name_of(e[0], names), name_of(e[1], names), e[2])
                        if isinstance(e, (tuple, list)) and len(e) == 3 else e for e in feedback]
            for word in ("relevant", "irrelevant"):
                if params.get(word) is not None:
                    params[word] = [name_of(f, names) for f in params[word]]
        kwargs: dict[str, Any] = dict(
            tau2=hyper.tau2 if hyper.variant == "fixed" else "learned",
            a_sigma=hyper.a_sigma, b_sigma=hyper.b_sigma, a_tau=hyper.a_tau,
            b_tau=hyper.b_tau, threshold_mean=hyper.threshold_mean, standardize=False,
            normalize_y=False, fit_intercept=False, engine=engine, model=hyper.model)
        return cls(meta, feedback, **(kwargs | params))

    @single_blas_thread
    def fit(self, X: Any, y: Any) -> ElicitRegressor:
        """Fit the model to the training data.

        Parameters
        ----------
        X : array-like or DataFrame, shape (n, p)
            Training inputs on their own scale; a DataFrame's columns name the features.
        y : array-like, shape (n,)
            Training targets.

        Returns
        -------
        ElicitRegressor
            self, fitted.
        """
        # a fit that fails leaves the estimator unfitted, not half of this fit and half the last
        for attribute in [k for k in vars(self) if k.endswith("_") and not k.startswith("_")]:
            delattr(self, attribute)
        labels = list(getattr(X, "columns", []))
        if isinstance(self.meta_features, pd.DataFrame) and labels \
                and not all(isinstance(c, str) for c in labels):
            raise ElicitError(f"X's column labels {few(labels)} are not all strings: give X "
                              "string column names to match meta_features' rows by name "
                              "(X.columns = X.columns.astype(str)), or meta_features as an "
                              "array in X's column order")
        X, y = validate_data(self, X, y, y_numeric=True, dtype=np.float64)
        tau2, grid = self._check_params()
        p = X.shape[1]
        names = list(getattr(self, "feature_names_in_", [])) or None
        U, names = resolve_meta_features(self.meta_features, X, names)
        # overflowing values and data too large for memory: ModelData's check, on the raw data
        # (which also reads y as numbers: scikit-learn leaves an array of numeric strings)
        mf = self.meta_features
        X, y, U = validate_regression(X, y, U, feature_names=names,
                                      meta_names=[str(c) for c in mf.columns]
                                      if isinstance(mf, pd.DataFrame) else None)
        feedback = resolve_feedback(self.feedback, p, names)
        relevance = relevance_classes(self.model, self.relevant, self.irrelevant, p, names)

        # the priors and the tau2 grid refer to standardised X and y
        _, x_mean, x_scale = standardise(X)
        x_mean = x_mean if self.fit_intercept else np.zeros(p)
        x_scale = x_scale if self.standardize else np.ones(p)
        y_mean = float(np.mean(y)) if self.fit_intercept else 0.0
        rms = float(np.sqrt(np.mean((y - y_mean) ** 2)))
        y_scale = rms if (self.normalize_y and rms > 0) else 1.0
        Xs, yz = (X - x_mean) / x_scale, (y - y_mean) / y_scale

        variant: Variant = "learned" if tau2 == "learned" else "fixed"
        eng = self._engine(variant)
        cands = candidate_pairs(self.model, self.coupled, p, feedback, names)
        known = get_model(self.model).known_coupling
        coupled = coupled_features(p, cands) if known else None
        tau2, scores = choose_tau2(tau2, grid, Xs, yz, U, eng, self.model, self.a_sigma,
                                   self.b_sigma, cands if known else None)
        hyper = Hyper(variant=variant, a_sigma=float(self.a_sigma),
                      b_sigma=float(self.b_sigma), tau2=tau2, a_tau=float(self.a_tau),
                      b_tau=float(self.b_tau), threshold_mean=self.threshold_mean, model=self.model)
        data, fit, answered = fit_map(Xs, yz, U, hyper, eng, feedback, cands, relevance)
        post = NIGPosterior.from_map(data, fit)

        # fitted attributes are set only once the fit has succeeded
        self.meta_features_, self.feedback_ = U, feedback
        self.posterior_, self.map_ = post, fit
        self.set_units(x_mean, x_scale, y_mean, y_scale)
        self.gamma_ = np.array(fit.gamma)
        # without a pair answer xi does not enter the model
        self.xi_ = float(fit.xi) if answered else float("nan")
        self.threshold_mean_ = data.m if answered else float("nan")
        self.tau2_, self.tau2_scores_ = float(fit.tau2), scores
        self.K_ = np.array(post.K)
        self.coupled_ = coupled
        # the model's classes: the feature answers and the features of answered pairs
        self.relevance_ = None if relevance is None else np.array(data.relevance)
        self.zeta_ = float("nan") if fit.zeta is None else float(fit.zeta)
        return self

    def set_units(self, x_mean: Any, x_scale: Any, y_mean: float,
                  y_scale: float = 1.0) -> ElicitRegressor:
        """State that the fitted model refers to ``(X - x_mean) / x_scale`` and
        ``(y - y_mean) / y_scale``: sets ``x_mean_``, ..., and maps ``coef_``, ``intercept_``
        and ``sigma2_`` back, so that :meth:`predict` works in the original units; returns
        self. For a fit on data preprocessed by a transformation the estimator did not see (as
        a session hands its model over); :meth:`fit` calls it with its own statistics."""
        check_is_fitted(self, "posterior_")
        p = self.n_features_in_
        x_mean, x_scale = np.array(x_mean, dtype=float), np.array(x_scale, dtype=float)
        y_mean, y_scale = float(y_mean), float(y_scale)
        if x_mean.shape != (p,) or x_scale.shape != (p,):
            raise ElicitError(f"set_units needs x_mean and x_scale of length {p} (one per "
                              f"feature), got shapes {x_mean.shape} and {x_scale.shape}")
        if not (np.all(np.isfinite(x_mean)) and np.isfinite(y_mean)
                and np.all(np.isfinite(x_scale) & (x_scale > 0))
                and np.isfinite(y_scale) and y_scale > 0):
            raise ElicitError("set_units needs finite centres and positive finite scales")
        post = self.posterior_
        self.x_mean_, self.x_scale_ = x_mean, x_scale
        self.y_mean_, self.y_scale_ = y_mean, y_scale
        self.sigma2_ = float(post.b_star / (post.a_star - 1.0)) * y_scale**2
        # beta lives on standardised X and y; undo both transformations.
        self.coef_ = post.mu * y_scale / x_scale
        self.intercept_ = float(y_mean - x_mean @ self.coef_)
        return self

    def _check_params(self) -> tuple[float | str, list[float]]:
        """Check the parameters (one-line errors); return tau2 and the grid."""
        tau2 = check_tau2(self.tau2, TAU2_MODES)
        grid = check_grid(ESTIMATOR_TAU2_GRID if self.tau2_grid is None else self.tau2_grid)
        for name in ("a_sigma", "b_sigma", "a_tau", "b_tau"):
            v = getattr(self, name)
            # Hyper checks the values; a string or None must not reach float() first.
            if isinstance(v, bool) or not isinstance(v, (int, float, np.integer, np.floating)):
                raise ElicitError(f"{name} must be a positive number, got {v!r}")
        for name in ("standardize", "normalize_y", "fit_intercept"):
            check_bool(getattr(self, name), name)
        model = get_model(self.model)              # an unknown name: one line naming them
        if self.coupled is not None and not model.known_coupling:
            raise ElicitError(f"coupled is the coupled set of the known-coupling models; "
                              f"model={self.model!r} has none: drop coupled or choose "
                              "model='known-coupling'")
        if not model.relevance and (self.relevant is not None or self.irrelevant is not None):
            raise ElicitError(f"relevant/irrelevant feedback needs the relevance model; "
                              f"model={self.model!r} has no relevance classes: add "
                              "model='relevance'")
        return tau2, grid

    def _engine(self, variant: str) -> Engine:
        if isinstance(self.engine, Engine):
            if self.engine.variant != variant:
                raise ElicitError(f"the engine was built for the {self.engine.variant!r} "
                                  f"variant but tau2={self.tau2!r} needs {variant!r}; pass "
                                  f"get_engine(name, {variant!r}) or the engine's name")
            return self.engine
        if not isinstance(self.engine, str):
            raise ElicitError(f"engine must be an engine name or an Engine, got {self.engine!r}")
        return get_engine(self.engine, variant)

    def predict(self, X: Any, return_std: bool = False) -> Any:
        """The posterior predictive at the rows of X.

        Parameters
        ----------
        X : array-like or DataFrame, shape (m, p)
            Inputs on the scale given to :meth:`fit` (a DataFrame is matched by column name).
        return_std : bool, default False
            Also return the predictive standard deviation.

        Returns
        -------
        ndarray (m,), or a tuple of two
            The predictive mean on y's scale; with ``return_std`` also the standard deviation
            of the Student-t predictive (2 a* degrees of freedom, squared scale
            ``(b*/a*)(1 + x' Sigma* x)``).
        """
        check_is_fitted(self, "coef_")
        names = getattr(self, "feature_names_in_", None)
        with warnings.catch_warnings():
            if names is not None and not hasattr(X, "columns"):
                # scikit-learn's own warning does not say what happens: say it, once.
                warnings.warn("X has no column names: its columns are taken by position, as "
                              f"{few(list(names))} (the order of fit); pass a DataFrame to "
                              "have them checked by name", UserWarning, stacklevel=2)
                warnings.filterwarnings("ignore", "X does not have valid feature names")
            X = validate_data(self, X, reset=False, dtype=np.float64)
        mean = X @ self.coef_ + self.intercept_
        if not return_std:
            return mean
        t = self.posterior_.predict((X - self.x_mean_) / self.x_scale_)
        return mean, np.sqrt(t.var) * self.y_scale_
