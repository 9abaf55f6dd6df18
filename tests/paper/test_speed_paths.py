"""Speed that does not move results: sweeps computed along another path agree.

The numpy engine remembers the warm refits a query round makes (its refined candidates, both
answers each; ``NumpyEngine._memo_size`` of them), so that the refit after the expert's
answer is usually returned at once instead of computed again (docs/benchmarks.md, "The
finished refit is remembered"). That is a speed change only: the remembered refit is the
same Newton run, from the same start and Hessian, as the one computed afresh. These tests run
the same small sweeps with the memo and with a memo of one entry, which makes the refit after
an answer a fresh computation in most rounds (counted: the fresh runs must be more), and
require the same questions asked and the same ``mse.csv`` to the refits' tolerance: on the
synthetic problem, whose posterior has several modes (a refit that landed elsewhere would
change later questions and curves), and on a real-data sweep (Amazon, one run, 8 answers per
strategy). A speed change that moves the results, such as a memo keyed too loosely (returning
another start's refit), fails here.

The tolerance is not bitwise: a remembered refit was computed in a round's batch of refits
(:mod:`elicit.model.batch`), whose products round differently from one refit's, and both stop
at the engine's gradient tolerance. On the synthetic sweep below the MSE then differs by up to
2e-7 relative (9 of 98 points); 1e-6 leaves room for other BLAS builds, and a refit in
another mode moves the MSE by percent.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from conftest import REAL_DATA_DIR, needs_data

from elicit.elicitation.settings import RoundSettings
from elicit.engines.numpy_engine import NumpyEngine
from elicit.harness.sweep import SweepConfig, sweep
from elicit.paper.configs import RealDataConfig
from elicit.paper.realdata import run_realdata
from elicit.paper.synthetic import synthetic_problem

# the sweeps here are read by their tables: figures drawn, not saved (conftest)
pytestmark = pytest.mark.usefixtures("unsaved_figures")

KEYS = ["dataset", "strategy", "run", "n_feedback"]


def _fresh_runs(monkeypatch, memo_size: int) -> list[int]:
    """Set the engine's memo size; count the warm refits computed (not remembered)."""
    runs = [0]
    original = NumpyEngine.newton_run

    def counted(self, *args, **kwargs):
        runs[0] += 1
        return original(self, *args, **kwargs)

    monkeypatch.setattr(NumpyEngine, "_memo_size", memo_size)
    monkeypatch.setattr(NumpyEngine, "newton_run", counted)
    return runs


def _same_results(one: Path, other: Path) -> None:
    """The same questions and answers in every run and strategy, and the same MSE curves."""
    # the strategies' records (a real-data sweep's parts hold its runinfo records too)
    parts = [p for p in sorted((one / "parts").rglob("*.json"))
             if "asked" in json.loads(p.read_text())]
    assert parts
    for part in parts:
        theirs = json.loads((other / part.relative_to(one)).read_text())
        assert json.loads(part.read_text())["asked"] == theirs["asked"], part.name
    a = pd.read_csv(one / "mse.csv").sort_values(KEYS).reset_index(drop=True)
    b = pd.read_csv(other / "mse.csv").sort_values(KEYS).reset_index(drop=True)
    pd.testing.assert_frame_equal(a[KEYS], b[KEYS])
    np.testing.assert_allclose(a.mse.to_numpy(), b.mse.to_numpy(), rtol=1e-6, atol=0)


@pytest.mark.slow
def test_synthetic_sweep_is_the_same_without_remembered_refits(tmp_path, monkeypatch):
    cfg = SweepConfig("synthetic", runs=2, rounds=15, settings=RoundSettings(engine="numpy"))
    fresh = []
    for memo, out in ((NumpyEngine._memo_size, "memo"), (1, "fresh")):
        with monkeypatch.context() as m:
            runs = _fresh_runs(m, memo)
            sweep(synthetic_problem, cfg, tmp_path / out, progress=False)
        fresh.append(runs[0])
    assert fresh[1] > fresh[0]  # the two sweeps did take different paths
    _same_results(tmp_path / "memo", tmp_path / "fresh")


@pytest.mark.slow
@needs_data
def test_realdata_sweep_is_the_same_without_remembered_refits(tmp_path, monkeypatch):
    cfg = RealDataConfig("amazon", runs=1, rounds=8, data_dir=REAL_DATA_DIR, engine="numpy",
                         jobs=1)
    fresh = []
    for memo, out in ((NumpyEngine._memo_size, "memo"), (1, "fresh")):
        with monkeypatch.context() as m:
            runs = _fresh_runs(m, memo)
            run_realdata(cfg, tmp_path / out, progress=False)
        fresh.append(runs[0])
    assert fresh[1] > fresh[0]
    _same_results(tmp_path / "memo", tmp_path / "fresh")
