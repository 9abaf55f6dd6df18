"""One table row per real-data sweep: reference lines, the room for feedback, and the paired
strategy differences (the study of ``docs/beyond-the-paper.md``).

Usage::

    python experiments/study_table.py FOLDER [FOLDER ...] [--at 20]

Each FOLDER is the output of ``elicit realdata``. Per sweep: the configuration (data set,
meta-features, model, utility target), runs, the predict-the-mean line, the no-feedback MSE,
the all-answers ceiling, the ceiling's gain over no feedback (per run), and Sequential −
Random and Non-sequential − Random after ``--at`` answers and after the last round (paired per
run, mean ± s.e.; negative: the first strategy is lower; ``k/n`` runs where it is lower).
Everything is read from the folders' ``mse.csv`` and ``config.json``.
"""

from __future__ import annotations

from pathlib import Path

from elicit.cli.argtypes import OneLineParser, positive_int
from elicit.errors import ElicitError
from elicit.report.realdata import fmt, load_sweep, paired


def row(folder: Path, at: int) -> str:
    if (s := load_sweep(folder)) is None:
        raise ElicitError(f"{folder} holds no finished realdata sweep")
    init, ceil, mean = s.initial(), s.per_run("ceiling"), s.per_run("mean")
    gain = (init - ceil.reindex(init.index)).dropna() if ceil is not None else None
    cells = [s.label, str(s.runs), fmt(mean) if mean is not None else "—", fmt(init),
             fmt(ceil) if ceil is not None else "—",
             fmt(gain, sign=True) if gain is not None else "—"]
    for a, t in (("sequential", at), ("sequential", s.last), ("nonsequential", at)):
        p = paired(s, a, "random", t)
        cells.append("—" if p is None else f"{p.text()} ({p.lower}/{p.n})")
    return "| " + " | ".join(cells) + " |"


def main() -> None:
    ap = OneLineParser(description=__doc__.splitlines()[0])
    ap.add_argument("folders", type=Path, nargs="+")
    ap.add_argument("--at", type=positive_int, default=20, help="answers of the first comparison")
    args = ap.parse_args()
    try:  # every row before the table: an error is its one line
        rows = [row(f, args.at) for f in args.folders]
    except ElicitError as e:
        ap.error(str(e))
    print(f"| sweep | runs | predict the mean | no feedback | all answers (ceiling) | "
          f"no feedback − ceiling | Seq − Rnd @{args.at} | Seq − Rnd @last | "
          f"Non-seq − Rnd @{args.at} |")
    print("|---|---|---|---|---|---|---|---|---|")
    print("\n".join(rows))


if __name__ == "__main__":
    main()
