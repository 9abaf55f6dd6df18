"""The real-data experiment: review ratings of Amazon, Yelp or any corpus (paper Sec. 4.2).

:func:`run_realdata` runs the three query strategies on runs of one data set, each answered
by the run's LASSO expert (the setup of one run: :mod:`elicit.paper.problems`; where the
reviews come from: :mod:`elicit.paper.sources`), beside the LASSO, ridge and elastic-net
baselines and two reference lines of the same run (predicting the training mean, and the
model with every answerable pair answered; :mod:`elicit.paper.runinfo`). Folder layout (what
``make reproduce`` produces under ``results/``)::

    OUT/amazon/            run_realdata("amazon", OUT / "amazon"): elicit realdata
        config.json        the settings of the sweep (a rerun with other settings is refused)
        mse.csv            dataset,strategy,run,n_feedback,mse: the strategies' curves, and
                           rows with n_feedback 0 for lasso/ridge/elasticnet, mean, ceiling
        runinfo.csv        one row per run: tau2, references, baselines, no-feedback MSEs
        tau2_cv.csv        the CV choice of tau2 per run and the CV errors
        fig5_amazon.png/.pdf
        parts/amazon/...   resumable per-run results (sweep parts, runinfo)
    OUT/yelp/              the same for Yelp
    OUT/table1.csv         elicit.paper.table1.run_table1(OUT): elicit table1
    OUT/table1/            curves.csv (rnd/act MSE curves) and parts/ (resumable)

Everything is resumable: a rerun with the same settings reuses every finished run.

Defaults: inputs standardised with the statistics of all 1000 model reviews, tau^2 chosen
per run by 5-fold CV, and the paper's meta-features (the transposed training counts;
``meta_features=`` picks a PPMI or LSA embedding or a file, :mod:`elicit.data.metafeatures`).
``paper=True`` is the paper-literal configuration (training-review
statistics, tau^2 = 0.01); see ``docs/realdata.md`` for why the defaults differ.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from elicit.data.metafeatures import DEFAULT_META_DIM, EMBEDDINGS, check_meta_dim, is_builtin
from elicit.data.sources import DataSource, as_source, check_standardize, file_sha256
from elicit.elicitation.strategies import STRATEGIES
from elicit.errors import ElicitError
from elicit.harness.cluster import cluster_scope
from elicit.harness.labels import (
    BASELINE_LABELS,
    BASELINES,
    LABELS,
    REFERENCE_LABELS,
    ceiling_label,
)
from elicit.harness.sweep import SweepConfig, check_config, sweep
from elicit.model.variants import PAPER, get_model
from elicit.paper.problems import PAPER_TAU2, POOL_SIZE, RealDataMaker
from elicit.paper.runinfo import RunSettings, ensure_runinfo, reference_rows, runinfo_frame
from elicit.paper.tau2 import write_tau2_cv

#: The defaults of ``elicit realdata``: model-review statistics, tau2 by CV.
DEFAULT_STANDARDIZE = "model"
DEFAULT_TAU2 = "cv"
#: ``--paper``: the paper's literal configuration.
PAPER_SETTINGS: dict[str, float | str] = {"standardize": "train", "tau2": PAPER_TAU2}
#: ``--recommended``: the best label-free configuration of the study in
#: ``docs/beyond-the-paper.md`` (the lowest test MSE with and without answers on Amazon, Yelp
#: and the kitchen corpus): 10-dimensional PPMI keyword embeddings of the expert-set text,
#: and only the features the expert can judge coupled. Tying the threshold too lowers the
#: real-data ceilings by about 0.01 but doubles the synthetic experiment's MSE.
RECOMMENDED: dict[str, object] = {"meta_features": "ppmi", "meta_dim": 10,
                                  "model": "known-coupling", "utility_target": "predictive"}
#: what the options of RECOMMENDED are when not given
_OPTION_DEFAULTS: dict[str, object] = {"meta_features": "counts", "meta_dim": DEFAULT_META_DIM,
                                       "model": PAPER, "utility_target": "predictive"}


def resolve_recommended(recommended: bool, paper: bool, **given: object) -> dict[str, object]:
    """The meta-features, model and utility target of a sweep: ``given`` as they are, or with
    ``recommended`` the :data:`RECOMMENDED` ones; an explicit other value is an error."""
    if not recommended:
        return given
    if paper:
        raise ElicitError("--recommended and --paper are two different configurations; "
                          "give one of them")
    for key, value in given.items():
        if value != _OPTION_DEFAULTS[key] and value != RECOMMENDED[key]:
            opt = "--" + key.replace("_", "-")
            raise ElicitError(f"--recommended sets {opt} {RECOMMENDED[key]}; drop {opt} "
                              f"{value} or --recommended")
    return dict(RECOMMENDED)


def resolve_settings(paper: bool = False, standardize: str | None = None,
                     tau2: float | str | None = None) -> tuple[str, float | str]:
    """The standardisation and tau^2 of a sweep from its options.

    Parameters
    ----------
    paper
        The paper-literal configuration: ``standardize="train"``, ``tau2=0.01``.
    standardize, tau2
        Explicit choices; None takes the default (``"model"``, ``"cv"``) or, with ``paper``,
        the paper's. With ``paper``, an explicit value other than the paper's is an error.

    Returns
    -------
    standardize, tau2
    """
    tau2 = None if tau2 is None else check_tau2(tau2)
    if paper:
        for key, value in (("standardize", standardize), ("tau2", tau2)):
            if value is not None and value != PAPER_SETTINGS[key]:
                raise ElicitError(f"--paper sets --{key} {PAPER_SETTINGS[key]}; drop "
                                  f"--{key} {value} or --paper")
        return str(PAPER_SETTINGS["standardize"]), PAPER_SETTINGS["tau2"]
    return (check_standardize(standardize or DEFAULT_STANDARDIZE),
            DEFAULT_TAU2 if tau2 is None else tau2)


def meta_config(meta_features: str | os.PathLike, meta_dim: int) -> dict:
    """What ``config.json`` records about the meta-features.

    ``meta_dim`` only for an embedding (None otherwise); a file by its content hash, its
    path beside it (a path may change between reruns).
    """
    if is_builtin(meta_features):
        kind = str(meta_features)
        return {"meta_features": kind,
                "meta_dim": check_meta_dim(meta_dim) if kind in EMBEDDINGS else None}
    path = Path(meta_features)
    if not path.is_file():
        raise ElicitError(f"--meta-features {str(meta_features)!r} is neither one of counts, "
                          "ppmi, lsa nor an existing file")
    return {"meta_features": "file", "meta_features_file": str(path.resolve()),
            "meta_features_sha256": file_sha256(path), "meta_dim": None}


def check_tau2(tau2: float | str) -> float | str:
    """A positive tau^2, or ``"cv"``; else an :class:`ElicitError`."""
    if isinstance(tau2, str):
        if tau2.strip().lower() == "cv":
            return "cv"
        raise ElicitError(f"tau2 must be a positive number or 'cv', got {tau2!r}")
    if not (np.isfinite(tau2) and tau2 > 0):
        raise ElicitError(f"tau2 must be a positive number or 'cv', got {tau2!r}")
    return float(tau2)


@dataclass
class RealDataResult:
    """What :func:`run_realdata` wrote.

    Attributes
    ----------
    dataset
        The data set's label (``"amazon"``, ``"yelp"`` or a corpus name).
    mse
        The rows of ``mse.csv`` (strategy curves, baselines, reference lines).
    baselines
        Display label -> mean test MSE over runs of each baseline.
    references
        ``"mean"`` / ``"ceiling"`` -> mean test MSE over runs.
    tau2
        Run -> the tau^2 it used.
    tau2_cv
        Run -> the tau^2 the CV picked (used only with ``tau2="cv"``).
    tau2_is_cv
        Whether the runs used the CV choice.
    standardize
        ``"model"`` or ``"train"``.
    auc
        Run -> the polarity AUC of its meta-features by its LASSO expert's groups (NaN when
        the expert has keywords of one sign only).
    meta_features
        What the meta-features were: ``"counts"``, ``"ppmi 10"``, ``"lsa 25"``, a file name.
    """

    dataset: str
    mse: pd.DataFrame
    baselines: dict[str, float]
    references: dict[str, float]
    tau2: dict[int, float]
    tau2_cv: dict[int, float]
    tau2_is_cv: bool
    standardize: str
    auc: dict[int, float] = field(default_factory=dict)
    meta_features: str = "counts"

    def summary(self) -> str:
        """Initial, final and reference test MSEs, the baselines and the tau^2 choices."""
        curves = self.mse[self.mse.strategy.isin(STRATEGIES)]
        init = curves[curves.n_feedback == 0].groupby("run").mse.first().mean()
        last = int(curves.n_feedback.max())
        final = curves[curves.n_feedback == last].groupby("strategy").mse.mean()
        ref = self.references
        lines = [f"{self.dataset} ({self.standardize} standardisation): mean initial test MSE "
                 f"{init:.3f}; after {last} answers: "
                 + ", ".join(f"{k} {v:.3f}" for k, v in final.items()),
                 f"reference lines: predict the mean {ref['mean']:.3f}, all answers (ceiling) "
                 f"{ref['ceiling']:.3f}",
                 "baselines: " + ", ".join(f"{k} {v:.3f}" for k, v in self.baselines.items())]
        vals, counts = np.unique(list(self.tau2_cv.values()), return_counts=True)
        cv = ", ".join(f"{v:g} ({c} runs)" for v, c in zip(vals, counts))
        lines.append(f"tau2 chosen by CV: {cv}" if self.tau2_is_cv
                     else f"tau2 fixed at {next(iter(self.tau2.values())):g}; the CV would "
                          f"choose {cv}")
        aucs = np.array([v for v in self.auc.values() if np.isfinite(v)])
        if aucs.size:
            lines.append(f"meta-features {self.meta_features}: mean polarity AUC {aucs.mean():.3f} "
                         f"over {aucs.size} runs (0.5 = no signal; groups: the LASSO expert's "
                         "signs)")
        return "\n".join(lines)


def run_realdata(dataset: str | DataSource, out: str | Path, runs: int = 50,
                 rounds: int = 100, strategies: Sequence[str] = STRATEGIES, seed: int = 0,
                 jobs: int = 1, data_dir: str | os.PathLike | None = None,
                 tau2: float | str | None = None, standardize: str | None = None,
                 paper: bool = False, pool_size: int = POOL_SIZE, expert_rule: str = "target",
                 expert_nonzero: int = 40, engine: str = "auto", utility: str = "fast",
                 refine: int = 10, progress: bool = True, cluster: str | None = None,
                 check_engine: bool = False, meta_features: str | os.PathLike = "counts",
                 meta_dim: int = DEFAULT_META_DIM, model: str = PAPER,
                 utility_target: str = "predictive",
                 recommended: bool = False) -> RealDataResult:
    """The paper's real-data experiment on one data set (``elicit realdata``).

    Parameters
    ----------
    dataset
        ``"amazon"``, ``"yelp"`` (the paper's matrices, from ``data_dir``) or a
        :class:`~elicit.paper.sources.DataSource` (any review corpus:
        :func:`~elicit.paper.sources.corpus_source`).
    out
        The output folder (layout in the module docstring).
    runs, rounds
        Runs ``0..runs-1``, each with ``rounds`` questions per strategy.
    strategies
        Query strategies to run.
    seed
        The sweep seed (every run's split and random streams derive from it).
    jobs
        Worker processes.
    data_dir
        Data directory of the paper's matrices (default: :func:`elicit.data.resolve_data_dir`'s
        search order).
    tau2
        A fixed prior scale tau^2, or ``"cv"`` (default): chosen per run by 5-fold CV of the
        no-feedback model over :data:`~elicit.paper.tau2.TAU2_GRID`.
    standardize
        ``"model"`` (default): inputs standardised with all 1000 model reviews' statistics;
        ``"train"``: with the 100 training reviews' (:func:`elicit.data.prepare_run`).
    paper
        The paper-literal configuration: ``standardize="train"``, ``tau2=0.01``
        (:func:`resolve_settings`).
    pool_size
        Random candidate pairs scored per sequential round.
    expert_rule, expert_nonzero
        How the LASSO expert picks its penalty (:mod:`elicit.paper.lasso_expert`).
    engine, utility, refine
        MAP engine and utility computation, as for :class:`~elicit.elicitation.elicitor.Elicitor`.
    progress
        Show progress bars.
    cluster
        Run every step's tasks on a Dask cluster: ``"local:N"`` or a scheduler address
        (:mod:`elicit.harness.cluster`); ``jobs`` is then ignored.
    check_engine
        Check every fit of the sweep against the numpy engine.
    meta_features, meta_dim
        The meta-features U: ``"counts"`` (default: the paper's transposed training counts),
        ``"ppmi"`` or ``"lsa"`` (a ``meta_dim``-dimensional embedding of the keywords learned
        from each run's expert-set text, no ratings), or a CSV/Parquet file indexed by
        keyword (:mod:`elicit.data.metafeatures`). Recorded in ``config.json``; each run's
        polarity AUC of U is in ``runinfo.csv`` (``auc``).
    model
        The named model (:mod:`elicit.model.variants`); ``paper`` with ``paper=True``.
    utility_target
        ``"predictive"`` or ``"params"`` (:mod:`elicit.elicitation.utility`); recorded in
        ``config.json`` (a folder without the key was made with ``"predictive"``).
    recommended
        Use the :data:`RECOMMENDED` meta-features, model and utility target (the best
        label-free configuration found, ``docs/beyond-the-paper.md``); not with ``paper``.

    Returns
    -------
    RealDataResult
        Also written: ``mse.csv``, ``runinfo.csv``, ``tau2_cv.csv``, ``config.json`` and
        ``fig5_<dataset>.png/.pdf``.
    """
    chosen = resolve_recommended(recommended, paper, meta_features=meta_features,
                                 meta_dim=meta_dim, model=model, utility_target=utility_target)
    meta_features, meta_dim = chosen["meta_features"], chosen["meta_dim"]  # type: ignore
    model, utility_target = str(chosen["model"]), str(chosen["utility_target"])
    with cluster_scope(cluster):
        return _run_realdata(dataset, Path(out), runs, rounds, strategies, seed, jobs, data_dir,
                             tau2, standardize, paper, pool_size, expert_rule, expert_nonzero,
                             engine, utility, refine, progress, check_engine, meta_features,
                             meta_dim, model, utility_target)


def _run_realdata(dataset, out: Path, runs, rounds, strategies, seed, jobs, data_dir, tau2,
                  standardize, paper, pool_size, expert_rule, expert_nonzero, engine, utility,
                  refine, progress, check_engine, meta_features, meta_dim,
                  model=PAPER, utility_target="predictive") -> RealDataResult:
    from elicit.harness.figures import mse_curves

    get_model(model)  # before any data are read
    if paper and model != PAPER:
        raise ElicitError(f"--paper runs the paper's model; drop --model {model} or --paper")
    src = as_source(dataset, data_dir)
    std, tau2 = resolve_settings(paper, standardize, tau2)
    # Read the data before config.json is written: a mistake in the input (a wrong field
    # name, too few reviews) must not leave a folder that refuses the corrected rerun.
    src.load()
    meta = meta_config(meta_features, meta_dim)
    mf = os.fspath(meta_features)
    dim = meta["meta_dim"] or DEFAULT_META_DIM
    # Build run 0's meta-features now: a file that does not match the keywords, or too few
    # expert-set reviews for an embedding, is reported before config.json is written.
    RunSettings(src, seed, std, meta_features=mf, meta_dim=dim).run_data(0)
    check_config(out, {**src.config(), "seed": seed, "rounds": rounds, "standardize": std,
                       "tau2": tau2, "pool_size": pool_size, "expert_rule": expert_rule,
                       "expert_nonzero": expert_nonzero, "engine": engine, "utility": utility,
                       "refine": refine, "model": model,
                       "utility_target": utility_target, **meta})

    # Per-run baselines, reference lines and tau2 CV: cheap next to the sweep, parallel and
    # resumable; done first so that the sweep knows each run's tau2.
    settings = RunSettings(src, seed, std, tau2, expert_rule, expert_nonzero, engine, mf, dim,
                           model)
    infos = ensure_runinfo(out, settings, runs, jobs, progress)
    run_tau2 = {int(i["run"]): float(i["tau2"]) for i in infos}
    write_tau2_cv(out, infos)
    runinfo_frame(src.name, infos).to_csv(out / "runinfo.csv", index=False)

    cfg = SweepConfig(src.name, runs, rounds, tuple(strategies), seed, engine, utility, refine,
                      jobs, check_engine=check_engine, model=model,
                      utility_target=utility_target)
    maker = RealDataMaker(src, tau2=run_tau2 if tau2 == "cv" else float(tau2),
                          pool_size=pool_size, expert_rule=expert_rule,
                          n_nonzero=expert_nonzero, standardize=std, meta_features=mf,
                          meta_dim=dim)
    df = sweep(maker, cfg, out, progress=progress)
    df = pd.concat([df, reference_rows(src.name, infos)], ignore_index=True)
    df.to_csv(out / "mse.csv", index=False)

    bl = {BASELINE_LABELS[b]: float(df[df.strategy == b].mse.mean()) for b in BASELINES}
    refs = {r: float(df[df.strategy == r].mse.mean()) for r in REFERENCE_LABELS}
    n_ans = float(np.mean([i["n_answerable"] for i in infos]))
    label = LABELS.get(src.name, src.name)
    mse_curves(df, [out / f"fig5_{src.name}.png", out / f"fig5_{src.name}.pdf"],
               title=f"{label}: mean ± s.e. over {runs} runs ({std} standardisation)",
               baselines=bl, references={REFERENCE_LABELS["mean"]: refs["mean"],
                                         ceiling_label(n_ans): refs["ceiling"]})
    label_mf = (f"{mf} {dim}" if meta["meta_dim"] else
                Path(mf).name if meta["meta_features"] == "file" else mf)
    return RealDataResult(src.name, df, bl, refs, run_tau2,
                          {int(i["run"]): float(i["tau2_cv_choice"]) for i in infos},
                          tau2 == "cv", std, {int(i["run"]): float(i["auc"]) for i in infos},
                          label_mf)
