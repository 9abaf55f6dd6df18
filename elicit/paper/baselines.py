"""Non-Bayesian baselines and the counting logic of the paper's Table 1.

:func:`fit_baselines` gives the test MSE of cross-validated LASSO, ridge and elastic net on one
run, on the original rating scale. :func:`samples_to_reach` and :func:`table1_rows` turn MSE
curves (MSE after 0, 1, ..., T added training samples or expert answers) into the paper's
Table 1: how many samples/answers each method needs to reach an MSE level.

The curves themselves (random and active sample addition, sequential elicitation) come from
the Bayesian posterior and are produced elsewhere.
"""

from __future__ import annotations

import csv
import io
import warnings
from collections.abc import Mapping, Sequence

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

#: The paper's Table 1 levels: initial MSE (no added samples/answers) and the MSE levels.
PAPER_LEVELS: dict[str, dict] = {
    "yelp": {"initial": 1.88, "levels": (1.85, 1.80)},
    "amazon": {"initial": 2.26, "levels": (2.20, 2.18)},
}

METHODS: tuple[str, ...] = ("rnd", "act", "seqelc")


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


def samples_to_reach(curve, level: float) -> int | None:
    """The first number of added samples/answers at which the MSE is <= ``level``.

    Parameters
    ----------
    curve
        MSE after 0, 1, ..., T additions (index = number added).
    level
        The MSE level.

    Returns
    -------
    int or None
        The first index ``t`` with ``curve[t] <= level`` (0 if the initial MSE is already at
        the level); None if the curve never reaches it. NaN entries never count as reached.
    """
    c = np.asarray(curve, dtype=float).reshape(-1)
    if c.size == 0:
        raise ElicitError("an MSE curve must have at least one point (the initial MSE)")
    hit = np.flatnonzero(c <= level)   # NaN <= level is False
    return int(hit[0]) if hit.size else None


def table1_rows(dataset: str, curves: Mapping[str, Sequence], levels: Sequence[float] | None
                = None, paper_initial: float | None = None,
                initial_mse: float | Sequence[float] | None = None,
                methods: Sequence[str] = METHODS) -> list[dict]:
    """Rows of Table 1: mean number of samples/answers needed to reach each MSE level.

    For each paper level L there are two rows:

    * ``level_kind="paper"``: the level L itself (the paper's absolute number);
    * ``level_kind="relative"``: the same *relative* reduction from our initial MSE,
      ``initial_mse * L / paper_initial`` -- our initial MSE differs from the paper's, so a
      paper level may be trivially reached or out of reach.

    Parameters
    ----------
    dataset
        Label for the ``dataset`` column; also picks the paper's levels and initial MSE
        (:data:`PAPER_LEVELS`) when ``levels``/``paper_initial`` are not given.
    curves
        Method name -> per-run MSE curves (a list of 1-D arrays or an ``(R, T+1)`` array).
        Index t of a curve is the MSE after t added samples (rnd, act) or answers (seqelc).
    levels, paper_initial
        The paper's absolute levels and initial MSE.
    initial_mse
        Our initial MSE; default the mean of ``curve[0]`` over all runs and methods (all
        methods start from the same fit, so their ``curve[0]`` agree within a run). A
        sequence gives one initial MSE per run instead: run r's relative level is then
        ``initial_mse[r] * L / paper_initial`` (the same relative reduction from that run's
        own start, so a run whose split happens to start low is not counted as "reached at
        0"), and the ``mse_level`` of a relative row is the mean of the runs' levels.
    methods
        Columns to produce; each must be a key of ``curves``.

    Returns
    -------
    list of dict
        Keys ``dataset, mse_level, level_kind, reduction`` and, per method m, ``m`` (mean
        count over the runs that reached the level), ``m_reached`` (fraction of runs that
        reached it) and ``m_runs``. A run that never reaches a level is left out of the mean
        and counted in ``m_reached``; a level reached in no run gives ``m = NaN`` (shown as
        "not reached" by :func:`format_table1`), never a number.
    """
    if levels is None or paper_initial is None:
        key = dataset.lower()
        if key not in PAPER_LEVELS:
            raise ElicitError(f"no paper levels known for {dataset!r}; give levels and "
                              f"paper_initial (known: {sorted(PAPER_LEVELS)})")
        levels = PAPER_LEVELS[key]["levels"] if levels is None else levels
        paper_initial = (PAPER_LEVELS[key]["initial"] if paper_initial is None
                         else paper_initial)
    if not paper_initial > 0:
        raise ElicitError(f"paper_initial must be positive, got {paper_initial!r}")
    runs: dict[str, list[np.ndarray]] = {}
    for m in methods:
        if m not in curves:
            raise ElicitError(f"no curves for method {m!r} (got {sorted(curves)})")
        rs = [np.asarray(c, dtype=float).reshape(-1) for c in curves[m]]
        if not rs or any(c.size == 0 for c in rs):
            raise ElicitError(f"method {m!r}: need at least one non-empty curve")
        runs[m] = rs
    if initial_mse is None:
        initial_mse = float(np.nanmean([c[0] for rs in runs.values() for c in rs]))
    init = np.asarray(initial_mse, dtype=float).reshape(-1)
    if init.size == 0 or not (np.all(np.isfinite(init)) and np.all(init > 0)):
        raise ElicitError(f"initial MSE must be positive number(s), got {initial_mse!r}")
    per_run = np.ndim(initial_mse) > 0
    if per_run:
        bad = [m for m in methods if len(runs[m]) != init.size]
        if bad:
            raise ElicitError(f"{init.size} per-run initial MSEs but method {bad[0]!r} has "
                              f"{len(runs[bad[0]])} runs")

    rows: list[dict] = []
    for L in levels:
        reduction = 1.0 - float(L) / float(paper_initial)
        rel = init * (1.0 - reduction)
        for kind, lv in (("paper", np.array([float(L)])), ("relative", rel)):
            row: dict = {"dataset": dataset, "mse_level": float(np.mean(lv)), "level_kind": kind,
                         "reduction": reduction}
            for m in methods:
                counts = [samples_to_reach(c, lv[r] if lv.size > 1 else lv[0])
                          for r, c in enumerate(runs[m])]
                got = [k for k in counts if k is not None]
                row[m] = float(np.mean(got)) if got else float("nan")
                row[f"{m}_reached"] = len(got) / len(counts)
                row[f"{m}_runs"] = len(counts)
            rows.append(row)
    return rows


def format_table1(rows: Sequence[Mapping], methods: Sequence[str] = METHODS) -> str:
    """CSV text of :func:`table1_rows`: ``dataset,mse_level,level_kind,<methods>`` plus the
    reached fractions; a level reached in no run is written ``not reached``."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["dataset", "mse_level", "level_kind", *methods,
                *(f"{m}_reached" for m in methods)])
    for r in rows:
        cells = [r["dataset"], f"{r['mse_level']:.4f}", r["level_kind"]]
        for m in methods:
            v = r[m]
            cells.append("not reached" if not np.isfinite(v) else f"{v:.1f}")
        for m in methods:
            cells.append(f"{round(r[f'{m}_reached'] * r[f'{m}_runs'])}/{r[f'{m}_runs']}")
        w.writerow(cells)
    return buf.getvalue()
