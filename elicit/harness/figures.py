"""Figures: MSE curves (paper Figs. 4 and 5) and kernel matrices (Fig. 3)."""

from __future__ import annotations

import contextlib
import textwrap
import threading
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from elicit.harness.labels import strategy_label

#: pyplot's figures are one state of the process: a pipeline's steps draw one at a time.
_PYPLOT = threading.Lock()


@contextlib.contextmanager
def _pyplot() -> Iterator[Any]:
    import matplotlib

    matplotlib.use("Agg")  # files only; never needs a display
    import matplotlib.pyplot as plt

    with _PYPLOT:
        yield plt


def mse_curves(df: pd.DataFrame, path: str | Path | Sequence[str | Path], title: str = "",
               baselines: Mapping[str, float] | None = None,
               references: Mapping[str, float] | None = None) -> dict[str, Any]:
    """Mean +/- standard error of test MSE against the number of answers, per strategy;
    ``baselines`` (label -> MSE) as thin grey horizontal lines, ``references`` as bold ones.
    Returns what was drawn: ``"curves"``, label -> (answers, mean, s.e.), ``"lines"``, legend
    entry -> value, and ``"title"`` (``title``, then what the band is)."""
    with _pyplot() as plt:
        fig, ax = plt.subplots(figsize=(8.5, 4))
        lo, hi = np.inf, -np.inf
        drawn: dict[str, Any] = {"curves": {}, "lines": {}}
        for strategy, g in df.groupby("strategy", sort=False):
            label = strategy_label(str(strategy))
            if label is None:  # baselines and reference lines: horizontal lines, below
                continue
            bad = g.run[~np.isfinite(g.mse)].unique()
            if len(bad):  # a failed fit's NaN would hide the curve or average fewer runs unsaid
                label += f" ({len(bad)} of {g.run.nunique()} runs not finite, left out)"
                g = g[~g.run.isin(bad)]
            stats = g.groupby("n_feedback").mse.agg(["mean", "std", "count"])
            se = stats["std"].fillna(0) / np.sqrt(stats["count"])
            ax.plot(stats.index, stats["mean"], label=label, marker="o" if len(stats) < 2 else "")
            drawn["curves"][label] = (stats.index.to_numpy(), stats["mean"].to_numpy(),
                                      se.to_numpy())
            ax.fill_between(stats.index, stats["mean"] - se, stats["mean"] + se, alpha=0.2)
            lo = min(lo, float((stats["mean"] - se).min()))
            hi = max(hi, float((stats["mean"] + se).max()))
        lines = list((baselines or {}).values()) + list((references or {}).values())
        # A line far from the curves (the synthetic mean predictor: ~5x their MSE) stays in the
        # legend; the axis spans at least a quarter of their level, not a flat curve's noise.
        span = max(hi - lo, 0.25 * max(abs(lo), abs(hi))) if np.isfinite(hi - lo) else 1.0
        keep = [v for v in lines if lo - 2 * span <= v <= hi + 2 * span]
        off = "" if len(keep) == len(lines) else " (off the axis)"
        for k, (name, value) in enumerate((baselines or {}).items()):
            entry = name + ("" if value in keep else f" {value:.3f}{off}")
            ax.axhline(value, ls=["--", ":", "-."][k % 3], color="grey", lw=1, label=entry)
            drawn["lines"][entry] = value
        for k, (name, value) in enumerate((references or {}).items()):
            entry = f"{name} {value:.3f}" + ("" if value in keep else off)
            ax.axhline(value, ls=["--", "-.", ":"][k % 3],
                       color=["black", "tab:red", "tab:green"][k % 3], lw=1.8, label=entry)
            drawn["lines"][entry] = value
        if np.isfinite(lo) and off:
            shown = [lo, hi] + keep
            pad = 0.05 * (max(shown) - min(shown) or 1.0)
            ax.set_ylim(min(shown) - pad, max(shown) + pad)
        runs = df.run.nunique()
        band = f"mean ± s.e. over {runs} runs" if runs > 1 else f"{runs} run (no error band)"
        drawn["title"] = textwrap.fill(f"{title}: {band}" if title else band, 60)
        ax.set(xlabel="number of expert answers", ylabel="test MSE", title=drawn["title"])
        ax.xaxis.set_major_locator(  # whole answers: not 0.5 or, at zero rounds, -0.04
            plt.MaxNLocator("auto", integer=True, min_n_ticks=1, steps=[1, 2, 2.5, 5, 10]))
        ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.02, 1.0))
        fig.tight_layout()
        for p in [path] if isinstance(path, (str, Path)) else path:
            fig.savefig(p, dpi=120)
        plt.close(fig)
    return drawn


def kernel_panels(panels: Mapping[str, np.ndarray], path: str | Path) -> None:
    """Kernel matrices side by side (same colour scale, 0..1)."""
    with _pyplot() as plt:
        fig, axes = plt.subplots(1, len(panels), figsize=(3 * len(panels), 3.2))
        axes = np.atleast_1d(axes)
        for ax, (title, K) in zip(axes, panels.items()):
            im = ax.imshow(K, vmin=0, vmax=1, cmap="viridis")
            ax.set_title(title, fontsize=10)
            ax.set(xticks=[], yticks=[])
        fig.colorbar(im, ax=list(axes), shrink=0.8)
        fig.savefig(path, dpi=120, bbox_inches="tight")
        plt.close(fig)
