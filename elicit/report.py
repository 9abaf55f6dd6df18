"""``results/REPORT.md``: our numbers beside the paper's."""

from __future__ import annotations

from pathlib import Path

import pandas as pd


def _final_table(df: pd.DataFrame) -> str:
    last = int(df.n_feedback.max())
    rows = ["| strategy | MSE, 0 answers | MSE, %d answers | runs |" % last, "|---|---|---|---|"]
    for strategy, g in df.groupby("strategy"):
        m0 = g[g.n_feedback == 0].mse
        mT = g[g.n_feedback == last].mse
        se = mT.std(ddof=1) / max(len(mT), 1) ** 0.5 if len(mT) > 1 else float("nan")
        rows.append(f"| {strategy} | {m0.mean():.3f} | {mT.mean():.3f} ± {se:.3f} | {len(mT)} |")
    return "\n".join(rows)


def write_report(out: Path, wall_s: float | None = None) -> Path:
    """Write ``out/REPORT.md`` from the sweeps found under ``out``."""
    out = Path(out)
    lines = ["# elicit: reproduction report", ""]
    if wall_s is not None:
        lines += [f"Wall time of the last `make reproduce` call: {wall_s / 60:.1f} min.", ""]
    syn = out / "synthetic" / "mse.csv"
    if syn.exists():
        df = pd.read_csv(syn)
        lines += [
            "## Synthetic data (paper Sec. 4.1, Figs. 3-4)", "",
            f"{df.run.nunique()} runs, test MSE on 1000 test points (mean ± s.e.).", "",
            _final_table(df), "",
            "![Fig. 4](synthetic/fig4_mse.png)", "",
            "Kernel: the true K_opt beside the learned K after 0, 10, 30 and 100 sequential "
            "answers (run 0).", "",
            "![Fig. 3](synthetic/fig3_K.png)", "",
        ]
    path = out / "REPORT.md"
    path.write_text("\n".join(lines))
    return path
