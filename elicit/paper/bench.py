"""``elicit bench``: speed and decision quality of MAP refits and utility rounds.

The Amazon-size problem is random but shaped like the paper's Amazon setting: n = 100
standard-normal inputs, p = 340 features whose meta-features are word-count-like (d = 100
"training reviews"; feature i occurs with a rate drawn log-uniformly in [0.02, 0.5] and counts
are Poisson, so about 85% of entries are zero), beta drawn from the model's prior with a
sparse true gamma (10 informative meta-features), unit noise, fixed tau2 = 0.01, and a
400-pair pool. The simulated expert calls a pair similar when the true weights share a sign.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass

import numpy as np
from scipy.stats import spearmanr

from elicit.elicitation.utility import UtilityScorer
from elicit.engines import get_engine
from elicit.internal.threads import single_blas_thread
from elicit.model.kernel import kernel
from elicit.model.spec import Hyper, ModelData, all_pairs, auto_threshold_mean
from elicit.paper.synthetic import make_synthetic


@dataclass
class BenchProblem:
    X: np.ndarray
    y: np.ndarray
    U: np.ndarray
    beta: np.ndarray
    hyper: Hyper
    pool_size: int


def amazon_like(seed: int = 0, n: int = 100, p: int = 340, d: int = 100) -> BenchProblem:
    """The documented Amazon-size random problem (see the module docstring)."""
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
    return BenchProblem(X, y, U, beta, Hyper(variant="fixed", tau2=0.01), pool_size=400)


def synthetic_size(seed: int = 0) -> BenchProblem:
    """The paper's synthetic problem (n = 20, p = 25, d = 9, learned tau2, pool 250)."""
    sd = make_synthetic(np.random.default_rng(seed))
    return BenchProblem(sd.X, sd.y, sd.U, sd.beta, Hyper(variant="learned"), pool_size=250)


@single_blas_thread
def run_bench(size: str = "amazon", rounds: int = 5, seed: int = 0, engine: str = "auto",
              refine: int = 10, exact: bool = True, progress: bool = True) -> dict:
    """Time warm refits and fast/exact utility rounds; compare their decisions."""
    from tqdm.auto import tqdm

    prob = {"amazon": amazon_like, "synthetic": synthetic_size}[size](seed)
    rng = np.random.default_rng(seed + 1)
    hyper = prob.hyper
    eng = get_engine(engine, hyper.variant)
    pairs = all_pairs(prob.X.shape[1])
    probe = ModelData(prob.X, prob.y, prob.U, hyper.with_threshold_mean(1.0))
    t0 = time.perf_counter()
    fit0 = eng.fit(probe)
    cold_s = time.perf_counter() - t0
    m = auto_threshold_mean(prob.U, fit0.gamma, pairs)
    data = ModelData(prob.X, prob.y, prob.U, hyper.with_threshold_mean(m))
    fit = eng.fit(data, init=fit0)
    rows = []
    asked = np.zeros(len(pairs), bool)
    for _ in tqdm(range(rounds), desc=f"bench {size}", disable=not progress):
        pool = rng.choice(np.flatnonzero(~asked), size=min(prob.pool_size, int((~asked).sum())),
                          replace=False)
        scorer = UtilityScorer(data, fit, eng)
        t = time.perf_counter()
        fast = scorer.score(pairs[pool], "fast", refine=refine)
        fast_s = time.perf_counter() - t
        row = {"round_fast_s": fast_s}
        pick = fast.best
        if exact:
            t = time.perf_counter()
            ex = scorer.score(pairs[pool], "exact")
            row["round_exact_s"] = time.perf_counter() - t
            best = ex.best
            u = ex.utility
            row["top1"] = float(pick == best)
            row["regret"] = float((u[best] - u[pick]) / u[best]) if u[best] > 0 else 0.0
            screen = scorer.score(pairs[pool], "fast", refine=0)
            row["spearman_screen"] = float(spearmanr(screen.utility, u)[0])
            row["rank_of_best_in_screen"] = int(np.sum(screen.utility > screen.utility[best]))
            pick = best
        i, j = pairs[pool[pick]]
        f = int(np.sign(prob.beta[i]) == np.sign(prob.beta[j]))
        asked[pool[pick]] = True
        data = data.with_feedback(np.vstack([data.pairs, [i, j]]), np.append(data.f, f))
        t = time.perf_counter()
        fit = eng.fit(data, init=fit)
        row["map_warm_s"] = time.perf_counter() - t
        rows.append(row)
    med = {k: float(np.median([r[k] for r in rows])) for k in rows[0]}
    out = {
        "size": size, "engine": eng.name, "rounds": rounds, "refine": refine,
        "map_cold_s": cold_s,
        "map_warm_s": med["map_warm_s"],
        "round_fast_s": med["round_fast_s"],
    }
    if exact:
        out.update({
            "round_exact_s": med["round_exact_s"],
            "top1_agreement": float(np.mean([r["top1"] for r in rows])),
            "exact_regret": float(np.mean([r["regret"] for r in rows])),
            "spearman_screen": med["spearman_screen"],
            "rank_of_best_in_screen_max": int(max(r["rank_of_best_in_screen"] for r in rows)),
        })
    out["per_round"] = rows
    return out


def format_table(result: dict) -> str:
    keys = [k for k in result if k != "per_round"]
    width = max(len(k) for k in keys)
    lines = [f"{k:<{width}}  {result[k]:.4g}" if isinstance(result[k], float)
             else f"{k:<{width}}  {result[k]}" for k in keys]
    summary = {k: result[k] for k in keys}
    return "\n".join(lines) + "\n" + json.dumps(summary)
