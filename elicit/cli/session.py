"""The session commands ``session new``, ``ask``, ``serve``, ``history`` and ``export``; each
sets ``args.session_func``, which :func:`elicit.cli.oneline.run_command` runs."""

from __future__ import annotations

import argparse
from collections.abc import Callable, Collection
from pathlib import Path
from typing import Any

from elicit.cli.argtypes import (
    add_command,
    add_engine_options,
    add_meta_options,
    add_model_option,
    add_utility_target_option,
    meta_options,
    names,
    nonneg_int,
    port,
    positive_int,
    questions,
    questions_help,
    strategy,
)
from elicit.errors import ElicitError
from elicit.internal.paths import check_not_input
from elicit.internal.text import command_line, printable


def batch_size(text: str) -> int:
    """``--batch``: a positive integer up to the session's limit."""
    from elicit.session.record import MAX_BATCH  # the model is not loaded to parse

    v = positive_int(text)
    if v > MAX_BATCH:
        raise argparse.ArgumentTypeError(f"at most {MAX_BATCH} questions at a time, got {v}")
    return v


def add_session_parsers(subparsers: argparse._SubParsersAction,
                        commands: Collection[str] | None = None) -> None:
    """Add ``session new``, ``ask``, ``serve``, ``history`` and ``export`` to a CLI (with
    ``commands``, only those get their options: :func:`~elicit.cli.argtypes.add_command`)."""
    for name, options, help_line, description in (
            ("session", _session_options, "create real-expert sessions",
             "Create real-expert sessions."),
            ("ask", _on_a_session(_ask_options, cmd_ask), "answer questions in the terminal",
             "Answer the session's questions in the terminal."),
            ("serve", _on_a_session(_serve_options, cmd_serve), "answer questions in a web page",
             "Serve the session's questions as a web page."),
            ("history", _on_a_session(_history_options, cmd_history, engine=False),
             "print the answers of a session", "Print the answers of a session."),
            ("export", _on_a_session(_export_options, cmd_export), "export the learned prior "
             "(.nc/.json) or the history (.csv)", "Export the learned prior or the history.")):
        add_command(subparsers, name, commands, options, help=help_line, description=description)


def _session_options(p: argparse.ArgumentParser) -> None:
    from elicit.elicitation.kinds import PAPER_QUESTIONS

    ssub = p.add_subparsers(dest="session_command", required=True, metavar="{new}")
    n = ssub.add_parser("new", help="create a session file",
                        description="Create a session from your own table (--from-csv), "
                                    "your own arrays (--from-npz), a review corpus "
                                    "(--corpus) or the paper's data (--dataset).")
    src = n.add_mutually_exclusive_group(required=True)
    src.add_argument("--from-csv", type=Path, metavar="FILE",
                     help="your data as a table: a .csv (or .tsv) file, or a .parquet file "
                          "(needs pyarrow); pick the outcome with --target")
    src.add_argument("--from-npz", type=Path, metavar="FILE",
                     help=".npz with X (n x p), y (n), optional U (p x d) and feature_names")
    src.add_argument("--dataset", choices=("amazon", "yelp"),
                     help="the paper's data set (one run's 100 training reviews: --run, --seed)")
    src.add_argument("--corpus", type=Path, metavar="FILE",
                     help="any review corpus: JSON Lines or CSV (optionally gzipped) with a "
                          "text and a rating field; one run's 100 training reviews (--run)")
    n.add_argument("--text-field", default="text",
                   help="--corpus: the field holding the review text (default: text)")
    n.add_argument("--rating-field", default="rating",
                   help="--corpus: the field holding the rating (default: rating)")
    n.add_argument("--min-df", type=positive_int, default=None,
                   help="--corpus: keep keywords in at least this many reviews (default: the "
                        "paper's 100 of 5149, scaled to the corpus)")
    n.add_argument("--target", metavar="COLUMN",
                   help="--from-csv: the column to predict (the outcome)")
    n.add_argument("--features", type=names, metavar="COL,COL,...",
                   help="--from-csv: the feature columns (default: every other column)")
    add_meta_options(n, "--dataset/--corpus/--from-csv",
                     "; --from-csv takes only a FILE (default: how the columns correlate, "
                     "see docs/metafeatures.md)")
    n.add_argument("--no-standardize", action="store_true",
                   help="--from-csv: use the columns as they are (default: standardise each "
                        "inside the model; predictions still take the original units)")
    n.add_argument("--target-description", metavar="TEXT",
                   help="how the question names the outcome, e.g. \"the review's star "
                        "rating\" (default: from the target column or the data set)")
    n.add_argument("--out", type=Path, required=True, help="session file to write")
    n.add_argument("--run", type=nonneg_int, default=None, metavar="R",
                   help="--dataset/--corpus: run R (default 0) of a sweep with --seed S: the "
                        "100 training reviews `elicit realdata --seed S` uses in its run R")
    # Replaced by --run/--seed; kept only to say so (cmd_new).
    n.add_argument("--run-seed", type=nonneg_int, default=None, help=argparse.SUPPRESS)
    n.add_argument("--data-dir", default=None, help="data directory (else $ELICIT_DATA, ...)")
    n.add_argument("--seed", type=nonneg_int, default=0, metavar="S",
                   help="seed of the questions' random stream (default 0); with "
                        "--dataset/--corpus also the sweep seed whose run --run is taken")
    n.add_argument("--strategy", type=strategy, default="sequential",
                   help="how questions are chosen: sequential (default: the best of a fresh "
                        "pool after every answer), nonsequential (ranked once, before any "
                        "answer), random, or one your own code registers")
    n.add_argument("--pool-size", type=positive_int, default=None,
                   help="candidate pool per round (default: 400 for --dataset/--corpus, as "
                        "in the paper; else min(#pairs, 10 p, 4000))")
    add_engine_options(n)
    add_utility_target_option(n)
    n.add_argument("--questions", type=questions, default=PAPER_QUESTIONS, metavar="KIND[,KIND...]",
                   help=f"the kinds of question asked, comma-separated: {questions_help()}; "
                        f"default {','.join(PAPER_QUESTIONS)} (the paper's); a kind that "
                        "needs a model (feature questions: relevance) makes it the default "
                        "--model")
    n.add_argument("--tau2", type=float, default=None, help="prior variance scale (0.01)")
    add_model_option(n)
    n.add_argument("--texts", type=Path, default=None,
                   help="JSON file: feature name -> list of example snippets")
    n.add_argument("--overwrite", action="store_true", help="replace an existing --out file")
    n.set_defaults(session_func=cmd_new)


def _on_a_session(options: Callable[[argparse.ArgumentParser], None],
                  func: Callable[[argparse.Namespace], int], engine: bool = True
                  ) -> Callable[[argparse.ArgumentParser], None]:
    """``options`` between the session file and ``--engine`` (if the command loads the
    model: ``engine``): a command on a session, run by ``func``."""
    def add(p: argparse.ArgumentParser) -> None:
        from elicit.engines import ENGINES

        p.add_argument("session", type=Path, help="session file")
        options(p)
        if engine:
            p.add_argument("--engine", choices=ENGINES, default=None,
                           help="use this MAP engine instead of the one stored in the session")
        p.set_defaults(session_func=func)

    return add


def _ask_options(a: argparse.ArgumentParser) -> None:
    a.add_argument("--batch", type=batch_size, default=1, metavar="K",
                   help="choose K questions at a time (by gain: feature-disjoint where "
                        "possible; at most 50)")
    a.add_argument("--expert", metavar="NAME", default=None,
                   help="your name: every answer records who gave it, and each expert gets "
                        "their own questions (default: the unnamed expert)")


def _serve_options(s: argparse.ArgumentParser) -> None:
    s.add_argument("--port", type=port, default=8765,
                   help="TCP port to listen on (default 8765; 0 picks a free one)")
    s.add_argument("--host", default="127.0.0.1",
                   help="address to bind (default 127.0.0.1: this machine only)")
    s.add_argument("--expert", metavar="NAME", default=None,
                   help="the expert of visitors who give no name on the page (default: the "
                        "unnamed expert)")


def _history_options(h: argparse.ArgumentParser) -> None:
    h.add_argument("--csv", action="store_true", help="print CSV instead of a table")
    h.add_argument("--agreement", action="store_true",
                   help="show where the experts agree and disagree instead")


def _export_options(e: argparse.ArgumentParser) -> None:
    e.add_argument("path", type=Path, help="output file: .nc, .json or .csv")
    e.add_argument("--overwrite", action="store_true", help="replace an existing output file")


def cmd_new(args: argparse.Namespace) -> int:
    from elicit.session import loaders
    from elicit.session.session import Session

    if args.run_seed is not None:
        raise ElicitError(f"--run-seed is gone: use --run {args.run_seed} (and --seed S) for run "
                          f"{args.run_seed} of the sweep with seed S, as `elicit realdata --seed "
                          "S` splits it (sessions made with --run-seed keep their data)")
    if args.run is not None and args.dataset is None and args.corpus is None:
        raise ElicitError("--run goes with --dataset or --corpus only: it picks one run of "
                          "their reviews")
    table_only = [opt for opt, v in (("--target", args.target), ("--features", args.features),
                                     ("--no-standardize", args.no_standardize)) if v]
    if args.from_csv is None and table_only:
        raise ElicitError(f"{', '.join(table_only)} go(es) with --from-csv FILE only")
    if args.from_npz is not None and (args.meta_features or args.meta_dim):
        raise ElicitError("--meta-features/--meta-dim do not go with --from-npz: put the "
                          "meta-features in the .npz file as U")
    if args.from_csv is not None and args.meta_dim is not None:
        raise ElicitError("--meta-dim does not go with --from-csv: it sets the dimensions of a "
                          "ppmi or lsa embedding of review text (--dataset, --corpus); a "
                          "table's meta-features are how its columns correlate, or a "
                          "--meta-features FILE")
    meta_kind, meta_dim = meta_options(args.meta_features, args.meta_dim)
    if args.from_csv is not None and meta_kind in ("ppmi", "lsa"):
        raise ElicitError(f"--meta-features {meta_kind} learns from review text: use it with "
                          "--dataset or --corpus; with --from-csv give a FILE")
    corpus_only = [opt for opt, v, default in (
        ("--text-field", args.text_field, "text"), ("--rating-field", args.rating_field, "rating"),
        ("--min-df", args.min_df, None)) if v != default]
    if args.corpus is None and corpus_only:
        raise ElicitError(f"{', '.join(corpus_only)} go(es) with --corpus FILE only")
    # Before reading anything: the session must not replace one of its own inputs.
    check_not_input(args.out, {"--from-csv": args.from_csv, "--from-npz": args.from_npz,
                               "--corpus": args.corpus, "--texts": args.texts,
                               "--meta-features": args.meta_features})
    pool = 400 if args.pool_size is None and (args.dataset or args.corpus) else args.pool_size
    reviews: dict[str, Any] = dict(run=args.run or 0, seed=args.seed, meta_features=meta_kind,
                                   meta_dim=meta_dim, data_dir=args.data_dir)
    if args.dataset:
        inputs = loaders.dataset_inputs(args.dataset, **reviews)
    elif args.corpus is not None:
        inputs = loaders.corpus_inputs(args.corpus, text_field=args.text_field,
                                       rating_field=args.rating_field, min_df=args.min_df,
                                       **reviews)
    elif args.from_npz is not None:
        inputs = loaders.npz_inputs(args.from_npz)
    else:
        if not args.target:
            raise ElicitError("--from-csv needs --target COLUMN: the column to predict")
        # "counts" for a table is its default: the columns' correlation structure.
        table_meta = None if meta_kind == "counts" else Path(meta_kind)
        inputs = loaders.table_inputs(args.from_csv, args.target, args.features, table_meta)
        inputs["standardize"] = not args.no_standardize
    if args.texts is not None:
        inputs["texts"] = loaders.texts_from_json(args.texts)
    if args.target_description is not None:
        inputs["target_description"] = args.target_description
    from elicit.elicitation.kinds import PAPER_QUESTIONS, model_for
    from elicit.model.spec import Hyper
    from elicit.model.variants import PAPER

    model = args.model if args.model is not None else (model_for(args.questions) or PAPER)
    hyper = Hyper(model=model) if args.tau2 is None else Hyper(tau2=args.tau2, model=model)
    Session.create(path=args.out, hyper=hyper, engine=args.engine, utility=args.utility,
                   refine=args.refine, strategy=args.strategy, pool_size=pool, seed=args.seed,
                   overwrite=args.overwrite, utility_target=args.utility_target,
                   questions=args.questions, **inputs).close()
    with Session.open(args.out) as s:  # as `elicit ask` opens it, to choose as it will
        count = [f"{len(seg)} {seg.kind.noun if len(seg) == 1 else seg.kind.plural}"
                 for seg in s.elicitor.table.segments]
        asked = count[0] if len(count) == 1 else f"{s.n_pairs} questions ({', '.join(count)})"
        model = "" if s.questions == PAPER_QUESTIONS else f", model {s.elicitor.hyper.model}"
        # printable: the file name, as the user typed it, may hold control characters
        print(f"created {printable(args.out)}: {len(s.feature_names)} features, {asked}, "
              f"engine {s.elicitor.engine.name}{model}")
        for line in s.summary:
            print(f"  {printable(line)}")  # it names the data's columns
        print(f"answer in the terminal:  {command_line('elicit', 'ask', args.out)} [--expert NAME]")
        print(f"or in a browser:         {command_line('elicit', 'serve', args.out)}", flush=True)
        s.keep_first_question()  # last: the file is complete and usable without it
    return 0


def cmd_ask(args: argparse.Namespace) -> int:
    from elicit.session.terminal import ask

    return ask(args.session, engine=args.engine, expert=args.expert, batch=args.batch)


def cmd_serve(args: argparse.Namespace) -> int:
    from elicit.session.web import serve

    return serve(args.session, host=args.host, port=args.port, engine=args.engine,
                 expert=args.expert)


def cmd_history(args: argparse.Namespace) -> int:
    from elicit.session.opening import read
    from elicit.session.terminal import show_agreement, show_history

    if args.agreement and args.csv:
        raise ElicitError("--agreement prints a table of its own: leave out --csv")
    with read(args.session) as r:  # the record alone: the model is not loaded
        if args.agreement:
            show_agreement(r)
        else:
            show_history(r, csv=args.csv)
    return 0


def cmd_export(args: argparse.Namespace) -> int:
    from elicit.session.export import export_history, export_prior
    from elicit.session.session import Session

    path = check_not_input(args.path, {"session": args.session}, "export")
    if path.suffix.lower() not in (".nc", ".json", ".csv"):
        raise ElicitError(f"cannot export to {path.name!r}: use a .nc (netCDF) or .json file "
                          "name for the prior, or .csv for the history")
    export = export_history if path.suffix.lower() == ".csv" else export_prior
    with Session.open(args.session, engine=args.engine, read_only=True) as s:
        export(s, path, args.overwrite)
    print(f"wrote {path}")
    return 0

