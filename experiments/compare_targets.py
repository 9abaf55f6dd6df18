"""Compare two sweeps of the same runs that differ only in the utility target.

Usage::

    python experiments/compare_targets.py PREDICTIVE_DIR PARAMS_DIR [--at 10,20,30]

Both folders are outputs of ``elicit synthetic`` or ``elicit realdata`` with the same seed,
runs and strategies (``--utility-target predictive`` and ``params``). For each strategy and
number of answers it prints the mean test MSE of each target and the mean ± standard error of
the paired difference params - predictive over runs (negative: the params target is better).
The runs' data and the strategies' random streams do not depend on the target, so the
random strategy's difference is exactly 0: a check that the sweeps are paired.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from elicit.cli.argtypes import OneLineParser, answer_counts


def paired_table(pred_dir: Path, params_dir: Path, at: list[int]) -> pd.DataFrame:
    """One row per strategy and number of answers: both means and the paired difference."""
    a = pd.read_csv(pred_dir / "mse.csv")
    b = pd.read_csv(params_dir / "mse.csv")
    key = ["strategy", "run", "n_feedback"]
    m = a.merge(b, on=key, suffixes=("_pred", "_params"))
    rows = []
    for strategy in ("sequential", "nonsequential", "random"):
        for n in at:
            sub = m[(m.strategy == strategy) & (m.n_feedback == n)]
            if sub.empty:
                continue
            diff = (sub.mse_params - sub.mse_pred).to_numpy()
            se = diff.std(ddof=1) / np.sqrt(len(diff)) if len(diff) > 1 else float("nan")
            rows.append({"strategy": strategy, "answers": n, "runs": len(diff),
                         "mse_predictive": sub.mse_pred.mean(),
                         "mse_params": sub.mse_params.mean(),
                         "diff_mean": diff.mean(), "diff_se": se})
    return pd.DataFrame(rows)


def main() -> None:
    ap = OneLineParser(description=__doc__.splitlines()[0])
    ap.add_argument("predictive", type=Path)
    ap.add_argument("params", type=Path)
    ap.add_argument("--at", type=answer_counts, default=(10, 20, 30),
                    help="numbers of answers (default 10,20,30)")
    args = ap.parse_args()
    t = paired_table(args.predictive, args.params, list(args.at))
    print("| strategy | answers | MSE predictive | MSE params | params - predictive |")
    print("|---|---|---|---|---|")
    for r in t.itertuples():
        print(f"| {r.strategy} | {r.answers} | {r.mse_predictive:.3f} | {r.mse_params:.3f} "
              f"| {r.diff_mean:+.3f} ± {r.diff_se:.3f} |")


if __name__ == "__main__":
    main()
