"""A web page for answering a session's questions: ``elicit serve my.session``.

One question at a time with big answer buttons, a comment box, skip, undo, progress, the
current K heatmap and the latest answers; a Flask application on werkzeug's threaded WSGI
server, for a local tool used by a few experts (not meant to face the internet). Its security
and limits are described in ``docs/session.md`` ("Web page"); in short:

* it binds 127.0.0.1 by default, and every request must carry a ``Host`` of this machine
  (against DNS rebinding);
* **a GET never writes**: it reads the file on a read-only connection of its own. Every POST
  (answer, skip, undo, ``/next``) must come from the page itself (its ``Origin``, or without
  one its ``Referer``, is this server) and carry the page's CSRF token; else 403;
* no page waits for the model: only a checked POST refits it, for its own expert, under the
  session's lock; the K image is redrawn only when the model is free;
* a request body is limited to 64 KiB (413 at once, nothing read past the limit), a silent
  connection is closed after ``timeout`` seconds and a trickling request after ``deadline``;
* Ctrl-C, SIGTERM and SIGHUP stop taking requests, let those in progress finish, then close
  the session;
* two tabs cannot both answer one question: the file's ``UNIQUE(query_id)`` refuses the
  second answer (HTTP 409).

The package: :mod:`~elicit.session.web.page` (the page, its style and its keys),
:mod:`~elicit.session.web.app` (the Flask application) and :mod:`~elicit.session.web.server`
(binding, serving, stopping).
"""

from elicit.session.web.app import create_app
from elicit.session.web.server import make_server, serve

__all__ = ["create_app", "make_server", "serve"]
