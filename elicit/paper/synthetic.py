"""The paper's synthetic data and experiment (Afrabandpey et al. 2019, Sec. 4.1, Figs. 3-4).

p = 25 features in four groups {1-10}, {11-15}, {16-20}, {21-25}; d = 9 meta-feature columns.
Column l describes one group (group entries ~ U(0, 0.25) or U(1, 10)) and gives every other
feature U(2, 2.25); the last column is pure noise, U(1, 10) for all features. With
gamma_opt = [1,1,0,1,0,1,0,0,0] the kernel K_opt = K(gamma_opt) is near 1 within groups and
near 0 across them. beta ~ N(0, sigma2 tau2 K_opt) with sigma2 = 5, tau2 = 1, and
y = X beta + N(0, sigma2) (:func:`make_synthetic`, as in the authors' code).

:func:`run_synthetic` is the experiment: the three query strategies on runs of such data,
answered by an oracle that knows the groups (similar = same group).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import numpy as np
import pandas as pd

from elicit.elicitation.strategies import STRATEGIES
from elicit.errors import ElicitError
from elicit.harness.labels import REFERENCE_LABELS
from elicit.model.kernel import kernel

GROUPS = np.repeat([0, 1, 2, 3], [10, 5, 5, 5])
GAMMA_OPT = np.array([1, 1, 0, 1, 0, 1, 0, 0, 0], dtype=float)
# (group described by the column, distribution of the group's entries); None = all U(1, 10)
_COLUMNS = [(0, "near"), (1, "near"), (0, "far"), (2, "near"), (1, "far"), (3, "near"),
            (2, "far"), (3, "far"), (None, "far")]


@dataclass
class SyntheticData:
    X: np.ndarray
    y: np.ndarray
    X_test: np.ndarray
    y_test: np.ndarray
    U: np.ndarray
    beta: np.ndarray
    groups: np.ndarray
    K_opt: np.ndarray


def meta_features(rng: np.random.Generator) -> np.ndarray:
    """The 25 x 9 meta-feature matrix U."""
    p = len(GROUPS)
    U = rng.uniform(2.0, 2.25, size=(p, len(_COLUMNS)))
    for col, (group, kind) in enumerate(_COLUMNS):
        rows = np.arange(p) if group is None else np.flatnonzero(GROUPS == group)
        lo, hi = (0.0, 0.25) if kind == "near" else (1.0, 10.0)
        U[rows, col] = rng.uniform(lo, hi, size=len(rows))
    return U


def make_synthetic(rng: np.random.Generator, n_train: int = 20, n_test: int = 1000,
                   sigma2: float = 5.0, tau2: float = 1.0) -> SyntheticData:
    """Draw one synthetic data set (n_train = 20 as in the paper; the authors' code used 15)."""
    if n_train < 1 or n_test < 1:
        raise ValueError("n_train and n_test must be positive")
    U = meta_features(rng)
    p = U.shape[0]
    K_opt = kernel(U, GAMMA_OPT)
    # A tiny jitter: K_opt is near-singular within groups.
    L = np.linalg.cholesky(sigma2 * tau2 * K_opt + 1e-9 * np.eye(p))
    beta = L @ rng.standard_normal(p)
    X = rng.standard_normal((n_train, p))
    X_test = rng.standard_normal((n_test, p))
    noise = np.sqrt(sigma2)
    y = X @ beta + noise * rng.standard_normal(n_train)
    y_test = X_test @ beta + noise * rng.standard_normal(n_test)
    return SyntheticData(X, y, X_test, y_test, U, beta, GROUPS.copy(), K_opt)


# --------------------------------------------------------------------------------------------
# The experiment (Figs. 3-4)
# --------------------------------------------------------------------------------------------

@dataclass
class SyntheticResult:
    """What :func:`run_synthetic` wrote: the rows of ``mse.csv``."""

    mse: pd.DataFrame

    def summary(self) -> str:
        """The mean test MSE of each strategy after the last round."""
        df = self.mse
        curves = df[df.strategy.isin(STRATEGIES)]
        final = curves[curves.n_feedback == curves.n_feedback.max()].groupby("strategy").mse
        return (f"mean test MSE after {int(curves.n_feedback.max())} answers: "
                + ", ".join(f"{k} {v:.3f}" for k, v in final.mean().items())
                + f"; predicting the mean: {df[df.strategy == 'mean'].mse.mean():.3f}")


#: Rounds after which the kernel of Fig. 3 is shown (those within the sweep's rounds).
FIG3_ROUNDS: tuple[int, ...] = (0, 10, 30, 100)


def run_synthetic(out: str | Path, runs: int | None = None, rounds: int = 100,
                  strategies: Sequence[str] = STRATEGIES, seed: int = 0, jobs: int = 1,
                  n_train: int = 20, engine: str = "auto", utility: str = "fast",
                  refine: int = 10, stan_file: str | None = None,
                  threshold_mean: float | Literal["auto"] | None = None,
                  progress: bool = True, cluster: str | None = None,
                  check_engine: bool = False,
                  problems: str | Path | None = None, model: str = "paper",
                  utility_target: str = "predictive") -> SyntheticResult:
    """The paper's synthetic experiment (``elicit synthetic``): Figs. 3 and 4.

    Parameters
    ----------
    out
        The output folder: ``mse.csv``, ``fig4_mse.png`` (the MSE curves), ``fig3_K.png``
        (K_opt beside the learned kernel of run 0 after :data:`FIG3_ROUNDS` sequential
        answers; only with the sequential strategy) and ``parts/`` (resumable).
    runs, rounds
        Runs ``0..runs-1``, each with ``rounds`` questions per strategy (default: 50 runs, or
        one per problem file with ``problems``).
    strategies
        Query strategies to run.
    seed
        The sweep seed (run r's data come from ``SeedSequence([seed, r])``; with ``problems``
        it seeds only the query streams).
    jobs
        Worker processes.
    n_train
        Training samples per run (paper: 20; the authors' code: 15).
    engine, utility, refine, stan_file
        MAP engine and utility computation, as for :class:`~elicit.elicitation.elicitor.Elicitor`.
    threshold_mean
        Prior mean of the threshold xi: ``"auto"``, a number, or None for the default.
    progress
        Show a progress bar.
    cluster
        Run the runs on a Dask cluster: ``"local:N"`` or a scheduler address
        (:mod:`elicit.harness.cluster`); ``jobs`` is then ignored.
    check_engine
        Check every fit against the numpy engine (for ``engine="cmdstan"`` or ``"pystan"``).
    problems
        A folder of the user's own simulated problems instead of the built-in generator:
        one ``.npz`` per run (:class:`~elicit.paper.problems.ProblemsDir`). The outputs are
        the same, but for ``fig3_K.png`` (it needs the generator's true kernel).
    model
        The named model (:mod:`elicit.model.variants`); a folder holding results of another
        model is refused.
    utility_target
        ``"predictive"`` or ``"params"``: what the utility is about
        (:mod:`elicit.elicitation.utility`). The parts in ``out`` are reused by run and
        strategy alone: give each target its own folder.
    """
    # Imported here: problems.py builds each run with make_synthetic above, so importing the
    # sweep machinery at module level would be circular.
    from elicit.data.sources import file_sha256
    from elicit.harness.figures import kernel_panels, mse_curves
    from elicit.harness.sweep import SweepConfig, check_config, load_part, sweep
    from elicit.paper.problems import ProblemsDir, SyntheticMaker

    out = Path(out)
    snaps = tuple(t for t in FIG3_ROUNDS if t <= rounds)
    maker: SyntheticMaker | ProblemsDir = SyntheticMaker(n_train)
    name = "synthetic"
    problems_sha256 = None
    if problems is not None:
        maker = ProblemsDir(problems)
        problems_sha256 = maker.sha256()
        name = Path(problems).resolve().name or "problems"
        if runs is not None and runs > len(maker):
            raise ElicitError(f"--problems {problems} holds {len(maker)} problems, fewer than "
                              f"--runs {runs}; give --runs {len(maker)} or more files")
        runs = len(maker) if runs is None else runs
    runs = 50 if runs is None else runs
    cfg = SweepConfig(name, runs, rounds, tuple(strategies), seed, engine, utility,
                      refine, jobs, cluster=cluster, check_engine=check_engine,
                      snapshots=snaps, stan_file=stan_file, threshold_mean=threshold_mean,
                      model=model, utility_target=utility_target)
    # The parts are reused by run and strategy alone: config.json refuses a rerun with other
    # settings (runs and strategies may change: they only add parts).
    check_config(out, {"experiment": "synthetic", "seed": seed, "rounds": rounds,
                       "n_train": None if problems is not None else n_train,
                       "problems": None if problems is None else str(Path(problems).resolve()),
                       "problems_sha256": problems_sha256,
                       "engine": engine, "utility": utility, "refine": refine,
                       "stan_file": None if stan_file is None else str(Path(stan_file).resolve()),
                       "stan_file_sha256": None if stan_file is None else file_sha256(stan_file),
                       "threshold_mean": threshold_mean, "model": model,
                       "utility_target": utility_target})
    df = sweep(maker, cfg, out, progress=progress)
    # The reference line every MSE figure carries: predicting the training mean.
    mean_rows = []
    for run in range(runs):
        prob = maker(seed, run)
        mean_rows.append((name, "mean", run, 0, float(np.mean(
            (np.asarray(prob.y_test) - (float(np.mean(prob.y)) + prob.y_offset)) ** 2))))
    df = pd.concat([df, pd.DataFrame(mean_rows, columns=df.columns)], ignore_index=True)
    df.to_csv(out / "mse.csv", index=False)
    label = "Synthetic data" if problems is None else f"Problems in {name}"
    mean_mse = float(df[df.strategy == "mean"].mse.mean())
    mse_curves(df, out / "fig4_mse.png", title=f"{label}: mean ± s.e. over {runs} runs",
               references={REFERENCE_LABELS["mean"]: mean_mse})
    if "sequential" in cfg.strategies and problems is None:
        prob = maker(seed, 0)
        gammas = load_part(out, cfg, "sequential", 0)["gammas"]
        panels = {"K_opt": prob.extra["K_opt"]}
        for t in snaps:
            if str(t) in gammas:
                panels[f"{t} answers"] = kernel(prob.U, gammas[str(t)])
        kernel_panels(panels, out / "fig3_K.png")
    return SyntheticResult(df)
