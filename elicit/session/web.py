"""A web page for answering a session's questions: ``elicit serve my.session``.

One question at a time with three big buttons (similar / dissimilar / don't know), a comment
box, skip, undo and progress, the current kernel matrix K as a labelled heatmap (a PNG drawn by
matplotlib on the server) and the latest answers. It is a Flask application; ``elicit serve``
runs it on werkzeug's threaded WSGI server, which is adequate for a local tool used by one
expert (it is not meant to face the internet).

Security for a local, account-less tool:

* it binds 127.0.0.1 by default;
* every request must carry a ``Host`` of this machine (``localhost``, ``127.0.0.1``, ``[::1]``
  or the address it was started on), which defeats DNS-rebinding pages;
* every POST must come from the page itself: its ``Origin`` (or, without one, its ``Referer``)
  must be this server, and it must carry the CSRF token embedded in the page (a random token
  made when the server starts). Anything else gets 403;
* responses forbid framing and inline scripts (Content-Security-Policy).

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
import sys
import threading
from pathlib import Path
from urllib.parse import urlsplit

from flask import Flask, Response, abort, redirect, render_template_string, request, url_for

from elicit.errors import ElicitError
from elicit.session.inputs import check_expert
from elicit.session.loaders import highlight
from elicit.session.record import AnsweredElsewhere, UnknownQuery
from elicit.session.session import Session
from elicit.session.terminal import stop_signals_as_interrupt, worth_text

LOOPBACK_HOSTS = frozenset({"localhost", "127.0.0.1", "::1"})

#: Messages after a successful POST (redirect target ``/?m=<code>``); a fixed set so that no
#: request text is ever echoed into the page.
MESSAGES = {
    "saved": "Saved. Here is the next question.",
    "skipped": "Skipped; that pair may come back later.",
    "undone": "Undone: the last answer was withdrawn; you can answer that question again.",
}

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
  <form method="get" action="{{ url_for('index') }}" class="who" id="expert-form">
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
  <h2>Do these two features affect {{ target }} in the same way?</h2>
  <div class="pair">
  {% for name, snippets in feats %}
    <div class="feature"><div class="fname" id="feature-{{ loop.index }}">{{ name }}</div>
    {% for pieces in snippets %}<blockquote>{% for text, hit in pieces %}{%
      if hit %}<mark>{{ text }}</mark>{% else %}{{ text }}{% endif %}{%
    endfor %}</blockquote>{% endfor %}</div>
  {% endfor %}
  </div>
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
{% else %}
  <h2 id="done">All {{ pr.pairs }} pairs are answered{% if expert %} by {{ expert }}{%
  endif %}. Thank you!</h2>
  <form method="post" action="{{ url_for('undo') }}">
    <input type="hidden" name="csrf_token" value="{{ token }}">
    <input type="hidden" name="expert" value="{{ expert }}">
    <button type="submit" id="btn-undo">Undo last answer</button></form>
{% endif %}
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
"""

# Keyboard shortcuts; served as a file because the Content-Security-Policy forbids inline code.
JS = """
document.addEventListener('keydown', function (e) {
  if (e.target && (e.target.tagName === 'TEXTAREA' || e.target.tagName === 'INPUT')) return;
  if (e.ctrlKey || e.metaKey || e.altKey) return;
  var ids = {'s': 'btn-similar', 'd': 'btn-dissimilar', '?': 'btn-dont_know',
             'k': 'btn-skip', 'u': 'btn-undo'};
  var b = ids[e.key] && document.getElementById(ids[e.key]);
  if (b && !b.disabled) { e.preventDefault(); b.click(); }
});
"""


def _host_name(netloc: str) -> str:
    """The host of ``host[:port]`` / ``[v6]:port``, lower-cased, without brackets."""
    netloc = netloc.strip().lower()
    if netloc.startswith("["):
        return netloc[1:].split("]", 1)[0]
    return netloc.rsplit(":", 1)[0] if netloc.count(":") == 1 else netloc


def create_app(session_path: str | os.PathLike, *, session: Session | None = None,
               engine: str | None = None, allowed_hosts: set[str] | None = None,
               expert: str | None = None) -> Flask:
    """The Flask application serving one session file.

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
    app = Flask("elicit.web")
    token = secrets.token_urlsafe(32)
    hosts = set(LOOPBACK_HOSTS) | {h.lower().strip("[]") for h in (allowed_hosts or ())}
    app.config.update(ELICIT_SESSION=sess, ELICIT_CSRF_TOKEN=token, ELICIT_HOSTS=hosts,
                      MAX_CONTENT_LENGTH=64 * 1024)
    png_cache: dict[str, bytes] = {}
    png_lock = threading.Lock()

    def who() -> str:
        """The request's expert: the form field, else the query parameter, else the
        server's default."""
        name = request.form.get("expert") if request.method == "POST" else None
        if name is None:
            name = request.args.get("expert")
        return default_expert if name is None else check_expert(name)

    def render(message: str | None = None, error: bool = False, status: int = 200,
               expert: str | None = None) -> Response:
        q = None
        try:
            expert = who() if expert is None else expert
        except ElicitError as e:
            message, error, status, expert = str(e), True, 400, default_expert
        try:
            if not sess.is_done(expert):
                q = sess.next_query(expert)
        except ElicitError as e:  # e.g. everything was answered meanwhile
            message, error = str(e), True
        if q is None and not error:
            message = None  # the done page says only that it is done
        feats = []
        if q is not None:
            feats = [(name, [highlight(name, t) for t in sess.texts(f)[:2]])
                     for f, name in ((q.i, q.names[0]), (q.j, q.names[1]))]
        hist = sess.history.iloc[::-1].head(10).copy()
        hist["comment"] = [c if isinstance(c, str) else "" for c in hist["comment"]]
        html = render_template_string(
            PAGE, token=token, name=Path(sess.path).name, description=sess.description,
            pr=sess.progress(expert), q=q, feats=feats, message=message, error=error,
            hist=hist.to_dict("records"), labels=ANSWER_LABELS, version=_version(),
            expert=expert, target=sess.target_description, summary=sess.summary,
            worth=worth_text(q) if q is not None else "",
            hint=sess.stop_hint(expert) if q is not None else None)
        resp = Response(html, status=status, mimetype="text/html")
        resp.headers["Cache-Control"] = "no-store"
        return resp

    def _version() -> str:
        # Changes whenever the model changes, so the browser fetches a fresh K image.
        return str(sess.revision())

    def error_page(e: ElicitError) -> Response:
        status = 409 if isinstance(e, AnsweredElsewhere) else \
            404 if isinstance(e, UnknownQuery) else 400
        return render(str(e), error=True, status=status)

    def done(code: str, expert: str):
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
        if request.method == "POST":
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
        value = request.form.get("answer", "")
        comment = request.form.get("comment") or None
        try:
            expert = who()
            qid = query_id()
            if value not in ANSWER_LABELS:
                raise ElicitError(f"invalid answer {value[:40]!r}: use 'similar', "
                                  "'dissimilar' or 'dont_know'")
            sess.answer(qid, value, comment=comment, expert=expert)
        except ElicitError as e:
            return error_page(e)
        return done("saved", expert)

    @app.post("/skip")
    def skip():
        try:
            expert = who()
            sess.skip(query_id(), expert=expert)
        except ElicitError as e:
            return error_page(e)
        return done("skipped", expert)

    @app.post("/undo")
    def undo():
        try:
            expert = who()
            sess.undo(expert)
        except ElicitError as e:
            return error_page(e)
        return done("undone", expert)

    @app.get("/k.png")
    def k_png():
        key = _version()
        with png_lock:
            if key not in png_cache:
                png_cache.clear()
                png_cache[key] = _k_png(sess)
            data = png_cache[key]
        resp = Response(data, mimetype="image/png")
        resp.headers["Cache-Control"] = "no-cache"
        return resp

    @app.get("/app.css")
    def css():
        return Response(CSS, mimetype="text/css")

    @app.get("/app.js")
    def js():
        return Response(JS, mimetype="text/javascript")

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


def make_server(session_path: str | os.PathLike, host: str = "127.0.0.1", port: int = 8765,
                engine: str | None = None, expert: str | None = None):
    """Open the session and bind the server (without serving yet).

    Raises
    ------
    ElicitError
        A session that cannot be opened, or a port that is in use or not allowed.
    """
    from werkzeug.serving import make_server as wz_make_server

    extra = set() if host in ("0.0.0.0", "::", "") else {host}
    if host in ("0.0.0.0", "::"):
        # Listening on every interface: accept this machine's own name in the Host header.
        extra |= {socket.gethostname()}
    sock = _listen(host, port)  # first: a busy port must not cost a session open
    try:
        app = create_app(session_path, engine=engine, allowed_hosts=extra, expert=expert)
        # werkzeug gets the bound socket: on a bind error it would print and sys.exit(1)
        # itself, while we want one clear ElicitError.
        server = wz_make_server(host, sock.getsockname()[1], app, threaded=True,
                                fd=sock.fileno())
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


def serve(session_path: str | os.PathLike, host: str = "127.0.0.1", port: int = 8765,
          engine: str | None = None, expert: str | None = None) -> int:
    """Serve the session's web page until Ctrl-C, SIGTERM or SIGHUP; returns the exit status
    (0 for Ctrl-C, as before; 128 + the signal number for the others).

    On any of them the server stops taking requests, a request being answered finishes (the
    session's lock), and the file is closed: nothing confirmed is lost.
    """
    from elicit.session.terminal import Interrupted

    server, app = make_server(session_path, host, port, engine, expert)
    sess: Session = app.config["ELICIT_SESSION"]
    url_host = f"[{host}]" if ":" in host else host
    who = f" (default expert: {expert})" if expert else ""
    print(f"serving {sess.path} at http://{url_host}:{server.server_port}/{who}  (Ctrl-C to "
          "stop)", flush=True)
    if host not in LOOPBACK_HOSTS:
        print(f"warning: listening on {host}: other machines may reach this page and it has "
              "no accounts", file=sys.stderr, flush=True)
    code = 0
    try:
        with stop_signals_as_interrupt() as caught:
            server.serve_forever()  # werkzeug returns from here on Ctrl-C
    except Interrupted as e:
        code = e.code
    except KeyboardInterrupt:
        pass
    finally:
        code = caught.code or code
        server.server_close()
        n = sess.progress()["all_answers"]
        sess.close()
        try:
            print(f"\nstopped; {n} answers are saved in {sess.path}", flush=True)
        except OSError:
            pass  # the terminal is gone (SIGHUP); the answers are in the file
    return code
