"""Benchmark the Stan formulations of the kernel K_ij = exp(-0.5 sum_l gamma_l (U_il - U_jl)^2).

The kernel is one function, ``kernel(U, gamma)``, in its own file ``stan/elicit_kernel.stan``,
which the shipped program includes. Each formulation is a file of that name in a folder of
its own, beside a copy of the shipped program: the program's own folder comes first on the
include path (``elicit.engines.contract.include_paths``), so that file replaces the shipped
kernel and nothing else changes. Each program is compiled through PyStan and timed on one
``log_prob`` + ``grad_log_prob`` evaluation (what one step of the PyStan engine's optimiser
costs) at random parameter points of the paper's model (fixed tau^2), on Amazon-size data
(n=100, p=340, d=100, Poisson(0.3) count meta-features) and on synthetic-size data (n=20,
p=25, d=9).

Two timings are reported: through PyStan's public API (each call is an HTTP round trip to
httpstan that re-sends the data, so it includes JSON and model-instantiation overhead) and
through httpstan's compiled extension module directly (the Stan C++ cost alone, including
the model's construction from the data, which every call repeats). Figures are medians of
CPU time (``time.process_time``: this process and its threads, httpstan's server included,
so that other load on the machine does not count) over ``--reps`` random points; the
formulations take turns at each point.

Run from anywhere (the programs and builds go to a temporary directory)::

    .venv/bin/python experiments/bench_stan_kernel.py [--reps 30] [--seed 0]

The first run compiles each program (about a minute each); later runs hit httpstan's cache.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from elicit.cli.argtypes import OneLineParser, nonneg_int, positive_int
from elicit.engines.base import shipped_stan_file
from elicit.engines.contract import read_program
from elicit.engines.pystan_engine import build_pystan_model
from elicit.model.spec import Hyper, ModelData

#: Kernel formulations: each the function kernel(U, gamma) of stan/elicit_kernel.stan.
FORMULATIONS = {
    # The paper's (authors') formulation: K entrywise, gamma dotted with squared differences.
    "entrywise": """
  matrix kernel(matrix U, vector gamma) {
    int M = rows(U);
    matrix[M, M] K;
    for (i in 1:M) {
      K[i, i] = 1;
      for (j in (i + 1):M) {
        K[i, j] = exp(-0.5 * dot_product(gamma, square(U[i] - U[j])));
        K[j, i] = K[i, j];
      }
    }
    return K;
  }
""",
    # Stan's built-in squared-exponential kernel on sqrt(gamma)-scaled meta-features.
    "gp_exp_quad_cov": """
  matrix kernel(matrix U, vector gamma) {
    int M = rows(U);
    matrix[M, cols(U)] Z = U .* rep_matrix(sqrt(gamma)', M);
    array[M] vector[cols(U)] z;
    for (i in 1:M) {
      z[i] = Z[i]';
    }
    return gp_exp_quad_cov(z, 1.0, 1.0);
  }
""",
    # Gram form (shipped): sum_l gamma_l (U_il - U_jl)^2 = s_i + s_j - 2 (U diag(gamma) U')_ij
    # with s = (U .* U) gamma; one var-by-data matrix product instead of p^2 / 2 dot products.
    "gram": None,
}


def program(formulation: str, root: Path) -> str:
    """The shipped program with the kernel ``formulation``, inlined: a copy of the program in
    a folder of its own, where a file ``elicit_kernel.stan`` (the formulation's, or none: the
    shipped one) comes first on the include path."""
    folder = root / formulation
    folder.mkdir(parents=True, exist_ok=True)
    copy = folder / "elicit.stan"
    shutil.copyfile(shipped_stan_file(), copy)
    if FORMULATIONS[formulation] is not None:
        (folder / "elicit_kernel.stan").write_text(FORMULATIONS[formulation].lstrip("\n"))
    return read_program(copy).code


def random_data(n: int, p: int, d: int, n_f: int, rng: np.random.Generator) -> dict:
    """The data of the paper's model (fixed tau^2 = 0.01) with count-like meta-features (most
    entries 0, as word counts), as the engines build it."""
    U = rng.poisson(0.3, size=(p, d)).astype(float)
    pairs = np.array([rng.choice(p, 2, replace=False) for _ in range(n_f)]).reshape(-1, 2)
    W = (U[pairs[:, 0]] - U[pairs[:, 1]]) ** 2
    m = float(np.mean(W @ np.ones(d))) if n_f else 5.0
    data = ModelData(rng.normal(size=(n, p)), rng.normal(size=n), U,
                     Hyper(variant="fixed", threshold_mean=m), pairs, rng.integers(0, 2, n_f))
    return data.to_stan()


def time_models(models: dict, d: int, reps: int, seed: int) -> dict[str, tuple[float, float]]:
    """Median CPU seconds per log_prob + gradient for each model: (public API, extension
    module).

    The formulations take turns at every point, so a change in machine load hits them alike.
    """
    import httpstan.models

    rng = np.random.default_rng(seed)
    points = [np.log(np.concatenate([rng.uniform(0.05, 2.0, d), [5.0]])).tolist()
              for _ in range(reps)]
    # Private httpstan API, used only to separate the Stan C++ cost from the HTTP overhead.
    mods = {k: httpstan.models.import_services_extension_module(m.model_name)
            for k, m in models.items()}
    api: dict[str, list[float]] = {k: [] for k in models}
    direct: dict[str, list[float]] = {k: [] for k in models}
    for u in points:
        for name, model in models.items():
            t0 = time.process_time()
            model.log_prob(u, adjust_transform=False)
            model.grad_log_prob(u)
            t1 = time.process_time()
            mods[name].log_prob(model.data, u, False)
            mods[name].log_prob_grad(model.data, u, False)
            t2 = time.process_time()
            api[name].append(t1 - t0)
            direct[name].append(t2 - t1)
    return {k: (float(np.median(api[k])), float(np.median(direct[k]))) for k in models}


def check_same_density(lps: dict[str, float]) -> None:
    """Raise RuntimeError unless every formulation's log density (name -> value, the first the
    reference) agrees with the first's to 1e-8 relative: a raise, not an assert, so that
    ``python -O`` does not time programs that compute another density."""
    (first, ref), *others = lps.items()
    for name, lp in others:
        if not abs(lp - ref) <= 1e-8 * max(1.0, abs(ref)):
            raise RuntimeError(f"{name!r} gives log density {lp} where {first!r} gives {ref}: "
                               f"the formulations compute different models")


def main() -> None:
    ap = OneLineParser(description=__doc__.split("\n")[0])
    ap.add_argument("--reps", type=positive_int, default=30, help="evaluation points per size")
    ap.add_argument("--seed", type=nonneg_int, default=0)
    args = ap.parse_args()
    sizes = {"amazon (n=100, p=340, d=100)": (100, 340, 100, 20),
             "synthetic (n=20, p=25, d=9)": (20, 25, 9, 5)}
    print(f"{'size':30s} {'formulation':16s} {'public API ms':>14s} {'C++ only ms':>12s}")
    for label, (n, p, d, n_f) in sizes.items():
        data = random_data(n, p, d, n_f, np.random.default_rng(args.seed))
        print(f"building {len(FORMULATIONS)} programs for {label} (a minute each if not cached)",
              file=sys.stderr, flush=True)
        with tempfile.TemporaryDirectory(prefix="elicit-kernels-") as tmp:
            models = {name: build_pystan_model(program(name, Path(tmp)), data, quiet=True)
                      for name in FORMULATIONS}
        # All formulations must agree on the density before their speed means anything.
        u = np.log(np.concatenate([np.full(d, 0.7), [5.0]])).tolist()
        lps = {k: m.log_prob(u, adjust_transform=False) for k, m in models.items()}
        check_same_density(lps)
        for name, (api, direct) in time_models(models, d, args.reps, args.seed + 1).items():
            print(f"{label:30s} {name:16s} {1e3 * api:14.2f} {1e3 * direct:12.2f}", flush=True)


if __name__ == "__main__":
    main()
