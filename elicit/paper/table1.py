"""The paper's Table 1: samples (random/active) versus expert answers to reach an MSE level,
from finished realdata sweeps (:func:`run_table1`; what it reads: ``docs/realdata.md``).
"""

from __future__ import annotations

import csv
import io
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from elicit.data.sources import DATASETS
from elicit.errors import ElicitError
from elicit.harness.cluster import cluster_scope
from elicit.harness.labels import REFERENCES
from elicit.harness.store import SweepStore
from elicit.internal.io import write_text_atomic
from elicit.paper.configs import RealDataConfig
from elicit.paper.runinfo import ensure_runinfo
from elicit.paper.samples import ensure_sample_curves

#: The paper's Table 1 levels: initial MSE (no added samples/answers) and the MSE levels.
PAPER_LEVELS: dict[str, dict] = {
    "yelp": {"initial": 1.88, "levels": (1.85, 1.80)},
    "amazon": {"initial": 2.26, "levels": (2.20, 2.18)},
}

#: The paper's Table 1 counts (means over its 50 runs): samples added at random (RND) or
#: actively (ACT), and sequential-elicitation answers (SeqElc), to reach each level.
PAPER_COUNTS: dict[tuple[str, float], dict[str, int]] = {
    ("yelp", 1.85): {"rnd": 5, "act": 5, "seqelc": 13},
    ("yelp", 1.80): {"rnd": 15, "act": 9, "seqelc": 60},
    ("amazon", 2.20): {"rnd": 20, "act": 14, "seqelc": 55},
    ("amazon", 2.18): {"rnd": 27, "act": 17, "seqelc": 90},
}

METHODS: tuple[str, ...] = ("rnd", "act", "seqelc")

#: Default cap of the rnd/act sample-addition loops (they also stop at the lowest level).
DEFAULT_SAMPLES = 150


def samples_to_reach(curve, level: float) -> int | None:
    """The first index ``t`` of ``curve`` (MSE after 0, 1, ..., T additions) with
    ``curve[t] <= level``, or None if it never reaches it (NaN never does)."""
    c = np.asarray(curve, dtype=float).reshape(-1)
    if c.size == 0:
        raise ElicitError("an MSE curve must have at least one point (the initial MSE)")
    hit = np.flatnonzero(c <= level)   # NaN <= level is False
    return int(hit[0]) if hit.size else None


def table1_rows(dataset: str, curves: Mapping[str, Sequence], levels: Sequence[float] | None
                = None, paper_initial: float | None = None,
                initial_mse: float | Sequence[float] | None = None,
                references: Mapping[str, Sequence[float]] | None = None,
                kinds: Sequence[str] = ("paper", "relative")) -> list[dict]:
    """Rows of Table 1: mean number of samples/answers needed to reach each MSE level, per
    paper level L a ``"paper"`` row at L and a ``"relative"`` row at ``initial_mse * L /
    paper_initial`` (``docs/realdata.md``, "Table 1").

    Parameters
    ----------
    dataset, levels, paper_initial
        The ``dataset`` column, and the paper's levels and initial MSE (default: the
        dataset's :data:`PAPER_LEVELS`).
    curves
        Each of :data:`METHODS` -> per-run MSE curves (index t: after t samples or answers).
    initial_mse
        Our initial MSE (default: the mean of every ``curve[0]``), or one per run: run r's
        relative level is then its own, and a relative row's ``mse_level`` their mean.
    references
        Reference line name -> its test MSE per run: ``<name>_reached`` is the fraction of
        runs whose reference is at or below the level.
    kinds
        The row kinds to produce, ``"paper"`` and/or ``"relative"``.

    Returns
    -------
    list of dict
        ``dataset, mse_level, level_kind, reduction, paper_level`` and per method m: ``m``
        (mean count over the runs that reached the level; NaN if none did), ``m_reached``
        (their fraction) and ``m_runs``.
    """
    known = PAPER_LEVELS.get(dataset.lower(), {})
    if (levels is None or paper_initial is None) and not known:
        raise ElicitError(f"no paper levels known for {dataset!r}; give levels and "
                          f"paper_initial (known: {sorted(PAPER_LEVELS)})")
    levels = known["levels"] if levels is None else levels
    paper_initial = known["initial"] if paper_initial is None else paper_initial
    if not paper_initial > 0:
        raise ElicitError(f"paper_initial must be positive, got {paper_initial!r}")
    runs: dict[str, list[np.ndarray]] = {}
    for m in METHODS:
        if m not in curves:
            raise ElicitError(f"no curves for method {m!r} (got {sorted(curves)})")
        rs = [np.asarray(c, dtype=float).reshape(-1) for c in curves[m]]
        if not rs or any(c.size == 0 for c in rs):
            raise ElicitError(f"method {m!r}: need at least one non-empty curve")
        runs[m] = rs
    if initial_mse is None:
        initial_mse = float(np.nanmean([c[0] for rs in runs.values() for c in rs]))
    init = np.asarray(initial_mse, dtype=float).reshape(-1)
    if init.size == 0 or not (np.all(np.isfinite(init)) and np.all(init > 0)):
        raise ElicitError(f"initial MSE must be positive number(s), got {initial_mse!r}")
    if bad := [m for m in METHODS if np.ndim(initial_mse) > 0 and len(runs[m]) != init.size]:
        raise ElicitError(f"{init.size} per-run initial MSEs but method {bad[0]!r} has "
                          f"{len(runs[bad[0]])} runs")

    if not kinds or not set(kinds) <= {"paper", "relative"}:
        raise ElicitError(f"row kinds are 'paper' and 'relative', got {list(kinds)!r}")
    refs = {k: np.asarray(v, dtype=float).reshape(-1) for k, v in (references or {}).items()}
    rows: list[dict] = []
    for L in levels:
        reduction = 1.0 - float(L) / float(paper_initial)
        rel = init * (1.0 - reduction)
        for kind, lv in (("paper", np.array([float(L)])), ("relative", rel)):
            if kind not in kinds:
                continue
            row: dict = {"dataset": dataset, "mse_level": float(np.mean(lv)), "level_kind": kind,
                         "reduction": reduction, "paper_level": float(L)}
            for name, vals in refs.items():
                lvl = lv if lv.size == vals.size else np.full(vals.size, lv.mean())
                row[f"{name}_reached"] = float(np.mean(vals <= lvl)) if vals.size else np.nan
                row[f"{name}_runs"] = int(vals.size)
            for m in METHODS:
                counts = [samples_to_reach(c, lv[r] if lv.size > 1 else lv[0])
                          for r, c in enumerate(runs[m])]
                got = [k for k in counts if k is not None]
                row[m] = float(np.mean(got)) if got else float("nan")
                row[f"{m}_reached"] = len(got) / len(counts)
                row[f"{m}_runs"] = len(counts)
            rows.append(row)
    return rows


def format_table1(rows: Sequence[Mapping]) -> str:
    """CSV text of :func:`table1_rows` (its columns: ``docs/realdata.md``, "Table 1")."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["dataset", "mse_level", "level_kind", *METHODS,
                *(f"{m}_reached" for m in METHODS), *(f"paper_{m}" for m in METHODS),
                *(f"{r}_reached" for r in REFERENCES), "sweep"])
    for r in rows:
        cells = [r["dataset"], f"{r['mse_level']:.4f}", r["level_kind"]]
        # k/R: how many of the R runs reached the level (a reference line only if given)
        reached = {k: f"{round(r[f'{k}_reached'] * r[f'{k}_runs'])}/{r[f'{k}_runs']}"
                   for k in (*METHODS, *REFERENCES)
                   if f"{k}_reached" in r and np.isfinite(r[f"{k}_reached"])}
        cells += ["not reached" if not np.isfinite(r[m]) else f"{r[m]:.1f}" for m in METHODS]
        cells += [reached[m] for m in METHODS]
        # the paper's counts for the row's paper level (none for a corpus)
        paper = PAPER_COUNTS.get((str(r["dataset"]).lower(),
                                  round(float(r.get("paper_level", np.nan)), 2)))
        cells += [str(paper[m]) if paper and m in paper else "" for m in METHODS]
        cells += [reached.get(ref, "") for ref in REFERENCES]
        cells.append(r.get("sweep", ""))
        w.writerow(cells)
    return buf.getvalue()


def table1_for(out: str | Path, sweep: str, runs: int, samples: int = DEFAULT_SAMPLES,
               jobs: int = 1, data_dir: str | Path | None = None, progress: bool = True,
               memo: str | os.PathLike | None = None) -> tuple[list[dict], pd.DataFrame]:
    """Table 1 rows of the sweep in ``out/<sweep>/``, runs ``0..runs-1``, and its rnd/act
    curves in long format; the loops add at most ``samples`` samples, in ``jobs`` processes."""
    out = Path(out)
    folder = out / sweep
    if (store := SweepStore.find(folder)) is None:
        raise ElicitError(f"no realdata sweep in {folder}: run `elicit realdata --dataset "
                          f"{sweep} --runs {runs} --out {folder}` (or --corpus FILE) first "
                          "(table1 takes the SeqElc column from that sweep)")
    if "expert_rule" not in store.settings:  # the synthetic experiment, or one's own sweep
        raise ElicitError(f"{folder} is no realdata sweep; name the folders of realdata "
                          "sweeps in --datasets")
    if store.settings.get("meta_features") == "file":
        raise ElicitError(f"{folder} is a sweep with meta-features from a file; table1 "
                          "refits the sweep's runs, so use counts, ppmi or lsa meta-features")
    dataset = str(store.settings["dataset"])
    path = folder / "mse.csv"
    hint = (f"run `elicit realdata --dataset {dataset} --runs {runs} --out {folder}` first "
            "(table1 takes the SeqElc column from that sweep)")
    if not path.exists():
        raise ElicitError(f"no realdata sweep in {folder}: {hint}")
    df = pd.read_csv(path)
    df = df[(df.dataset == dataset) & (df.strategy == "sequential")]
    if missing := sorted(set(range(runs)) - set(df.run)):
        raise ElicitError(f"{path} has no sequential curve for run(s) "
                          f"{', '.join(map(str, missing[:5]))}{'...' if len(missing) > 5 else ''}"
                          f"; {hint}")
    seq = [df[df.run == r].sort_values("n_feedback").mse.to_numpy() for r in range(runs)]
    # the sweep's own splits, expert and model: samples and answers compared in one model
    cfg = RealDataConfig.from_json(store.settings, data_dir, runs=runs, jobs=jobs, memo=memo)
    infos = ensure_runinfo(store, cfg, progress)
    tau2 = {int(i["run"]): float(i["tau2"]) for i in infos}

    # relative levels per run: splits vary a lot, so one mean level would count
    # low-starting runs as "reached at 0"
    initial = [float(c[0]) for c in seq]
    paper = PAPER_LEVELS.get(dataset, PAPER_LEVELS["amazon"])  # a corpus: Amazon's reductions
    kinds = ("paper", "relative") if dataset in PAPER_LEVELS else ("relative",)
    # The loops may stop once a run reaches its lowest level: Table 1 needs no more.
    low = min(paper["levels"])
    stop = {r: min([initial[r] * low / paper["initial"]]
                   + ([low] if "paper" in kinds else [])) for r in range(runs)}
    curves = ensure_sample_curves(store, cfg, tau2, samples, stop, progress)
    for m, cs in curves.items():
        for r, c in enumerate(cs):
            # both loops start from the sweep's no-feedback model
            if not np.isclose(c.mse[0], seq[r][0], rtol=1e-5, atol=1e-8):
                raise ElicitError(
                    f"{sweep} run {r}: the {m} loop starts at MSE {c.mse[0]:.6f} but the "
                    f"sweep in {folder} at {seq[r][0]:.6f}; the table1 parts in "
                    f"{out / 'table1'} come from other settings: delete them and rerun")
    refs = {k: [float(i["references"][k]) for i in infos] for k in REFERENCES}
    rows = table1_rows(dataset, {"rnd": [c.mse for c in curves["rnd"]],
                                 "act": [c.mse for c in curves["act"]], "seqelc": seq},
                       levels=paper["levels"], paper_initial=paper["initial"],
                       initial_mse=initial, references=refs, kinds=kinds)
    for row in rows:
        row["sweep"] = sweep
    long = [(dataset, m, r, t, v) for m, cs in curves.items() for r, c in enumerate(cs)
            for t, v in enumerate(c.mse)]
    return rows, pd.DataFrame(long, columns=["dataset", "method", "run", "n_samples", "mse"])


@dataclass
class Table1Result:
    """What :func:`run_table1` wrote."""

    rows: list[dict]
    text: str
    curves: pd.DataFrame


def run_table1(out: str | Path, runs: int = 50, datasets: Sequence[str] = DATASETS,
               samples: int = DEFAULT_SAMPLES, jobs: int = 1,
               data_dir: str | Path | None = None, progress: bool = True,
               cluster: str | None = None, memo: str | os.PathLike | None = None,
               ) -> Table1Result:
    """Table 1 of the realdata sweeps ``out/<dataset>/`` (``elicit table1``) into
    ``out/table1.csv`` and ``out/table1/curves.csv``; the rest as for :func:`table1_for`."""
    out = Path(out)
    if twice := [d for i, d in enumerate(datasets) if d in datasets[:i]]:
        raise ElicitError(f"sweep {twice[0]!r} is named twice; name each once")
    rows, longs = [], []
    with cluster_scope(cluster):
        for name in datasets:
            r, long = table1_for(out, name, runs, samples, jobs, data_dir, progress, memo)
            rows += r
            longs.append(long.assign(sweep=name))
    text = format_table1(rows)
    write_text_atomic(out / "table1.csv", text)
    curves = pd.concat(longs, ignore_index=True)
    write_text_atomic(out / "table1" / "curves.csv", curves.to_csv(index=False))
    return Table1Result(rows, text, curves)
