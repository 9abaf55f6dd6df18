"""The real-data experiment on the review ratings of Amazon, Yelp or any corpus (paper Sec.
4.2): :func:`run_realdata`, its runs :mod:`elicit.paper.real_problem`'s, measured against
:mod:`elicit.paper.runinfo`'s baselines and reference lines.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from elicit.elicitation.kinds import PAPER_QUESTIONS, get_kind, parse_questions
from elicit.elicitation.strategies import STRATEGY_REGISTRY
from elicit.harness.cluster import cluster_scope
from elicit.harness.figures import mse_curves
from elicit.harness.labels import (
    BASELINE_LABELS,
    BASELINES,
    LABELS,
    REFERENCE_LABELS,
    ceiling_label,
)
from elicit.harness.store import SweepStore
from elicit.harness.sweep import questions_frame, run_sweep
from elicit.internal.io import write_text_atomic
from elicit.internal.locks import hold_folder
from elicit.model.spec import check_size
from elicit.model.variants import get_model
from elicit.paper.configs import POOL_LABELS, RealDataConfig
from elicit.paper.real_problem import RealDataMaker
from elicit.paper.runinfo import ensure_runinfo, reference_rows, runinfo_frame, tau2_cv_frame


@dataclass
class RealDataResult:
    """What :func:`run_realdata` wrote: ``mse.csv``'s rows, the baselines' and reference
    lines' mean test MSEs, each run's tau^2 and CV choice, each run's polarity ``auc`` of its
    meta-features, and with kinds besides pairs each one's mean number per run and strategy."""

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
    questions: str = ""
    feature_questions: dict[str, dict[str, float]] = field(default_factory=dict)

    def summary(self) -> str:
        """Initial, final and reference test MSEs, the baselines and the tau^2 choices."""
        curves = self.mse[self.mse.strategy.isin(list(STRATEGY_REGISTRY))]
        init = curves[curves.n_feedback == 0].groupby("run").mse.first().mean()
        last = int(curves.n_feedback.max())
        final = curves[curves.n_feedback == last].groupby("strategy").mse.mean()
        asked = f"; {self.questions}" if self.questions else ""
        lines = [f"{self.dataset} ({self.standardize} standardisation{asked}): mean initial "
                 f"test MSE {init:.3f}; after {last} answers: "
                 + ", ".join(f"{k} {v:.3f}" for k, v in final.items()),
                 "reference lines: " + ", ".join(f"{REFERENCE_LABELS[k]} {v:.3f}"
                                                 for k, v in self.references.items()),
                 "baselines: " + ", ".join(f"{k} {v:.3f}" for k, v in self.baselines.items())]
        vals, counts = np.unique(list(self.tau2_cv.values()), return_counts=True)
        cv = ", ".join(f"{v:g} ({c} runs)" for v, c in zip(vals, counts))
        lines.append(f"tau2 chosen by CV: {cv}" if self.tau2_is_cv
                     else f"tau2 fixed at {next(iter(self.tau2.values())):g}; the CV would "
                          f"choose {cv}")
        if self.feature_questions:
            # the whole curve, not only its end: a strategy that helps early counts
            mean = curves[curves.n_feedback > 0].groupby("strategy").mse.mean()
            lines.append(f"averaged over answers 1..{last}: "
                         + ", ".join(f"{k} {v:.3f}" for k, v in mean.items()))
            lines += [f"{get_kind(kind).plural} asked (mean per run): "
                      + ", ".join(f"{s} {v:.1f}" for s, v in counts.items())
                      for kind, counts in self.feature_questions.items()]
        aucs = np.array([v for v in self.auc.values() if np.isfinite(v)])
        if aucs.size:
            lines.append(f"meta-features {self.meta_features}: mean polarity AUC {aucs.mean():.3f} "
                         f"over {aucs.size} runs (0.5 = no signal; groups: the LASSO expert's "
                         "signs)")
        return "\n".join(lines)


def run_realdata(cfg: RealDataConfig, out: str | Path, progress: bool = True) -> RealDataResult:
    """The paper's real-data experiment on one data set (``elicit realdata``) into ``out`` (its
    files: ``docs/realdata.md``, "Outputs and how the folders connect")."""
    out = Path(out)
    with cluster_scope(cfg.cluster):
        # Read the data (its keywords checked first) and run 0's inputs before config.json is
        # written: a mistake in the input must not leave a folder refusing the corrected rerun.
        cfg.data.check_keywords(check_size, cfg.meta_features, cfg.meta_dim)
        cfg.data.check_keywords(check_size, cfg.meta_features, cfg.meta_dim, cfg.run_data(0))
        store = SweepStore.open(out, cfg.to_json())

        try:  # the runs' baselines, reference lines and tau2 CV: the sweep needs each tau2
            infos = ensure_runinfo(store, cfg, progress)
        except BaseException:  # Ctrl-C in a notebook too: let others in (run_sweep: at its end)
            hold_folder(store.folder, hold=False)
            raise
        run_tau2 = {int(i["run"]): float(i["tau2"]) for i in infos}
        write_text_atomic(out / "tau2_cv.csv", tau2_cv_frame(infos).to_csv(index=False))
        write_text_atomic(out / "runinfo.csv", runinfo_frame(cfg.name, infos).to_csv(index=False))

        maker = RealDataMaker(cfg, run_tau2 if cfg.fixed_tau2 is None else None)
        sweep_cfg = cfg.sweep_config()
        df = run_sweep(maker, sweep_cfg, store, progress)
        asked = questions_frame(store, sweep_cfg)
        write_text_atomic(out / "questions.csv", asked.to_csv(index=False))
        df = pd.concat([df, reference_rows(cfg.name, infos)], ignore_index=True)
        write_text_atomic(out / "mse.csv", df.to_csv(index=False))

        bl = {BASELINE_LABELS[b]: float(df[df.strategy == b].mse.mean()) for b in BASELINES}
        refs = {r: float(df[df.strategy == r].mse.mean()) for r in REFERENCE_LABELS}
        n_ans = float(np.mean([i["n_answerable"] + i.get("n_feature_answers", 0) for i in infos]))
        name = cfg.name
        mse_curves(df, [out / f"fig5_{name}.png", out / f"fig5_{name}.pdf"],
                   title=f"{LABELS.get(name, name)} ({cfg.standardize} standardisation"
                         f"{questions_note(cfg)})",
                   baselines=bl, references={REFERENCE_LABELS["mean"]: refs["mean"],
                                             ceiling_label(n_ans): refs["ceiling"],
                                             REFERENCE_LABELS["yardstick"]: refs["yardstick"]})
        kinds = [k for k in parse_questions(cfg.settings.questions) if k not in PAPER_QUESTIONS]
        features = {k: {s: float(np.sum(asked[asked.strategy == s].kind == k) / cfg.runs)
                        for s in sweep_cfg.strategies} for k in kinds}
        meta = store.settings
        label_mf = (f"{cfg.meta_features} {cfg.meta_dim}" if meta["meta_dim"] else
                    Path(str(cfg.meta_features)).name if meta["meta_features"] == "file"
                    else str(cfg.meta_features))
        return RealDataResult(name, df, bl, refs, run_tau2,
                              {int(i["run"]): float(i["tau2_cv_choice"]) for i in infos},
                              cfg.fixed_tau2 is None, str(cfg.standardize),
                              {int(i["run"]): float(i["auc"]) for i in infos}, label_mf,
                              questions_note(cfg).lstrip("; "), features)


def questions_note(cfg: RealDataConfig) -> str:
    """``"; questions both, pool: ..."`` unless the sweep asks the paper's questions; a model
    whose start uses the expert's judgeable set J says so (pair questions only)."""
    if get_model(model := str(cfg.settings.model)).known_coupling and cfg.pool == "paper":
        return f"; {model}: the start uses the expert's judgeable set J"
    if parse_questions(cfg.settings.questions) == PAPER_QUESTIONS and cfg.pool == "paper":
        return ""
    return f"; questions {cfg.settings.questions}, pool: {POOL_LABELS[str(cfg.pool)]}"
