"""A web page for answering a session's questions: ``elicit serve my.session``.

A Flask application on werkzeug's threaded server, for a local tool used by a few experts
(not meant to face the internet). Its security checks (Host, a GET never writes, Origin or
Referer plus a CSRF token on every POST, 64 KiB bodies, silence and request deadlines) and
its clean stop are described in ``docs/session.md`` (Web page). The package:
:mod:`~elicit.session.web.page` (the page, its style and its keys),
:mod:`~elicit.session.web.app` (reading for a page, the POST checks, the routes) and
:mod:`~elicit.session.web.server` (binding, serving, stopping).
"""

from elicit.session.web.app import create_app
from elicit.session.web.server import make_server, serve

__all__ = ["create_app", "make_server", "serve"]
