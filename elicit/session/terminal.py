"""The terminal front end of a session (``elicit ask``) and its history table
(``elicit history``).

``run_ask`` reads one line per key from its input, so it works in a terminal and from a pipe
alike (``printf 's\\nd\\nq\\n' | elicit ask my.session``).
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, TextIO

from elicit.errors import ElicitError

if TYPE_CHECKING:
    from elicit.session.session import Session, SessionQuery

#: Keys of the terminal UI.
KEYS_HELP = ("[s] similar   [d] dissimilar   [?] don't know   [k] skip   [u] undo   [q] quit\n"
             "Add a comment after the key, e.g.  s both praise the product")


def _show_query(s: Session, q: SessionQuery, out: TextIO) -> None:
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


def run_ask(s: Session, inp: TextIO, out: TextIO, batch: int = 1) -> int:
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


def show_history(s: Session, csv: bool = False, out: TextIO | None = None) -> None:
    """Print a session's answers: a summary line and a table, or CSV with ``csv``."""
    out = sys.stdout if out is None else out
    h = s.history
    pr = s.progress()
    if csv:
        h.to_csv(out, index=False)
        return
    print(f"{s.path}: {pr['answered']} of {pr['pairs']} pairs answered "
          f"({pr['similar']} similar, {pr['dissimilar']} dissimilar, {pr['dont_know']} don't "
          f"know), {pr['skipped']} skipped, {pr['undone']} undone", file=out)
    if len(h):
        view = h[["answer_id", "feature_i", "feature_j", "answer", "expected_gain",
                  "answered_at", "undone", "comment"]].copy()
        view["answered_at"] = view["answered_at"].str.slice(0, 19)
        view["comment"] = view["comment"].fillna("")
        print(view.to_string(index=False), file=out)
