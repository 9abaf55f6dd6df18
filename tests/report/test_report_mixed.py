"""The report's section "Relevance and pair questions" (``elicit.report.mixed``).

Sweep folders with made-up but consistent files (``config.json``, ``mse.csv``,
``runinfo.csv`` and ``questions.csv``; no ``parts/``, which ``results/`` does not hold):
every number the section prints is recomputed here from those files, the four reference
lines must be there in their order, and a best-case sweep (``--pool paper``) appears only as
its own line and only when it was run.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from conftest import REAL_DATA_DIR, needs_data
from helpers import mean_se_text, write_mixed_config

# the sweeps here are read by their tables: figures drawn, not saved (conftest)
pytestmark = pytest.mark.usefixtures("unsaved_figures")

STRATEGIES = ("random", "nonsequential", "sequential")


def _mixed_sweep(folder: Path, dataset: str, pool: str = "open", runs: int = 4,
                 rounds: int = 10, seed: int = 0, shift: float = 0.0, tau2: bool = False) -> None:
    """A mixed sweep: curves that fall, feature questions first for sequential; with ``tau2``
    records of tau2 per round: run 0 starts at the bound 1e-6, which sequential leaves."""
    rng = np.random.default_rng(seed)
    folder.mkdir(parents=True)
    write_mixed_config(folder, dataset, rounds, pool)
    rows, infos, qrows = [], [], []
    slopes = {"random": -0.003, "nonsequential": -0.005, "sequential": -0.012}
    n_feature = {"random": 3, "nonsequential": 6, "sequential": 8}
    for r in range(runs):
        init = 2.0 + shift + 0.05 * rng.standard_normal()
        for s, k in slopes.items():
            noise = 0.004 * rng.standard_normal(rounds + 1)
            noise[0] = 0.0
            rows += [(dataset, s, r, t, init + k * t + noise[t]) for t in range(rounds + 1)]
            nf = n_feature[s] - (r % 2)
            kinds = ["", *["relevance"] * nf, *["pairs"] * (rounds - nf)]
            qrows += [(s, r, t, kd, (1e-6 if r == 0 and (t < 5 or s != "sequential") else 0.003)
                       if tau2 else np.nan) for t, kd in enumerate(kinds)]
        mean, ceil, yard = 2.5 + 0.01 * r, init - 0.2, init - 0.3 - 0.01 * r
        rows += [(dataset, "lasso", r, 0, 2.2), (dataset, "ridge", r, 0, 2.1 + 0.01 * r),
                 (dataset, "elasticnet", r, 0, 2.15), (dataset, "mean", r, 0, mean),
                 (dataset, "ceiling", r, 0, ceil), (dataset, "yardstick", r, 0, yard)]
        infos.append({"dataset": dataset, "run": r, "n_features": 337, "initial": init,
                      "mean": mean, "ceiling": ceil, "yardstick": yard,
                      "n_answerable": 700 + r, "n_feature_answers": 337})
    pd.DataFrame(rows, columns=["dataset", "strategy", "run", "n_feedback", "mse"]).to_csv(
        folder / "mse.csv", index=False)
    pd.DataFrame(infos).to_csv(folder / "runinfo.csv", index=False)
    pd.DataFrame(qrows, columns=["strategy", "run", "n_feedback", "kind", "tau2"]).to_csv(
        folder / "questions.csv", index=False)


def _section(text: str) -> str:
    from elicit.report.mixed import HEADING

    assert HEADING in text
    rest = text[text.index(HEADING):]
    nxt = rest.find("\n## ", 1)
    return rest if nxt < 0 else rest[:nxt]


def _row(section: str, label: str) -> list[str]:
    line = next(ln for ln in section.splitlines() if ln.startswith(f"| {label} |"))
    return [c.strip() for c in line.strip().strip("|").split("|")][1:]


@pytest.fixture(scope="module")
def mixed_report(tmp_path_factory) -> tuple[Path, str]:
    """A folder with an Amazon and a Yelp mixed sweep, and its report's text (made once: the
    tests below only read both; a report costs a sixth of a second)."""
    from elicit.report import write_report

    folder = tmp_path_factory.mktemp("mixed")
    _mixed_sweep(folder / "amazon-mixed", "amazon", tau2=True)
    _mixed_sweep(folder / "yelp-mixed", "yelp", seed=1, shift=-0.8)
    return folder, write_report(folder).read_text()


@pytest.fixture
def mixed(mixed_report, tmp_path) -> Path:
    """A copy of that folder of one's own, to add a sweep to."""
    return shutil.copytree(mixed_report[0], tmp_path / "mixed")


def test_runs_with_tau2_at_a_bound_at_the_start_and_the_end(mixed_report):
    sec = _section(mixed_report[1])
    # Amazon: run 0 starts at 1e-6 and only sequential leaves it; Yelp's files lack tau2
    assert _row(sec, "runs with tau2 at a bound of its grid (1e-06 or 1000): at the start; "
                     "after 10 answers (Random / Non-sequential / Sequential)") == \
        ["1; 1 / 1 / 0", "—; — / — / —"]


def test_reference_lines_present_and_ordered(mixed_report):
    mixed, text = mixed_report
    sec = _section(text)
    order = ["**predict the mean** (reference)",
             "**no expert input (the start, 0 answers)** (reference)",
             "**all answers given** (reference)",
             "**expert's full knowledge (yardstick)** (reference)"]
    lines = sec.splitlines()
    at = [next(k for k, ln in enumerate(lines) if ln.startswith(f"| {lab} |")) for lab in order]
    assert at == sorted(at) and at[-1] - at[0] == 3
    # the columns are the data sets, Amazon first
    assert lines[lines.index(next(ln for ln in lines if ln.startswith("| | ")))] \
        == "| | Amazon | Yelp |"
    # the values, from the files
    for k, name in enumerate(("amazon-mixed", "yelp-mixed")):
        df = pd.read_csv(mixed / name / "mse.csv")
        for key, label in (("mean", order[0]), ("ceiling", order[2]), ("yardstick", order[3])):
            assert _row(sec, label)[k] == mean_se_text(df[df.strategy == key].mse)
        start = df[(df.strategy == "random") & (df.n_feedback == 0)].mse
        assert _row(sec, order[1])[k] == mean_se_text(start)
        assert _row(sec, "Ridge (100 training reviews, no expert)")[k] == \
            mean_se_text(df[df.strategy == "ridge"].mse)
    assert _row(sec, "answers in the line 'all answers given' (per run)") == ["1038", "1038"]
    assert "not as the best value on the test set" in sec


def test_strategies_rounds_and_feature_questions(mixed_report):
    mixed, text = mixed_report
    sec = _section(text)
    df = pd.read_csv(mixed / "amazon-mixed" / "mse.csv")
    w = {s: df[df.strategy == s].pivot(index="run", columns="n_feedback", values="mse")
         for s in STRATEGIES}
    assert _row(sec, "Sequential, after 10 answers")[0] == mean_se_text(w["sequential"][10])
    avg = {s: w[s][list(range(1, 11))].mean(axis=1) for s in STRATEGIES}
    assert _row(sec, "Random, averaged over the rounds")[0] == mean_se_text(avg["random"])
    d = avg["sequential"] - avg["random"]
    assert _row(sec, "Sequential − Random per run, averaged over the rounds")[0] == \
        f"{mean_se_text(d, sign=True)} ({int(np.sum(d < 0))}/4 lower)"
    d = w["sequential"][10] - w["sequential"][0]
    assert _row(sec, "Sequential − the start per run, after 10 answers")[0] == \
        f"{mean_se_text(d, sign=True)} (4/4 lower)"
    # feature questions: 8, 7, 8, 7 of 10
    assert _row(sec, "feature questions among Sequential's answers")[0] == \
        "7.5 of 10 (runs: 7-8)"
    assert _row(sec, "feature questions among Random's answers")[1] == "2.5 of 10 (runs: 2-3)"


def test_share_of_the_room_used(mixed_report):
    """(start - MSE after k) / (start - all answers given), of the means over runs, for each
    strategy; after more answers than the sweep has: no figure."""
    mixed, text = mixed_report
    sec = _section(text)
    df = pd.read_csv(mixed / "yelp-mixed" / "mse.csv")
    at = df.set_index(["strategy", "run", "n_feedback"]).mse
    start = at.xs(("random", 0), level=(0, 2)).mean()
    room = start - df[df.strategy == "ceiling"].mse.mean()
    want = " / ".join(f"{100 * (start - at.xs((s, 10), level=(0, 2)).mean()) / room:.0f}%"
                      for s in STRATEGIES)
    label = "share of the room to 'all answers given' used after {} answers " \
            "(Random / Non-sequential / Sequential)"
    assert _row(sec, label.format(10))[1] == want
    # the made-up curves fall by 0.012 per answer for sequential, the room is 0.2: about 60%
    assert 50 < int(want.split("/ ")[-1].rstrip("%")) < 70, want
    assert _row(sec, label.format(40)) == ["—", "—"]


def test_mixed_sweeps_stay_out_of_the_pair_sections_and_best_case_only_if_run(mixed):
    from elicit.report import write_report

    text = write_report(mixed).read_text()
    assert "## Real data: Amazon and Yelp reviews" not in text
    assert "## Beyond the paper" not in text
    assert "best case" not in _section(text)
    _mixed_sweep(mixed / "amazon-mixed-paper", "amazon", pool="paper", seed=5, shift=-0.1)
    sec = _section(write_report(mixed).read_text())
    df = pd.read_csv(mixed / "amazon-mixed-paper" / "mse.csv")
    seq = df[(df.strategy == "sequential") & (df.n_feedback == 10)].mse
    row = _row(sec, "best case (pool: the expert's answerable pairs), Sequential")
    assert row == [f"{mean_se_text(seq)} (after 10)", "—"]
    # still one column per open-pool sweep: the best case is a line, not a column
    assert "| | Amazon | Yelp |" in sec


def test_no_mixed_sweep_no_section(tmp_path):
    from elicit.report import write_report
    from elicit.report.mixed import HEADING

    assert HEADING not in write_report(tmp_path).read_text()


@needs_data
@pytest.mark.slow
def test_section_of_a_tiny_real_sweep(tmp_path):
    """One Amazon run x 3 answers with feature and pair questions, written by the sweep
    itself: the section's numbers are those of its mse.csv and its per-run records."""
    from elicit.paper.configs import RealDataConfig
    from elicit.paper.realdata import run_realdata
    from elicit.report import write_report

    cfg = RealDataConfig("amazon", runs=1, rounds=3, questions="both", engine="numpy",
                         data_dir=REAL_DATA_DIR)
    run_realdata(cfg, tmp_path / "amazon-mixed", progress=False)
    parts = tmp_path / "amazon-mixed" / "parts" / "amazon"
    part = json.loads((parts / "sequential" / "run000.json").read_text())
    rec = json.loads((parts / "runinfo" / "run000.json").read_text())
    # results/ holds no parts/: the report is made from the committed files alone
    shutil.rmtree(parts.parent)
    sec = _section(write_report(tmp_path).read_text())
    df = pd.read_csv(tmp_path / "amazon-mixed" / "mse.csv")
    one = {s: float(df[(df.strategy == s)].sort_values("n_feedback").mse.iloc[k])
           for s, k in (("mean", 0), ("ceiling", 0), ("yardstick", 0), ("sequential", 0))}
    assert _row(sec, "**predict the mean** (reference)") == [f"{one['mean']:.3f}"]
    assert _row(sec, "**no expert input (the start, 0 answers)** (reference)") == \
        [f"{one['sequential']:.3f}"]
    assert _row(sec, "**all answers given** (reference)") == [f"{one['ceiling']:.3f}"]
    assert _row(sec, "**expert's full knowledge (yardstick)** (reference)") == \
        [f"{one['yardstick']:.3f}"]
    seq = df[(df.strategy == "sequential") & (df.n_feedback == 3)].mse.iloc[0]
    assert _row(sec, "Sequential, after 3 answers") == [f"{seq:.3f}"]
    n_feature = sum(j is None for _, j, _ in part["asked"])
    assert _row(sec, "feature questions among Sequential's answers") == \
        [f"{n_feature:.1f} of 3 (runs: {n_feature}-{n_feature})"]
    bound = _row(sec, "runs with tau2 at a bound of its grid (1e-06 or 1000): at the start; "
                      "after 3 answers (Random / Non-sequential / Sequential)")[0]
    start, end = (str(int(part["tau2"][t] in (1e-6, 1e3))) for t in (0, -1))
    assert bound.startswith(f"{start}; ") and bound.endswith(f" / {end}")
    assert rec["n_feature_answers"] == 337          # every keyword's relevance
    assert _row(sec, "answers in the line 'all answers given' (per run)") == \
        [f"{rec['n_answerable'] + rec['n_feature_answers']}"]
    assert "| | Amazon |" in sec and "## Real data: Amazon and Yelp reviews" not in \
        write_report(tmp_path).read_text()


def test_a_share_that_rounds_to_zero_is_printed_without_a_sign():
    from elicit.report.mixed import percent

    assert [percent(x) for x in (-0.004, 0.004, -0.006, 0.305, float("nan"))] == \
        ["0%", "0%", "-1%", "30%", "—"]
