"""Serving the application: binding the port, the server's threads and a clean stop (see
:mod:`elicit.session.web`)."""

from __future__ import annotations

import contextlib
import errno
import io
import os
import socket
import sys
import threading
import time

from elicit.errors import ElicitError
from elicit.internal.text import printable_line
from elicit.session import record, store
from elicit.session.session import Session, SessionReplaced
from elicit.session.terminal import Interrupted, stop_signals_as_interrupt
from elicit.session.web.app import LOOPBACK_HOSTS, SECURITY_HEADERS, InFlight, create_app

#: Seconds a connection may stay silent (request line, headers or body) before it is closed.
IDLE_TIMEOUT = 30.0
#: Seconds a whole request may take to arrive, however it trickles in (a page's is a few KiB).
REQUEST_DEADLINE = 60.0


class _DeadlineReader(io.RawIOBase):
    """A connection's socket, read under a deadline (a client trickling one byte at a time
    restarts a silence timeout, not the deadline); once :attr:`stopped` every read sees the
    end of the input, so what is left of a refused request is never read."""

    def __init__(self, sock: socket.socket, idle: float, deadline: float) -> None:
        self._sock, self._idle, self.stopped = sock, idle, False
        self._end = time.monotonic() + deadline

    def readable(self) -> bool:
        return True

    def readinto(self, b) -> int:
        if self.stopped:
            return 0
        left = self._end - time.monotonic()
        if left <= 0:
            raise TimeoutError("the request did not arrive before its deadline")
        self._sock.settimeout(min(left, self._idle))
        try:
            return self._sock.recv_into(b)
        finally:
            self._sock.settimeout(self._idle)  # writing the response: the silence timeout


def _bounded_body(environ: dict, limit: int, reader: _DeadlineReader) -> None:
    """Refuse a body over ``limit`` bytes (413) reading at most ``limit`` + 1 bytes of it; a
    chunked body is read (de-chunked) up to the limit and handed on as a plain one."""
    from werkzeug.wsgi import get_content_length

    if "wsgi.input_terminated" in environ:  # chunked: werkzeug de-chunks it as it is read
        try:
            body = environ["wsgi.input"].read(limit + 1)
        except TimeoutError:
            raise  # the deadline: the request handler closes the connection
        except OSError as e:  # a malformed chunk: drop the connection, as for a broken one
            raise ConnectionAbortedError(f"malformed chunked request body: {e}") from None
        environ.pop("wsgi.input_terminated")
        environ.pop("HTTP_TRANSFER_ENCODING", None)
        environ["wsgi.input"], environ["CONTENT_LENGTH"] = io.BytesIO(body), str(len(body))
    # one rule for both: a chunked body now declares the length read of it
    reader.stopped = (get_content_length(environ) or 0) > limit


def make_server(session_path: str | os.PathLike, host: str = "127.0.0.1", port: int = 8765,
                engine: str | None = None, expert: str | None = None,
                timeout: float = IDLE_TIMEOUT, deadline: float = REQUEST_DEADLINE):
    """Open the session and bind the server (without serving yet); ``timeout`` and
    ``deadline`` as :data:`IDLE_TIMEOUT` and :data:`REQUEST_DEADLINE`.

    Raises
    ------
    ElicitError
        A session that cannot be opened, or a port that is in use or not allowed.
    """
    from werkzeug.sansio.utils import get_content_length
    from werkzeug.serving import WSGIRequestHandler
    from werkzeug.serving import make_server as wz_make_server

    for value, name in ((timeout, "timeout"), (deadline, "deadline")):
        if not value > 0:
            raise ElicitError(f"{name} must be a positive number of seconds, got {value!r}")
    # Listening on every interface: accept this machine's own names in the Host header.
    extra = _this_machine() if host in ("0.0.0.0", "::") else {host} - {""}
    sock = _listen(host, port)  # first: a busy port must not cost a session open
    try:
        app = create_app(session_path, engine=engine, allowed_hosts=extra, expert=expert)
        limit = int(app.config["MAX_CONTENT_LENGTH"])

        class ElicitRequestHandler(WSGIRequestHandler):
            def setup(self) -> None:
                super().setup()
                self.rfile.close()  # the socket's own reader: its reference would keep it open
                # one deadline per connection, which werkzeug closes after one request
                self.reader = _DeadlineReader(self.connection, timeout, deadline)
                self.rfile = io.BufferedReader(self.reader)

            def send_error(self, code: int, message=None, explain=None) -> None:
                self.refused = True  # a request http.server refuses before the application
                # a version it refuses is left at HTTP/0.9's: no status line, no header at all
                self.request_version = "HTTP/1.0"
                super().send_error(code, message, explain)

            def parse_request(self) -> bool:  # HTTP/0.9 has no headers to carry the security ones
                return super().parse_request() and self.request_version != "HTTP/0.9"

            def end_headers(self) -> None:
                for header in SECURITY_HEADERS.items() if getattr(self, "refused", False) else ():
                    self.send_header(*header)
                super().end_headers()

            def make_environ(self):
                environ = super().make_environ()
                _bounded_body(environ, limit, self.reader)
                return environ

            def handle_expect_100(self) -> bool:  # the one "100 Continue" is run_wsgi's
                if (get_content_length(self.headers.get("Content-Length"),
                                       self.headers.get("Transfer-Encoding")) or 0) > limit:
                    del self.headers["Expect"]  # no "100 Continue" for a body refused unread
                return True

            def run_wsgi(self) -> None:
                try:
                    super().run_wsgi()
                finally:
                    # a request whose connection broke is not counted as in progress forever
                    InFlight.release(getattr(self, "environ", None))

        # a bound socket: on a bind error werkzeug would print and sys.exit(1) itself
        server = wz_make_server(host, sock.getsockname()[1], app, threaded=True,
                                fd=sock.fileno(), request_handler=ElicitRequestHandler)
    finally:
        sock.close()  # werkzeug holds its own duplicate of the descriptor
    # With a ready socket werkzeug skips http.server's bind, which sets these two.
    server.server_name, server.server_port = host, server.socket.getsockname()[1]
    return server, app


def _this_machine() -> set[str]:
    """The names another machine may open this one's page by: its host name and addresses
    (an IP address in the Host header cannot be rebound by DNS, so it is as safe as the name)."""
    names = {socket.gethostname()}
    with contextlib.suppress(OSError):
        names |= {str(a[4][0]) for a in socket.getaddrinfo(socket.gethostname(), None)}
    with contextlib.suppress(OSError), socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.connect(("192.0.2.1", 9))  # sends nothing: the route picks the outward address
        names.add(s.getsockname()[0])
    return names


def _listen(host: str, port: int) -> socket.socket:
    """A listening TCP socket on (host, port), or an ElicitError saying why not."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError) as e:  # UnicodeError: a label idna refuses
        why = e.strerror if isinstance(e, OSError) else e
        raise ElicitError(f"cannot listen on {host!r}: unknown host ({why})") from None
    family, _, _, _, addr = infos[0]
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        # a restart while old connections sit in TIME_WAIT (not two listeners on one port)
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
    """Print as the terminal does (:func:`printable_line`), ignoring a closed terminal."""
    with contextlib.suppress(OSError, ValueError):
        print(printable_line(text), file=sys.stderr if err else sys.stdout, flush=True)


def serve(session_path: str | os.PathLike, host: str = "127.0.0.1", port: int = 8765,
          engine: str | None = None, expert: str | None = None) -> int:
    """Serve the session's web page until Ctrl-C (exit status 0), SIGTERM or SIGHUP (128 +
    the signal number); how it stops: docs/session.md, Web page."""
    server, app = make_server(session_path, host, port, engine, expert)
    sess: Session = app.config["ELICIT_SESSION"]
    inflight: InFlight = app.config["ELICIT_IN_FLIGHT"]
    url_host = socket.gethostname() if host in ("0.0.0.0", "::") else \
        f"[{host}]" if ":" in host else host
    who = f" (default expert: {expert})" if expert else ""
    _say(f"serving {sess.path} at http://{url_host}:{server.server_port}/{who}  (Ctrl-C to "
         "stop)")
    if host not in LOOPBACK_HOSTS:
        _say(f"warning: listening on {host}: other machines may reach this page and it has "
             "no accounts", err=True)
    # The loop runs in its own thread, so a signal cannot land inside it and drop a connection.
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
        if busy := inflight.count:
            _say(f"stopping: waiting for {busy} request{'s' if busy > 1 else ''} in progress "
                 "to finish")
        # a second Ctrl-C stops now: every committed answer is in the file
        with contextlib.suppress(KeyboardInterrupt):
            inflight.close()
        server.server_close()
        try:  # counted in the file: no refit of the model (which may fail) for a count
            store.check_same_file(sess.conn, writing=False)
            n = record.progress(sess.conn, sess.n_pairs, sess.expert)["all_answers"]
            said = f"{n} answer{'s are' if n != 1 else ' is'} saved in {sess.path}"
        except SessionReplaced as e:
            said = str(e)
        sess.close()
        _say(f"\nstopped; {said}")
    return code
