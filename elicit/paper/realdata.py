"""Real-data experiments: Amazon and Yelp review ratings (Afrabandpey et al. 2019, Sec. 4.2).

One *run* of the real-data experiment is built from the paper's bag-of-words matrix
(:func:`elicit.data.load_dataset`, 337 Amazon / 258 Yelp keywords) by
:func:`elicit.data.prepare_run`: 100 training and 900 test reviews, the rest the expert set.
The simulated expert is a LASSO fitted on the expert set (:class:`~elicit.lasso_expert.LassoExpert`,
rule ``"target"``: about 40 nonzero weights, ~780 answerable pairs). The model has fixed
tau2 = 0.01, asks only answerable pairs (the paper drops "don't know" pairs) from a random pool
of 400 per sequential round, and its test MSE is on the original rating scale (the training mean
is added back to the predictions).

Seeds. Run ``r`` of a sweep with seed ``s`` splits the data with
``SeedSequence([s, r])`` (:func:`split_seed`), so the sweep, the baselines, the tau2
cross-validation, the Table 1 sample-addition loops and the benchmark all see the same split.

"More samples instead" (the paper's Table 1), :func:`more_samples_curve`:
start from the same 100 x p training set with no feedback and add reviews from the expert set
one at a time, refitting the no-feedback MAP of gamma (numpy engine, warm-started from the
previous MAP) after each addition and recording the test MSE.

* ``rnd`` adds them in a uniformly random order;
* ``act`` adds the review with the largest expected information gain about beta under the
  current posterior (Seeger 2008). With ``beta | sigma2 ~ N(mu*, sigma2 Sigma*)`` and a new
  observation ``y = x' beta + e``, ``e ~ N(0, sigma2)``, the mutual information between y and
  beta given sigma2 is ``0.5 log(1 + x' Sigma* x)``: sigma2 cancels. It is a monotone
  function of the predictive variance factor ``x' Sigma* x``, so ACT is maximum-variance
  sampling at the current MAP kernel; the gain ignores how the new sample would move gamma.
* Added reviews are standardised with the *initial* 100 training reviews' mean and scale
  and their ratings centred on the initial training mean: the test set, the meta-features
  ``U`` (the initial 100 reviews' counts, so d = 100 and gamma keeps its dimension) and the
  prior stay exactly those of the elicitation runs, and only the data grows. A review that
  uses a keyword that is rare in the 100 training reviews gets a large standardised value; ACT
  favours such reviews because they carry large ``x' Sigma* x``.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import numpy as np

from elicit.data import (
    PAPER_FILES,
    STOPWORDS_FILE,
    BowDataset,
    RunData,
    load_dataset,
    prepare_run,
    resolve_data_dir,
)
from elicit.engines import get_engine
from elicit.engines.base import Engine, MAPResult
from elicit.errors import ElicitError
from elicit.internal.threads import single_blas_thread
from elicit.model.posterior import NIGPosterior
from elicit.model.spec import Hyper, ModelData
from elicit.paper.lasso_expert import RULES, LassoExpert
from elicit.paper.sweep import RunProblem

DATASETS: tuple[str, ...] = ("amazon", "yelp")
#: The paper's fixed prior scale on real data (found there by cross-validation).
PAPER_TAU2 = 0.01
#: The paper's random pool of candidate pairs per sequential round.
POOL_SIZE = 400
#: tau2 values tried by ``--tau2 cv`` (log-spaced, 1e-3 .. 1e-1).
TAU2_GRID: tuple[float, ...] = (1e-3, 2e-3, 5e-3, 1e-2, 2e-2, 5e-2, 1e-1)
#: Methods of the sample-addition loops.
SAMPLE_METHODS: tuple[str, ...] = ("rnd", "act")

Method = Literal["rnd", "act"]

# Per-process cache of loaded data sets: a sweep worker builds ~25 runs from the same matrix,
# and parsing the gzipped JSON Lines file costs ~0.7 s.
_DATASETS: dict[tuple[str, str], BowDataset] = {}


def check_dataset(name: str) -> str:
    """``name`` if it is a known real data set, else an :class:`ElicitError`."""
    if name not in DATASETS:
        raise ElicitError(f"unknown data set {name!r}: use one of {', '.join(DATASETS)}")
    return name


def data_dir_for(dataset: str, data_dir: str | os.PathLike | None = None) -> str:
    """The resolved, absolute data directory holding ``dataset``'s files, as a string.

    Resolving once in the parent process (and passing the absolute path to workers) means
    every worker reads the same files whatever its working directory or environment.
    """
    rec, voc, _ = PAPER_FILES[check_dataset(dataset)]
    return str(resolve_data_dir(data_dir, required=[rec, voc, STOPWORDS_FILE]).resolve())


def cached_dataset(dataset: str, data_dir: str | os.PathLike | None = None) -> BowDataset:
    """:func:`elicit.data.load_dataset` (paper feature rule, min_df = 100), once per process."""
    key = (check_dataset(dataset), data_dir_for(dataset, data_dir))
    if key not in _DATASETS:
        _DATASETS[key] = load_dataset(dataset, key[1])
    return _DATASETS[key]


def split_seed(seed: int, run: int) -> int:
    """The integer seed of run ``run``'s split (see the module docstring)."""
    return int(np.random.SeedSequence([int(seed), int(run)]).generate_state(1)[0])


def _stream(seed: int, run: int, tag: int) -> np.random.SeedSequence:
    # Independent streams per purpose; tags >= 1000 keep clear of the sweep's
    # SeedSequence([seed, run, strategy, 7]).
    return np.random.SeedSequence([int(seed), int(run), int(tag)])


def run_data(dataset: str, seed: int, run: int,
             data_dir: str | os.PathLike | None = None) -> RunData:
    """Run ``run``'s split of ``dataset`` (training / test / expert set)."""
    return prepare_run(cached_dataset(dataset, data_dir), split_seed(seed, run))


def make_expert(rd: RunData, rule: str = "target", n_nonzero: int = 40) -> LassoExpert:
    """The LASSO expert of a run (fitted on its expert set)."""
    if rule not in RULES:
        raise ElicitError(f"unknown LASSO expert rule {rule!r}: use one of {', '.join(RULES)}")
    return LassoExpert(rd.X_expert, rd.y_expert, rule=rule, n_nonzero=n_nonzero,
                       random_state=int(rd.seed) % (2**31))


def realdata_problem(dataset: str, seed: int, run: int,
                     data_dir: str | os.PathLike | None = None, tau2: float = PAPER_TAU2,
                     pool_size: int = POOL_SIZE, expert_rule: str = "target",
                     n_nonzero: int = 40) -> RunProblem:
    """One run of the real-data elicitation experiment, for :func:`elicit.experiment.sweep`.

    Parameters
    ----------
    dataset
        ``"amazon"`` or ``"yelp"``.
    seed, run
        The sweep seed and the run index; the split uses :func:`split_seed`.
    data_dir
        Data directory (else :func:`elicit.data.resolve_data_dir`'s search order).
    tau2
        The fixed prior scale tau^2 (paper: 0.01).
    pool_size
        Random candidate pool per sequential round (paper: 400).
    expert_rule, n_nonzero
        How the LASSO expert chooses its penalty (see :mod:`elicit.lasso_expert`).

    Returns
    -------
    RunProblem
        Training data (standardised X, centred y), meta-features U, test set on the original
        scale with ``y_offset`` = the training mean, the LASSO expert, its answerable pairs as
        the candidates, and ``extra`` with the expert's summary and the run's split seed.
    """
    if not (np.isfinite(tau2) and tau2 > 0):
        raise ElicitError(f"tau2 must be a positive number, got {tau2!r}")
    rd = run_data(dataset, seed, run, data_dir)
    expert = make_expert(rd, expert_rule, n_nonzero)
    cands = expert.answerable_pairs()
    if len(cands) == 0:
        raise ElicitError(f"{dataset} run {run}: the LASSO expert knows fewer than two "
                          "keywords, so there is no answerable pair to ask")
    return RunProblem(
        rd.X_train, rd.y_train, rd.U, rd.X_test, rd.y_test, expert,
        Hyper(variant="fixed", tau2=float(tau2)), y_offset=rd.y_mean, candidates=cands,
        pool_size=pool_size,
        extra={"expert": expert.summary(), "split_seed": rd.seed, "tau2": float(tau2)})


class RealDataMaker:
    """A picklable ``make_problem(seed, run)`` for :func:`elicit.experiment.sweep`.

    Sweeps run in worker processes, which rebuild each run from these few settings; the data
    set itself is loaded once per process (:func:`cached_dataset`).

    Parameters
    ----------
    dataset
        ``"amazon"`` or ``"yelp"``.
    data_dir
        The data directory (resolved to an absolute path here, in the parent process).
    tau2
        A fixed tau^2 for every run, or a mapping run -> tau^2 (``--tau2 cv``).
    pool_size, expert_rule, n_nonzero
        As in :func:`realdata_problem`.
    """

    def __init__(self, dataset: str, data_dir: str | os.PathLike | None = None,
                 tau2: float | Mapping[int, float] = PAPER_TAU2, pool_size: int = POOL_SIZE,
                 expert_rule: str = "target", n_nonzero: int = 40) -> None:
        self.dataset = check_dataset(dataset)
        self.data_dir = data_dir_for(dataset, data_dir)
        self.tau2 = dict(tau2) if isinstance(tau2, Mapping) else float(tau2)
        self.pool_size = int(pool_size)
        self.expert_rule = expert_rule
        self.n_nonzero = int(n_nonzero)

    def tau2_for(self, run: int) -> float:
        if isinstance(self.tau2, dict):
            if run not in self.tau2:
                raise ElicitError(f"no tau2 chosen for run {run}")
            return float(self.tau2[run])
        return self.tau2

    def __call__(self, seed: int, run: int) -> RunProblem:
        return realdata_problem(self.dataset, seed, run, self.data_dir, self.tau2_for(run),
                                self.pool_size, self.expert_rule, self.n_nonzero)


# --------------------------------------------------------------------------------------------
# Fitting the no-feedback model
# --------------------------------------------------------------------------------------------

def _no_feedback_data(X: np.ndarray, y: np.ndarray, U: np.ndarray, tau2: float) -> ModelData:
    # Without answers the threshold xi is independent of everything else, so its prior mean
    # does not change gamma's MAP or any prediction; 1.0 is a placeholder.
    return ModelData(X, y, U, Hyper(variant="fixed", tau2=float(tau2), threshold_mean=1.0))


def _test_mse(post: NIGPosterior, X_test: np.ndarray, y_test: np.ndarray,
              y_offset: float) -> float:
    # The predictive mean is x' mu*; the Student-t variance is not needed for the MSE.
    pred = X_test @ post.mu + y_offset
    return float(np.mean((pred - y_test) ** 2))


@single_blas_thread
def cv_tau2(X: np.ndarray, y: np.ndarray, U: np.ndarray, grid: Sequence[float] = TAU2_GRID,
            folds: int = 5, rng: np.random.Generator | None = None,
            engine: str | Engine = "numpy") -> tuple[float, dict[float, float]]:
    """Choose tau^2 by K-fold cross-validation of the no-feedback model.

    The training reviews are split into ``folds`` shuffled folds. For each fold and each
    tau^2 the MAP of gamma is fitted on the other folds (their ratings centred on their own
    mean, which is added back to the held-out predictions) and the held-out squared error is
    recorded. Inputs keep the run's standardisation and the meta-features ``U`` stay the run's
    (p x 100); both are label-free, so no held-out rating is ever used. The fits of one fold
    are warm-started along the grid.

    Parameters
    ----------
    X, y, U
        The run's standardised training inputs, centred ratings and meta-features.
    grid
        Candidate tau^2 values (positive).
    folds
        Number of folds (2 .. n).
    rng
        Shuffles the folds (default: a fixed ``default_rng(0)``).
    engine
        MAP engine.

    Returns
    -------
    best, scores
        The tau^2 with the smallest mean held-out MSE (ties: the smaller tau^2) and the mean
        held-out MSE of every grid value.
    """
    grid = [float(t) for t in grid]
    if not grid or any(not (np.isfinite(t) and t > 0) for t in grid):
        raise ElicitError(f"the tau2 grid must hold positive numbers, got {grid!r}")
    grid = sorted(set(grid))
    X = np.asarray(X, dtype=float)
    y = np.asarray(y, dtype=float)
    n = X.shape[0]
    if not (2 <= folds <= n):
        raise ElicitError(f"folds must lie in 2..{n} (the number of training samples), "
                          f"got {folds}")
    rng = rng if rng is not None else np.random.default_rng(0)
    eng = engine if isinstance(engine, Engine) else get_engine(engine, "fixed")
    fold_of = rng.permutation(n) % folds
    sse = np.zeros(len(grid))
    for k in range(folds):
        tr, te = fold_of != k, fold_of == k
        y_tr = y[tr]
        mean = float(y_tr.mean())
        fit: MAPResult | None = None
        for g, t in enumerate(grid):
            data = _no_feedback_data(X[tr], y_tr - mean, U, t)
            fit = eng.fit(data, init=fit)
            post = NIGPosterior.from_map(data, fit)
            sse[g] += float(np.sum((X[te] @ post.mu + mean - y[te]) ** 2))
    scores = {t: float(s / n) for t, s in zip(grid, sse)}
    best = min(grid, key=lambda t: (scores[t], t))
    return best, scores


def initial_fit(rd: RunData, tau2: float = PAPER_TAU2, engine: str | Engine = "numpy",
                ) -> tuple[ModelData, MAPResult, float]:
    """The no-feedback model of a run: its data, MAP and test MSE."""
    eng = engine if isinstance(engine, Engine) else get_engine(engine, "fixed")
    data = _no_feedback_data(rd.X_train, rd.y_train, rd.U, tau2)
    fit = eng.fit(data)
    post = NIGPosterior.from_map(data, fit)
    return data, fit, _test_mse(post, rd.X_test, rd.y_test, rd.y_mean)


# --------------------------------------------------------------------------------------------
# "More samples instead": random and active sample addition (Table 1)
# --------------------------------------------------------------------------------------------

def expert_pool(rd: RunData, dataset: BowDataset) -> tuple[np.ndarray, np.ndarray]:
    """The expert set as extra training samples, in the run's *training* coordinates.

    Returns
    -------
    X_pool, y_pool
        Counts standardised with the initial training mean and scale, and ratings minus the
        initial training mean (see the module docstring for why).
    """
    counts = dataset.counts[rd.expert_idx].astype(float)
    X_pool = (counts - rd.x_mean) / rd.x_scale
    y_pool = dataset.ratings[rd.expert_idx].astype(float) - rd.y_mean
    return X_pool, y_pool


def information_gain(post: NIGPosterior, X_cand: np.ndarray) -> np.ndarray:
    """``0.5 log(1 + x' Sigma* x)`` for each row x of ``X_cand``.

    The mutual information between a new observation at x and beta, given sigma^2, under
    ``beta ~ N(mu*, sigma^2 Sigma*)`` and unit-variance-scaled noise (sigma^2 cancels).
    """
    quad = np.einsum("ij,ij->i", X_cand @ post.Sigma, X_cand)
    return 0.5 * np.log1p(np.maximum(quad, 0.0))


@dataclass
class SampleCurve:
    """The result of one sample-addition loop.

    ``mse[t]`` is the test MSE after ``t`` added samples (``mse[0]`` the no-feedback model);
    ``added[t-1]`` the expert-set row added at step t and ``gain[t-1]`` its information gain
    at the time (NaN for ``rnd``).
    """

    method: str
    mse: list[float]
    added: list[int]
    gain: list[float]
    stop_level: float | None
    max_samples: int
    exhausted: bool
    seconds: float

    def to_json(self) -> dict:
        return {"method": self.method, "mse": self.mse, "added": self.added, "gain": self.gain,
                "stop_level": self.stop_level, "max_samples": self.max_samples,
                "exhausted": self.exhausted, "seconds": self.seconds}

    @classmethod
    def from_json(cls, d: dict) -> SampleCurve:
        return cls(d["method"], d["mse"], d["added"], d["gain"], d["stop_level"],
                   d["max_samples"], d["exhausted"], d.get("seconds", float("nan")))

    def covers(self, stop_level: float | None, max_samples: int) -> bool:
        """Whether this (possibly early-stopped) curve answers a request for ``max_samples``
        additions or until ``stop_level``: it ran that far, reached the level, or used up
        the pool."""
        return (len(self.mse) - 1 >= max_samples or self.exhausted
                or (stop_level is not None and min(self.mse) <= stop_level))


@single_blas_thread
def more_samples_curve(rd: RunData, X_pool: np.ndarray, y_pool: np.ndarray, method: Method,
                       max_samples: int, rng: np.random.Generator | None = None,
                       tau2: float = PAPER_TAU2, stop_level: float | None = None,
                       engine: str | Engine = "numpy",
                       start: tuple[ModelData, MAPResult] | None = None) -> SampleCurve:
    """Add expert-set samples one at a time to a run's training set; record the test MSE.

    Parameters
    ----------
    rd
        The run (its training set is the start; its test set is scored).
    X_pool, y_pool
        Candidate samples in training coordinates (:func:`expert_pool`).
    method
        ``"rnd"`` (random order from ``rng``) or ``"act"`` (maximum information gain, see
        :func:`information_gain`; ties go to the lowest row index).
    max_samples
        Stop after this many additions (or when the pool is used up).
    rng
        Random stream of ``rnd``.
    tau2
        Fixed tau^2 of the model.
    stop_level
        Stop early once the test MSE is at or below this level: Table 1 only needs the first
        time a curve reaches each level.
    engine
        MAP engine for the refits (warm-started from the previous MAP).
    start
        The no-feedback (data, MAP) if already fitted.

    Returns
    -------
    SampleCurve
    """
    if method not in SAMPLE_METHODS:
        raise ElicitError(f"unknown method {method!r}: use one of {', '.join(SAMPLE_METHODS)}")
    if max_samples < 0:
        raise ElicitError(f"max_samples must be >= 0, got {max_samples}")
    X_pool = np.asarray(X_pool, dtype=float)
    y_pool = np.asarray(y_pool, dtype=float)
    if X_pool.ndim != 2 or X_pool.shape[1] != rd.p or len(y_pool) != len(X_pool):
        raise ElicitError(f"the sample pool must be (m, {rd.p}) inputs with m ratings, got "
                          f"{X_pool.shape} and {y_pool.shape}")
    if method == "rnd" and rng is None:
        raise ElicitError("method 'rnd' needs a random generator")
    t0 = time.perf_counter()
    eng = engine if isinstance(engine, Engine) else get_engine(engine, "fixed")
    if start is None:
        data = _no_feedback_data(rd.X_train, rd.y_train, rd.U, tau2)
        fit = eng.fit(data)
    else:
        data, fit = start
    post = NIGPosterior.from_map(data, fit)
    mse = [_test_mse(post, rd.X_test, rd.y_test, rd.y_mean)]
    left = np.ones(len(X_pool), bool)
    order = rng.permutation(len(X_pool)) if method == "rnd" else None
    added: list[int] = []
    gains: list[float] = []
    X, y = data.X, data.y
    n_steps = min(int(max_samples), len(X_pool))
    for t in range(n_steps):
        if stop_level is not None and mse[-1] <= stop_level:
            break
        if method == "rnd":
            k = int(order[t])
            gains.append(float("nan"))
        else:
            idx = np.flatnonzero(left)
            g = information_gain(post, X_pool[idx])
            b = int(np.argmax(g))
            k = int(idx[b])
            gains.append(float(g[b]))
        left[k] = False
        added.append(k)
        X = np.vstack([X, X_pool[k]])
        y = np.append(y, y_pool[k])
        data = _no_feedback_data(X, y, rd.U, tau2)
        fit = eng.fit(data, init=fit)
        post = NIGPosterior.from_map(data, fit)
        mse.append(_test_mse(post, rd.X_test, rd.y_test, rd.y_mean))
    return SampleCurve(method, mse, added, gains, stop_level, int(max_samples),
                       not left.any(), time.perf_counter() - t0)


# --------------------------------------------------------------------------------------------
# Per-run preparation (baselines, tau2 CV) and the Table 1 loops, as worker tasks
# --------------------------------------------------------------------------------------------

def _write_json(path: Path, obj: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(obj))
    os.replace(tmp, path)  # atomic: an interrupted pass never leaves half a file


def runinfo_path(out: Path, dataset: str, run: int) -> Path:
    """Where ``elicit realdata`` keeps run ``run``'s baselines and tau2 choice."""
    return Path(out) / "parts" / dataset / "runinfo" / f"run{run:03d}.json"


@single_blas_thread
def prepare_runinfo(dataset: str, seed: int, run: int, data_dir: str, tau2: float | str,
                    grid: Sequence[float] = TAU2_GRID) -> dict:
    """Baselines (and the CV choice of tau^2 when ``tau2 == "cv"``) of one run."""
    from elicit.paper.baselines import fit_baselines

    rd = run_data(dataset, seed, run, data_dir)
    bl_state = int(_stream(seed, run, 3000).generate_state(1)[0] % (2**31))
    info: dict = {"run": run, "split_seed": rd.seed,
                  "baselines": fit_baselines(rd.X_train, rd.y_train, rd.X_test, rd.y_test,
                                             rd.y_mean, random_state=bl_state)}
    if tau2 == "cv":
        best, scores = cv_tau2(rd.X_train, rd.y_train, rd.U, grid,
                               rng=np.random.default_rng(_stream(seed, run, 2000)))
        info["tau2"] = best
        info["tau2_cv"] = {repr(t): v for t, v in scores.items()}
    else:
        info["tau2"] = float(tau2)
    return info


def _runinfo_task(out: str, dataset: str, seed: int, run: int, data_dir: str,
                  tau2: float | str) -> int:
    _write_json(runinfo_path(Path(out), dataset, run),
                prepare_runinfo(dataset, seed, run, data_dir, tau2))
    return run


def samples_part_path(out: Path, dataset: str, method: str, run: int) -> Path:
    return Path(out) / "parts" / dataset / method / f"run{run:03d}.json"


@single_blas_thread
def _samples_task(out: str, dataset: str, seed: int, run: int, data_dir: str, tau2: float,
                  max_samples: int, stop_level: float | None,
                  methods: Sequence[str]) -> int:
    ds = cached_dataset(dataset, data_dir)
    rd = prepare_run(ds, split_seed(seed, run))
    X_pool, y_pool = expert_pool(rd, ds)
    eng = get_engine("numpy", "fixed")
    data, fit, _ = initial_fit(rd, tau2, eng)
    for method in methods:
        m_idx = SAMPLE_METHODS.index(method)
        rng = np.random.default_rng(_stream(seed, run, 1000 + m_idx))
        curve = more_samples_curve(rd, X_pool, y_pool, method, max_samples, rng, tau2,
                                   stop_level, eng, start=(data, fit))
        _write_json(samples_part_path(Path(out), dataset, method, run), curve.to_json())
    return run


def run_tasks(task, args_list: list[tuple], jobs: int, desc: str, progress: bool = True) -> None:
    """Run ``task(*args)`` for every entry, in ``jobs`` worker processes, with a progress bar."""
    from concurrent.futures import ProcessPoolExecutor, as_completed

    from tqdm.auto import tqdm

    bar = tqdm(total=len(args_list), desc=desc, disable=not progress)
    if jobs <= 1 or len(args_list) <= 1:
        for a in args_list:
            task(*a)
            bar.update()
    else:
        with ProcessPoolExecutor(max_workers=jobs) as pool:
            futures = [pool.submit(task, *a) for a in args_list]
            for fut in as_completed(futures):
                fut.result()
                bar.update()
    bar.close()


def ensure_runinfo(out: Path, dataset: str, seed: int, runs: int, data_dir: str,
                   tau2: float | str, jobs: int = 1, progress: bool = True) -> list[dict]:
    """Compute (or reuse) the per-run baselines and tau^2 of runs ``0..runs-1``."""
    todo = [(str(out), dataset, seed, r, data_dir, tau2) for r in range(runs)
            if not runinfo_path(out, dataset, r).exists()]
    if todo:
        run_tasks(_runinfo_task, todo, jobs,
                  f"{dataset}: baselines" + (" + tau2 CV" if tau2 == "cv" else ""), progress)
    return [json.loads(runinfo_path(out, dataset, r).read_text()) for r in range(runs)]


def ensure_sample_curves(out: Path, dataset: str, seed: int, runs: int, data_dir: str,
                         tau2: Mapping[int, float], max_samples: int,
                         stop_level: Mapping[int, float] | None, jobs: int = 1,
                         progress: bool = True) -> dict[str, list[SampleCurve]]:
    """Compute (or reuse) the rnd/act curves of runs ``0..runs-1``.

    ``stop_level`` maps a run to the MSE at which its loops may stop (None: never stop
    early). A stored curve is reused when it answers the request
    (:meth:`SampleCurve.covers`); otherwise the run is recomputed.
    """
    todo = []
    for r in range(runs):
        stop = None if stop_level is None else float(stop_level[r])
        stale = []
        for m in SAMPLE_METHODS:
            path = samples_part_path(out, dataset, m, r)
            if not path.exists() or not SampleCurve.from_json(
                    json.loads(path.read_text())).covers(stop, max_samples):
                stale.append(m)
        if stale:
            todo.append((str(out), dataset, seed, r, data_dir, float(tau2[r]), max_samples,
                         stop, tuple(stale)))
    if todo:
        run_tasks(_samples_task, todo, jobs, f"{dataset}: rnd/act samples", progress)
    return {m: [SampleCurve.from_json(json.loads(samples_part_path(out, dataset, m, r)
                                                 .read_text())) for r in range(runs)]
            for m in SAMPLE_METHODS}


# --------------------------------------------------------------------------------------------
# Benchmark on the real Amazon problem
# --------------------------------------------------------------------------------------------

@single_blas_thread
def run_bench_real(dataset: str = "amazon", run: int = 0, seed: int = 0, rounds: int = 5,
                   engine: str = "auto", refine: int = 10, exact: bool = True,
                   data_dir: str | os.PathLike | None = None, progress: bool = True) -> dict:
    """``elicit bench`` figures on the real problem (run ``run`` of the realdata setup).

    The measurements match :func:`elicit.bench.run_bench`: the cold and warm MAP fit times,
    the time of a fast utility round (screen + ``refine`` exact re-scores) and of an exact
    round over a 400-pair pool, and how often the fast pick equals the exact best (top-1
    agreement) with the relative utility lost when it does not (regret). Unlike the random
    ``amazon`` bench problem, the pool is drawn from the LASSO expert's answerable pairs, the
    threshold prior is set from them, and the expert answers. After each round the exact
    best pair (the fast pick without ``exact``) is answered and the MAP refitted warm.

    Returns
    -------
    dict
        The same keys as :func:`elicit.bench.run_bench` (``size = "<dataset>-real"``) plus
        ``p``, ``n``, ``d``, ``n_candidates`` and ``*_cpu_s``: the process CPU time of the
        same steps. BLAS runs on one thread here, so CPU time is what the step costs on an
        idle core; it stays meaningful when other jobs share the machine and inflate the
        wall times.
    """
    from scipy.stats import spearmanr
    from tqdm.auto import tqdm

    from elicit.elicitation.utility import UtilityScorer
    from elicit.model.spec import auto_threshold_mean

    prob = realdata_problem(dataset, seed, run, data_dir)
    rng = np.random.default_rng(_stream(seed, run, 4000))
    eng = get_engine(engine, "fixed")
    pairs = prob.candidates
    probe = ModelData(prob.X, prob.y, prob.U, prob.hyper.with_threshold_mean(1.0))
    t, c = time.perf_counter(), time.process_time()
    fit0 = eng.fit(probe)
    cold_s, cold_cpu = time.perf_counter() - t, time.process_time() - c
    m = auto_threshold_mean(prob.U, fit0.gamma, pairs)
    data = ModelData(prob.X, prob.y, prob.U, prob.hyper.with_threshold_mean(m))
    fit = eng.fit(data, init=fit0)
    asked = np.zeros(len(pairs), bool)
    rows = []
    for _ in tqdm(range(rounds), desc=f"bench {dataset}-real", disable=not progress):
        left = np.flatnonzero(~asked)
        pool = np.sort(rng.choice(left, size=min(prob.pool_size, len(left)), replace=False))
        scorer = UtilityScorer(data, fit, eng)
        t, c = time.perf_counter(), time.process_time()
        fast = scorer.score(pairs[pool], "fast", refine=refine)
        row = {"round_fast_s": time.perf_counter() - t,
               "round_fast_cpu_s": time.process_time() - c}
        pick = fast.best
        if exact:
            t, c = time.perf_counter(), time.process_time()
            ex = scorer.score(pairs[pool], "exact")
            row["round_exact_s"] = time.perf_counter() - t
            row["round_exact_cpu_s"] = time.process_time() - c
            u, best = ex.utility, ex.best
            row["top1"] = float(pick == best)
            row["regret"] = float((u[best] - u[pick]) / u[best]) if u[best] > 0 else 0.0
            screen = scorer.score(pairs[pool], "fast", refine=0)
            row["spearman_screen"] = float(spearmanr(screen.utility, u)[0])
            row["rank_of_best_in_screen"] = int(np.sum(screen.utility > screen.utility[best]))
            pick = best
        i, j = pairs[pool[pick]]
        asked[pool[pick]] = True
        a = prob.expert.answer(int(i), int(j))
        if a.f is not None:
            data = data.with_feedback(np.vstack([data.pairs, [i, j]]), np.append(data.f, a.f))
        t, c = time.perf_counter(), time.process_time()
        fit = eng.fit(data, init=fit)
        row["map_warm_s"] = time.perf_counter() - t
        row["map_warm_cpu_s"] = time.process_time() - c
        rows.append(row)
    med = {k: float(np.median([r[k] for r in rows])) for k in rows[0]}
    out = {"size": f"{dataset}-real", "engine": eng.name, "rounds": rounds, "refine": refine,
           "p": int(prob.X.shape[1]), "n": int(prob.X.shape[0]), "d": int(prob.U.shape[1]),
           "n_candidates": int(len(pairs)), "map_cold_s": cold_s, "map_cold_cpu_s": cold_cpu,
           "map_warm_s": med["map_warm_s"], "map_warm_cpu_s": med["map_warm_cpu_s"],
           "round_fast_s": med["round_fast_s"], "round_fast_cpu_s": med["round_fast_cpu_s"]}
    if exact:
        out.update({
            "round_exact_s": med["round_exact_s"],
            "round_exact_cpu_s": med["round_exact_cpu_s"],
            "top1_agreement": float(np.mean([r["top1"] for r in rows])),
            "exact_regret": float(np.mean([r["regret"] for r in rows])),
            "spearman_screen": med["spearman_screen"],
            "rank_of_best_in_screen_max": int(max(r["rank_of_best_in_screen"] for r in rows)),
        })
    out["per_round"] = rows
    return out
