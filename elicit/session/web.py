"""A web page for answering a session's questions: ``elicit serve my.session``.

One question at a time with three big buttons (similar / dissimilar / don't know), a comment
box, skip, undo and progress, the current kernel matrix K as a labelled heatmap (a PNG drawn by
matplotlib on the server) and the latest answers. It is a Flask application; ``elicit serve``
runs it on werkzeug's threaded WSGI server, which is adequate for a local tool used by a few
experts (it is not meant to face the internet).

Security for a local, account-less tool that any page the expert opens can reach:

* it binds 127.0.0.1 by default;
* every request must carry a ``Host`` of this machine (``localhost``, ``127.0.0.1``, ``[::1]``
  or the address it was started on), which defeats DNS-rebinding pages;
* **a GET never writes**: it reads the session file on a read-only SQLite connection of its
  own. Only POSTs change the session (answer, skip, undo, and ``/next``, which records the
  next question of an expert who has none), and every POST must come from the page itself:
  its ``Origin`` (or, without one, its ``Referer``) must be this server, and it must carry
  the CSRF token embedded in the page (a random token made when the server starts).
  Anything else gets 403;
* responses forbid framing and inline scripts (Content-Security-Policy).

What one request can cost. Choosing a question refits the model and scores candidate pairs:
seconds on a large session. Only a checked POST does that work, for its own expert, under the
session's lock, so at most one such computation runs at a time. A page (GET) never waits for
it: it reads the file, not the model, and shows the expert's pending question or, for an
expert without one, a button that asks for it (a POST). The K image is redrawn only when the
model is free; otherwise the last one drawn is served. A request body is limited to 64 KiB,
and a connection that stops sending is closed after ``timeout`` seconds (30 by default), so a
stalled client cannot hold a thread for ever.

Stopping. Ctrl-C, SIGTERM and SIGHUP stop the server from taking requests; the requests in
progress finish (a question being chosen included) and only then is the session closed.

Two tabs showing the same question cannot both answer it: the session checks and records the
answer in one write transaction and the file's ``UNIQUE(query_id)`` constraint refuses a
second answer, so the second tab gets an "already answered" message (HTTP 409).
"""

from __future__ import annotations

import errno
import hmac
import io
import os
import re
import secrets
import socket
import sqlite3
import sys
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from flask import Flask, Response, abort, redirect, render_template_string, request, url_for
from werkzeug.wrappers import Response as ResponseBase

from elicit.errors import ElicitError
from elicit.internal.text import printable
from elicit.session import record
from elicit.session.inputs import check_expert
from elicit.session.loaders import highlight
from elicit.session.record import AnsweredElsewhere, UnknownQuery
from elicit.session.session import Session, SessionQuery, read_pending, read_stop_hint
from elicit.session.store import BUSY_TIMEOUT
from elicit.session.terminal import (
    no_snippets_note,
    snippet_note,
    stop_signals_as_interrupt,
    worth_text,
)

LOOPBACK_HOSTS = frozenset({"localhost", "127.0.0.1", "::1"})
#: Seconds a connection may stay silent (request line, headers or body) before it is closed.
IDLE_TIMEOUT = 30.0
#: How many of the latest answers the page lists.
HISTORY_ROWS = 10

#: Messages after a successful POST (redirect target ``/?m=<code>``); a fixed set so that no
#: request text is ever echoed into the page.
MESSAGES = {
    "saved": "Saved. Here is the next question.",
    "skipped": "Skipped; that pair may come back later.",
    "undone": "Undone: the last answer was withdrawn; you can answer that question again.",
}
#: The first words of those messages, for when the next question could not be chosen.
DONE_WORDS = {"saved": "Saved", "skipped": "Skipped", "undone": "Undone", None: "Sorry"}

ANSWER_LABELS = {"similar": "Similar", "dissimilar": "Dissimilar", "dont_know": "Don't know"}

PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="csrf-token" content="{{ token }}">
<title>elicit · {{ name }}</title>
<link rel="stylesheet" href="{{ url_for('css') }}">
<script src="{{ url_for('js') }}" defer></script>
</head><body>
<header>
  <h1>elicit <span class="file">{{ name }}</span></h1>
  {% if description %}<p class="desc">{{ description }}</p>{% endif %}
  <div class="progress" id="progress">
    <progress max="{{ pr.pairs }}" value="{{ pr.answered }}"></progress>
    <span>{{ pr.answered }} of {{ pr.pairs }} pairs answered{% if expert %} by
    {{ expert }}{% endif %}
    ({{ pr.similar }} similar, {{ pr.dissimilar }} dissimilar, {{ pr.dont_know }} don't know{%
    if pr.skipped %}; {{ pr.skipped }} skipped{% endif %})</span>
  </div>
  <form method="post" action="{{ url_for('next_question') }}" class="who" id="expert-form">
    <input type="hidden" name="csrf_token" value="{{ token }}">
    <label for="expert">Your name</label>
    <input name="expert" id="expert" value="{{ expert }}" maxlength="80"
      placeholder="(unnamed expert)">
    <button type="submit" id="btn-expert">Answer as this expert</button>
  </form>
</header>
{% if message %}
<p class="msg {{ 'error' if error else 'ok' }}" id="message" role="status">{{ message }}</p>
{% endif %}
<main>
<section class="question">
{% if q %}
  <p class="lead">Question {{ pr.answered + 1 }}{% if worth %}
  <span class="gain" id="worth">{{ worth }}</span>{% endif %}</p>
  {% if hint %}<p class="hint" id="stop-hint">{{ hint }}</p>{% endif %}
  {% for line in notes %}<p class="hint kernel-note">{{ line }}</p>{% endfor %}
  <h2>Do these two features affect {{ target }} in the same way?</h2>
  <div class="pair">
  {% for name, snippets, why in feats %}
    <div class="feature"><div class="fname" id="feature-{{ loop.index }}">{{ name }}</div>
    {% for pieces in snippets %}<blockquote>{% for text, hit in pieces %}{%
      if hit %}<mark>{{ text }}</mark>{% else %}{{ text }}{% endif %}{%
    endfor %}</blockquote>{% endfor %}
    {% if why %}<p class="nosnip">({{ why }})</p>{% endif %}</div>
  {% endfor %}
  </div>
  {% if no_snippets %}<p class="nosnip" id="no-snippets">({{ no_snippets }})</p>{% endif %}
  <form method="post" action="{{ url_for('answer') }}" id="answer-form">
    <input type="hidden" name="csrf_token" value="{{ token }}">
    <input type="hidden" name="query_id" value="{{ q.id }}">
    <input type="hidden" name="expert" value="{{ expert }}">
    <div class="buttons">
      <button type="submit" name="answer" value="similar" class="big similar"
        id="btn-similar">Similar <kbd>s</kbd></button>
      <button type="submit" name="answer" value="dissimilar" class="big dissimilar"
        id="btn-dissimilar">Dissimilar <kbd>d</kbd></button>
      <button type="submit" name="answer" value="dont_know" class="big dontknow"
        id="btn-dont_know">Don't know <kbd>?</kbd></button>
    </div>
    <label for="comment">Comment (optional)</label>
    <textarea name="comment" id="comment" rows="2" maxlength="10000"
      placeholder="Why? (saved with the answer)"></textarea>
  </form>
  <div class="small-actions">
    <form method="post" action="{{ url_for('skip') }}">
      <input type="hidden" name="csrf_token" value="{{ token }}">
      <input type="hidden" name="query_id" value="{{ q.id }}">
      <input type="hidden" name="expert" value="{{ expert }}">
      <button type="submit" id="btn-skip">Skip <kbd>k</kbd></button></form>
    <form method="post" action="{{ url_for('undo') }}">
      <input type="hidden" name="csrf_token" value="{{ token }}">
      <input type="hidden" name="expert" value="{{ expert }}">
      <button type="submit" id="btn-undo" {{ '' if pr.answered else 'disabled' }}
        >Undo last answer <kbd>u</kbd></button></form>
  </div>
{% elif done %}
  <h2 id="done">All {{ pr.pairs }} pairs are answered{% if expert %} by {{ expert }}{%
  endif %}. Thank you!</h2>
  <form method="post" action="{{ url_for('undo') }}">
    <input type="hidden" name="csrf_token" value="{{ token }}">
    <input type="hidden" name="expert" value="{{ expert }}">
    <button type="submit" id="btn-undo">Undo last answer</button></form>
{% else %}
  <h2 id="no-question">No question is waiting{% if expert %} for {{ expert }}{% endif %}.</h2>
  <form method="post" action="{{ url_for('next_question') }}" id="next-form">
    <input type="hidden" name="csrf_token" value="{{ token }}">
    <input type="hidden" name="expert" value="{{ expert }}">
    <button type="submit" class="big similar" id="btn-next" autofocus>Show the next question
      <kbd>n</kbd></button>
  </form>
  <p class="note">The model chooses the question that teaches it most; on a large session
  that takes a few seconds.</p>
{% endif %}
  <p class="working" id="working" role="status">Saving and choosing the next question…</p>
  <p class="note">Every answer is saved in the session file as soon as you click. You can close
  this page at any time and come back later.</p>
  {% if summary %}<details id="summary"><summary>About this session</summary><ul>
  {% for line in summary %}<li>{{ line }}</li>{% endfor %}</ul></details>{% endif %}
</section>
<aside>
  <h3>Current K (feature similarity)</h3>
  <img src="{{ url_for('k_png', v=version) }}" alt="heatmap of the current kernel matrix K"
    id="kplot">
  <h3>Latest answers</h3>
  {% if hist %}
  <table id="history"><thead><tr><th>#</th><th>expert</th><th>feature A</th><th>feature B</th>
    <th>answer</th><th>comment</th></tr></thead>
  <tbody>{% for r in hist %}
  <tr class="{{ 'undone' if r.undone else '' }}"><td>{{ r.answer_id }}</td>
  <td>{{ r.expert }}</td><td>{{ r.feature_i }}</td><td>{{ r.feature_j }}</td>
  <td>{{ labels[r.answer] }}{% if r.undone %} (undone){% endif %}</td>
  <td>{{ r.comment }}</td></tr>{% endfor %}</tbody></table>
  {% else %}<p id="history-empty">No answers yet.</p>{% endif %}
</aside>
</main>
</body></html>
"""

CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:0;color:#222;
  background:#f6f7f9}
header{background:#24364b;color:#fff;padding:.8rem 1.5rem}
header h1{margin:0;font-size:1.3rem}
.file{font-weight:normal;opacity:.8;font-size:1rem;margin-left:.5rem}
.desc{margin:.3rem 0;opacity:.85;font-size:.85rem}
.progress{display:flex;align-items:center;gap:.8rem;font-size:.9rem}
progress{width:14rem}
main{display:flex;flex-wrap:wrap;gap:1.5rem;padding:1.2rem 1.5rem}
.question{flex:1 1 34rem;background:#fff;border-radius:8px;padding:1rem 1.5rem;
  box-shadow:0 1px 3px #0002}
aside{flex:0 1 30rem;background:#fff;border-radius:8px;padding:1rem;box-shadow:0 1px 3px #0002}
aside img{max-width:100%}
.lead{color:#666;margin:0}
.gain{float:right;font-size:.85rem}
h2{font-size:1.2rem;margin:.4rem 0 1rem}
.pair{display:flex;gap:1rem}
.feature{flex:1;border:1px solid #dde;border-radius:6px;padding:.6rem}
.fname{font-size:1.6rem;font-weight:bold;text-align:center;margin-bottom:.4rem;
  word-break:break-word}
blockquote{margin:.3rem 0;font-size:.85rem;color:#555;border-left:3px solid #ccd;
  padding-left:.5rem}
.buttons{display:flex;gap:1rem;margin:1.2rem 0}
button.big{flex:1;font-size:1.3rem;padding:1.1rem .5rem;border:0;border-radius:8px;color:#fff;
  cursor:pointer}
.similar{background:#2e8b57}
.dissimilar{background:#c0392b}
.dontknow{background:#7f8c8d}
button.big:hover{filter:brightness(1.1)}
textarea{width:100%;box-sizing:border-box;font:inherit}
.small-actions{display:flex;gap:1rem;margin-top:.8rem}
.small-actions button{padding:.4rem .9rem}
kbd{font-size:.7em;opacity:.75;border:1px solid #fff8;border-radius:3px;padding:0 .25em}
.msg{margin:.8rem 1.5rem 0;padding:.6rem 1rem;border-radius:6px}
.msg.ok{background:#e4f4e8}
.msg.error{background:#fbe3e1;color:#8b1a10;font-weight:bold}
.note{color:#777;font-size:.8rem;margin-top:1.2rem}
.who{margin-top:.4rem;font-size:.85rem}
.who input{font:inherit;padding:.1rem .3rem}
.hint{background:#fff5d6;border-radius:6px;padding:.4rem .8rem}
mark{background:#ffe58a;padding:0 .1em}
details{font-size:.8rem;color:#555}
table{border-collapse:collapse;font-size:.8rem;width:100%}
td,th{border-bottom:1px solid #eee;padding:.2rem .4rem;text-align:left}
tr.undone{color:#999;text-decoration:line-through}
.nosnip{font-size:.8rem;color:#888;font-style:italic;margin:.3rem 0}
.working{display:none;color:#24364b;font-weight:bold}
body.busy .working{display:block}
body.busy .question form button{opacity:.6;cursor:progress}
"""

# Keyboard shortcuts; served as a file because the Content-Security-Policy forbids inline code.
# Once a form is sent the page takes no more keys or clicks: a key typed while the next question
# is being chosen must not answer it unseen, nor send this question's answer twice.
JS = """
(function () {
  var busy = false;
  window.addEventListener('pageshow', function () {  // back to a page kept in memory
    busy = false; document.body.classList.remove('busy');
  });
  document.addEventListener('submit', function (e) {
    if (busy) { e.preventDefault(); return; }
    busy = true; document.body.classList.add('busy');
  }, true);
  document.addEventListener('keydown', function (e) {
    if (busy || e.repeat) return;
    if (e.target && (e.target.tagName === 'TEXTAREA' || e.target.tagName === 'INPUT')) return;
    if (e.ctrlKey || e.metaKey || e.altKey) return;
    var ids = {'s': 'btn-similar', 'd': 'btn-dissimilar', '?': 'btn-dont_know',
               'k': 'btn-skip', 'u': 'btn-undo', 'n': 'btn-next'};
    var b = ids[e.key] && document.getElementById(ids[e.key]);
    if (b && !b.disabled) { e.preventDefault(); b.click(); }
  });
})();
"""


def _host_name(netloc: str) -> str:
    """The host of ``host[:port]`` / ``[v6]:port``, lower-cased, without brackets."""
    netloc = netloc.strip().lower()
    if netloc.startswith("["):
        return netloc[1:].split("]", 1)[0]
    return netloc.rsplit(":", 1)[0] if netloc.count(":") == 1 else netloc


# --------------------------------------------------------------------------------------------
# Reading for a page: the file, never the model
# --------------------------------------------------------------------------------------------

@dataclass
class PageState:
    """What a page shows of one expert, read at one moment of the session file."""

    progress: dict[str, int]
    query: SessionQuery | None
    hint: str | None
    history: list[dict[str, Any]]
    revision: int


class FileReader:
    """Reads the session file for pages on a read-only SQLite connection per call, so that a
    GET cannot write and never waits for the session's lock (held while the model works)."""

    def __init__(self, sess: Session) -> None:
        self._uri = Path(sess.path).resolve().as_uri() + "?mode=ro"
        self.names, self.uid, self.n_pairs = list(sess.feature_names), sess.uid, sess.n_pairs

    def _run(self, read: Callable[[sqlite3.Connection], Any]) -> Any:
        conn = sqlite3.connect(self._uri, uri=True, isolation_level=None,
                               timeout=BUSY_TIMEOUT)
        try:
            conn.execute("BEGIN")  # one snapshot for everything the page shows
            try:
                return read(conn)
            finally:
                conn.execute("COMMIT")
        finally:
            conn.close()

    def page(self, expert: str) -> PageState:
        """The expert's progress, pending question, stopping hint, the latest answers."""
        def read(c: sqlite3.Connection) -> PageState:
            pending = read_pending(c, self.names, self.uid, expert)
            rows = record.history_rows(c)[-HISTORY_ROWS:][::-1]
            hist = [{"answer_id": r[0], "expert": r[2], "feature_i": self.names[r[3]],
                     "feature_j": self.names[r[4]], "answer": r[5], "comment": r[6] or "",
                     "undone": r[10] is not None} for r in rows]
            return PageState(record.progress(c, self.n_pairs, expert),
                             pending[0] if pending else None,
                             read_stop_hint(c, expert) if pending else None, hist,
                             record.last_event(c))
        return self._run(read)

    def revision(self) -> int:
        """The session's latest event id (grows with every query, answer, skip, undo)."""
        return self._run(record.last_event)


# --------------------------------------------------------------------------------------------
# Requests in progress: finished before the session is closed
# --------------------------------------------------------------------------------------------

class InFlight:
    """Counts the requests being answered; :meth:`close` refuses new ones (503) and waits for
    those in progress, so that a stopping server closes the session only after them."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._n = 0
        self._closing = False

    @property
    def count(self) -> int:
        with self._cond:
            return self._n

    def _leave(self) -> None:
        with self._cond:
            self._n -= 1
            self._cond.notify_all()

    def wrap(self, app: Callable) -> Callable:
        """The WSGI application ``app``, counted (until its response is fully sent)."""
        from werkzeug.wsgi import ClosingIterator

        def counted(environ: dict, start_response: Callable) -> Iterable[bytes]:
            with self._cond:
                if self._closing:
                    start_response("503 Service Unavailable",
                                   [("Content-Type", "text/plain; charset=utf-8")])
                    return [b"503: the server is stopping\n"]
                self._n += 1
            try:
                result = app(environ, start_response)
            except BaseException:
                self._leave()
                raise
            return ClosingIterator(result, [self._leave])

        return counted

    def close(self) -> None:
        """Take no new requests and wait until those in progress are done."""
        with self._cond:
            self._closing = True
            while self._n:
                self._cond.wait()


# --------------------------------------------------------------------------------------------
# The application
# --------------------------------------------------------------------------------------------

def create_app(session_path: str | os.PathLike, *, session: Session | None = None,
               engine: str | None = None, allowed_hosts: set[str] | None = None,
               expert: str | None = None) -> Flask:
    """The Flask application serving one session file.

    The default expert's next question is chosen here, before any request, so that the first
    page shows it at once.

    Parameters
    ----------
    session_path
        The session file (opened here unless ``session`` is given).
    session
        An already open :class:`Session` on that file (tests, notebooks).
    engine
        Override the session's engine setting when opening it.
    allowed_hosts
        Host names accepted in the ``Host`` header, in addition to the loopback names.
    expert
        The expert of requests that name none (the page's name field and the ``expert``
        query parameter or form field name one).

    Raises
    ------
    ElicitError
        If the session file cannot be opened (missing, corrupted, ...).
    """
    sess = session if session is not None else Session.open(session_path, engine=engine)
    default_expert = check_expert(expert) if expert is not None else sess.expert
    reader = FileReader(sess)
    inflight = InFlight()
    # No static folder: Flask would otherwise serve the files of ./static (its root path for
    # this import name is the working directory) to anyone who can reach the server.
    app = Flask("elicit.web", static_folder=None)
    app.wsgi_app = inflight.wrap(app.wsgi_app)  # type: ignore[method-assign]
    token = secrets.token_urlsafe(32)
    hosts = set(LOOPBACK_HOSTS) | {h.lower().strip("[]") for h in (allowed_hosts or ())}
    app.config.update(ELICIT_SESSION=sess, ELICIT_CSRF_TOKEN=token, ELICIT_HOSTS=hosts,
                      ELICIT_IN_FLIGHT=inflight, MAX_CONTENT_LENGTH=64 * 1024)
    k_image: dict[str, Any] = {"revision": None, "png": None}
    k_drawing = threading.Lock()

    def who() -> str:
        """The request's expert: the form field, else the query parameter, else the
        server's default."""
        name = request.form.get("expert") if request.method == "POST" else None
        if name is None:
            name = request.args.get("expert")
        return default_expert if name is None else check_expert(name)

    def prepare(expert: str) -> str | None:
        """Choose and record the expert's next question unless one is waiting (the model's
        work: only checked POSTs call this). Returns why it could not, or None."""
        try:
            if not sess.is_done(expert):
                sess.next_query(expert)
        except ElicitError as e:
            return str(e)
        return None

    def render(message: str | None = None, error: bool = False, status: int = 200,
               expert: str | None = None) -> Response:
        try:
            expert = who() if expert is None else expert
        except ElicitError as e:
            message, error, status, expert = str(e), True, 400, default_expert
        try:
            st = reader.page(expert)
        except sqlite3.Error as e:
            return Response(f"503: the session file cannot be read just now ({e}); reload "
                            "the page\n", status=503, mimetype="text/plain")
        q = st.query
        if q is None and not error:
            message = None  # the done page says only that it is done
        feats = []
        if q is not None:
            feats = [(name, [highlight(name, t) for t in sess.texts(f)[:2]],
                      snippet_note(sess, f))
                     for f, name in ((q.i, q.names[0]), (q.j, q.names[1]))]
        html = render_template_string(
            PAGE, token=token, name=Path(sess.path).name, description=sess.description,
            pr=st.progress, q=q, feats=feats, message=message, error=error,
            done=q is None and st.progress["left"] <= 0, hist=st.history,
            labels=ANSWER_LABELS, version=st.revision, expert=expert,
            target=sess.target_description, summary=sess.summary, notes=sess.notes,
            no_snippets=no_snippets_note(sess) if q is not None else None,
            worth=worth_text(q) if q is not None else "", hint=st.hint)
        resp = Response(html, status=status, mimetype="text/html")
        resp.headers["Cache-Control"] = "no-store"
        return resp

    def error_page(e: ElicitError, expert: str) -> Response:
        status = 409 if isinstance(e, AnsweredElsewhere) else \
            404 if isinstance(e, UnknownQuery) else 400
        prepare(expert)  # e.g. the question was answered in another tab: show the next one
        return render(str(e), error=True, status=status, expert=expert)

    def done(code: str | None, expert: str) -> ResponseBase:
        """After a change: choose the expert's next question, then redirect to the page."""
        why = prepare(expert)
        if why is not None:
            return render(f"{DONE_WORDS[code]}, but the next question could not be chosen: "
                          f"{why}", error=True, status=503 if code is None else 200,
                          expert=expert)
        # Name the expert in the address unless they are the server's default (an empty
        # name must stay in it when the default is someone else).
        named = None if expert == default_expert else expert
        return redirect(url_for("index", m=code, expert=named), code=303)

    def query_id() -> int:
        qid = request.form.get("query_id", "")
        # ASCII digits only: str.isdigit() also accepts characters int() cannot read.
        if not re.fullmatch(r"[0-9]{1,30}", qid.strip()):
            raise ElicitError(f"the form sent no valid query id ({qid[:40]!r}); reload the "
                              "page")
        return int(qid)

    @app.before_request
    def check_request():
        host = _host_name(request.host)
        if host not in hosts:
            abort(403, f"unexpected Host {request.host!r}: this server answers only on "
                       "localhost")
        if request.method not in ("GET", "HEAD", "OPTIONS"):
            _check_same_origin()
            sent = request.form.get("csrf_token", "")
            if not hmac.compare_digest(sent.encode(), token.encode()):
                abort(403, "missing or wrong CSRF token: reload the page and try again")

    def _check_same_origin() -> None:
        origin = request.headers.get("Origin")
        if origin is not None:
            parts = urlsplit(origin)
            if origin == "null" or parts.netloc.lower() != request.host.lower():
                abort(403, f"cross-site request refused (Origin {origin!r})")
            return
        referer = request.headers.get("Referer")
        if referer is None:
            abort(403, "request refused: it has neither an Origin nor a Referer header, so "
                       "it cannot be shown to come from this page")
        if urlsplit(referer).netloc.lower() != request.host.lower():
            abort(403, "cross-site request refused (Referer from another site)")

    @app.after_request
    def security_headers(resp: Response) -> Response:
        resp.headers["Content-Security-Policy"] = (
            "default-src 'none'; img-src 'self'; style-src 'self'; script-src 'self'; "
            "form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
        resp.headers["X-Frame-Options"] = "DENY"
        resp.headers["X-Content-Type-Options"] = "nosniff"
        resp.headers["Referrer-Policy"] = "same-origin"
        return resp

    @app.errorhandler(403)
    def forbidden(e):
        return Response(f"403 Forbidden: {e.description}\n", status=403, mimetype="text/plain")

    @app.errorhandler(413)
    def too_large(e):
        return Response("413: request too large (comments are limited to 10,000 characters)\n",
                        status=413, mimetype="text/plain")

    @app.get("/")
    def index():
        code = request.args.get("m", "")
        return render(MESSAGES.get(code))

    @app.post("/answer")
    def answer():
        try:
            expert = who()
        except ElicitError as e:
            return render(str(e), error=True, status=400, expert=default_expert)
        value = request.form.get("answer", "")
        comment = request.form.get("comment") or None
        try:
            qid = query_id()
            if value not in ANSWER_LABELS:
                raise ElicitError(f"invalid answer {value[:40]!r}: use 'similar', "
                                  "'dissimilar' or 'dont_know'")
            sess.answer(qid, value, comment=comment, expert=expert)
        except ElicitError as e:
            return error_page(e, expert)
        return done("saved", expert)

    @app.post("/skip")
    def skip():
        try:
            expert = who()
        except ElicitError as e:
            return render(str(e), error=True, status=400, expert=default_expert)
        try:
            sess.skip(query_id(), expert=expert)
        except ElicitError as e:
            return error_page(e, expert)
        return done("skipped", expert)

    @app.post("/undo")
    def undo():
        try:
            expert = who()
        except ElicitError as e:
            return render(str(e), error=True, status=400, expert=default_expert)
        try:
            sess.undo(expert)
        except ElicitError as e:
            return error_page(e, expert)
        return done("undone", expert)

    @app.post("/next")
    def next_question():
        """The expert's next question (recorded): from the name field at the top, and the
        button shown to an expert who has none waiting."""
        try:
            expert = who()
        except ElicitError as e:
            return render(str(e), error=True, status=400, expert=default_expert)
        return done(None, expert)

    @app.get("/k.png")
    def k_png():
        # Redrawn when the session changed and the model is free; while another request is
        # choosing a question (or drawing), the last image is served rather than waiting.
        try:
            revision = reader.revision()
        except sqlite3.Error:
            revision = None
        if k_image["revision"] != revision and k_drawing.acquire(blocking=False):
            try:
                with sess.unless_busy() as free:
                    if free:
                        k_image.update(png=_k_png(sess), revision=revision)
            finally:
                k_drawing.release()
        if k_image["png"] is None:
            return Response("503: the model is busy; reload the page for the K image\n",
                            status=503, mimetype="text/plain", headers={"Retry-After": "2"})
        resp = Response(k_image["png"], mimetype="image/png")
        resp.headers["Cache-Control"] = "no-cache"
        return resp

    @app.get("/app.css")
    def css():
        return Response(CSS, mimetype="text/css")

    @app.get("/app.js")
    def js():
        return Response(JS, mimetype="text/javascript")

    prepare(default_expert)  # before any request: the first page shows a question at once
    return app


def _k_png(sess: Session) -> bytes:
    """The K heatmap as PNG bytes. Uses matplotlib's object API (no pyplot state), which is
    safe in the server's worker threads."""
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


# --------------------------------------------------------------------------------------------
# The server
# --------------------------------------------------------------------------------------------

def make_server(session_path: str | os.PathLike, host: str = "127.0.0.1", port: int = 8765,
                engine: str | None = None, expert: str | None = None,
                timeout: float = IDLE_TIMEOUT):
    """Open the session and bind the server (without serving yet).

    ``timeout`` is how many seconds a connection may stay silent before it is closed (a
    request line, headers or a body that stop arriving).

    Raises
    ------
    ElicitError
        A session that cannot be opened, or a port that is in use or not allowed.
    """
    from werkzeug.serving import WSGIRequestHandler
    from werkzeug.serving import make_server as wz_make_server

    if not timeout > 0:
        raise ElicitError(f"timeout must be a positive number of seconds, got {timeout!r}")
    extra = set() if host in ("0.0.0.0", "::", "") else {host}
    if host in ("0.0.0.0", "::"):
        # Listening on every interface: accept this machine's own name in the Host header.
        extra |= {socket.gethostname()}
    sock = _listen(host, port)  # first: a busy port must not cost a session open
    try:
        app = create_app(session_path, engine=engine, allowed_hosts=extra, expert=expert)
        # socketserver sets this timeout on every accepted connection: a read that waits
        # longer raises, and the connection's thread is freed.
        handler = type("ElicitRequestHandler", (WSGIRequestHandler,), {"timeout": timeout})
        # werkzeug gets the bound socket: on a bind error it would print and sys.exit(1)
        # itself, while we want one clear ElicitError.
        server = wz_make_server(host, sock.getsockname()[1], app, threaded=True,
                                fd=sock.fileno(), request_handler=handler)
    finally:
        sock.close()  # werkzeug holds its own duplicate of the descriptor
    # With a ready socket werkzeug skips http.server's bind, which sets these two.
    server.server_name, server.server_port = host, server.socket.getsockname()[1]
    return server, app


def _listen(host: str, port: int) -> socket.socket:
    """A listening TCP socket on (host, port), or an ElicitError saying why not."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except socket.gaierror as e:
        raise ElicitError(f"cannot listen on {host!r}: unknown host ({e.strerror})") from None
    family, _, _, _, addr = infos[0]
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        # Like every server: allow a restart while old connections sit in TIME_WAIT. (On
        # Linux this does not allow two listeners on one port.)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(addr)
        sock.listen(128)
    except OSError as e:
        sock.close()
        if e.errno in (errno.EADDRINUSE, 10048):
            raise ElicitError(f"port {port} on {host} is already in use; stop the program using "
                              "it or choose another port with --port") from None
        if e.errno in (errno.EACCES, errno.EPERM):
            raise ElicitError(f"not allowed to listen on port {port} on {host} (ports below 1024 "
                              "need privileges); choose another port with --port") from None
        raise ElicitError(f"cannot listen on {host}:{port}: {e.strerror or e}") from None
    return sock


def _say(text: str, err: bool = False) -> None:
    """Print a line, ignoring a terminal that has gone away (SIGHUP)."""
    try:
        print(printable(text), file=sys.stderr if err else sys.stdout, flush=True)
    except (OSError, ValueError):
        pass


def serve(session_path: str | os.PathLike, host: str = "127.0.0.1", port: int = 8765,
          engine: str | None = None, expert: str | None = None) -> int:
    """Serve the session's web page until Ctrl-C, SIGTERM or SIGHUP; returns the exit status
    (0 for Ctrl-C, as before; 128 + the signal number for the others).

    On any of them the server stops taking requests, the requests in progress finish (a
    question being chosen included), and then the file is closed: nothing confirmed is lost.
    A second signal while they finish stops at once (still losing nothing committed).
    """
    from elicit.session.terminal import Interrupted

    server, app = make_server(session_path, host, port, engine, expert)
    sess: Session = app.config["ELICIT_SESSION"]
    inflight: InFlight = app.config["ELICIT_IN_FLIGHT"]
    url_host = f"[{host}]" if ":" in host else host
    who = f" (default expert: {expert})" if expert else ""
    _say(f"serving {sess.path} at http://{url_host}:{server.server_port}/{who}  (Ctrl-C to "
         "stop)")
    if host not in LOOPBACK_HOSTS:
        _say(f"warning: listening on {host}: other machines may reach this page and it has "
             "no accounts", err=True)
    # The server loop runs in its own thread; the main thread only waits for a signal, so a
    # signal can never land inside the loop and drop a connection it has just accepted.
    loop = threading.Thread(target=server.serve_forever, name="elicit-serve", daemon=True)
    code = 0
    try:
        with stop_signals_as_interrupt():
            loop.start()
            loop.join()
    except KeyboardInterrupt as e:
        code = e.code if isinstance(e, Interrupted) else 0
    finally:
        if loop.ident is not None:
            server.shutdown()  # no new connections; returns once the loop has stopped
        busy = inflight.count
        if busy:
            _say(f"stopping: waiting for {busy} request{'s' if busy > 1 else ''} in progress "
                 "to finish")
        try:
            inflight.close()
        except KeyboardInterrupt:
            pass  # a second Ctrl-C: stop now; every committed answer is in the file
        server.server_close()
        n = sess.progress()["all_answers"]
        sess.close()
        _say(f"\nstopped; {n} answers are saved in {sess.path}")
    return code
