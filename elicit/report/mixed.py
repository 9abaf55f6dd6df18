"""The section "Relevance and pair questions" of ``results/REPORT.md``: the sweeps with
feature questions side by side; one whose pair questions come from the expert's answerable
pairs (``--pool paper``) is shown only as a "best case" line.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from elicit.elicitation.kinds import KINDS, PAPER_QUESTIONS
from elicit.elicitation.strategies import STRATEGIES
from elicit.harness.labels import LABELS, REFERENCE_LABELS
from elicit.prior.tau2 import TAU2_BOUNDS
from elicit.report.realdata import Sweep, figure_line, fmt, n_answers

#: The reference lines of a mixed sweep's table, in the order they are printed: name in
#: ``mse.csv`` (``start``: the curves at 0 answers) -> label.
REFERENCE_ORDER: dict[str, str] = {
    "mean": REFERENCE_LABELS["mean"],
    "start": "no expert input (the start, 0 answers)",
    "ceiling": REFERENCE_LABELS["ceiling"],
    "yardstick": REFERENCE_LABELS["yardstick"],
}
HEADING = "## Relevance and pair questions"


def _asked(sweep: Sweep, strategy: str) -> pd.core.groupby.DataFrameGroupBy | None:
    """The strategy's rows of ``questions.csv`` by run (None: no file or no such rows)."""
    q = None if sweep.asked is None else sweep.asked[sweep.asked.strategy == strategy]
    return None if q is None or q.empty else q.groupby("run")


def questions_of_kind(sweep: Sweep, strategy: str, kind: str) -> np.ndarray | None:
    """Per run, how many of the strategy's questions were of ``kind`` (None: no records)."""
    g = _asked(sweep, strategy)
    return None if g is None else g.kind.apply(lambda k: np.sum(k == kind)).to_numpy(float)


def _tau2_at_bound(sweep: Sweep) -> str:
    """How many runs have tau2 at a bound of the grid policy at the start and, per strategy,
    after the last answer ("—" without records of tau2: sweeps before it was chosen again)."""
    ends, start = [], "—"
    for st in STRATEGIES:
        if (g := _asked(sweep, st)) is None or g.tau2.count().lt(g.size()).any():
            ends.append("—")
            continue
        start = str(int(g.tau2.first().isin(TAU2_BOUNDS).sum()))
        ends.append(str(int(g.tau2.last().isin(TAU2_BOUNDS).sum())))
    return f"{start}; {' / '.join(ends)}"


def rounds_average(sweep: Sweep, strategy: str) -> pd.Series:
    """Per run, the strategy's mean test MSE after 1..N answers (N the sweep's last round):
    the area under its curve, which rewards an early drop as much as the last value."""
    w = sweep.wide(strategy)
    cols = [t for t in w.columns if 1 <= t <= sweep.last]
    return w[cols].mean(axis=1)


def _paired(a: pd.Series, b: pd.Series) -> str:
    d = (a - b.reindex(a.index)).dropna()
    return "—" if d.empty else f"{fmt(d, sign=True)} ({int(np.sum(d < 0))}/{d.size} lower)"


def _count(x: np.ndarray | None, of: int) -> str:
    if x is None or x.size == 0:
        return "—"
    return f"{x.mean():.1f} of {of} (runs: {x.min():.0f}-{x.max():.0f})"


#: The answer counts at which the table gives the share of the all-answers room used.
ROOM_AT: tuple[int, ...] = (10, 20, 40, 100)


def _room_cell(sweep: Sweep, k: int) -> str:
    """Per strategy, the share of the room between the start and "all answers given" that
    its mean curve has covered after ``k`` answers, of the means over runs (per-run ratios
    explode where a run's room is near 0); "—" without the line, the round or any room."""
    ceiling = sweep.per_run("ceiling")
    start = float(sweep.initial().mean())
    room = start - float(ceiling.mean()) if ceiling is not None else float("nan")
    shares = [(start - float(sweep.wide(st)[k].mean())) / room
              if st in sweep.strategies and k in sweep.wide(st).columns and room > 0
              else float("nan") for st in STRATEGIES]
    return "—" if all(np.isnan(shares)) else " / ".join(percent(x) for x in shares)


def percent(x: float) -> str:
    """``x`` as a whole percentage ("—" for NaN; never "-0%")."""
    return "—" if np.isnan(x) else f"{round(100 * x)}%"  # an int: no "-0"


def mixed_table(columns: Sequence[Sweep], best: dict[str, Sweep]) -> list[str]:
    """The table: one column per open-pool mixed sweep; ``best`` maps a column's data set to
    its best-case sweep (``--pool paper``), if one was run."""
    head = "| | " + " | ".join(s.label for s in columns) + " |"
    rows = [head, "|---|" + "---|" * len(columns)]

    def row(label: str, cells: Sequence[str]) -> None:
        rows.append(f"| {label} | " + " | ".join(cells) + " |")

    row("runs × answers per strategy", [f"{s.runs} × {s.last}" for s in columns])
    lasts = {s.last for s in columns}
    after = f"after {lasts.pop()} answers" if len(lasts) == 1 else "after the last answer"
    for key, label in REFERENCE_ORDER.items():
        row(f"**{label}** (reference)",
            [fmt(s.initial() if key == "start" else s.per_run(key)) for s in columns])
    row("answers in the line 'all answers given' (per run)",
        [f"{n:.0f}" if np.isfinite(n) else "—" for n in map(n_answers, columns)])
    row(f"{LABELS['ridge']} (100 training reviews, no expert)",
        [fmt(s.per_run("ridge")) for s in columns])

    def last(s: Sweep, st: str) -> pd.Series:
        return s.wide(st)[s.last]

    seq, rnd = "sequential", "random"
    ways = ((last, after), (rounds_average, "averaged over the rounds"))
    for curve, when in ways:
        for st in STRATEGIES:
            row(f"{LABELS[st]}, {when}",
                [fmt(curve(s, st)) if st in s.strategies else "—" for s in columns])
    for curve, when in ways:
        row(f"{LABELS[seq]} − {LABELS[rnd]} per run, {when}",
            [_paired(curve(s, seq), curve(s, rnd)) if {seq, rnd} <= set(s.strategies)
             else "—" for s in columns])
    row(f"{LABELS[seq]} − the start per run, {after}",
        [_paired(last(s, seq), s.initial()) if seq in s.strategies else "—" for s in columns])
    order = " / ".join(LABELS[st] for st in STRATEGIES)
    for k in ROOM_AT:
        row(f"share of the room to 'all answers given' used after {k} answers ({order})",
            [_room_cell(s, k) for s in columns])
    row(f"runs with tau2 at a bound of its grid ({TAU2_BOUNDS[0]:g} or {TAU2_BOUNDS[1]:g}): at "
        f"the start; {after} ({order})", [_tau2_at_bound(s) for s in columns])
    for kind in [k for k in KINDS if k not in PAPER_QUESTIONS
                 and any(k in s.kinds for s in columns)]:
        for st in STRATEGIES:
            row(f"{KINDS[kind].label} among {LABELS[st]}'s answers",
                [_count(questions_of_kind(s, st, kind), s.last)
                 if st in s.strategies and kind in s.kinds else "—" for s in columns])
    if any(s.dataset in best for s in columns):
        for st in (seq, rnd):
            row(f"best case (pool: the expert's answerable pairs), {LABELS[st]}",
                [fmt(b.wide(st)[b.last]) + f" (after {b.last})"
                 if (b := best.get(s.dataset)) is not None and st in b.strategies else "—"
                 for s in columns])
    return rows


def mixed_section(sweeps: Sequence[Sweep]) -> list[str]:
    """The section, or nothing when no sweep asked feature questions."""
    if not (mixed := [s for s in sweeps if s.mixed]):
        return []
    columns = [s for s in mixed if not s.best_case]
    best: dict[str, Sweep] = {}
    for s in (s for s in mixed if s.best_case):
        best.setdefault(s.dataset, s)
    if not columns:  # only best-case sweeps: shown, but labelled as what they are
        columns = list(best.values())
        best = {}
    qs = sorted({s.questions for s in mixed})
    lines = [
        HEADING, "",
        "Beside the pair-only sweeps above: the simulated expert is also asked \"does this "
        "keyword affect the rating?\" (relevant or irrelevant, from whether its LASSO weight "
        "is nonzero), and one utility chooses between feature and pair questions "
        f"(`elicit realdata --questions {'/'.join(qs)}`, the relevance model). Pair "
        "questions come from the pairs among the keywords not called irrelevant so far "
        "(pool `open`): the start uses no expert input. The reference lines: predicting the "
        "training mean; the start; all answers given (every keyword's relevance and every "
        "pair of two relevant keywords, in one fit: a reference, not a bound); and the "
        "yardstick of the expert's full knowledge (its tau2 by the sweep's CV, not as the "
        "best value on the test set; `docs/realdata.md`). Test MSE, mean ± s.e. over runs; "
        "'averaged over the rounds' is each "
        "run's mean MSE after 1..N answers; paired differences are per run (negative: the "
        "first is lower; `k/R lower`: runs where it is); the share of the room used after k "
        "answers is (start − MSE after k) / (start − all answers given), of the means over "
        "runs.",
        "",
    ]
    if best and columns and not columns[0].best_case:
        lines += ["The best-case lines ask the same questions with the pair questions drawn "
                  "from the expert's answerable pairs (`--pool paper`): that pool tells the "
                  "model which keywords the expert knows, so it is not a method.", ""]
    elif columns and columns[0].best_case:
        lines += ["Only best-case sweeps were run (`--pool paper`: the pair questions come "
                  "from the expert's answerable pairs, which leaks its relevance knowledge): "
                  "their start is still without expert input, their curves are not.", ""]
    return [*lines, *mixed_table(columns, best), "",
            *(figure_line(f"{s.label}, questions {s.questions}, pool {s.pool}", s.path,
                          f"fig5_{s.dataset}.png") for s in columns + list(best.values())), ""]
