"""The figures draw what the results say: the curves' means and standard errors and every
reference line, with the value in its legend entry."""

from __future__ import annotations

import numpy as np
import pandas as pd
from helpers import assert_png

from elicit.harness.figures import kernel_panels, mse_curves


def _results() -> pd.DataFrame:
    rng = np.random.default_rng(0)
    rows = []
    for strategy in ("random", "sequential"):
        for run in range(4):
            for t in range(6):
                rows.append(("d", strategy, run, t, 2.0 - 0.05 * t * (strategy == "sequential")
                             + 0.1 * rng.normal()))
    rows += [("d", "mean", run, 0, 2.5) for run in range(4)]
    return pd.DataFrame(rows, columns=["dataset", "strategy", "run", "n_feedback", "mse"])


def test_mse_curves_draw_the_mean_and_standard_error_of_every_strategy(tmp_path):
    df = _results()
    drawn = mse_curves(df, tmp_path / "f.png", baselines={"Ridge": 1.9},
                       references={"predict the mean": 2.5})
    assert set(drawn["curves"]) == {"Random", "Sequential"}
    for label, strategy in (("Random", "random"), ("Sequential", "sequential")):
        x, mean, se = drawn["curves"][label]
        g = df[df.strategy == strategy]
        want = np.array([g[g.n_feedback == t].mse.mean() for t in range(6)])
        want_se = np.array([g[g.n_feedback == t].mse.std(ddof=1) / 2.0 for t in range(6)])
        np.testing.assert_array_equal(x, np.arange(6))
        np.testing.assert_allclose(mean, want, rtol=1e-12)
        np.testing.assert_allclose(se, want_se, rtol=1e-12)
    assert drawn["lines"] == {"Ridge": 1.9, "predict the mean 2.500": 2.5}
    assert_png(tmp_path / "f.png", width=1020, height=480)


def test_a_reference_far_from_the_curves_stays_in_the_legend(tmp_path):
    drawn = mse_curves(_results(), tmp_path / "f.png", references={"predict the mean": 50.0})
    assert drawn["lines"] == {"predict the mean 50.000 (off the axis)": 50.0}


def test_kernel_panels_draw_one_image_per_kernel(tmp_path):
    K = np.eye(5)
    kernel_panels({"a": K, "b": 0.5 * np.ones((5, 5))}, tmp_path / "k.png")
    assert_png(tmp_path / "k.png")


def _one_run(rounds: int = 6) -> pd.DataFrame:
    """One run whose curve moves by a thousandth: the axis must not zoom into that noise."""
    rows = [("d", "random", 0, t, 2.17 + 0.001 * np.sin(t)) for t in range(rounds)]
    return pd.DataFrame(rows, columns=["dataset", "strategy", "run", "n_feedback", "mse"])


def test_reference_lines_near_a_flat_curve_stay_on_the_axis(tmp_path):
    drawn = mse_curves(_one_run(), tmp_path / "f.png", baselines={"Ridge": 2.0},
                       references={"predict the mean": 2.46, "all answers given": 2.15})
    assert drawn["lines"] == {"Ridge": 2.0, "predict the mean 2.460": 2.46,
                              "all answers given 2.150": 2.15}


def test_a_baseline_off_the_axis_keeps_its_value_in_the_legend(tmp_path):
    drawn = mse_curves(_results(), tmp_path / "f.png", baselines={"Ridge": 50.0})
    assert drawn["lines"] == {"Ridge 50.000 (off the axis)": 50.0}


def test_the_title_of_one_run_promises_no_error_band(tmp_path):
    assert mse_curves(_results(), tmp_path / "f.png", "Synthetic data")["title"] == (
        "Synthetic data: mean ± s.e. over 4 runs")
    title = mse_curves(_one_run(), tmp_path / "f.png", "Synthetic data")["title"]
    assert title == "Synthetic data: 1 run (no error band)"


def _axes_drawn(monkeypatch) -> list:
    """The axes of each figure mse_curves closes, kept to be looked at (not its pixels)."""
    import matplotlib.pyplot as plt

    closed, close = [], plt.close
    monkeypatch.setattr(plt, "close", lambda fig: closed.append(fig.axes[0]) or close(fig))
    return closed


def test_a_sweep_of_zero_rounds_draws_its_start_as_a_point(tmp_path, monkeypatch):
    # a line of one point draws nothing, and the ticks were -0.04 ... 0.04 answers (at 4
    # rounds 0.5, 1.5, ...): a marker, and ticks at whole answers only
    closed = _axes_drawn(monkeypatch)
    mse_curves(_one_run(rounds=1), tmp_path / "f.png")
    mse_curves(_one_run(rounds=4), tmp_path / "g.png")
    (line,) = closed[0].get_lines()[:1]
    assert line.get_marker() == "o" and list(line.get_xdata()) == [0]
    for ax in closed:
        lo, hi = ax.get_xlim()
        ticks = [t for t in ax.get_xticks() if lo <= t <= hi]
        assert ticks and all(float(t).is_integer() for t in ticks), ticks
    lo, hi = closed[0].get_xlim()
    assert [t for t in closed[0].get_xticks() if lo <= t <= hi] == [0]


def test_a_strategy_with_mse_not_finite_says_so_in_its_legend_entry(tmp_path):
    df = _results()
    df.loc[(df.strategy == "sequential") & (df.run == 1), "mse"] = np.nan
    df.loc[(df.strategy == "random") & (df.run == 2) & (df.n_feedback == 3), "mse"] = np.inf
    drawn = mse_curves(df, tmp_path / "f.png")
    assert set(drawn["curves"]) == {"Random (1 of 4 runs not finite, left out)",
                                    "Sequential (1 of 4 runs not finite, left out)"}
    x, mean, se = drawn["curves"]["Random (1 of 4 runs not finite, left out)"]
    assert np.isfinite(mean).all() and np.isfinite(se).all()


def test_a_long_title_is_wrapped_to_the_figure_not_cut(tmp_path):
    long = ("Amazon (model standardisation; questions both, pool: pairs among the features not "
            "called irrelevant)")
    title = mse_curves(_results(), tmp_path / "f.png", long)["title"]
    assert max(len(line) for line in title.splitlines()) <= 60
    assert title.replace("\n", " ") == f"{long}: mean ± s.e. over 4 runs"
