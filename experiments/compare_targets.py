"""Compare two sweeps of the same runs that differ only in the utility target.

Usage::

    python experiments/compare_targets.py PREDICTIVE_DIR PARAMS_DIR [--at 10,20,30]

Both folders are outputs of ``elicit synthetic`` or ``elicit realdata`` with the same seed,
runs and strategies (``--utility-target predictive`` and ``params``; other differences are
refused, as is a folder without a finished sweep). For each strategy and
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
from elicit.errors import ElicitError
from elicit.harness.store import LEGACY_CONFIG, SweepStore, settings_difference


def check_paired(pred_dir: Path, params_dir: Path) -> None:
    """An :class:`ElicitError` unless both folders hold finished sweeps that differ in the
    utility target alone, predictive then params: else their runs are not the same runs."""
    stores = [SweepStore.find(d) for d in (pred_dir, params_dir)]
    for d, store in zip((pred_dir, params_dir), stores):
        if store is None or not (d / "mse.csv").exists():
            raise ElicitError(f"{d} holds no finished sweep (config.json and mse.csv)")
    a, b = (s.settings for s in stores if s is not None)
    if diff := settings_difference(a, {k: v for k, v in b.items() if k != "utility_target"}):
        raise ElicitError(f"the two sweeps differ in more than the utility target ({diff})")
    targets = [s.get("utility_target", LEGACY_CONFIG["utility_target"]) for s in (a, b)]
    if targets != ["predictive", "params"]:
        raise ElicitError(f"the first sweep's utility target is {targets[0]}, the second's "
                          f"{targets[1]}: give the predictive sweep first")


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
    try:
        check_paired(args.predictive, args.params)
    except ElicitError as e:
        ap.error(str(e))
    t = paired_table(args.predictive, args.params, list(args.at))
    if t.empty:
        last = pd.read_csv(args.predictive / "mse.csv").n_feedback.max()
        ap.error(f"no curve reaches --at {', '.join(map(str, args.at))} answers (the sweeps "
                 f"end at {last})")
    print("| strategy | answers | MSE predictive | MSE params | params - predictive |")
    print("|---|---|---|---|---|")
    for r in t.itertuples():
        print(f"| {r.strategy} | {r.answers} | {r.mse_predictive:.3f} | {r.mse_params:.3f} "
              f"| {r.diff_mean:+.3f} ± {r.diff_se:.3f} |")


if __name__ == "__main__":
    main()
