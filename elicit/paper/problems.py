"""What one run of an experiment is: its data, model settings and simulated expert.

A sweep (:mod:`elicit.harness.sweep`) asks a picklable *maker* ``make_problem(seed, run)`` for
each run's :class:`RunProblem`; worker processes rebuild the runs from the maker's few
settings. Two makers:

* :class:`SyntheticMaker`: the paper's synthetic data (Sec. 4.1, :mod:`elicit.paper.synthetic`)
  with learned tau2 and an oracle that knows the feature groups;
* :class:`RealDataMaker`: Amazon and Yelp review ratings (Sec. 4.2), or any review corpus
  (:mod:`elicit.paper.sources`). One run is built from the bag-of-words matrix (the paper's:
  :func:`elicit.data.load_dataset`, 337 Amazon / 258 Yelp keywords) by
  :func:`elicit.data.prepare_run`: 100 training and 900 test reviews, the rest the expert
  set, inputs standardised with the statistics of all 1000 model reviews (``"model"``, the
  default) or of the 100 training reviews (``"train"``, the paper's literal reading). The
  simulated expert is a LASSO fitted on the expert set
  (:class:`~elicit.paper.lasso_expert.LassoExpert`, rule ``"target"``: about 40 nonzero
  weights, ~780 answerable pairs). The model has a fixed tau2 (the paper's 0.01, or a
  cross-validated one per run), asks only answerable pairs (the paper drops "don't know"
  pairs) from a random pool of 400 per sequential round, and its test MSE is on the original
  rating scale (the training mean is added back to the predictions).

Seeds. Run ``r`` of an experiment with seed ``s`` draws its synthetic data from
``SeedSequence([s, r])``, and splits the real data with ``SeedSequence([s, r])``
(:func:`elicit.data.sources.split_seed`), so the sweep, the baselines, the tau2
cross-validation, the Table 1 sample-addition loops and the benchmark all see the same
split. Every other random choice of a run has its own stream ``SeedSequence([s, r, tag])``
(:func:`run_stream`, tags below), so no result depends on what else ran before it in the same
process.

This module also fits a real-data run's *no-feedback model* (no expert answers, fixed tau2),
the start of the tau2 cross-validation and of the Table 1 loops.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from elicit.data import RunData
from elicit.data.metafeatures import DEFAULT_META_DIM
from elicit.data.sources import DataSource, as_source, check_standardize, file_sha256
from elicit.elicitation.answers import Expert, GroupOracle, SignOracle
from elicit.elicitation.elicitor import Elicitor
from elicit.engines import get_engine
from elicit.engines.base import Engine
from elicit.errors import ElicitError
from elicit.model.posterior import NIGPosterior
from elicit.model.result import MAPResult
from elicit.model.spec import Hyper, ModelData
from elicit.paper.lasso_expert import RULES, LassoExpert
from elicit.paper.synthetic import make_synthetic
from elicit.prior.setup import fixed_hyper, no_feedback_data

#: The paper's fixed prior scale on real data (found there by cross-validation).
PAPER_TAU2 = 0.01
#: The paper's random pool of candidate pairs per sequential round.
POOL_SIZE = 400

# Tags of the per-run streams SeedSequence([seed, run, tag]). They stay >= 1000 to keep clear
# of the sweep's SeedSequence([seed, run, strategy, 7]); the values are part of every stored
# result, so they never change.
#: Table 1 sample loops: ``STREAM_SAMPLES + k`` for method k of ``SAMPLE_METHODS``.
STREAM_SAMPLES = 1000
#: The fold split of the tau2 cross-validation.
STREAM_TAU2_CV = 2000
#: The CV folds of the regression baselines.
STREAM_BASELINES = 3000
#: The candidate pools of ``elicit bench`` on a real problem.
STREAM_BENCH = 4000


@dataclass
class RunProblem:
    """One run's data: training and test sets, meta-features and the simulated expert.

    ``y_offset`` is added to the predictions before the test MSE (real data: the training
    mean, as ``y`` is centred); ``candidates`` are the pairs that may be asked (default all)
    and ``pool_size`` the sequential strategy's random pool (default the elicitor's).
    """

    X: np.ndarray
    y: np.ndarray
    U: np.ndarray
    X_test: np.ndarray
    y_test: np.ndarray
    expert: Expert
    hyper: Hyper
    y_offset: float = 0.0
    candidates: np.ndarray | None = None
    pool_size: int | None = None
    extra: dict = field(default_factory=dict)

    def mse(self, elicitor: Elicitor) -> float:
        """Test MSE of the elicitor's current posterior predictive mean."""
        return elicitor.posterior().mse(self.X_test, self.y_test, self.y_offset)


def run_stream(seed: int, run: int, tag: int) -> np.random.SeedSequence:
    """The random stream ``tag`` of run ``run`` (see the module docstring)."""
    return np.random.SeedSequence([int(seed), int(run), int(tag)])


# --------------------------------------------------------------------------------------------
# Synthetic data
# --------------------------------------------------------------------------------------------

def synthetic_problem(seed: int, run: int, n_train: int = 20) -> RunProblem:
    """Run ``run`` of the synthetic experiment (learned tau2, group oracle)."""
    sd = make_synthetic(np.random.default_rng(np.random.SeedSequence([seed, run])),
                        n_train=n_train)
    return RunProblem(sd.X, sd.y, sd.U, sd.X_test, sd.y_test, GroupOracle(sd.groups),
                      Hyper(variant="learned"), extra={"K_opt": sd.K_opt})


class SyntheticMaker:
    """A picklable ``make_problem(seed, run)`` of the synthetic experiment.

    Parameters
    ----------
    n_train
        Training samples per run (paper: 20; the authors' code: 15).
    """

    def __init__(self, n_train: int = 20) -> None:
        self.n_train = int(n_train)

    def __call__(self, seed: int, run: int) -> RunProblem:
        return synthetic_problem(seed, run, n_train=self.n_train)


#: Arrays every problem file of ``elicit synthetic --problems DIR`` holds.
PROBLEM_ARRAYS = ("X", "y", "U", "X_test", "y_test")


class ProblemsDir:
    """A picklable ``make_problem(seed, run)`` over a user's simulated problems.

    ``folder`` holds one ``.npz`` per run, taken in file-name order: ``X`` (n x p), ``y`` (n),
    ``U`` (p x d), ``X_test``, ``y_test`` and either ``groups`` (the oracle's feature groups,
    :class:`~elicit.elicitation.answers.GroupOracle`; a negative group is "don't know") or
    ``beta`` (similar when the signs agree, :class:`~elicit.elicitation.answers.SignOracle`).
    The model is the synthetic experiment's (learned tau2); ``seed`` only seeds the query
    streams, since the data are the files'.
    """

    def __init__(self, folder: str | os.PathLike) -> None:
        self.folder = os.fspath(folder)
        self.files = sorted(str(f) for f in Path(self.folder).glob("*.npz"))
        if not Path(self.folder).is_dir():
            raise ElicitError(f"--problems {self.folder}: no such folder")
        if not self.files:
            raise ElicitError(f"--problems {self.folder}: no .npz files; give one per run with "
                              f"{', '.join(PROBLEM_ARRAYS)} and groups or beta")

    def __len__(self) -> int:
        return len(self.files)

    def sha256(self) -> str:
        """One SHA-256 of the files' names and contents, in run order (a sweep's
        ``config.json`` records it: other problems in the folder are other runs)."""
        h = hashlib.sha256()
        for f in self.files:
            h.update(f"{Path(f).name}\0{file_sha256(f)}\0".encode())
        return h.hexdigest()

    def __call__(self, seed: int, run: int) -> RunProblem:
        if not 0 <= run < len(self.files):
            raise ElicitError(f"--problems {self.folder} holds {len(self.files)} problems; "
                              f"run {run} has none (use --runs {len(self.files)} or fewer)")
        path = self.files[run]
        try:
            with np.load(path, allow_pickle=False) as z:
                arrays = {k: np.asarray(z[k]) for k in z.files}
        except (OSError, ValueError) as exc:
            raise ElicitError(f"{path}: not a numpy .npz file ({exc})") from None
        missing = [k for k in PROBLEM_ARRAYS if k not in arrays]
        if missing or not ({"groups", "beta"} & set(arrays)):
            need = missing + ([] if {"groups", "beta"} & set(arrays) else ["groups or beta"])
            raise ElicitError(f"{path} lacks {', '.join(need)} (it has "
                              f"{', '.join(sorted(arrays)) or 'nothing'})")
        labels = arrays["groups"] if "groups" in arrays else arrays["beta"]
        p = np.shape(arrays["X"])[1] if np.ndim(arrays["X"]) == 2 else -1
        if np.size(labels) != p:
            raise ElicitError(f"{path}: {'groups' if 'groups' in arrays else 'beta'} has "
                              f"{np.size(labels)} entries but X has {p} features")
        expert: Expert = (GroupOracle(labels) if "groups" in arrays else SignOracle(labels))
        return RunProblem(arrays["X"], arrays["y"], arrays["U"], arrays["X_test"],
                          arrays["y_test"], expert, Hyper(variant="learned"),
                          extra={"file": Path(path).name})


# --------------------------------------------------------------------------------------------
# Real data: Amazon, Yelp or any review corpus
# --------------------------------------------------------------------------------------------

def make_expert(rd: RunData, rule: str = "target", n_nonzero: int = 40) -> LassoExpert:
    """The LASSO expert of a run (fitted on its expert set)."""
    if rule not in RULES:
        raise ElicitError(f"unknown LASSO expert rule {rule!r}: use one of {', '.join(RULES)}")
    return LassoExpert(rd.X_expert, rd.y_expert, rule=rule, n_nonzero=n_nonzero,
                       random_state=int(rd.seed or 0) % (2**31))


def realdata_problem(dataset: str | DataSource, seed: int, run: int,
                     data_dir: str | os.PathLike | None = None, tau2: float = PAPER_TAU2,
                     pool_size: int = POOL_SIZE, expert_rule: str = "target",
                     n_nonzero: int = 40, standardize: str = "model",
                     meta_features: str | os.PathLike = "counts",
                     meta_dim: int = DEFAULT_META_DIM) -> RunProblem:
    """One run of the real-data elicitation experiment, for :func:`elicit.harness.sweep.sweep`.

    Parameters
    ----------
    dataset
        ``"amazon"``, ``"yelp"`` or a :class:`~elicit.paper.sources.DataSource` (a corpus).
    seed, run
        The sweep seed and the run index; the split uses :func:`elicit.data.sources.split_seed`.
    data_dir
        Data directory of the paper's matrices (else :func:`elicit.data.resolve_data_dir`'s
        search order).
    tau2
        The fixed prior scale tau^2 (paper: 0.01).
    pool_size
        Random candidate pool per sequential round (paper: 400).
    expert_rule, n_nonzero
        How the LASSO expert chooses its penalty (see :mod:`elicit.paper.lasso_expert`).
    standardize
        ``"model"`` or ``"train"`` (:meth:`elicit.data.sources.DataSource.run`).
    meta_features, meta_dim
        The meta-features U: ``"counts"`` (default, the paper's), ``"ppmi"``, ``"lsa"`` or a
        file, and the embedding dimensions (:meth:`elicit.data.sources.DataSource.run`).

    Returns
    -------
    RunProblem
        Training data (standardised X, centred y), meta-features U, test set on the original
        scale with ``y_offset`` = the training mean, the LASSO expert, its answerable pairs as
        the candidates, and ``extra`` with the expert's summary and the run's split seed.
    """
    src = as_source(dataset, data_dir)
    rd = src.run(seed, run, standardize=standardize, meta_features=meta_features,
                  meta_dim=meta_dim)
    return problem_from_run(rd, tau2,
                            pool_size, expert_rule, n_nonzero, label=f"{src.name} run {run}")


def problem_from_run(rd: RunData, tau2: float = PAPER_TAU2, pool_size: int = POOL_SIZE,
                     expert_rule: str = "target", n_nonzero: int = 40,
                     label: str = "the run", expert: LassoExpert | None = None) -> RunProblem:
    """The elicitation problem of a prepared run (:func:`realdata_problem`'s second half).

    ``label`` names the run in the error raised when the expert knows too few keywords.
    ``expert`` is the run's :func:`make_expert` if the caller has fitted it already.
    """
    if not (np.isfinite(tau2) and tau2 > 0):
        raise ElicitError(f"tau2 must be a positive number, got {tau2!r}")
    if expert is None:
        expert = make_expert(rd, expert_rule, n_nonzero)
    cands = expert.answerable_pairs()
    if len(cands) == 0:
        raise ElicitError(f"{label}: the LASSO expert knows fewer than two "
                          "keywords, so there is no answerable pair to ask")
    return RunProblem(
        rd.X_train, rd.y_train, rd.U, rd.X_test, rd.y_test, expert,
        Hyper(variant="fixed", tau2=float(tau2)), y_offset=rd.y_mean, candidates=cands,
        pool_size=pool_size,
        extra={"expert": expert.summary(), "split_seed": rd.seed, "tau2": float(tau2),
               "standardize": rd.standardize, "meta_features": rd.meta_features,
               "meta_dim": rd.meta_dim})


class RealDataMaker:
    """A picklable ``make_problem(seed, run)`` of the real-data experiment.

    Sweeps run in worker processes, which rebuild each run from these few settings; the data
    set itself is loaded once per process (:meth:`~elicit.paper.sources.DataSource.load`).

    Parameters
    ----------
    dataset
        ``"amazon"``, ``"yelp"`` or a :class:`~elicit.paper.sources.DataSource`.
    data_dir
        The data directory of the paper's matrices (resolved here, in the parent process).
    tau2
        A fixed tau^2 for every run, or a mapping run -> tau^2 (``--tau2 cv``).
    pool_size, expert_rule, n_nonzero, standardize, meta_features, meta_dim
        As in :func:`realdata_problem`.
    """

    def __init__(self, dataset: str | DataSource, data_dir: str | os.PathLike | None = None,
                 tau2: float | Mapping[int, float] = PAPER_TAU2, pool_size: int = POOL_SIZE,
                 expert_rule: str = "target", n_nonzero: int = 40,
                 standardize: str = "model", meta_features: str | os.PathLike = "counts",
                 meta_dim: int = DEFAULT_META_DIM) -> None:
        self.source = as_source(dataset, data_dir)
        self.dataset = self.source.name
        self.tau2 = dict(tau2) if isinstance(tau2, Mapping) else float(tau2)
        self.pool_size = int(pool_size)
        self.expert_rule = expert_rule
        self.n_nonzero = int(n_nonzero)
        self.standardize = check_standardize(standardize)
        self.meta_features = os.fspath(meta_features)
        self.meta_dim = int(meta_dim)

    def tau2_for(self, run: int) -> float:
        """The tau^2 of run ``run``."""
        if isinstance(self.tau2, dict):
            if run not in self.tau2:
                raise ElicitError(f"no tau2 chosen for run {run}")
            return float(self.tau2[run])
        return self.tau2

    def __call__(self, seed: int, run: int) -> RunProblem:
        return realdata_problem(self.source, seed, run, tau2=self.tau2_for(run),
                                pool_size=self.pool_size, expert_rule=self.expert_rule,
                                n_nonzero=self.n_nonzero, standardize=self.standardize,
                                meta_features=self.meta_features, meta_dim=self.meta_dim)


# --------------------------------------------------------------------------------------------
# The no-feedback model of a real-data run
# --------------------------------------------------------------------------------------------

def initial_fit(rd: RunData, tau2: float = PAPER_TAU2, engine: str | Engine = "numpy",
                model: str = "paper", coupled: np.ndarray | None = None,
                ) -> tuple[ModelData, MAPResult, float]:
    """The no-feedback model of a run (``model``, coupled set ``coupled``): its data, MAP and
    test MSE."""
    eng = engine if isinstance(engine, Engine) else get_engine(engine, "fixed")
    data = no_feedback_data(rd.X_train, rd.y_train, rd.U, fixed_hyper(tau2, model), coupled)
    fit = eng.fit(data)
    return data, fit, NIGPosterior.from_map(data, fit).mse(rd.X_test, rd.y_test, rd.y_mean)
