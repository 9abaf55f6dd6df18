"""One run of the real-data experiment (paper Sec. 4.2) as a problem for a sweep: its split
(``docs/realdata.md``), its simulated expert, a :class:`~elicit.paper.lasso_expert.LassoExpert`
fitted on the expert set, and a fixed tau2 per run.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Mapping
from dataclasses import replace

import numpy as np

from elicit.data import RunData
from elicit.engines import get_engine
from elicit.engines.base import Engine
from elicit.errors import ElicitError
from elicit.harness.problem import STREAM_TAU2_CV, RunProblem, Tau2Again, run_stream
from elicit.internal.memo import Memo
from elicit.model.posterior import NIGPosterior
from elicit.model.result import MAPResult
from elicit.model.spec import Hyper, ModelData
from elicit.model.variants import get_model
from elicit.paper.configs import PAPER_TAU2, RealDataConfig
from elicit.paper.lasso_expert import LassoExpert
from elicit.prior.setup import fixed_hyper, no_feedback_data
from elicit.prior.tau2 import SWEEP_TAU2_GRID, check_tau2, cv_tau2


def make_expert(rd: RunData, rule: str = "target", n_nonzero: int = 40,
                memo: str | os.PathLike | None = None) -> LassoExpert:
    """The LASSO expert of a run, shared through the folder ``memo`` if given (every sweep
    of a data set's runs has the same expert; the weights come back to the last bit)."""
    state = int(rd.seed or 0) % (2**31)

    def fit() -> LassoExpert:
        return LassoExpert(rd.X_expert, rd.y_expert, rule=rule, n_nonzero=n_nonzero,
                           random_state=state)

    if memo is None:
        return fit()

    def weights() -> dict:
        expert = fit()
        return {"coef": expert.coef_.tolist(), "alpha": expert.alpha_}

    # (the memo's key holds scikit-learn's version with the code's)
    got = Memo(memo)("lasso_expert", {"X": rd.X_expert, "y": rd.y_expert, "rule": rule,
                                      "n_nonzero": n_nonzero, "random_state": state}, weights)
    return LassoExpert.from_coef(np.array(got["coef"], dtype=float), got["alpha"], rule=rule,
                                 n_nonzero=n_nonzero, random_state=state)


def run_setup(cfg: RealDataConfig, run: int) -> tuple[RunData, LassoExpert, np.ndarray | None]:
    """Run ``run``'s data, its LASSO expert and, for the known-coupling models with
    ``cfg.pool`` ``"paper"``, the expert's answerable pairs that make up the coupled set J
    (else None)."""
    rd = cfg.run_data(run)
    expert = make_expert(rd, cfg.expert_rule, cfg.expert_nonzero, cfg.memo)
    known = get_model(str(cfg.settings.model)).known_coupling
    return rd, expert, expert.answerable_pairs() if known and cfg.pool == "paper" else None


def _run_tau2(cfg: RealDataConfig, tau2: float | None) -> float:
    tau2 = cfg.fixed_tau2 if tau2 is None else tau2
    if tau2 is None:
        raise ElicitError("the configuration chooses tau2 per run by CV (its runinfo "
                          "record); give the run's tau2")
    return float(check_tau2(tau2, modes=()))


def run_cv_tau2(cfg: RealDataConfig, run: int, rd: RunData, cands: np.ndarray | None,
                relevance: np.ndarray | None = None, gamma: np.ndarray | None = None,
                ) -> tuple[float, dict[float, float]]:
    """The CV choice of tau^2 of run ``run`` (of ``run_setup``) and every CV error; chosen again
    (:class:`~elicit.harness.problem.Tau2Again`): with the relevance classes answered so far
    and the current MAP's ``gamma``."""
    return cv_tau2(rd.X_train, rd.y_train, rd.U, SWEEP_TAU2_GRID,
                   rng=np.random.default_rng(run_stream(cfg.settings.seed, run, STREAM_TAU2_CV)),
                   model=str(cfg.settings.model),
                   candidates=cands if cands is not None and len(cands) else None,
                   relevance=relevance, gamma=gamma)


def _tau2_again(cfg: RealDataConfig, run: int, rd: RunData, relevance: np.ndarray,
                gamma: np.ndarray) -> float:
    return run_cv_tau2(cfg, run, rd, None, relevance, gamma)[0]


def problem_from_run(rd: RunData, cfg: RealDataConfig, run: int, tau2: float | None = None,
                     expert: LassoExpert | None = None) -> RunProblem:
    """:func:`realdata_problem` of run ``run`` prepared as ``rd`` (``expert`` if fitted)."""
    tau2 = _run_tau2(cfg, tau2)
    if expert is None:
        expert = make_expert(rd, cfg.expert_rule, cfg.expert_nonzero, cfg.memo)
    cands = expert.answerable_pairs() if cfg.pool == "paper" else None  # None: every pair
    if cands is not None and len(cands) == 0:
        raise ElicitError(f"{cfg.name} run {run}: the LASSO expert knows fewer than two "
                          "keywords, so there is no answerable pair to ask")
    return RunProblem(
        rd.X_train, rd.y_train, rd.U, rd.X_test, rd.y_test, expert,
        Hyper(variant="fixed", tau2=tau2, model=str(cfg.settings.model)), y_offset=rd.y_mean,
        candidates=cands, pool_size=cfg.settings.pool_size,
        extra={"expert": expert.summary(), "split_seed": rd.seed, "tau2": tau2,
               "standardize": rd.standardize, "meta_features": rd.meta_features,
               "meta_dim": rd.meta_dim},
        tau2_again=Tau2Again(cfg.tau2_again, functools.partial(_tau2_again, cfg, run, rd))
        if cfg.tau2_again else None)


def realdata_problem(cfg: RealDataConfig, run: int, tau2: float | None = None) -> RunProblem:
    """Run ``run`` of the real-data experiment ``cfg`` as a sweep's problem, with the fixed
    prior scale ``tau2`` (default ``cfg.tau2``, which must then be a number): test MSE on
    the original scale, the expert's answerable pairs as candidates with ``cfg.pool``
    ``"paper"``."""
    return problem_from_run(cfg.run_data(run), cfg, run, tau2)


class RealDataMaker:
    """A picklable ``make_problem(seed, run)`` of ``cfg``; ``tau2`` is one for every run or
    run -> tau^2 (each run's CV choice), default ``cfg.tau2``."""

    def __init__(self, cfg: RealDataConfig,
                 tau2: float | Mapping[int, float] | None = None) -> None:
        self.cfg = cfg
        self.tau2 = dict(tau2) if isinstance(tau2, Mapping) else _run_tau2(cfg, tau2)

    def settings(self) -> dict:
        """What a sweep's ``config.json`` records about the problems: the configuration's."""
        return self.cfg.to_json()

    def __call__(self, seed: int, run: int) -> RunProblem:
        cfg = self.cfg if seed == self.cfg.settings.seed else replace(self.cfg, seed=seed)
        if isinstance(self.tau2, dict) and run not in self.tau2:
            raise ElicitError(f"no tau2 chosen for run {run}")
        tau2 = float(self.tau2[run]) if isinstance(self.tau2, dict) else self.tau2
        return realdata_problem(cfg, run, tau2)


def initial_fit(rd: RunData, tau2: float = PAPER_TAU2, engine: str | Engine = "numpy",
                model: str = "paper", coupled: np.ndarray | None = None,
                ) -> tuple[ModelData, MAPResult, float]:
    """The no-feedback model of a run: its data, MAP and test MSE."""
    eng = get_engine(engine, "fixed")
    data = no_feedback_data(rd.X_train, rd.y_train, rd.U, fixed_hyper(tau2, model), coupled)
    fit = eng.fit(data)
    return data, fit, NIGPosterior.from_map(data, fit).mse(rd.X_test, rd.y_test, rd.y_mean)
