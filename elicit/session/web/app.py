"""The Flask application of ``elicit serve`` (see :mod:`elicit.session.web`)."""

from __future__ import annotations

import contextlib
import hmac
import io
import os
import re
import secrets
import sqlite3
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from flask import Flask, Response, abort, redirect, render_template, request, url_for
from markupsafe import escape
from werkzeug.wrappers import Response as ResponseBase

from elicit.elicitation.answers import Answer, words
from elicit.errors import ElicitError, EngineError
from elicit.session import record
from elicit.session.inputs import MAX_COMMENT
from elicit.session.loaders import highlight
from elicit.session.opening import HISTORY_COLUMNS, finish_cut_write
from elicit.session.questions import SessionQuery
from elicit.session.record import NotPending, UnknownQuery, check_expert
from elicit.session.session import Session
from elicit.session.store import BUSY_TIMEOUT, SessionReplaced, check_same_file
from elicit.session.terminal import question_text, snippet_note, worth_text
from elicit.session.web.page import CSS, JS, MESSAGES, REFUSAL

LOOPBACK_HOSTS = frozenset({"localhost", "127.0.0.1", "::1"})
#: How many of the latest answers the page lists.
HISTORY_ROWS = 10
#: Every response's: no framing, no inline code, no type sniffing, no Referer to other sites.
SECURITY_HEADERS = {
    "Content-Security-Policy": "default-src 'none'; img-src 'self'; style-src 'self'; "
    "script-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
    "X-Frame-Options": "DENY", "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin"}


def refusal(status: int, message: str, back: str = "/") -> Response:
    """A refusal as a page of its own: a form's POST is a navigation, so what it gets replaces
    the page. The message is where focus starts; a link leads back to the questions. (The
    security headers too: a server that stops answers with it outside the application.)"""
    return Response(REFUSAL.format(status=status, message=escape(message), back=escape(back)),
                    status=status, mimetype="text/html", headers=SECURITY_HEADERS)


@dataclass
class PageState:
    """What a page shows of one expert, read at one moment of the session file."""

    progress: dict[str, int]
    query: SessionQuery | None
    hint: str | None
    history: list[dict[str, Any]]
    revision: int
    last_answer: int | None  # the expert's last active answer: what the page's undo withdraws


class FileReader:
    """Reads the session file for pages on a read-only connection per call: a GET cannot write
    and never waits for the session's lock."""

    def __init__(self, sess: Session) -> None:
        self._path = Path(sess.path).resolve()
        self._uri = self._path.as_uri() + "?mode=ro"
        self.names, self.uid, self.n_pairs = list(sess.feature_names), sess.uid, sess.n_pairs
        self._opened = sess.conn  # the file the session opened, which a page must show

    def _run(self, read: Callable[[sqlite3.Connection], Any]) -> Any:
        """``read`` on the file, refused (:class:`SessionReplaced`) if it was replaced."""
        try:
            return self._read(read)
        except sqlite3.OperationalError as e:
            if "readonly" not in str(e):
                raise  # locked, or worse: no second wait
            # a writer killed in a commit left a hot journal: only a writable read rolls it back
            finish_cut_write(self._path)
            return self._read(read)

    def _read(self, read: Callable[[sqlite3.Connection], Any]) -> Any:
        check_same_file(self._opened, writing=False)
        with contextlib.closing(sqlite3.connect(self._uri, uri=True, isolation_level=None,
                                                timeout=BUSY_TIMEOUT)) as conn:
            conn.execute("BEGIN")  # one snapshot for everything the page shows
            try:
                result = read(conn)
            finally:
                conn.execute("COMMIT")
        check_same_file(self._opened, writing=False)  # replaced while it was read
        return result

    def page(self, expert: str) -> PageState:
        def read(c: sqlite3.Connection) -> PageState:
            pending = record.read_pending(c, self.names, self.uid, expert)
            every = [dict(zip(HISTORY_COLUMNS, r)) for r in record.history_rows(c, self.names)]
            return PageState(record.progress(c, self.n_pairs, expert),
                             pending[0] if pending else None,
                             record.read_stop_hint(c, expert) if pending else None,
                             every[-HISTORY_ROWS:][::-1], record.last_event(c),
                             next((h["answer_id"] for h in reversed(every)
                                   if h["expert"] == expert and not h["undone"]), None))
        return self._run(read)

    def revision(self) -> int:
        return self._run(record.last_event)


class InFlight:
    """Counts the requests being answered; :meth:`close` refuses new ones (503) and waits for
    those in progress."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._n, self._closing = 0, False

    @property
    def count(self) -> int:
        with self._cond:
            return self._n

    RELEASE_KEY = "elicit.in_flight.release"

    def wrap(self, app: Callable) -> Callable:
        """The WSGI application ``app``, counted (until its response is fully sent)."""
        from werkzeug.wsgi import ClosingIterator

        def counted(environ: dict, start_response: Callable) -> Iterable[bytes]:
            with self._cond:
                if self._closing:
                    return refusal(503, "the server is stopping")(environ, start_response)
                self._n += 1
            done = False

            def release() -> None:
                nonlocal done
                with self._cond:
                    if done:
                        return
                    done = True
                    self._n -= 1
                    self._cond.notify_all()

            environ[self.RELEASE_KEY] = release
            try:
                result = app(environ, start_response)
            except BaseException:
                release()
                raise
            return ClosingIterator(result, [release])

        return counted

    @classmethod
    def release(cls, environ: dict | None) -> None:
        """Release the request of ``environ`` if still counted (once only), whatever happened:
        when a client resets, werkzeug's drain raises before it closes the response."""
        if (release := (environ or {}).get(cls.RELEASE_KEY)) is not None:
            release()

    def close(self) -> None:
        with self._cond:
            self._closing = True
            while self._n:
                self._cond.wait()


def create_app(session_path: str | os.PathLike, *, engine: str | None = None,
               allowed_hosts: set[str] | None = None, expert: str | None = None) -> Flask:
    """The Flask application serving one session file.

    Parameters
    ----------
    session_path, engine
        The session file; an engine overriding the session's setting.
    allowed_hosts, expert
        ``Host`` names accepted besides the loopback names; the expert of requests naming none.

    Raises
    ------
    ElicitError
        If the session file cannot be opened (missing, corrupted, ...).
    """
    sess = Session.open(session_path, engine=engine)
    default_expert = check_expert(expert) if expert is not None else sess.expert
    reader = FileReader(sess)
    inflight = InFlight()
    # No static folder: Flask would serve the working directory's ./static to anyone.
    app = Flask("elicit.web", static_folder=None, template_folder=Path(__file__).parent)
    app.wsgi_app = inflight.wrap(app.wsgi_app)  # type: ignore[method-assign]
    token = secrets.token_urlsafe(32)
    hosts = set(LOOPBACK_HOSTS) | {h.lower().strip("[]") for h in (allowed_hosts or ())}
    app.config.update(ELICIT_SESSION=sess, ELICIT_CSRF_TOKEN=token, ELICIT_IN_FLIGHT=inflight,
                      # a comment of MAX_COMMENT characters of 4 UTF-8 bytes each, URL-encoded
                      MAX_CONTENT_LENGTH=12 * MAX_COMMENT + 16 * 1024)
    k_image: dict[str, Any] = {"revision": None, "png": None}
    k_drawing = threading.Lock()

    def named(expert: str) -> str | None:
        """The expert for the address: None for the default (an empty name stays if it is
        not)."""
        return None if expert == default_expert else expert

    def back() -> str:
        """A refusal's link back: the questions of the expert its address names."""
        return url_for("index", expert=request.args.get("expert"))

    def who() -> str:
        name = request.form.get("expert") if request.method == "POST" else None
        if name is None:
            name = request.args.get("expert")
        return default_expert if name is None else check_expert(name)

    def prepare(expert: str) -> str | None:
        """Choose and record the expert's next question unless one is waiting (only checked
        POSTs call this); returns why it could not, or None."""
        try:
            if not sess.is_done(expert):
                sess.next_query(expert)
        except ElicitError as e:
            return str(e)
        return None

    def render(message: str | None = None, error: bool = False, status: int = 200,
               expert: str | None = None, comment: str = "") -> Response:
        try:
            expert = who() if expert is None else expert
        except ElicitError as e:
            message, error, status, expert = str(e), True, 400, default_expert
        try:
            st = reader.page(expert)
        except sqlite3.Error as e:
            return refusal(503, f"the session file cannot be read just now ({e}); reload the "
                                "page", back())
        q = st.query
        if comment and (q is None or str(q.id) != request.form.get("query_id")):
            # another question shown: the text in the message, not a box it goes from unread
            message, comment = f"{message}; the comment typed was not saved: {comment}", ""
        if q is None and not error:
            message = None  # the done page says only that it is done
        asked: dict[str, Any] = {}  # what only the page of a question shows
        if q is not None:
            asked = dict(
                feats=[(name, [highlight(name, t) for t in sess.texts(f)[:2]],
                        snippet_note(sess, f)) for f, name in zip(q.features, q.names)],
                question=question_text(sess, q), answers=list(q.question_kind.keys.values()),
                no_snippets=sess.no_snippets_note, worth=worth_text(q))
        html = render_template(
            "page.html", token=token, name=Path(sess.path).name, description=sess.description,
            pr=st.progress, q=q, message=message, error=error,
            done=q is None and _done(sess, st, expert), hist=st.history, last_answer=st.last_answer,
            labels={a.value: a.label for a in Answer}, version=st.revision, expert=expert,
            noun=sess.question_noun, counted=[a for k in sess.kinds for a in k.answers],
            summary=sess.summary, notes=sess.notes, hint=st.hint, comment=comment,
            named=named(expert), **asked)
        return Response(html, status=status, mimetype="text/html",
                        headers={"Cache-Control": "no-store"})

    def error_page(e: ElicitError, expert: str) -> Response:
        if isinstance(e, SessionReplaced):
            return replaced(e)
        status = 409 if isinstance(e, NotPending) else 404 if isinstance(
            e, UnknownQuery) else 503 if isinstance(e, EngineError) else 400
        prepare(expert)  # e.g. the question was answered in another tab: show the next one
        # nothing was saved (a 503 follows a saved answer), so the text typed stays (render)
        return render(str(e), error=True, status=status, expert=expert,
                      comment="" if status == 503 else request.form.get("comment", "").strip())

    def done(code: str | None, expert: str) -> ResponseBase:
        why = prepare(expert)
        if why is not None:
            return render(f"{(code or 'sorry').capitalize()}, but the next question could not be "
                          f"chosen: {why}", error=True, status=503 if code is None else 200,
                          expert=expert)
        return redirect(url_for("index", m=code, expert=named(expert)), code=303)

    def form_id(field: str) -> int:
        """The form's ``field`` as an id: ``query_id``, or ``answer_id``, the answer the page
        showed as the last (0: none; every page of this server sends it with its undo)."""
        raw = request.form.get(field, "")
        # ASCII digits only: str.isdigit() also accepts characters int() cannot read.
        if not re.fullmatch(r"[0-9]{1,30}", raw.strip()):
            raise ElicitError(f"the form sent no valid {field.replace('_', ' ')} "
                              f"({raw[:40]!r}); reload the page")
        return int(raw)

    @app.before_request
    def check_request():
        netloc = request.host.strip().lower()  # host[:port], [v6]:port: the host, no brackets
        host = netloc[1:].split("]", 1)[0] if netloc.startswith("[") else \
            netloc.rsplit(":", 1)[0] if netloc.count(":") == 1 else netloc
        if host not in hosts:
            abort(403, f"unexpected Host {request.host!r}: this server answers on "
                       f"{', '.join(sorted(hosts))}")
        # no route takes it (404, 405): a request that changes nothing needs no proof of origin
        if request.method in ("GET", "HEAD", "OPTIONS") or request.routing_exception:
            return
        origin, referer = request.headers.get("Origin"), request.headers.get("Referer")
        if origin is not None:
            if origin == "null" or urlsplit(origin).netloc.lower() != request.host.lower():
                abort(403, f"cross-site request refused (Origin {origin!r})")
        elif referer is None:
            abort(403, "request refused: it has neither an Origin nor a Referer header, so "
                       "it cannot be shown to come from this page")
        elif urlsplit(referer).netloc.lower() != request.host.lower():
            abort(403, "cross-site request refused (Referer from another site)")
        sent = request.form.get("csrf_token", "")
        if not hmac.compare_digest(sent.encode(), token.encode()):
            # From this origin: the expert's own page of an earlier start (show it again, the
            # typed comment kept, with this start's token)
            return render("this page's CSRF token is old or missing; nothing was done: send it "
                          "again", error=True, status=403, comment=request.form.get("comment", ""))

    @app.after_request
    def security_headers(resp: Response) -> Response:
        resp.headers.update(SECURITY_HEADERS)
        return resp

    @app.errorhandler(SessionReplaced)
    def replaced(e: SessionReplaced) -> Response:
        # Nothing can be shown or saved: the page's questions belong to the file replaced.
        return refusal(409, str(e), back())

    @app.errorhandler(403)
    @app.errorhandler(404)
    @app.errorhandler(405)
    def refused(e):
        # 404 and 405: e.g. /answer opened by its address, which an error's page leaves in the bar
        resp = refusal(e.code, e.description, back())
        resp.headers.extend((k, v) for k, v in e.get_headers() if k == "Allow")
        return resp

    @app.errorhandler(413)
    def too_large(e):
        return refusal(413, f"request too large (comments are limited to {MAX_COMMENT:,} "
                            "characters)", back())

    @app.get("/")
    def index():
        message = MESSAGES.get(request.args.get("m", ""))
        return render(message and message.replace("that pair", f"that {sess.question_noun}"))

    def change(act: Callable[[str], object], code: str | None) -> Response | ResponseBase:
        """A POST that changes the session: ``act`` for the form's expert."""
        try:
            expert = who()
        except ElicitError as e:
            return render(str(e), error=True, status=400, expert=default_expert)
        try:
            act(expert)
        except ElicitError as e:
            return error_page(e, expert)
        return done(code, expert)

    def record_answer(expert: str) -> None:
        qid, value = form_id("query_id"), request.form.get("answer", "")
        if value not in {a.value for a in Answer}:
            raise ElicitError(f"invalid answer {value[:40]!r}: use {words(sess.kinds)}")
        sess.answer(qid, value, comment=request.form.get("comment") or None, expert=expert)

    def skip(expert: str) -> None:
        # a comment is refused as the terminal refuses `skip TEXT`; it stays in the box
        if request.form.get("comment", "").strip():
            raise ElicitError("nothing was done: 'skip' keeps no comment, an answer does")
        sess.skip(form_id("query_id"), expert=expert)

    # /next: the expert's next question (the name field, the "next question" button)
    for rule, endpoint, act, code in (
            ("/answer", "answer", record_answer, "saved"),
            ("/skip", "skip", skip, "skipped"),
            ("/undo", "undo", lambda expert: sess.undo(expert, form_id("answer_id")), "undone"),
            ("/next", "next_question", lambda expert: None, None)):
        app.add_url_rule(rule, endpoint, partial(change, act, code), methods=["POST"])

    @app.get("/k.png")
    def k_png():
        # Redrawn when the session changed and the model is free; else the last image is served.
        revision = None
        with contextlib.suppress(sqlite3.Error):
            revision = reader.revision()
        if k_image["revision"] != revision and k_drawing.acquire(blocking=False):
            try:
                # a refit that fails: the last image drawn, as when the model is busy
                with sess.unless_busy() as free, contextlib.suppress(EngineError):
                    if free:
                        k_image.update(png=_k_png(sess), revision=revision)
            finally:
                k_drawing.release()
        if k_image["png"] is None:
            return Response("503: the model is busy or failed; reload the page for the K image\n",
                            status=503, mimetype="text/plain", headers={"Retry-After": "2"})
        return Response(k_image["png"], mimetype="image/png", headers={"Cache-Control": "no-cache"})

    for endpoint, body, mimetype in (("css", CSS, "text/css"), ("js", JS, "text/javascript")):
        app.add_url_rule(f"/app.{endpoint}", endpoint, partial(Response, body, mimetype=mimetype))

    prepare(default_expert)  # before any request: the first page shows a question at once
    return app


def _done(sess: Session, st: PageState, expert: str) -> bool:
    """Whether the expert has nothing left to answer. When answers can close other questions
    (an irrelevant feature closes its pairs) only the model knows: a busy model is not done."""
    if st.progress["left"] <= 0 or not any(k.closes_others for k in sess.kinds):
        return st.progress["left"] <= 0
    with sess.unless_busy() as free, contextlib.suppress(EngineError):
        return bool(free) and sess.is_done(expert)
    return False  # the refit failed: not known to be done


def _k_png(sess: Session) -> bytes:
    """The K heatmap as PNG bytes (matplotlib's object API: safe in worker threads)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    # At most 20 features: the image sits in a narrow column and labels must stay legible.
    n = min(len(sess.feature_names), 20)
    size = min(7.5, 2.8 + 0.22 * n)
    fig = Figure(figsize=(size + 1.0, size), dpi=100)
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    sess.plot_K(ax=ax, max_features=20)
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    return buf.getvalue()
