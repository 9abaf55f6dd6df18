"""The session's figures (``Session.plot_K`` and ``plot_gains``); matplotlib is imported only
when a figure is drawn."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from elicit.elicitation.answers import DONT_KNOW, Answer
from elicit.errors import ElicitError
from elicit.internal.checks import check_int
from elicit.session.export import history
from elicit.session.questions import feature_index

if TYPE_CHECKING:
    from elicit.session.state import SessionState


def plot_features(session: SessionState, max_features: int = 30) -> np.ndarray:
    """Which features :func:`plot_K` shows when there are more than ``max_features``: those
    of the answered questions (most recent first), then the largest |posterior mean|."""
    p = len(session.feature_names)
    if p <= max_features:
        return np.arange(p)
    answered = [f for i, j, _ in reversed(session.active_answers())
                for f in ((i,) if j is None else (i, j))]
    by_mu = [int(f) for f in np.argsort(-np.abs(session.posterior().mu))]
    return np.array(sorted(list(dict.fromkeys(answered + by_mu))[:max_features]))


def plot_K(session: SessionState, ax=None, features: Sequence[int | str] | None = None,
           max_features: int = 30):
    """Heatmap of the current K on ``ax`` (None: a new figure), labelled by name, of ``features``
    (indices or names; default: :func:`plot_features` of ``max_features``); returns the Axes."""
    import matplotlib.pyplot as plt

    names = session.feature_names
    max_features = check_int(max_features, "max_features must be a positive integer number of "
                             f"features, got {max_features!r}", 1)
    if features is None:
        idx = plot_features(session, max_features)
    else:
        idx = np.array([feature_index(names, f) for f in features], dtype=int)
        if len(idx) == 0:
            raise ElicitError("features is empty: name at least one feature to plot")
        if twice := [names[k] for a, k in enumerate(idx) if k in idx[:a]]:  # a 2nd row, column
            raise ElicitError(f"features name {twice[0]!r} twice; name each feature once")
    K = np.asarray(session.fit.K)[np.ix_(idx, idx)]
    if ax is None:
        size = min(12.0, 2.5 + 0.28 * len(idx))
        _, ax = plt.subplots(figsize=(size + 1.2, size))
    im = ax.imshow(K, vmin=0.0, vmax=1.0, cmap="viridis")
    labels = [names[k] for k in idx]
    ax.set_xticks(range(len(idx)), labels, rotation=90, fontsize=8)
    ax.set_yticks(range(len(idx)), labels, fontsize=8)
    n_ans = len(session.active_answers())
    shown = "" if len(idx) == len(names) else f" ({len(idx)} of {len(names)} features)"
    ax.set_title(f"K after {n_ans} answer{'s' if n_ans != 1 else ''}{shown}")
    ax.figure.colorbar(im, ax=ax, fraction=0.046, pad=0.04, label="K_ij")
    return ax


def plot_gains(session: SessionState, ax=None):
    """Expected information gain of each answered question, in answer order (undone answers
    as hollow markers), on ``ax`` (None: a new figure). Returns the matplotlib Axes."""
    import matplotlib.pyplot as plt

    h = history(session)
    if ax is None:
        _, ax = plt.subplots(figsize=(6, 3.5))
    x = np.arange(1, len(h) + 1)
    g = h["expected_gain"].astype(float).to_numpy()
    # every defined answer (of any kind) has its colour, "don't know" grey
    cycle = [c for c in plt.rcParams["axes.prop_cycle"].by_key()["color"] if c != "#7f7f7f"]
    words = [a for a in Answer if a != DONT_KNOW]
    colours = {a: cycle[i % len(cycle)] for i, a in enumerate(words)} | {DONT_KNOW: "tab:gray"}
    for answer, colour in colours.items():
        for undone in (False, True):
            m = ((h["answer"] == answer) & (h["undone"] == undone)).to_numpy()
            if m.any():
                ax.scatter(x[m], g[m], label=None if undone else answer.label,
                           facecolors="none" if undone else colour, edgecolors=colour)
    if len(h):
        ax.plot(x, g, color="0.6", lw=0.8, zorder=0)
    if not h["undone"].all():
        ax.legend(fontsize=8)
    ax.set_xlabel("answer number")
    ax.set_ylabel("expected gain")
    ax.set_title("Expected information gain of the questions asked")
    return ax
