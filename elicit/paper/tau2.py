"""The record of the tau^2 choice of a real-data sweep (``tau2_cv.csv``).

The paper fixes tau2 = 0.01 on real data, found there by cross-validation;
``elicit realdata --tau2 cv`` (the default) repeats such a choice per run
(:func:`elicit.prior.tau2.cv_tau2` over :data:`elicit.prior.tau2.SWEEP_TAU2_GRID`), on the
run's 100 training reviews and without any expert answer.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pandas as pd


def write_tau2_cv(out: Path, infos: Sequence[dict]) -> Path:
    """``out/tau2_cv.csv``: per run the tau^2 used, the CV choice and every grid value's CV
    error.

    ``infos`` are the runs' records of :func:`elicit.paper.runinfo.ensure_runinfo`; the CV
    runs whether or not the sweep uses its choice (``tau2`` equals ``tau2_cv`` with
    ``--tau2 cv``), so a sweep with a fixed tau^2 shows what the CV would have picked.
    """
    rows = []
    for info in infos:
        row = {"run": info["run"], "tau2": info["tau2"], "tau2_cv": info["tau2_cv_choice"]}
        row.update({f"cv_mse_{float(k):g}": v for k, v in info["tau2_cv"].items()})
        rows.append(row)
    path = Path(out) / "tau2_cv.csv"
    pd.DataFrame(rows).to_csv(path, index=False)
    return path
