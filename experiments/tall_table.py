"""A researcher's table with many rows: CPU time and peak memory of a session on it.

For each size n x p, a random table (three latent factors plus noise, columns in different
units) is written as a CSV and a session is made from it as ``elicit session new
--from-csv`` makes one (:func:`elicit.session.loaders.table_inputs`, then
:meth:`Session.create`), with the default settings; then the first question, and
``--rounds`` answers of a scripted expert (similar when the true weights have the same sign),
each followed by the next question. Every size runs in a process of its own, so that its
peak resident memory (``getrusage``) is its own. Times are CPU time of that process
(``time.process_time``); run with ``OPENBLAS_NUM_THREADS=1``.

Usage::

    OPENBLAS_NUM_THREADS=1 python experiments/tall_table.py [--rows 500,1000,2000,10000]
        [--features 5,30] [--rounds 5]

Prints one Markdown table row per size (the table of ``docs/benchmarks.md``, "A table with
many rows"); a size the memory check refuses prints its message instead.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time

import numpy as np
import pandas as pd

from elicit.cli.argtypes import OneLineParser, comma_list, positive_int


def one(n: int, p: int, rounds: int) -> dict:
    """Session creation, first question and ``rounds`` answer + next question at n x p."""
    from elicit.errors import ElicitError
    from elicit.session.loaders import table_inputs
    from elicit.session.session import Session

    rng = np.random.default_rng(0)
    Z = rng.standard_normal((n, 3))
    X = Z @ rng.standard_normal((3, p)) + 0.7 * rng.standard_normal((n, p))
    units = 10.0 ** rng.uniform(-3, 4, size=p)
    df = pd.DataFrame(X * units + rng.uniform(-5, 5, size=p) * units,
                      columns=[f"gene_{k:02d}" for k in range(p)])
    half = min(3, p // 2)
    sign = np.r_[np.ones(half), -np.ones(half), np.zeros(p - 2 * half)]
    df["response"] = X @ sign + 0.5 * rng.standard_normal(n)
    # removed at the end: at the documented 1,000,000 x 30 the CSV alone is about 600 MB
    with tempfile.TemporaryDirectory() as folder:
        csv = os.path.join(folder, "mine.csv")
        df.to_csv(csv, index=False)
        del df, X, Z
        t = time.process_time()
        try:
            s = Session.create(path=os.path.join(folder, "mine.session"),
                               **table_inputs(csv, "response"))
        except ElicitError as e:
            return {"n": n, "p": p, "refused": str(e)}
        create = time.process_time() - t
        t = time.process_time()
        q = s.next_query()
        first = time.process_time() - t
        cpu = []
        for _ in range(rounds):
            t = time.process_time()
            s.answer(q, "similar" if sign[q.i] == sign[q.j] else "dissimilar")
            q = s.next_query()
            cpu.append(time.process_time() - t)
        s.close()   # before its folder is removed
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0   # kB on Linux
    return {"n": n, "p": p, "create_s": create, "first_s": first,
            "round_median_s": float(np.median(cpu)), "round_max_s": float(np.max(cpu)),
            "peak_rss_mb": rss}


def sizes(text: str) -> tuple[int, ...]:
    """``--rows``, ``--features``: positive integers, comma-separated (checked here: a bad size
    failed in the worker process, a traceback)."""
    if not (out := tuple(map(positive_int, comma_list(text)))):
        raise argparse.ArgumentTypeError(f"expected positive integers, comma-separated, got "
                                         f"{text!r}")
    return out


def main() -> None:
    ap = OneLineParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=sizes, default="500,1000,2000,10000")
    ap.add_argument("--features", type=sizes, default="5,30")
    # at least one answer: the table's round figures are the median and max over them
    ap.add_argument("--rounds", type=positive_int, default=5)
    ap.add_argument("--one", nargs=2, type=int, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.one:
        print(json.dumps(one(*args.one, args.rounds)))
        return
    print("| rows x features | create | first question | answer + next question "
          "(median, max) | peak RSS |")
    print("|---|---|---|---|---|")
    for p in args.features:
        for n in args.rows:
            out = subprocess.run([sys.executable, __file__, "--one", str(n), str(p),
                                  "--rounds", str(args.rounds)],
                                 capture_output=True, text=True)
            if out.returncode:  # its own error: a CalledProcessError would hide it
                sys.exit(f"the {n:,} x {p} table's process failed (exit {out.returncode}):\n"
                         f"{out.stderr.strip()}")
            r = json.loads(out.stdout.strip().splitlines()[-1])
            if "refused" in r:
                print(f"| {n:,} x {p} | refused: {r['refused']} | | | |")
            else:
                print(f"| {n:,} x {p} | {r['create_s']:.2f} s | {r['first_s']:.2f} s | "
                      f"{r['round_median_s']:.2f} s, {r['round_max_s']:.2f} s | "
                      f"{r['peak_rss_mb']:.0f} MB |", flush=True)


if __name__ == "__main__":
    main()
