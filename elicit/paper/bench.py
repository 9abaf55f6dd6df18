"""``elicit bench``: speed and decision quality of MAP refits and utility rounds on the
problems of :data:`SIZES` (:func:`bench_problem`; docs/benchmarks.md, "``elicit bench``")."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from elicit.data.metafeatures import unit_rows
from elicit.data.splits import standardise
from elicit.elicitation.answers import Expert, SignOracle
from elicit.elicitation.scorer import UtilityScorer
from elicit.engines import get_engine
from elicit.errors import ElicitError
from elicit.harness.problem import STREAM_BENCH, run_stream
from elicit.internal.io import write_json_atomic
from elicit.internal.memory import peak_rss_mb
from elicit.internal.threads import single_blas_thread
from elicit.model.kernel import kernel
from elicit.model.simulate import make_synthetic, random_problem
from elicit.model.spec import Hyper, all_pairs
from elicit.paper.configs import PAPER_TAU2, RealDataConfig
from elicit.paper.real_problem import realdata_problem
from elicit.prior.setup import fit_no_feedback

#: The benchmark problems of ``elicit bench --size``.
SIZES: tuple[str, ...] = ("amazon", "p1000", "p2000", "p4000", "p10000", "synthetic",
                          "amazon-real", "yelp-real")
SCALING_P = {"p1000": 1000, "p2000": 2000, "p4000": 4000}


@dataclass
class BenchProblem:
    """What one benchmark runs on: ``expert`` answers, ``rng`` draws the pools of
    ``pool_size`` from ``pairs``; ``sort_pool`` scores a pool in index order as the elicitor
    does (the real problems), else in draw order (the random ones, as their documented
    figures were measured)."""

    size: str
    X: np.ndarray
    y: np.ndarray
    U: np.ndarray
    hyper: Hyper
    pairs: np.ndarray
    pool_size: int
    expert: Expert
    rng: np.random.Generator
    sort_pool: bool = False


def review_like(seed: int = 0, n: int = 100, p: int = 10_000, d: int = 10,
                n_model: int = 1000, tau2: float = 0.01) -> BenchProblem:
    """The real default configuration at a full vocabulary from ``n_model`` random reviews
    (docs/benchmarks.md, ``p10000``): the first ``n`` train; U: ``d``-dimensional random unit
    rows; ``beta ~ N(0, tau2 K)`` at gamma = 1."""
    import scipy.linalg

    rng = np.random.default_rng(seed)
    q = 0.25 / (1.0 + np.arange(p) / 15.0)
    counts = np.where(rng.random((n_model, p)) < q,
                      1 + rng.poisson(0.3, size=(n_model, p)), 0).astype(float)
    absent = np.flatnonzero(counts.sum(axis=0) == 0)
    counts[rng.integers(0, n_model, size=len(absent)), absent] = 1.0
    _, mean, scale = standardise(counts)
    X = (counts[:n] - mean) / scale
    del counts
    U = unit_rows(rng.standard_normal((p, d)))
    K = kernel(U, np.ones(d))
    K[np.diag_indices(p)] += 1e-8
    # in place: K is symmetric, so its transpose is the Fortran-ordered array LAPACK factors
    L = scipy.linalg.cholesky(K.T, lower=True, overwrite_a=True, check_finite=False)
    beta = np.sqrt(tau2) * (L @ rng.standard_normal(p))
    del K, L
    y = X @ beta + rng.standard_normal(n)
    y -= y.mean()
    return BenchProblem("p10000" if p == 10_000 else f"review-p{p}", X, y, U,
                        Hyper(variant="fixed", tau2=tau2), all_pairs(p), pool_size=400,
                        expert=SignOracle(beta), rng=np.random.default_rng(seed + 1))


def bench_problem(size: str, seed: int = 0, data_dir: str | os.PathLike | None = None,
                  standardize: str = "model") -> BenchProblem:
    """The benchmark problem ``size`` (one of :data:`SIZES`)."""
    if size == "amazon" or size in SCALING_P:  # the Amazon-size random problem and larger
        p = SCALING_P.get(size, 340)
        X, y, U, beta = random_problem(seed, 100, p, 100)
        return BenchProblem(size, X, y, U, Hyper(variant="fixed", tau2=0.01), all_pairs(p),
                            pool_size=400, expert=SignOracle(beta),
                            rng=np.random.default_rng(seed + 1))
    if size == "p10000":
        return review_like(seed)
    if size == "synthetic":  # the paper's (n = 20, p = 25, d = 9, learned tau2)
        sd = make_synthetic(np.random.default_rng(seed))
        return BenchProblem("synthetic", sd.X, sd.y, sd.U, Hyper(variant="learned"),
                            all_pairs(sd.X.shape[1]), pool_size=250, expert=SignOracle(sd.beta),
                            rng=np.random.default_rng(seed + 1))
    if size in ("amazon-real", "yelp-real"):  # run 0 of the real-data setup
        # the paper's counts (d = 100), as the benchmarks in docs/benchmarks.md were measured
        cfg = RealDataConfig(size.removesuffix("-real"), seed=seed, data_dir=data_dir,
                             standardize=standardize, tau2=PAPER_TAU2, meta_features="counts")
        prob = realdata_problem(cfg, 0)
        assert prob.candidates is not None and prob.pool_size is not None  # real runs set both
        return BenchProblem(size, prob.X, prob.y, prob.U, prob.hyper, prob.candidates,
                            pool_size=prob.pool_size, expert=prob.expert,
                            rng=np.random.default_rng(run_stream(seed, 0, STREAM_BENCH)),
                            sort_pool=True)
    raise ElicitError(f"unknown benchmark size {size!r}; choose from {', '.join(SIZES)}")


@contextmanager
def _timed(row: dict, key: str) -> Iterator[None]:
    """Record the wall and process-CPU time of the block as ``key_s`` and ``key_cpu_s``."""
    t, c = time.perf_counter(), time.process_time()
    yield
    row[f"{key}_s"] = time.perf_counter() - t
    row[f"{key}_cpu_s"] = time.process_time() - c


@single_blas_thread
def bench(prob: BenchProblem, rounds: int = 5, engine: str = "auto", refine: int = 10,
          exact: bool = True, progress: bool = True) -> dict:
    """Time the cold fit, warm refits and fast/exact utility rounds; compare their decisions.

    Parameters
    ----------
    prob, rounds, engine, refine, progress
        The problem (its ``rng`` is advanced), rounds, MAP engine, the fast utility's exact
        re-scores, a progress bar.
    exact
        Also score each pool exactly (slow) and answer the exact best pair.

    Returns
    -------
    dict
        The problem's sizes; ``map_cold_s`` (the no-feedback set-up); medians over rounds of
        ``map_warm_s`` (the refit after an answer, usually remembered from the round's
        re-scores), ``map_refit_s`` (numpy engine: the same refit from scratch) and
        ``round_fast_s``; with ``exact``, ``round_exact_s``, ``top1_agreement``,
        ``exact_regret`` (mean relative utility lost), ``spearman_screen`` and
        ``rank_of_best_in_screen_max``. Each time also as CPU time (``*_cpu_s``);
        ``per_round`` holds every round's figures.
    """
    from tqdm.auto import tqdm

    eng = get_engine(engine, prob.hyper.variant)
    pairs = prob.pairs
    cold: dict = {}
    with _timed(cold, "map_cold"):
        data, fit = fit_no_feedback(eng, prob.X, prob.y, prob.U, prob.hyper, pairs)
    asked = np.zeros(len(pairs), bool)
    rows = []
    for _ in tqdm(range(rounds), desc=f"bench {prob.size}", disable=not progress):
        left = np.flatnonzero(~asked)
        pool = prob.rng.choice(left, size=min(prob.pool_size, len(left)), replace=False)
        if prob.sort_pool:
            pool = np.sort(pool)
        scorer = UtilityScorer(data, fit, eng)
        row: dict = {}
        with _timed(row, "round_fast"):
            fast = scorer.score(pairs[pool], "fast", refine=refine)
        pick = fast.best
        if exact:
            with _timed(row, "round_exact"):
                ex = scorer.score(pairs[pool], "exact")
            u, best = ex.utility, ex.best
            row["top1"] = float(pick == best)
            row["regret"] = float((u[best] - u[pick]) / u[best]) if u[best] > 0 else 0.0
            screen = scorer.score(pairs[pool], "fast", refine=0)
            # here, not at the top: scipy.stats costs every command line start ~0.3 s
            from scipy.stats import spearmanr

            row["spearman_screen"] = float(spearmanr(screen.utility, u)[0])
            row["rank_of_best_in_screen"] = int(np.sum(screen.utility > screen.utility[best]))
            pick = best
        i, j = pairs[pool[pick]]
        asked[pool[pick]] = True
        if (f := prob.expert.answer(int(i), int(j)).outcome) is not None:
            data = data.with_feedback(np.vstack([data.pairs, [i, j]]), np.append(data.f, f))
        with _timed(row, "map_warm"):
            # The refit starts from the Hessian the round computed, as in an elicitation.
            new_fit = eng.fit(data, init=fit, hessian=fast.hessian)
        if (clear := getattr(eng, "clear_memo", None)) is not None:
            # time it again from scratch: what it costs when the expert picks another pair
            clear()
            with _timed(row, "map_refit"):
                eng.fit(data, init=fit, hessian=fast.hessian)
        fit = new_fit
        rows.append(row)

    def med(key: str) -> float:
        return float(np.median([r[key] for r in rows]))

    out = {"size": prob.size, "engine": eng.name, "rounds": rounds, "refine": refine,
           "p": int(prob.X.shape[1]), "n": int(prob.X.shape[0]), "d": int(prob.U.shape[1]),
           "n_candidates": int(len(pairs)), **cold}
    steps = ("map_warm",) + (("map_refit",) if any("map_refit_s" in r for r in rows) else ()) + \
        ("round_fast",) + (("round_exact",) if exact else ())
    out.update({k: med(k) for step in steps for k in (f"{step}_s", f"{step}_cpu_s")})
    if exact:
        out.update({
            "top1_agreement": float(np.mean([r["top1"] for r in rows])),
            "exact_regret": float(np.mean([r["regret"] for r in rows])),
            "spearman_screen": med("spearman_screen"),
            "rank_of_best_in_screen_max": int(max(r["rank_of_best_in_screen"] for r in rows)),
        })
    out["peak_rss_mb"] = peak_rss_mb()
    out["per_round"] = rows
    return out


# The problem is built with one BLAS thread too: the last digits of a matrix product (the
# random problems' y = X beta) depend on the thread count, and with them every later figure.
@single_blas_thread
def run_bench(size: str = "amazon", rounds: int = 5, seed: int = 0, engine: str = "auto",
              refine: int = 10, exact: bool = True, progress: bool = True,
              data_dir: str | os.PathLike | None = None,
              json_path: str | Path | None = None, standardize: str = "model") -> dict:
    """:func:`bench` on :func:`bench_problem` ``size`` (``elicit bench``), also to ``json_path``."""
    res = bench(bench_problem(size, seed, data_dir, standardize), rounds, engine,
                refine, exact, progress)
    if json_path is not None:
        write_json_atomic(json_path, res, indent=1)
    return res


def format_table(result: dict) -> str:
    """The figures of a :func:`bench` result, one per line, then as one line of JSON."""
    summary = {k: v for k, v in result.items() if k != "per_round"}
    width = max(len(k) for k in summary)
    lines = [f"{k:<{width}}  {v:.4g}" if isinstance(v, float) else f"{k:<{width}}  {v}"
             for k, v in summary.items()]
    return "\n".join(lines) + "\n" + json.dumps(summary)
