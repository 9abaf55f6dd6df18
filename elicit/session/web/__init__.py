"""A web page for answering a session's questions: ``elicit serve my.session``.

One question at a time with three big buttons (similar / dissimilar / don't know; relevant /
irrelevant / don't know for a feature question, "does <feature> affect <outcome>?"), a comment
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
model is free; otherwise the last one drawn is served. A request body is limited to 64 KiB: a
larger one gets 413 at once, whether its size is declared or it comes in chunks, and is not
read past the limit. A connection that stops sending is closed after ``timeout`` seconds (30
by default), and one whose request has not fully arrived after ``deadline`` seconds (60 by
default; a client trickling one byte at a time), so a stalled client cannot hold a thread for
ever.

Stopping. Ctrl-C, SIGTERM and SIGHUP stop the server from taking requests; the requests in
progress finish (a question being chosen included) and only then is the session closed.

Two tabs showing the same question cannot both answer it: the session checks and records the
answer in one write transaction and the file's ``UNIQUE(query_id)`` constraint refuses a
second answer, so the second tab gets an "already answered" message (HTTP 409).

The package: :mod:`~elicit.session.web.page` (the page, its style and its keys),
:mod:`~elicit.session.web.app` (the Flask application: reading for a page, the POST checks,
the routes) and :mod:`~elicit.session.web.server` (binding, serving, stopping).
"""

from elicit.session.web.app import create_app
from elicit.session.web.server import make_server, serve

__all__ = ["create_app", "make_server", "serve"]
