"""Reproduce the paper's experiments into one results folder (``make reproduce``).

A thin script over the ``elicit`` command line: each step is a resumable sweep, so a rerun
after an interruption continues where it stopped. It ends by writing ``REPORT.md``.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from elicit.cli import main as elicit
from elicit.report import write_report


def run(argv: list[str]) -> None:
    print("+ elicit", " ".join(argv), flush=True)
    code = elicit(argv)
    if code:
        sys.exit(code)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--out", type=Path, default=Path("results"))
    ap.add_argument("--runs", type=int, default=50)
    ap.add_argument("--rounds", type=int, default=100)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    t0 = time.perf_counter()
    common = ["--runs", str(args.runs), "--rounds", str(args.rounds), "--jobs", str(args.jobs),
              "--seed", str(args.seed)]
    run(["synthetic", *common, "--out", str(args.out / "synthetic")])
    wall = time.perf_counter() - t0
    write_report(args.out, wall_s=wall)
    print(f"reproduce: wall time {wall / 60:.1f} min; report in {args.out / 'REPORT.md'}")


if __name__ == "__main__":
    main()
