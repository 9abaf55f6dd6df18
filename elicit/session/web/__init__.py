"""A web page for answering a session's questions: ``elicit serve my.session``, a local tool
for a few experts, not meant to face the internet (its security checks and clean stop:
``docs/session.md``, Web page; its request deadlines: ``docs/reliability.md``)."""

from elicit.session.web.app import create_app
from elicit.session.web.server import make_server, serve

__all__ = ["create_app", "make_server", "serve"]
