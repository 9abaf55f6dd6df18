"""The paper's synthetic experiment (Afrabandpey et al. 2019, Sec. 4.1, Figs. 3-4): the data
of :func:`elicit.model.simulate.make_synthetic`, answered by an oracle that knows the groups.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from elicit.elicitation.answers import GroupOracle
from elicit.elicitation.kinds import PAPER_QUESTIONS
from elicit.elicitation.strategies import STRATEGY_REGISTRY
from elicit.harness.figures import kernel_panels
from elicit.harness.problem import ProblemsDir, RunProblem
from elicit.harness.store import SweepStore
from elicit.harness.sweep import load_part, sweep
from elicit.model.kernel import kernel
from elicit.model.simulate import make_synthetic
from elicit.model.spec import Hyper, all_pairs
from elicit.paper.configs import SyntheticConfig, check_pool


def synthetic_problem(seed: int, run: int, n_train: int = 20, irrelevant: int = 0,
                      pool: str = "paper") -> RunProblem:
    """Run ``run`` of the synthetic experiment (data from ``SeedSequence([seed, run])``);
    ``irrelevant`` features have the true weight 0; the candidates with ``pool="paper"`` are
    the oracle's answerable pairs (all pairs in the paper's case)."""
    sd = make_synthetic(np.random.default_rng(np.random.SeedSequence([seed, run])),
                        n_train=n_train, irrelevant=irrelevant)
    candidates = None
    if pool == "paper" and np.any(sd.groups < 0):
        relevant = np.flatnonzero(sd.groups >= 0)
        candidates = relevant[all_pairs(len(relevant))]
    return RunProblem(sd.X, sd.y, sd.U, sd.X_test, sd.y_test, GroupOracle(sd.groups, sd.beta),
                      Hyper(variant="learned"), candidates=candidates,
                      extra={"K_opt": sd.K_opt, "beta": sd.beta})


class SyntheticMaker:
    """A picklable ``make_problem(seed, run)``: :func:`synthetic_problem`."""

    def __init__(self, n_train: int = 20, irrelevant: int = 0, pool: str = "paper") -> None:
        self.n_train = int(n_train)
        self.irrelevant = int(irrelevant)
        self.pool = check_pool(pool, PAPER_QUESTIONS)

    def settings(self) -> dict:
        """What a sweep's ``config.json`` records about the problems."""
        return {"n_train": self.n_train, "irrelevant": self.irrelevant, "pool": self.pool}

    def __call__(self, seed: int, run: int) -> RunProblem:
        return synthetic_problem(seed, run, n_train=self.n_train, irrelevant=self.irrelevant,
                                 pool=self.pool)


@dataclass
class SyntheticResult:
    """What :func:`run_synthetic` wrote: the rows of ``mse.csv``."""

    mse: pd.DataFrame

    def summary(self) -> str:
        """The mean test MSE of each strategy after the last round."""
        df = self.mse
        curves = df[df.strategy.isin(list(STRATEGY_REGISTRY))]
        final = curves[curves.n_feedback == curves.n_feedback.max()].groupby("strategy").mse
        return (f"mean test MSE after {int(curves.n_feedback.max())} answers: "
                + ", ".join(f"{k} {v:.3f}" for k, v in final.mean().items())
                + f"; predicting the mean: {df[df.strategy == 'mean'].mse.mean():.3f}")


def run_synthetic(cfg: SyntheticConfig, out: str | Path,
                  progress: bool = True) -> SyntheticResult:
    """The paper's synthetic experiment (``elicit synthetic``) into ``out``: the files of
    ``docs/simulations.md`` and ``fig3_K.png`` (K_opt beside run 0's learned kernel at
    :data:`~elicit.paper.configs.FIG3_ROUNDS`; built-in generator only)."""
    maker: SyntheticMaker | ProblemsDir = (
        SyntheticMaker(cfg.n_train, cfg.irrelevant, str(cfg.pool)) if cfg.problems is None
        else ProblemsDir(cfg.problems))
    if cfg.problems is not None:
        # every file checked before config.json is written: a mistake in one must not leave a
        # folder that refuses the corrected rerun
        for run in range(cfg.runs or 0):
            maker(cfg.settings.seed, run)
    store = SweepStore.open(out, cfg.to_json())
    sweep_cfg = cfg.sweep_config()
    df = sweep(maker, sweep_cfg, store, progress=progress)
    if "sequential" in sweep_cfg.strategies and cfg.problems is None:
        prob = maker(cfg.settings.seed, 0)
        gammas = load_part(store, sweep_cfg, "sequential", 0)["gammas"]
        panels = {"K_opt": prob.extra["K_opt"]}
        panels.update({f"{t} answers": kernel(prob.U, gammas[str(t)])
                       for t in sweep_cfg.snapshots if str(t) in gammas})
        kernel_panels(panels, store.folder / "fig3_K.png")
    return SyntheticResult(df)
