"""The ``elicit realdata`` and ``elicit table1`` commands (paper Sec. 4.2, Fig. 5, Table 1):
argument parsing for :func:`elicit.paper.realdata.run_realdata` and
:func:`elicit.paper.table1.run_table1`."""

from __future__ import annotations

import argparse
import functools
import time
from collections.abc import Collection
from pathlib import Path

from elicit.cli.argtypes import (
    add_cluster_option,
    add_command,
    add_meta_options,
    add_sweep_options,
    answer_counts,
    names,
    positive_int,
    sweep_meta_options,
    sweep_options,
    tau2,
)
from elicit.internal.paths import check_output_folder


def add_realdata_parsers(subparsers, commands: Collection[str] | None = None) -> None:
    """Register the ``realdata`` and ``table1`` sub-commands."""
    add_command(subparsers, "realdata", commands, _realdata_options,
                help="the paper's Amazon/Yelp experiment (Fig. 5) with a LASSO expert, or the "
                     "same on any review corpus")
    add_command(subparsers, "table1", commands, _table1_options,
                help="Table 1: samples (random/active) vs answers to reach MSE levels")


def _realdata_options(p: argparse.ArgumentParser) -> None:
    from elicit.data import STANDARDIZE_CHOICES
    from elicit.data.sources import DATASETS
    from elicit.paper import configs
    from elicit.paper.lasso_expert import RULES
    from elicit.prior.tau2 import SWEEP_TAU2_GRID

    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--dataset", choices=DATASETS, help="the paper's bag-of-words matrix")
    src.add_argument("--corpus", type=Path,
                     help="a review file: JSON Lines or CSV with a header, optionally gzipped")
    p.add_argument("--text-field", default=None, help="--corpus: the text field (default text)")
    p.add_argument("--rating-field", default=None,
                   help="--corpus: the integer rating field (default rating)")
    p.add_argument("--min-df", type=positive_int, default=None,
                   help="--corpus: keep keywords occurring in at least this many reviews "
                        "(default: the paper's 100 of 5149, scaled to the corpus)")
    p.add_argument("--name", default=None,
                   help="--corpus: the data set's label in the outputs (default: file stem)")
    p.add_argument("--runs", type=positive_int, default=50, help="runs 0..N-1 (default 50)")
    add_sweep_options(p)
    p.add_argument("--data-dir", type=Path, default=None,
                   help="data directory, with --corpus where its stop list is checked "
                        "(default: $ELICIT_DATA, <repo>/data, ../shared/data)")
    p.add_argument("--tau2", type=tau2, default=None,
                   help="'cv' (default): 5-fold CV of the no-feedback model per run over "
                        + ", ".join(f"{t:g}" for t in SWEEP_TAU2_GRID)
                        + f"; or a fixed prior scale (the paper's: {configs.PAPER_TAU2})")
    p.add_argument("--tau2-again", type=answer_counts, default=None,
                   help="with --tau2 cv and relevance questions: after how many answers tau2 is "
                        "chosen again by that CV with the classes answered so far (default "
                        "10,20,40,80; 'none': at the start only)")
    p.add_argument("--standardize", choices=STANDARDIZE_CHOICES, default=None,
                   help="model (default): inputs standardised with all 1000 model reviews' "
                        "statistics; train: with the 100 training reviews' (the paper's)")
    p.add_argument("--paper", action="store_true",
                   help=f"the paper-literal configuration: --standardize train --tau2 "
                        f"{configs.PAPER_TAU2} --meta-features {configs.PAPER_META_FEATURES} "
                        "(another --meta-features is taken)")
    p.add_argument("--recommended", action="store_true",
                   help="the best label-free configuration found (docs/beyond-the-paper.md): "
                        + " ".join(f"--{k.replace('_', '-')} {v}"
                                   for k, v in configs.RECOMMENDED.items()))
    add_meta_options(p, "--dataset/--corpus",
                     default=f"{configs.DEFAULT_META_FEATURES}, with --paper "
                             f"{configs.PAPER_META_FEATURES}")
    p.add_argument("--pool-size", type=positive_int, default=configs.POOL_SIZE,
                   help="random pairs scored per sequential round (default "
                        f"{configs.POOL_SIZE})")
    p.add_argument("--expert-rule", choices=RULES, default="target",
                   help="how the LASSO expert picks its penalty (see docs/data.md)")
    p.add_argument("--expert-nonzero", type=positive_int, default=configs.EXPERT_NONZERO,
                   help="target number of expert keywords for --expert-rule target")
    p.add_argument("--quiet", action="store_true", help="no progress bars")


def _table1_options(p: argparse.ArgumentParser) -> None:
    from elicit.data.sources import DATASETS
    from elicit.paper.table1 import DEFAULT_SAMPLES

    p.add_argument("--runs", type=positive_int, default=50, help="the sweeps' runs (default 50)")
    p.add_argument("--out", type=Path, required=True,
                   help="results folder holding the realdata sweeps in OUT/<dataset>/")
    p.add_argument("--datasets", type=names, default=DATASETS,
                   help="comma-separated realdata sweep folders under OUT (default "
                        "amazon,yelp; a corpus sweep's folder works too)")
    p.add_argument("--data-dir", type=Path, default=None,
                   help="data directory (default: the sweep's if still there, else as realdata)")
    p.add_argument("--jobs", type=positive_int, default=1, help="worker processes")
    p.add_argument("--samples", type=positive_int, default=DEFAULT_SAMPLES,
                   help="cap on samples added by rnd/act (they also stop once the MSE reaches "
                        f"the lowest level; default {DEFAULT_SAMPLES})")
    p.add_argument("--quiet", action="store_true", help="no progress bars")
    add_cluster_option(p)


def cmd_realdata(args: argparse.Namespace) -> None:
    from elicit.data.sources import make_source
    from elicit.harness.store import made_by
    from elicit.paper.configs import RealDataConfig
    from elicit.paper.realdata import run_realdata

    check_output_folder(args.out)
    t0 = time.perf_counter()
    # not given: the configuration's meta-features (the paper's counts with --paper)
    meta_features, meta_dim = sweep_meta_options(args.meta_features, args.meta_dim)
    # made once the configuration has checked the options: those are reported first
    source = functools.partial(make_source, args.dataset, args.corpus, data_dir=args.data_dir,
                               text_field=args.text_field, rating_field=args.rating_field,
                               min_df=args.min_df, name=args.name)
    cfg = RealDataConfig(source, runs=args.runs, tau2=args.tau2, tau2_again=args.tau2_again,
                         standardize=args.standardize, paper=args.paper,
                         recommended=args.recommended, pool_size=args.pool_size,
                         expert_rule=args.expert_rule, expert_nonzero=args.expert_nonzero,
                         meta_features=meta_features, meta_dim=meta_dim, **sweep_options(args))
    print(run_realdata(cfg, args.out, progress=not args.quiet).summary())
    print(f"wrote {args.out / 'mse.csv'}; wall time {time.perf_counter() - t0:.1f} s")
    print(made_by(args.out))  # a resumed folder may hold runs of other code


def cmd_table1(args: argparse.Namespace) -> None:
    from elicit.paper.table1 import run_table1

    check_output_folder(args.out)
    t0 = time.perf_counter()
    res = run_table1(args.out, runs=args.runs, datasets=args.datasets, samples=args.samples,
                     jobs=args.jobs, data_dir=args.data_dir, progress=not args.quiet,
                     cluster=args.cluster)
    print(res.text, end="")
    print(f"wrote {args.out / 'table1.csv'}; wall time {time.perf_counter() - t0:.1f} s")


REALDATA_COMMANDS = {"realdata": cmd_realdata, "table1": cmd_table1}
