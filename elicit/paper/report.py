"""``results/REPORT.md``: our numbers beside the paper's.

The report is written from whatever the results folder holds (``make reproduce`` layout):
``synthetic/``, ``amazon/``, ``yelp/`` (``elicit realdata``) and ``table1.csv``
(``elicit table1``); a missing part is left out.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

import numpy as np
import pandas as pd

from elicit.paper.labels import BASELINES, DATASETS, LABELS, STRATEGY_ORDER
from elicit.paper.table1 import PAPER_LEVELS

#: The paper's Table 1 sample/answer counts. They could not be retrieved while writing this
#: (only the levels and initial MSEs quoted in the issue are known), so they are shown as
#: unknown rather than filled in from memory.
PAPER_TABLE1_COUNTS: dict[tuple[str, float], dict[str, float]] = {}

#: The paper's feature counts (Sec. 4.2) beside ours (docs/data.md).
FEATURES = {"amazon": (337, 340), "yelp": (258, 241)}


def _mean_se(x: pd.Series) -> str:
    x = x.dropna()
    if len(x) > 1:
        return f"{x.mean():.3f} ± {x.std(ddof=1) / np.sqrt(len(x)):.3f}"
    return f"{x.mean():.3f}"


def _final_table(df: pd.DataFrame) -> str:
    last = int(df.n_feedback.max())
    rows = [f"| strategy | MSE, 0 answers | MSE, {last} answers | runs |", "|---|---|---|---|"]
    for strategy, g in df.groupby("strategy"):
        m0 = g[g.n_feedback == 0].mse
        mT = g[g.n_feedback == last].mse
        se = mT.std(ddof=1) / max(len(mT), 1) ** 0.5 if len(mT) > 1 else float("nan")
        rows.append(f"| {strategy} | {m0.mean():.3f} | {mT.mean():.3f} ± {se:.3f} | {len(mT)} |")
    return "\n".join(rows)


def _synthetic_section(out: Path) -> list[str]:
    syn = out / "synthetic" / "mse.csv"
    if not syn.exists():
        return []
    df = pd.read_csv(syn)
    return [
        "## Synthetic data (paper Sec. 4.1, Figs. 3-4)", "",
        f"{df.run.nunique()} runs, test MSE on 1000 test points (mean ± s.e.).", "",
        _final_table(df), "",
        "![Fig. 4](synthetic/fig4_mse.png)", "",
        "Kernel: the true K_opt beside the learned K after 0, 10, 30 and 100 sequential "
        "answers (run 0).", "",
        "![Fig. 3](synthetic/fig3_K.png)", "",
    ]


def _real_section(out: Path, dataset: str) -> list[str]:
    folder = out / dataset
    path = folder / "mse.csv"
    if not path.exists():
        return []
    df = pd.read_csv(path)
    cfg = json.loads((folder / "config.json").read_text()) if (folder / "config.json").exists() \
        else {}
    curves = df[df.strategy.isin(STRATEGY_ORDER)]
    runs = curves.run.nunique()
    last = int(curves.n_feedback.max())
    init = curves[curves.n_feedback == 0].groupby("run").mse.first()
    paper_init = PAPER_LEVELS[dataset]["initial"]
    ours_p, paper_p = FEATURES[dataset]
    tau2 = cfg.get("tau2", "?")
    lines = [
        f"### {LABELS[dataset]}", "",
        f"{runs} runs x {last} answers; {ours_p} keywords (paper: {paper_p}); tau2 = {tau2}; "
        f"LASSO expert rule `{cfg.get('expert_rule', '?')}` "
        f"({cfg.get('expert_nonzero', '?')} keywords); pool {cfg.get('pool_size', '?')} pairs "
        f"per sequential round; utility `{cfg.get('utility', '?')}` "
        f"(refine {cfg.get('refine', '?')}). Test MSE on 900 test reviews, original rating "
        "scale, mean ± s.e. over runs.", "",
        "| quantity | ours | paper |", "|---|---|---|",
        f"| initial MSE (no feedback) | {_mean_se(init)} | {paper_init:.2f} |",
    ]
    for s in STRATEGY_ORDER:
        g = curves[(curves.strategy == s) & (curves.n_feedback == last)]
        if len(g):
            lines.append(f"| MSE after {last} answers, {LABELS[s]} | {_mean_se(g.mse)} | "
                         "not stated in the text (Fig. 5 only) |")
    for b in BASELINES:
        g = df[df.strategy == b]
        if len(g):
            lines.append(f"| {LABELS[b]} (100 training reviews) | {_mean_se(g.mse)} | "
                         "Fig. 5 only |")
    # How often elicitation helped, per run: a plainer view than the mean curves.
    for s in STRATEGY_ORDER:
        g = curves[curves.strategy == s].pivot(index="run", columns="n_feedback", values="mse")
        if last in g.columns:
            better = int(np.sum(g[last] < g[0]))
            lines.append(f"| runs where {LABELS[s]} lowered the MSE after {last} answers | "
                         f"{better}/{len(g)} | |")
    lines += ["", f"![Fig. 5 {LABELS[dataset]}]({dataset}/fig5_{dataset}.png)", ""]
    tcv = folder / "tau2_cv.csv"
    if tcv.exists():
        t = pd.read_csv(tcv)
        vals, counts = np.unique(t.tau2, return_counts=True)
        lines += ["tau2 chosen by 5-fold CV of the no-feedback model: "
                  + ", ".join(f"{v:g} in {c} runs" for v, c in zip(vals, counts)) + ".", ""]
    return lines


def _table1_section(out: Path) -> list[str]:
    path = out / "table1.csv"
    if not path.exists():
        return []
    t = pd.read_csv(path, dtype=str)
    lines = [
        "## Table 1: more samples instead of answers", "",
        "Mean number of added training reviews (RND: random, ACT: maximum information gain "
        "`0.5 log(1 + x' Sigma* x)`) or expert answers (SeqElc: the sequential curves above) "
        "needed to reach each MSE level, over the runs that reached it; `k/R` is how many "
        "runs reached it. `paper` rows use the paper's absolute levels; `relative` rows the "
        "paper's relative reduction (e.g. 2.18/2.26) from each run's own initial MSE, and the "
        "level shown is their mean over runs. SeqElc stops at the sweep's last round, RND/ACT "
        "at the `--samples` cap.", "",
        "| data set | level | kind | RND | ACT | SeqElc | paper RND | paper ACT | paper SeqElc |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for _, r in t.iterrows():
        cells = [f"{r[m]} ({r[m + '_reached']})" for m in ("rnd", "act", "seqelc")]
        key = (r["dataset"], round(float(r["mse_level"]), 2))
        paper = PAPER_TABLE1_COUNTS.get(key) if r["level_kind"] == "paper" else None
        pcells = ([f"{paper[m]:g}" for m in ("rnd", "act", "seqelc")] if paper
                  else ["unknown"] * 3 if r["level_kind"] == "paper" else ["—"] * 3)
        lines.append(f"| {LABELS.get(r['dataset'], r['dataset'])} | {float(r['mse_level']):.3f} "
                     f"| {r['level_kind']} | " + " | ".join(cells + pcells) + " |")
    lines += [
        "",
        "The paper's own Table 1 counts could not be retrieved for this report (the paper "
        "text was not available offline); they are marked `unknown` rather than quoted from "
        "memory. Its levels (Yelp 1.85, 1.80; Amazon 2.20, 2.18) and initial MSEs (Yelp "
        "1.88, Amazon 2.26) are from the text.", "",
    ]
    return lines


def _differences(out: Path) -> list[str]:
    """Where our real-data results differ from the paper, with the numbers that show it."""
    lines = [
        "## Where and why we differ from the paper", "",
        "- Features: the stop-word rule gives 337 Amazon and 258 Yelp keywords (paper: 340 and "
        "241; `docs/data.md`).",
        "- The LASSO expert's penalty is chosen to keep about 40 keywords (the paper's "
        "'almost 20 per group'); cross-validated penalties keep 120-180 on Amazon.",
    ]
    for dataset in DATASETS:
        path = out / dataset / "mse.csv"
        if not path.exists():
            continue
        df = pd.read_csv(path)
        curves = df[df.strategy.isin(STRATEGY_ORDER)]
        wide = {s: g.pivot(index="run", columns="n_feedback", values="mse")
                for s, g in curves.groupby("strategy")}
        any_s = next(iter(wide.values()))
        init = any_s[0]
        paper = PAPER_LEVELS[dataset]
        name = LABELS[dataset]
        below = int(np.sum(init <= max(paper["levels"])))
        lines.append(
            f"- {name}, initial MSE: ours {init.mean():.2f} (runs range {init.min():.2f}-"
            f"{init.max():.2f}), the paper's {paper['initial']:.2f}. Our random splits are "
            f"not the paper's and single splits vary a lot. In {below} of {len(init)} runs the "
            f"no-feedback model is already at or below the paper's first level "
            f"{max(paper['levels']):.2f}, so the `relative` Table 1 rows are the meaningful "
            "comparison.")
        last = int(curves.n_feedback.max())
        if last > 0 and {"random", "sequential"} <= set(wide):
            r, s = wide["random"][last], wide["sequential"][last]
            # Paired over runs: both strategies share each run's split and expert.
            diff = (r - s).dropna()
            se = float(diff.std(ddof=1) / np.sqrt(len(diff))) if len(diff) > 1 else float("nan")
            if s.mean() < r.mean() - 2 * se:
                verdict = "as in the paper, sequential elicitation beat random queries"
            elif r.mean() < s.mean() - 2 * se:
                verdict = ("unlike the paper, random queries beat sequential elicitation "
                           f"(paired difference {(s - r).mean():.3f} ± {se:.3f} s.e.)")
            else:
                verdict = "sequential and random queries were within 2 s.e. of each other"
            parts = ", ".join(f"{LABELS[k]} {v[last].mean():.3f} (lower than at 0 answers in "
                              f"{int(np.sum(v[last] < v[0]))}/{len(v)} runs)"
                              for k, v in wide.items() if last in v.columns)
            lines.append(f"- {name}, after {last} answers: {parts}; {verdict}.")
    lines += [
        "- tau2 is the paper's fixed 0.01; `elicit realdata --tau2 cv` chooses it per run by "
        "5-fold CV of the no-feedback model instead (`docs/realdata.md`).",
        "- Utilities use the fast screen + exact refinement of the best candidates, not the "
        "paper's exact refit of all 400 candidates (see `docs/benchmarks.md` for agreement).",
        "",
    ]
    return lines


def write_report(out: Path, wall_s: float | None = None,
                 step_s: Mapping[str, float] | None = None,
                 cpu_s: Mapping[str, float] | None = None, jobs: int | None = None) -> Path:
    """Write ``out/REPORT.md`` from the sweeps found under ``out``.

    Parameters
    ----------
    out
        The results folder.
    wall_s
        Wall time of the reproduce call, in seconds.
    step_s
        Wall time of each step, in seconds.
    cpu_s, jobs
        CPU time of each step (the process and its workers) and the number of worker
        processes: CPU / jobs estimates the wall time on an idle machine.
    """
    out = Path(out)
    lines = ["# elicit: reproduction report", ""]
    if wall_s is not None:
        lines += [f"Wall time of the last `make reproduce` call: {wall_s / 60:.1f} min"
                  + (" (" + ", ".join(f"{k} {v / 60:.1f} min" for k, v in step_s.items()) + ")"
                     if step_s else "") + ".", ""]
        if cpu_s:
            total = sum(cpu_s.values())
            lines += [f"CPU time: {total / 60:.1f} min ("
                      + ", ".join(f"{k} {v / 60:.1f}" for k, v in cpu_s.items()) + ")"
                      + (f"; CPU time / {jobs} jobs = {total / jobs / 60:.1f} min, the wall "
                         "time to expect on an otherwise idle machine" if jobs else "")
                      + ".", ""]
    lines += _synthetic_section(out)
    real = [ln for d in DATASETS for ln in _real_section(out, d)]
    if real:
        lines += ["## Real data: Amazon and Yelp reviews (paper Sec. 4.2, Fig. 5)", "", *real]
    lines += _table1_section(out)
    if real:
        lines += _differences(out)
    path = out / "REPORT.md"
    path.write_text("\n".join(lines))
    return path
