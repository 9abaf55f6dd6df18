"""The terminal front end of a session (``elicit ask``, ``elicit history``) and the signal
handling of ``ask`` and ``serve``. Stored text is printed through
:func:`~elicit.internal.text.printable`: its control characters cannot act on the terminal."""

from __future__ import annotations

import contextlib
import csv as _csv
import os
import signal
import struct
import sys
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from elicit.elicitation.answers import DONT_KNOW, Answer
from elicit.errors import ElicitError
from elicit.internal.text import command_line, printable, printable_line
from elicit.session.opening import HISTORY_COLUMNS, SessionReader, check_writable, read
from elicit.session.questions import SessionQuery, question_names
from elicit.session.record import first_question, read_pending, read_stop_hint
from elicit.session.store import SessionReplaced

if TYPE_CHECKING:
    from elicit.elicitation.kinds import QuestionKind
    from elicit.session.session import Session

#: The keys of every question, whatever its kind (the answer keys are the kinds').
ACTION_KEYS = ("[k] skip", "[u] undo", "[q] quit")


class Interrupted(KeyboardInterrupt):
    """Ctrl-C, or SIGTERM / SIGHUP turned into the same stop; ``code``: the exit status."""

    def __init__(self, code: int = 130) -> None:
        super().__init__(code)
        self.code = code


@contextlib.contextmanager
def stop_signals_as_interrupt() -> Iterator[None]:
    """Within the block, SIGTERM and SIGHUP (a closed terminal) raise :class:`Interrupted`
    like Ctrl-C, so ``ask`` and ``serve`` close the session cleanly on them too (in the main
    thread only, which alone can install handlers)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum, frame):
        raise Interrupted(128 + signum)

    sigs = [s for s in ("SIGTERM", "SIGHUP") if hasattr(signal, s)]
    old = {name: signal.signal(getattr(signal, name), handler) for name in sigs}
    # SIGINT may have been ignored by the parent (test runners, job launchers): restore Ctrl-C.
    old["SIGINT"] = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        for name, h in old.items():
            signal.signal(getattr(signal, name), h)


def _put(out: TextIO, *lines: str) -> None:
    """Print lines holding stored text (see :func:`printable_line`)."""
    for line in lines:
        print(printable_line(line), file=out, flush=True)


def _marked(keyword: str, snippet: str, tty: bool) -> str:
    """The snippet with the keyword in bold (ANSI) on a terminal, else between ``**``."""
    from elicit.session.loaders import highlight  # pandas: not for `elicit history`

    on, off = ("\033[1m", "\033[0m") if tty else ("**", "**")
    return "".join(f"{on}{printable(t)}{off}" if hit else printable(t)
                   for t, hit in highlight(keyword, snippet))


def _drop_typeahead(inp: TextIO) -> int:
    """Discard what was typed on the terminal ``inp`` and not read yet (it must not answer a
    question unseen); returns how many bytes. Other input is left alone."""
    try:
        if not os.isatty(fd := inp.fileno()):
            return 0
    except (AttributeError, OSError, ValueError):
        return 0  # e.g. io.StringIO
    try:
        import fcntl
        import termios
    except ImportError:  # pragma: no cover - Windows has no termios
        return 0
    try:
        waiting = struct.unpack("i", fcntl.ioctl(fd, termios.FIONREAD, b"\0" * 4))[0]
        termios.tcflush(fd, termios.TCIFLUSH)
    except OSError:
        return 0
    return int(waiting)


def snippet_note(s: SessionReader, feature: int) -> str | None:
    """Why ``feature`` shows no example snippet when others do (else None)."""
    if s.texts(feature) or s.no_snippets_note is not None:
        return None
    name = s.feature_names[feature]
    if any(t.startswith("<") and t.endswith(">") for t in name.split("_")):
        return (f"no example: {name!r} is a placeholder token made by the data's "
                "preprocessing (it stands for text such as numbers), so no snippet of the "
                "example texts shows it")
    return f"no example: the example texts do not contain {name!r}"


def worth_text(q: SessionQuery) -> str:
    """``"worth 35% of the best question so far"`` (empty without expected gains)."""
    if q.worth is None:
        return ""
    pct = q.worth * 100
    return f"worth {pct:.0f}% of the best question so far" if pct >= 1 or pct == 0 else \
        "worth under 1% of the best question so far"


def question_text(s: SessionReader, q: SessionQuery) -> str:
    """The question as the expert reads it (its kind's text)."""
    return q.question_kind.render(q.names, s.target_description)


def answer_keys(kind: QuestionKind) -> list[str]:
    """The answer keys of ``kind``'s questions as shown: ``["[s] similar", ...]``."""
    return [f"[{k}] {a.label.lower()}" for k, a in kind.keys.items()]


def _show_query(s: SessionReader, q: SessionQuery, out: TextIO) -> None:
    tty = bool(getattr(out, "isatty", lambda: False)())  # the keyword in bold on a terminal
    pr = s.progress(q.expert)
    worth = worth_text(q)
    skipped = f" ({pr['skipped']} skipped)" if pr["skipped"] else ""
    _put(out, f"\n── Question {pr['answered'] + 1} · {pr['answered']} of {pr['questions']} "
              f"{s.question_noun}s answered{skipped}{' · ' + worth if worth else ''} ──",
         question_text(s, q))
    for tag, f, name in zip("AB", q.features, q.names):
        _put(out, f"  {name}" if len(q.features) == 1 else f"  {tag}: {name}")
        for snip in s.texts(f)[:2]:
            print(f"       \"{_marked(name, snip, tty)}\"", file=out)  # escaped inside
        if why := snippet_note(s, f):
            _put(out, f"       ({why})")
    print("  ".join([*answer_keys(q.question_kind), *ACTION_KEYS]), file=out)


def _header(s: SessionReader, out: TextIO) -> None:
    """The lines above the first question: the file, the data, the notes and the keys."""
    _put(out, f"elicit session {s.path}" + (f" · expert {s.expert}" if s.expert else ""))
    if s.description:
        _put(out, s.description)
    if s.no_snippets_note:
        _put(out, f"({s.no_snippets_note})")
    _put(out, *s.notes)
    print(keys_help(s), file=out)


def _present(s: SessionReader, q: SessionQuery | None, lines: list[str], inp: TextIO,
             out: TextIO) -> None:
    # keys typed before the expert saw the question must not answer it
    if dropped := _drop_typeahead(inp):
        print(f"\n(ignored {dropped} character{'s' if dropped > 1 else ''} "
              "typed before this question appeared)", file=out)
    _put(out, *lines)
    if q is not None:
        _show_query(s, q, out)


def show_stored(r: SessionReader, inp: TextIO, out: TextIO,
                first: bool = True) -> SessionQuery | None:
    """The header and the expert's oldest stored question (or, when ``first``, a new session's
    kept first question), read from the file alone, before the model loads (``elicit ask``:
    0.2 s of CPU instead of 0.9 s); the question shown, or None (nothing shown) when none is."""
    pending = read_pending(r.conn, r.feature_names, r.uid, r.expert)
    if not (q := pending[0] if pending else first and first_question(
            r.conn, r.meta, r.feature_names, r.uid, r.expert)):
        return None
    _header(r, out)
    hint = read_stop_hint(r.conn, r.expert)
    _present(r, q, [f"\nhint: {hint} (type q to stop)"] if hint else [], inp, out)
    return q


def ask(path: str | os.PathLike, engine: str | None = None, expert: str | None = None,
        batch: int = 1, inp: TextIO | None = None, out: TextIO | None = None) -> int:
    """``elicit ask``: a stored question on screen first (:func:`show_stored`), then the loop
    (:func:`run_ask`) with the model, which loads while the expert reads; the exit status."""
    inp = sys.stdin if inp is None else inp
    out = sys.stdout if out is None else out
    file = Path(path)
    with read(file, expert=expert) as r:
        # Session.open's refusal of a file it cannot save to comes first, and alone
        check_writable(file)
        if batch > 1 and batch > (left := r.progress(r.expert)["left"]) > 0:
            raise ElicitError(f"--batch {batch} is larger than the {left} {r.question_noun}(s) "
                              f"left to ask; use --batch {left} or less")
        # a stored batch's first question too; a kept first question was chosen alone, with
        # the session's engine
        first = batch == 1 and engine in (None, r.settings["engine"])
        shown = show_stored(r, inp, out, first=first)
    from elicit.session.session import Session  # the model: once the question is on screen

    try:  # one guard from the model's load to the loop's end: every stop says what is saved
        with stop_signals_as_interrupt(), Session.open(path, engine=engine, expert=expert) as s:
            return run_ask(s, inp, out, batch, shown)
    except KeyboardInterrupt as e:
        try:  # counted in the file, which holds every confirmed answer
            with read(file, expert=expert) as r:
                saved = _saved(r.progress(r.expert)["answered"], r.path, r.expert)
        except Exception:  # (the file locked or gone): the stop, as every command says it
            raise e from None
        code = e.code if isinstance(e, Interrupted) else 130
        why = "interrupted" if code == 130 else f"stopped by signal {code - 128}"
        with contextlib.suppress(OSError, ValueError):  # a terminal gone away (SIGHUP)
            print(printable_line(f"\n{why}: {saved}"), file=out, flush=True)
        return code


def run_ask(s: Session, inp: TextIO, out: TextIO, batch: int = 1,
            shown: SessionQuery | None = None) -> int:
    """The terminal loop for the session's expert, one line of input per key; returns the exit
    status. ``shown``: the question :func:`show_stored` put on screen already. A stop (Ctrl-C,
    SIGTERM, SIGHUP) is :func:`ask`'s to report."""
    who = s.expert
    if shown is None:
        _header(s, out)
    # the stop hint, if any, was shown with the question shown before the model loaded
    show, hinted = True, shown is not None and s.stop_hint(who) is not None
    while True:
        if s.is_done(who):
            q = None
            pr = s.progress(who)  # answers may close other questions: say what was answered
            lines = [f"\nNo {s.question_noun} is left: {pr['answered']} of {pr['questions']} "
                     f"answered{', the others closed by the answers given' * (pr['left'] > 0)}"
                     ". Type u to undo the last answer or q to quit."]
        else:
            lines = []
            if batch > 1 and not s.pending(who):
                qs = s.batch(min(batch, s.progress(who)["left"]), who)
                lines += [f"\nA batch of {len(qs)} questions:"] + [
                    f"  {t}. {'  vs  '.join(bq.names)}" for t, bq in enumerate(qs, 1)]
            q = s.next_query(who)
            hint = s.stop_hint(who)
            if hint and not hinted:
                lines.append(f"\nhint: {hint} (type q to stop)")
                hinted = True
        if shown is not None:  # on screen, unless answered elsewhere or the file replaced
            show, shown = q != shown, None  # all but the gain: an id recurs in another file
        if show:
            _present(s, q, lines, inp, out)
        else:
            _put(out, *lines)
        show = True
        out.write("> ")
        out.flush()
        line = inp.readline()
        key, _, comment = line.strip().partition(" ")
        key = key.lower()
        if key in ("q", "quit", "exit") or not line:
            why = "bye:" if line else "\nend of input;"
            _put(out, f"{why} {_saved(s.progress(who)['answered'], s.path, who)}")
            return 0
        show = _handle(s, q, key, comment, out, who)


def _saved(n: int, path: str | os.PathLike, who: str) -> str:
    """What is saved, and the command that resumes the session as the same expert."""
    return (f"{n} answer{'s are' if n != 1 else ' is'} saved in {path}; resume with "
            f"`{command_line('elicit', 'ask', path, *(('--expert', who) if who else ()))}`")


def keys_help(s: SessionReader) -> str:
    """The keys of the session's kinds of question: one line, or one aligned line per kind
    and one of the keys of any question."""
    example = f"Add a comment after the key, e.g.  {s.kinds[0].comment_example}"
    if len(s.kinds) == 1:
        return "   ".join([*answer_keys(s.kinds[0]), *ACTION_KEYS]) + "\n" + example
    rows = [answer_keys(k) for k in s.kinds]
    widths = [max(len(r[c]) for r in rows if c < len(r)) + 2 for c in range(max(map(len, rows)))]
    heads = [f"{k.label}:" for k in s.kinds] + ["any question:"]
    pad = max(map(len, heads)) + 1
    lines = [heads[t].ljust(pad) + "".join(key.ljust(w) for key, w in zip(r, widths)).rstrip()
             for t, r in enumerate(rows)]
    lines.append(heads[-1].ljust(pad) + "   ".join(ACTION_KEYS))
    return "\n".join([*lines, example])


def _said(key: str) -> Answer | None:
    """The answer ``key`` spells as the library reads it (its key, word or an alias)."""
    with contextlib.suppress(ElicitError):
        return Answer.parse(key)
    return None


def _handle(s: Session, q: SessionQuery | None, key: str, comment: str, out: TextIO,
            who: str) -> bool:
    """Act on one key; returns whether to show the question again."""
    try:
        if comment and key in ("u", "undo", "k", "skip"):  # the text would be lost unsaid
            print(f"nothing was done: {key!r} keeps no comment, an answer does", file=out)
            return False
        if key in ("u", "undo"):
            rec = s.undo(who)
            names = " vs ".join(question_names(s.feature_names, rec.i, rec.j))
            _put(out, f"undid answer {rec.id}: {names} ({rec.answer.value.replace('_', ' ')})")
        elif q is None:
            if key:
                print(f"nothing left to ask; type u or q (got {key!r})", file=out)
        elif key in ("k", "skip"):
            s.skip(q)
            print(f"skipped; the {s.question_noun} may come back later", file=out)
        elif (said := _said(key)) is not None and said.kind in (None, q.kind):
            saved = f"saved: {' vs '.join(q.names)} -> {said.value.replace('_', ' ')}"
            # said once committed: the refit after it takes seconds on thousands of features
            s.answer(q, key, comment=comment or None,
                     on_saved=lambda: _put(out, saved, "updating the model ..."))
        elif (other := next((k for k in s.kinds if said and said.kind == k.name), None)):
            print(f"{key!r} answers {other.question}; this is {q.question_kind.question}: use "
                  f"{', '.join(q.question_kind.keys)} (or k, u, q)", file=out)
            return False
        elif key in ("", "h", "help"):
            print(keys_help(s), file=out)
        else:  # a comment typed after it (c: the web page's comment box): say where it goes
            tip = q.question_kind.comment_example if comment else ""
            print(f"unknown key {key!r}: use {', '.join(q.question_kind.keys)}, k, u or q"
                  + (tip and f"; a comment goes after the answer's key, e.g.  {tip}"), file=out)
            return False
    except ElicitError as e:
        if isinstance(e, SessionReplaced):
            raise  # nothing can be saved any more: the command ends with its one line
        # A refused action (nothing to undo, answered elsewhere) is not fatal here.
        _put(out, f"error: {e}")
    return True


def _cell(column: str, value: object) -> str:
    """A value of the history as its table shows it: the gain to four significant digits,
    the time to the second, blank for none."""
    if value is None:
        return ""
    if column == "expected_gain":
        return f"{value:.4g}"
    return printable(str(value)[:19] if column == "answered_at" else str(value))


def _table(out: TextIO, header: Sequence[str], rows: Sequence[Sequence[object]],
           right: Sequence[bool]) -> None:
    """Print a plain-text table: columns two spaces apart, as wide as their widest cell, the
    ``right`` ones (numbers) right-justified, the cells as :func:`_cell` shows them."""
    cells = [list(header), *([_cell(c, v) for c, v in zip(header, r)] for r in rows)]
    widths = [max(map(len, column)) for column in zip(*cells)]
    for line in cells:
        print("  ".join(c.rjust(w) if r else c.ljust(w) for c, w, r in zip(line, widths, right))
              .rstrip(), file=out)


def show_history(s: SessionReader, csv: bool = False, out: TextIO | None = None) -> None:
    """Print a session's answers: a line per expert, the summary and a table, or CSV (text
    escaped; ``elicit export FILE.csv`` writes it as written). Neither needs the model."""
    out = sys.stdout if out is None else out
    rows = s.history_rows()
    if csv:
        _csv.writer(out, lineterminator="\n").writerows(
            [HISTORY_COLUMNS, *([printable(v) if isinstance(v, str) else v for v in r]
                                for r in rows)])
        return
    experts = s.experts() or [s.expert]
    for e in experts:
        pr = s.progress(e)
        who = f" by {e}" if e else ""
        counted = [a for k in s.kinds for a in k.answers] + [DONT_KNOW]
        counts = ", ".join(f"{pr[a.value]} {a.label.lower()}" for a in counted)
        _put(out, f"{s.path}: {pr['answered']} of {pr['questions']} {s.question_noun}s "
                  f"answered{who} ({counts}), {pr['skipped']} skipped, {pr['undone']} undone")
    _put(out, *(f"  {line}" for line in s.summary))
    if rows:
        cols = ["answer_id", "feature_i", "feature_j", "answer", "expected_gain",
                "answered_at", "undone", "comment"]
        if len(s.kinds) > 1:
            cols.insert(1, "kind")
        if len(experts) > 1 or any(experts):
            cols.insert(1, "expert")
        at = [HISTORY_COLUMNS.index(c) for c in cols]
        _table(out, cols, [[r[k] for k in at] for r in rows],
               [c in ("answer_id", "expected_gain") for c in cols])


def show_agreement(s: SessionReader, out: TextIO | None = None) -> None:
    """Print where the experts agree and disagree (``elicit history --agreement``)."""
    from elicit.session.export import agreement  # pandas: not for `elicit history`

    out = sys.stdout if out is None else out
    ag = agreement(s)
    experts = [e or "(unnamed)" for e in s.experts()]
    _put(out, f"{s.path}: {len(experts)} expert(s): {', '.join(experts) or 'none yet'}")
    if ag.rate is None:
        words = "/".join(a.value for a in s.kinds[0].answers)
        print(f"no {s.question_noun} has {words} answers from two or more experts yet"
              if len(s.kinds) == 1 else "no question has answers (other than don't know) "
              "from two or more experts yet", file=out)
    else:
        print(f"agreement: {ag.agreeing} of {ag.compared} {s.question_noun}s answered by two "
              f"or more experts ({ag.rate:.0%}); {ag.compared - ag.agreeing} with conflicting "
              "answers", file=out)
    if len(ag.pairs):
        df = ag.pairs
        _table(out, list(df.columns), list(df.itertuples(index=False)),
               [df[c].dtype.kind in "iuf" for c in df.columns])
