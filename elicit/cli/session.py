"""Command-line front ends of real-expert sessions: ``session new``, ``ask``, ``serve``,
``history`` and ``export``.

The ``elicit`` CLI registers them with :func:`add_session_parsers`; every sub-command sets
``args.session_func``, and :func:`run_session_command` runs it. Errors print one line
(``elicit: error: ...``) and exit with status 2, without a traceback.

``elicit ask`` reads one line per key from standard input, so it works in a terminal and from a
pipe alike (``printf 's\\nd\\nq\\n' | elicit ask my.session``).
"""

from __future__ import annotations

import argparse
import json
import re
import sqlite3
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TextIO

import numpy as np

from elicit.cli.argtypes import nonneg_int, port, positive_int
from elicit.elicitation.strategies import STRATEGIES
from elicit.engines import ENGINES
from elicit.errors import ElicitError, EngineUnavailable
from elicit.model.spec import Hyper

#: Keys of the terminal UI.
KEYS_HELP = ("[s] similar   [d] dissimilar   [?] don't know   [k] skip   [u] undo   [q] quit\n"
             "Add a comment after the key, e.g.  s both praise the product")


# --------------------------------------------------------------------------------------------
# Data for `session new`
# --------------------------------------------------------------------------------------------

def keyword_snippets(keywords: Sequence[str], texts: Sequence[str], per_keyword: int = 3,
                     width: int = 70) -> list[list[str]]:
    """Up to ``per_keyword`` short snippets showing where each keyword occurs in ``texts``.

    A keyword's ``_``-joined tokens (``a_lot``) must occur as consecutive words. Snippets come
    from different texts, in the texts' order (deterministic), with ``width`` characters of
    context on each side.
    """
    # Index which texts contain each lower-cased word once, so each keyword's regex runs only
    # on the few texts that can match instead of on the whole corpus.
    lowered = [t.lower() for t in texts]
    where: dict[str, list[int]] = {}
    for k, t in enumerate(lowered):
        for w in set(re.findall(r"[^\W_]+(?:'[^\W_]+)*", t)):
            where.setdefault(w, []).append(k)
    out: list[list[str]] = []
    for kw in keywords:
        toks = [t for t in kw.lower().split("_") if t]
        if not toks:
            out.append([])
            continue
        # The paper's vocabulary writes numbers as "<num>" (as in "<num>_years").
        parts = [r"\d+(?:[.,]\d+)?" if t == "<num>" else re.escape(t) for t in toks]
        pattern = re.compile(r"(?<![^\W_])" + r"[\W_]+".join(parts) + r"(?![^\W_])")
        anchor = next((t for t in toks if t != "<num>"), None)
        cands = where.get(anchor, []) if anchor else range(len(lowered))
        found: list[str] = []
        for k in cands:
            m = pattern.search(lowered[k])
            if m is None:
                continue
            t = texts[k]
            a, b = max(0, m.start() - width), min(len(t), m.end() + width)
            snippet = " ".join(t[a:b].split())
            found.append(("…" if a > 0 else "") + snippet + ("…" if b < len(t) else ""))
            if len(found) == per_keyword:
                break
        out.append(found)
    return out


def dataset_inputs(name: str, run_seed: int, data_dir: str | None = None) -> dict:
    """The inputs of a session on the paper's Amazon or Yelp data, one run's split.

    Uses :func:`elicit.data.load_dataset` (the paper's bag-of-words matrix and feature rule)
    and :func:`elicit.data.prepare_run` (100 training reviews, standardised X, centred y,
    meta-features = raw training counts). The example snippets come from the shipped raw-text
    reviews of the same corpus when they are present: these are not the same reviews as the
    paper's matrix (which has no text), but they show how each keyword is used.

    Returns
    -------
    dict
        Keyword arguments for :meth:`Session.create` (X, y, meta_features, feature_names,
        texts, y_offset, description).
    """
    from elicit.data import (
        RAW_FILES,
        load_dataset,
        prepare_run,
        read_records,
        resolve_data_dir,
    )

    ds = load_dataset(name, data_dir)  # type: ignore[arg-type]
    run = prepare_run(ds, run_seed)
    texts = None
    raw_note = "no example snippets (raw-text reviews not found)"
    try:
        raw = resolve_data_dir(data_dir, required=[RAW_FILES[name]]) / RAW_FILES[name]
    except ElicitError:
        raw = None
    if raw is not None:
        reviews = [str(r.get("text") or "") for _, r in read_records(raw)]
        texts = keyword_snippets(run.feature_names, reviews)
        raw_note = f"example snippets from {raw.name}"
    return {
        "X": run.X_train, "y": run.y_train, "meta_features": run.U,
        "feature_names": run.feature_names, "texts": texts, "y_offset": run.y_mean,
        "description": (f"{name}: paper bag-of-words matrix, run seed {run_seed} "
                        f"({run.X_train.shape[0]} training reviews, {run.p} keywords); "
                        f"{raw_note}"),
    }


def npz_inputs(path: Path) -> dict:
    """Inputs from a user ``.npz`` file with arrays ``X``, ``y``, ``U`` (or ``meta_features``)
    and optionally ``feature_names``."""
    if not path.is_file():
        raise ElicitError(f"--from-npz file {path} does not exist")
    try:
        npz = np.load(path, allow_pickle=False)
    except (OSError, ValueError) as e:
        raise ElicitError(f"cannot read {path} as a numpy .npz file: {e}") from None
    with npz:
        keys = set(npz.files)
        ukey = "U" if "U" in keys else "meta_features" if "meta_features" in keys else None
        missing = [k for k in ("X", "y") if k not in keys] + ([] if ukey else ["U"])
        if missing:
            raise ElicitError(f"{path} has no array(s) {', '.join(missing)}; it must hold X "
                              "(n x p), y (n) and U (p x d, or named meta_features); found "
                              f"{', '.join(sorted(keys)) or 'nothing'}")
        try:
            names = [str(n) for n in npz["feature_names"]] if "feature_names" in keys else None
            X, y, U = npz["X"], npz["y"], npz[ukey]
        except ValueError as e:
            raise ElicitError(f"cannot read arrays from {path}: {e} (object arrays are not "
                              "supported; save feature_names as a string array)") from None
    return {"X": X, "y": y, "meta_features": U, "feature_names": names,
            "description": f"arrays from {path.name}"}


# --------------------------------------------------------------------------------------------
# Argument parsing
# --------------------------------------------------------------------------------------------


def add_session_parsers(subparsers: argparse._SubParsersAction) -> None:
    """Add ``session new``, ``ask``, ``serve``, ``history`` and ``export`` to a CLI.

    Each sub-command sets ``args.session_func``; call :func:`run_session_command` with the
    parsed arguments.
    """
    p = subparsers.add_parser("session", help="create real-expert sessions")
    ssub = p.add_subparsers(dest="session_command", required=True)
    n = ssub.add_parser("new", help="create a session file",
                        description="Create a session from the paper's data (--dataset) or "
                                    "from your own arrays (--from-npz).")
    src = n.add_mutually_exclusive_group(required=True)
    src.add_argument("--dataset", choices=("amazon", "yelp"),
                     help="the paper's data set (one run's 100 training reviews)")
    src.add_argument("--from-npz", type=Path, metavar="FILE",
                     help=".npz with X (n x p), y (n), U (p x d) and optional feature_names")
    n.add_argument("--out", type=Path, required=True, help="session file to write")
    n.add_argument("--run-seed", type=nonneg_int, default=0,
                   help="seed of the data split (--dataset; default 0)")
    n.add_argument("--data-dir", default=None, help="data directory (else $ELICIT_DATA, ...)")
    n.add_argument("--seed", type=nonneg_int, default=None,
                   help="seed of the query random stream (default: the run seed)")
    n.add_argument("--strategy", choices=STRATEGIES, default="sequential")
    n.add_argument("--pool-size", type=positive_int, default=None,
                   help="candidate pool per round (default: 400 for --dataset, as in the "
                        "paper; else min(#pairs, 10 p))")
    n.add_argument("--engine", choices=ENGINES, default="auto")
    n.add_argument("--utility", choices=("fast", "exact"), default="fast")
    n.add_argument("--refine", type=nonneg_int, default=10)
    n.add_argument("--tau2", type=float, default=None, help="prior variance scale (0.01)")
    n.add_argument("--texts", type=Path, default=None,
                   help="JSON file: feature name -> list of example snippets")
    n.add_argument("--overwrite", action="store_true", help="replace an existing --out file")
    n.set_defaults(session_func=cmd_new)

    a = subparsers.add_parser("ask", help="answer questions in the terminal")
    a.add_argument("session", type=Path, help="session file")
    a.add_argument("--batch", type=positive_int, default=1, metavar="K",
                   help="choose K questions at a time (feature-disjoint, by expected gain)")
    a.add_argument("--engine", choices=ENGINES, default=None, help="override the engine")
    a.set_defaults(session_func=cmd_ask)

    s = subparsers.add_parser("serve", help="answer questions in a web page")
    s.add_argument("session", type=Path, help="session file")
    s.add_argument("--port", type=port, default=8765)
    s.add_argument("--host", default="127.0.0.1",
                   help="address to bind (default 127.0.0.1: this machine only)")
    s.add_argument("--engine", choices=ENGINES, default=None, help="override the engine")
    s.set_defaults(session_func=cmd_serve)

    h = subparsers.add_parser("history", help="print the answers of a session")
    h.add_argument("session", type=Path, help="session file")
    h.add_argument("--csv", action="store_true", help="print CSV instead of a table")
    h.add_argument("--engine", choices=ENGINES, default=None, help="override the engine")
    h.set_defaults(session_func=cmd_history)

    e = subparsers.add_parser("export", help="export the learned prior (.nc/.json) or the "
                                             "history (.csv)")
    e.add_argument("session", type=Path, help="session file")
    e.add_argument("path", type=Path, help="output file: .nc, .json or .csv")
    e.add_argument("--engine", choices=ENGINES, default=None, help="override the engine")
    e.set_defaults(session_func=cmd_export)


def run_session_command(args: argparse.Namespace) -> int:
    """Run the sub-command chosen by :func:`add_session_parsers`.

    Returns 0 on success. Errors print ``elicit: error: ...`` on stderr and raise
    ``SystemExit(2)``; an interrupted ``ask`` raises ``SystemExit(130)``.
    """
    try:
        code = args.session_func(args)
    except ElicitError as e:
        print(f"elicit: error: {e}", file=sys.stderr)
        raise SystemExit(2) from None
    except sqlite3.Error as e:
        print(f"elicit: error: session file problem: {e}", file=sys.stderr)
        raise SystemExit(2) from None
    except EngineUnavailable as e:
        print(f"elicit: error: {e} (choose another engine with --engine numpy)",
              file=sys.stderr)
        raise SystemExit(2) from None
    except OSError as e:
        print(f"elicit: error: {e.strerror or e}: {e.filename or ''}".rstrip(": "),
              file=sys.stderr)
        raise SystemExit(2) from None
    if code:
        raise SystemExit(code)
    return 0


def main(argv: list[str] | None = None) -> int:
    """A stand-alone ``elicit`` with only the session commands (for tests and ``python -m``)."""
    parser = argparse.ArgumentParser(prog="elicit")
    sub = parser.add_subparsers(dest="command", required=True)
    add_session_parsers(sub)
    args = parser.parse_args(argv)
    try:
        return run_session_command(args)
    except SystemExit as e:
        return int(e.code or 0)


# --------------------------------------------------------------------------------------------
# Commands
# --------------------------------------------------------------------------------------------

def _open(path: Path, engine: str | None = None):
    from elicit.session.session import Session

    return Session.open(path, engine=engine)


def cmd_new(args: argparse.Namespace) -> int:
    from elicit.session.session import Session

    if args.dataset:
        inputs = dataset_inputs(args.dataset, args.run_seed, args.data_dir)
        pool = args.pool_size if args.pool_size is not None else 400
    else:
        inputs = npz_inputs(args.from_npz)
        pool = args.pool_size
    if args.texts is not None:
        if not args.texts.is_file():
            raise ElicitError(f"--texts file {args.texts} does not exist")
        try:
            inputs["texts"] = json.loads(args.texts.read_text(encoding="utf-8"))
        except (ValueError, UnicodeDecodeError) as e:
            raise ElicitError(f"--texts file {args.texts} is not valid JSON: {e}") from None
    hyper = Hyper() if args.tau2 is None else Hyper(tau2=args.tau2)
    seed = args.seed if args.seed is not None else args.run_seed
    s = Session.create(path=args.out, hyper=hyper, engine=args.engine, utility=args.utility,
                       refine=args.refine, strategy=args.strategy, pool_size=pool, seed=seed,
                       overwrite=args.overwrite, **inputs)
    with s:
        pr = s.progress()
        print(f"created {args.out}: {len(s.feature_names)} features, {pr['pairs']} pairs, "
              f"engine {s.elicitor.engine.name}")
        print(f"answer in the terminal:  elicit ask {args.out}")
        print(f"or in a browser:         elicit serve {args.out}")
    return 0


def _show_query(s, q, out: TextIO) -> None:
    pr = s.progress()
    gain = "" if q.expected_gain is None else f" · expected gain {q.expected_gain:.3g}"
    skipped = f" ({pr['skipped']} skipped)" if pr["skipped"] else ""
    print(f"\n── Question {pr['answered'] + 1} · {pr['answered']} of {pr['pairs']} pairs "
          f"answered{skipped}{gain} ──", file=out)
    print("Do these two features affect the outcome in the same way?", file=out)
    for label, f, name in (("A", q.i, q.names[0]), ("B", q.j, q.names[1])):
        print(f"  {label}: {name}", file=out)
        for snip in s.texts(f)[:2]:
            print(f"       \"{snip}\"", file=out)
    print("[s] similar  [d] dissimilar  [?] don't know  [k] skip  [u] undo  [q] quit",
          file=out)


def run_ask(s, inp: TextIO, out: TextIO, batch: int = 1) -> int:
    """The terminal loop: one line of input per key. Returns the exit status.

    Every answer is committed by :meth:`Session.answer` before the next question is chosen,
    so quitting, Ctrl-C or a killed terminal loses no answer already confirmed.
    """
    print(f"elicit session {s.path}", file=out)
    if s.description:
        print(s.description, file=out)
    print(KEYS_HELP, file=out)
    show = True
    try:
        while True:
            if s.done:
                print(f"\nAll {s.n_pairs} pairs are answered. Type u to undo the last answer "
                      "or q to quit.", file=out)
                q = None
            else:
                if batch > 1 and not s.pending():
                    qs = s.batch(batch)
                    print(f"\nA batch of {len(qs)} questions:", file=out)
                    for t, bq in enumerate(qs, 1):
                        print(f"  {t}. {bq.names[0]}  vs  {bq.names[1]}", file=out)
                q = s.next_query()
                if show:
                    _show_query(s, q, out)
            show = True
            out.write("> ")
            out.flush()
            line = inp.readline()
            if not line:
                print(f"\nend of input; {s.progress()['answered']} answers are saved in "
                      f"{s.path}", file=out)
                return 0
            key, _, comment = line.strip().partition(" ")
            key = key.lower()
            try:
                if key in ("q", "quit", "exit"):
                    print(f"bye: {s.progress()['answered']} answers are saved in {s.path}; "
                          f"resume with `elicit ask {s.path}`", file=out)
                    return 0
                if key in ("u", "undo"):
                    rec = s.undo()
                    print(f"undid answer {rec.id}: {s.feature_names[rec.i]} vs "
                          f"{s.feature_names[rec.j]} ({rec.answer.value})", file=out)
                elif q is None:
                    if key:
                        print(f"nothing left to ask; type u or q (got {key!r})", file=out)
                elif key in ("k", "skip"):
                    s.skip(q)
                    print("skipped; the pair may come back later", file=out)
                elif key in ("s", "d", "?", "similar", "dissimilar", "dont_know"):
                    rec = s.answer(q, key, comment=comment or None)
                    print(f"saved: {q.names[0]} vs {q.names[1]} -> "
                          f"{rec.answer.value.replace('_', ' ')}", file=out)
                elif key in ("", "h", "help"):
                    print(KEYS_HELP, file=out)
                else:
                    print(f"unknown key {key!r}: use s, d, ?, k, u or q", file=out)
                    show = False
            except ElicitError as e:
                # A refused action (nothing to undo, answered elsewhere) is not fatal here.
                print(f"error: {e}", file=out)
    except KeyboardInterrupt:
        print(f"\ninterrupted: {s.progress()['answered']} answers are saved in {s.path}; "
              f"resume with `elicit ask {s.path}`", file=out)
        return 130


def cmd_ask(args: argparse.Namespace) -> int:
    with _open(args.session, args.engine) as s:
        return run_ask(s, sys.stdin, sys.stdout, args.batch)


def cmd_serve(args: argparse.Namespace) -> int:
    from elicit.session.web import serve

    serve(args.session, host=args.host, port=args.port, engine=args.engine)
    return 0


def cmd_history(args: argparse.Namespace) -> int:
    with _open(args.session, args.engine) as s:
        h = s.history
        pr = s.progress()
    if args.csv:
        h.to_csv(sys.stdout, index=False)
        return 0
    print(f"{args.session}: {pr['answered']} of {pr['pairs']} pairs answered "
          f"({pr['similar']} similar, {pr['dissimilar']} dissimilar, {pr['dont_know']} don't "
          f"know), {pr['skipped']} skipped, {pr['undone']} undone")
    if len(h):
        view = h[["answer_id", "feature_i", "feature_j", "answer", "expected_gain",
                  "answered_at", "undone", "comment"]].copy()
        view["answered_at"] = view["answered_at"].str.slice(0, 19)
        view["comment"] = view["comment"].fillna("")
        print(view.to_string(index=False))
    return 0


def cmd_export(args: argparse.Namespace) -> int:
    path: Path = args.path
    with _open(args.session, args.engine) as s:
        if path.suffix.lower() == ".csv":
            if not path.parent.exists():
                raise ElicitError(f"directory {path.parent} does not exist")
            s.history.to_csv(path, index=False)
        else:
            s.export_prior(path)
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
