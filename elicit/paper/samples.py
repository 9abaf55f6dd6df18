"""Table 1's "more samples instead": :func:`more_samples_curve` adds reviews of the expert
set to a run's training set, ``rnd`` at random or ``act`` by the largest expected information
gain about beta, ``0.5 log(1 + x' Sigma* x)`` (docs/realdata.md, "Table 1")."""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import NamedTuple

import numpy as np

from elicit.data import BowDataset, RunData
from elicit.elicitation.utility import SAMPLE_GAIN
from elicit.engines import get_engine
from elicit.engines.base import Engine
from elicit.errors import ElicitError
from elicit.harness.problem import STREAM_SAMPLES, run_stream
from elicit.harness.runner import run_tasks
from elicit.harness.store import SweepStore
from elicit.internal.threads import single_blas_thread
from elicit.model.posterior import NIGPosterior
from elicit.model.result import MAPResult
from elicit.model.spec import ModelData
from elicit.model.variants import PAPER
from elicit.paper.configs import PAPER_TAU2, RealDataConfig
from elicit.paper.real_problem import initial_fit, run_setup
from elicit.prior.setup import coupled_features, fixed_hyper, no_feedback_data

SAMPLE_METHODS: tuple[str, ...] = ("rnd", "act")


def expert_pool(rd: RunData, dataset: BowDataset) -> tuple[np.ndarray, np.ndarray]:
    """The expert set as extra training samples, in the run's training coordinates."""
    return (rd.standardize_counts(dataset.counts[rd.expert_idx]),
            dataset.ratings[rd.expert_idx].astype(float) - rd.y_mean)


@dataclass
class SampleCurve:
    """One sample-addition loop: ``mse[t]`` the test MSE after ``t`` added samples,
    ``added[t-1]`` the row added at step t and ``gain[t-1]`` its gain (NaN for ``rnd``)."""

    method: str
    mse: list[float]
    added: list[int]
    gain: list[float]
    stop_level: float | None
    max_samples: int
    exhausted: bool
    seconds: float

    @classmethod
    def from_json(cls, d: dict) -> SampleCurve:
        return cls(d["method"], d["mse"], d["added"], d["gain"], d["stop_level"],
                   d["max_samples"], d["exhausted"], d.get("seconds", float("nan")))

    def covers(self, stop_level: float | None, max_samples: int) -> bool:
        """Whether this curve answers a request for ``max_samples`` additions or until
        ``stop_level``: it ran that far, reached the level, or used up the pool."""
        return (len(self.mse) - 1 >= max_samples or self.exhausted
                or (stop_level is not None and min(self.mse) <= stop_level))


@single_blas_thread
def more_samples_curve(rd: RunData, X_pool: np.ndarray, y_pool: np.ndarray, method: str,
                       max_samples: int, rng: np.random.Generator | None = None,
                       tau2: float = PAPER_TAU2, stop_level: float | None = None,
                       engine: str | Engine = "numpy",
                       start: tuple[ModelData, MAPResult] | None = None,
                       model: str = PAPER, coupled: np.ndarray | None = None) -> SampleCurve:
    """Add samples of ``X_pool``, ``y_pool`` (:func:`expert_pool`) one at a time to run
    ``rd``'s training set by ``method`` (module docstring; ``act`` ties to the lowest row);
    record the test MSE. The loop stops after ``max_samples`` additions, when the pool is used
    up, or at ``stop_level``; the model (fixed ``tau2``, ``model``, coupled set ``coupled``)
    is refitted warm by ``engine`` from ``start``, the no-feedback (data, MAP) if given."""
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
    eng = get_engine(engine, "fixed")
    data, fit = start if start is not None else initial_fit(rd, tau2, eng, model, coupled)[:2]
    post = NIGPosterior.from_map(data, fit)
    mse = [post.mse(rd.X_test, rd.y_test, rd.y_mean)]
    left = np.ones(len(X_pool), bool)
    order = (rng.permutation(len(X_pool)) if method == "rnd" and rng is not None else np.arange(0))
    added: list[int] = []
    gains: list[float] = []
    X, y = data.X, data.y
    n_steps = min(int(max_samples), len(X_pool))
    quad: _PoolQuadForms | None = None
    for t in range(n_steps):
        if stop_level is not None and mse[-1] <= stop_level:
            break
        if method == "rnd":
            k = int(order[t])
            gains.append(float("nan"))
        else:
            if quad is None:
                quad = _PoolQuadForms(X_pool, rd.standardize_counts(np.zeros((1, rd.p)))[0])
            # the gain is increasing in x' Sigma* x: the largest form is the largest gain
            q = quad(post.Sigma)
            q[~left] = -np.inf
            k = int(np.argmax(q))
            gains.append(float(SAMPLE_GAIN.score(post, X_pool[k:k + 1])[0]))
        left[k] = False
        added.append(k)
        X = np.vstack([X, X_pool[k]])
        y = np.append(y, y_pool[k])
        data = no_feedback_data(X, y, rd.U, fixed_hyper(tau2, model), coupled)
        fit = eng.fit(data, init=fit)
        post = NIGPosterior.from_map(data, fit)
        mse.append(post.mse(rd.X_test, rd.y_test, rd.y_mean))
    return SampleCurve(method, mse, added, gains, stop_level, int(max_samples),
                       not left.any(), time.perf_counter() - t0)


class _PoolQuadForms:
    """``x' A x`` for a symmetric p x p ``A`` (``Sigma*`` at each step of ``act``) and every
    row x of a pool whose rows are one common row plus a sparse one.

    A review's inputs are ``x = zero + r``, ``zero`` the standardised zero count and r
    nonzero only at its keywords (14 of 337 on average in Amazon), so ``x' A x = r' A r +
    2 r' A zero + zero' A zero`` costs the pairs of each row's keywords instead of the dense
    ``X A``: 3.4 ms instead of 18 ms a step, equal to rounding (6e-13 relative at worst).
    """

    def __init__(self, X_pool: np.ndarray, zero: np.ndarray) -> None:
        R = np.asarray(X_pool, dtype=float) - zero
        self.m, p = R.shape
        self.zero = zero
        self.rows, self.cols = np.nonzero(R)        # row-major: each row's keywords in order
        self.vals = R[self.rows, self.cols]
        # every pair (e, f) of nonzeros of one row with f at or after e: entry e pairs with
        # the rest of its row, cnt[e] = (its row's count) - (its place in the row)
        per_row = np.bincount(self.rows, minlength=self.m)
        place = np.arange(len(self.rows)) - np.repeat(np.cumsum(per_row) - per_row, per_row)
        cnt = per_row[self.rows] - place
        first = np.repeat(np.arange(len(self.rows)), cnt)
        second = first + np.arange(len(first)) - np.repeat(np.cumsum(cnt) - cnt, cnt)
        self.pair_row = self.rows[first]
        self.pair_at = self.cols[first] * p + self.cols[second]
        # off-diagonal pairs stand for (e, f) and (f, e)
        self.pair_w = self.vals[first] * self.vals[second] * np.where(first == second, 1.0, 2.0)

    def __call__(self, A: np.ndarray) -> np.ndarray:
        Az = A @ self.zero
        quad = np.bincount(self.pair_row, minlength=self.m,
                           weights=self.pair_w * np.take(A.ravel(), self.pair_at))
        lin = np.bincount(self.rows, weights=self.vals * Az[self.cols], minlength=self.m)
        return quad + 2.0 * lin + float(self.zero @ Az)


class _SamplesTask(NamedTuple):
    """The loops of one run (the arguments of :func:`_samples_task`)."""

    store: SweepStore
    cfg: RealDataConfig
    run: int
    tau2: float
    max_samples: int
    stop_level: float | None
    methods: tuple[str, ...]


@single_blas_thread
def _samples_task(store: SweepStore, cfg: RealDataConfig, run: int, tau2: float,
                  max_samples: int, stop_level: float | None, methods: Sequence[str]) -> None:
    # the sweep's run: its meta-features, model and (known coupling) coupled set J
    rd, _, cands = run_setup(cfg, run)
    coupled = None if cands is None else coupled_features(rd.p, cands)
    X_pool, y_pool = expert_pool(rd, cfg.data.load())
    eng = get_engine("numpy", "fixed")
    model = str(cfg.settings.model)
    data, fit, _ = initial_fit(rd, tau2, eng, model, coupled)
    for method in methods:
        m_idx = SAMPLE_METHODS.index(method)
        rng = np.random.default_rng(run_stream(cfg.settings.seed, run, STREAM_SAMPLES + m_idx))
        curve = more_samples_curve(rd, X_pool, y_pool, method, max_samples, rng, tau2,
                                   stop_level, eng, start=(data, fit), model=model, coupled=coupled)
        store.save(store.samples_path(method, run), asdict(curve))


def ensure_sample_curves(store: SweepStore, cfg: RealDataConfig, tau2: Mapping[int, float],
                         max_samples: int, stop_level: Mapping[int, float],
                         progress: bool = True) -> dict[str, list[SampleCurve]]:
    """Compute (or reuse: :meth:`SampleCurve.covers`) the rnd/act curves of the sweep's runs
    ``0..cfg.runs-1`` in ``cfg.jobs`` processes; ``tau2`` and ``stop_level`` map a run to its
    tau^2 and the MSE at which its loops may stop."""
    key = store.folder.name

    def left(task: _SamplesTask) -> _SamplesTask | None:
        stale = store.missing(
            {m: store.samples_path(m, task.run) for m in task.methods},
            lambda record: SampleCurve.from_json(record).covers(task.stop_level, max_samples))
        return task._replace(methods=stale) if stale else None

    tasks = [_SamplesTask(store, cfg, r, float(tau2[r]), max_samples, float(stop_level[r]),
                          SAMPLE_METHODS) for r in range(cfg.runs)]
    run_tasks(_samples_task, tasks, jobs=cfg.jobs, desc=f"{key}: rnd/act samples",
              progress=progress, left=left)
    return {m: [SampleCurve.from_json(store.need(store.samples_path(m, r), f"{m} curve of run {r}"))
                for r in range(cfg.runs)] for m in SAMPLE_METHODS}
