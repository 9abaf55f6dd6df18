"""Guards of the expert page and checks of the command line that a mutation audit found
unguarded (a comparison made by prefix or case, a wait not bounded by the deadline, a timeout
or port out of range, an option combination silently accepted), and the "100 Continue" that
invited a body the server then refused unread."""

from __future__ import annotations

import contextlib
import re
import shutil

import pytest

pytest.importorskip("flask")

from helpers import create_session, sql_rows

from elicit.session.web import create_app

SAME = {"Origin": "http://localhost"}


@pytest.fixture(scope="module")
def new_session_file(tmp_path_factory):
    p = tmp_path_factory.mktemp("new") / "m.session"
    create_session(p).close()
    return p


@pytest.fixture
def app(tmp_path, new_session_file):
    p = tmp_path / "m.session"
    shutil.copyfile(new_session_file, p)
    a = create_app(p)
    yield a
    a.config["ELICIT_SESSION"].close()


def _qid(client) -> str:
    return re.search(r'name="query_id" value="(\d+)"', client.get("/").get_data(as_text=True))[1]


def test_a_token_that_differs_only_in_its_tail_or_case_is_refused(app):
    """The whole token is compared, as typed: one changed last character, a missing one, one
    added, or the token with its letters' case swapped is no token."""
    c = app.test_client()
    token, qid = app.config["ELICIT_CSRF_TOKEN"], _qid(c)
    last = "A" if token[-1] != "A" else "B"
    for sent in (token[:-1] + last, token[:-1], token + "x", token.swapcase()):
        r = c.post("/answer", data={"csrf_token": sent, "query_id": qid, "answer": "similar"},
                   headers=SAME)
        assert r.status_code == 403 and "CSRF token" in r.get_data(as_text=True), sent
    assert sql_rows(app.config["ELICIT_SESSION"].path, "SELECT id FROM answers") == []


@pytest.mark.parametrize("headers", [{"Referer": "http://localhost.evil.example/form.html"},
                                     {"Origin": "http://localhost.evil.example"}])
def test_a_page_on_a_site_named_like_this_one_cannot_post(app, headers):
    """Origin and Referer are compared whole: a site whose name starts with this server's
    (localhost.evil.example) is another site."""
    c = app.test_client()
    r = c.post("/answer", data={"csrf_token": app.config["ELICIT_CSRF_TOKEN"],
                                "query_id": _qid(c), "answer": "similar"}, headers=headers)
    assert r.status_code == 403 and "cross-site request refused" in r.get_data(as_text=True)
    assert sql_rows(app.config["ELICIT_SESSION"].path, "SELECT id FROM answers") == []


@pytest.mark.parametrize("host", ["localhost.evil.example", "127.0.0.1.nip.io:8765",
                                  "localhostx"])
def test_a_host_that_only_starts_with_a_loopback_name_is_refused(app, host):
    """A DNS-rebinding name that begins with an allowed one is not that name."""
    r = app.test_client().get("/", headers={"Host": host})
    assert r.status_code == 403 and "unexpected Host" in r.get_data(as_text=True)


def test_a_body_declared_over_the_limit_is_left_unread():
    """A Content-Length over the limit: the server reads none of the body (a 20 MB upload
    is not drained after its 413); one within the limit is read."""
    import io
    import socket

    from elicit.session.web.server import _bounded_body, _DeadlineReader

    for declared, expect in ((101, b""), (100, b"x" * 10)):
        a, b = socket.socketpair()
        with a, b:
            b.sendall(b"x" * 100)
            reader = _DeadlineReader(a, 5.0, 5.0)
            environ = {"CONTENT_LENGTH": str(declared), "wsgi.input": io.BufferedReader(reader)}
            _bounded_body(environ, 100, reader)
            assert environ["wsgi.input"].read(10) == expect, declared


def test_a_silent_client_waits_no_longer_than_the_request_deadline():
    """The deadline bounds each wait, not only the start of each read: a client that sends
    part of a request and goes silent is dropped at the deadline, not at the (longer)
    silence timeout."""
    from elicit.session.web.server import _DeadlineReader

    class Sock:  # records the timeout each receive waits under
        timeout, waits = None, []

        def settimeout(self, t):
            self.timeout = t

        def recv_into(self, b):
            self.waits.append(self.timeout)
            return 0

    sock = Sock()
    _DeadlineReader(sock, 600.0, 0.5).readinto(bytearray(8))  # type: ignore[arg-type]
    assert sock.waits and 0 < sock.waits[0] <= 0.5


def test_the_silence_timeout_is_within_the_request_deadline():
    """A silence timeout longer than the whole request's deadline would never apply."""
    from elicit.session.web.server import IDLE_TIMEOUT, REQUEST_DEADLINE

    assert 0 < IDLE_TIMEOUT <= REQUEST_DEADLINE


@pytest.mark.parametrize("option", ["timeout", "deadline"])
@pytest.mark.parametrize("value", [0, -1.0, float("nan")])
def test_a_timeout_that_is_not_positive_is_refused(tmp_path, option, value):
    """Refused before the port is bound or the session opened (the file need not exist)."""
    from elicit.errors import ElicitError
    from elicit.session.web import make_server

    with pytest.raises(ElicitError, match=f"{option} must be a positive number of seconds"):
        make_server(tmp_path / "none.session", port=0, **{option: value})


def test_a_k_image_being_drawn_does_not_hold_up_another_request_for_it(app, monkeypatch):
    """While one request draws the K image, another is answered at once (the last image,
    or 503 with Retry-After), not made to wait for the drawing."""
    import threading

    from elicit.session.web import app as web_app

    second_done, drawing = threading.Event(), threading.Event()
    seen = {}

    def slow_draw(sess):
        drawing.set()
        seen["second_answered_meanwhile"] = second_done.wait(5)  # a hang guard only
        return b"png"

    monkeypatch.setattr(web_app, "_k_png", slow_draw)
    first = threading.Thread(target=lambda: app.test_client().get("/k.png"))
    first.start()
    assert drawing.wait(5)

    def second():
        seen["status"] = app.test_client().get("/k.png").status_code
        second_done.set()

    t = threading.Thread(target=second)
    t.start()
    first.join()
    t.join()
    assert seen["second_answered_meanwhile"] and seen["status"] == 503


# --- the command line ---------------------------------------------------------------------

def _cli(capsys, *argv):
    from helpers import run_main

    from elicit.cli.main import main

    return run_main(main, capsys, *argv)


@pytest.mark.parametrize("value", ["65536", "-1"])
def test_serve_refuses_a_port_out_of_range_in_one_line(capsys, tmp_path, value):
    from helpers import one_line

    code, _, err = _cli(capsys, "serve", tmp_path / "none.session", "--port", value)
    assert code == 2
    assert "port must be between 0 and 65535" in one_line(err)


@pytest.mark.parametrize("value", ["0", "inf", "-2", "nan"])
def test_realdata_refuses_a_tau2_that_is_not_a_positive_number(capsys, tmp_path, value):
    from helpers import one_line

    code, _, err = _cli(capsys, "realdata", "--dataset", "amazon", "--out", tmp_path / "o",
                        "--data-dir", tmp_path / "nodata", "--tau2", value)
    assert code == 2
    assert f"--tau2 must be a positive number or 'cv', got '{value}'" in one_line(err)
    assert not (tmp_path / "o").exists()


def test_a_prefix_of_an_option_is_refused_by_the_parser_before_anything_runs(capsys):
    """`--run 7` is not `--runs 7`: refused by parsing alone (with prefixes allowed, the
    command line test of this would start a whole sweep instead of failing)."""
    from elicit.cli.main import build_parser

    with pytest.raises(SystemExit) as e:
        build_parser().parse_args(["realdata", "--dataset", "amazon", "--run", "7",
                                   "--out", "o"])
    assert e.value.code == 2
    assert "unrecognized arguments: --run 7" in capsys.readouterr().err


@pytest.mark.parametrize("argv, message", [
    (["realdata", "--dataset", "amazon", "--out", "o", "--strategies", " , "],
     "unknown strategy ' , '; choose from random, nonsequential, sequential"),
    (["session", "new", "--out", "s.session", "--strategy", "random,sequential"],
     "give one strategy, got 'random,sequential'"),
])
def test_an_empty_or_plural_strategy_is_refused_by_the_parser(capsys, argv, message):
    from helpers import one_line

    from elicit.cli.main import build_parser

    with pytest.raises(SystemExit) as e:
        build_parser().parse_args(argv)
    assert e.value.code == 2
    assert message in one_line(capsys.readouterr().err)


@pytest.mark.parametrize("meta", [["--meta-features", "ppmi"], ["--meta-dim", "4"]])
def test_meta_options_with_an_npz_file_are_refused_in_one_line(capsys, tmp_path, meta):
    from helpers import one_line

    code, _, err = _cli(capsys, "session", "new", "--from-npz", tmp_path / "d.npz", *meta,
                        "--out", tmp_path / "s.session")
    assert code == 2
    assert "--meta-features/--meta-dim do not go with --from-npz" in one_line(err)
    assert not (tmp_path / "s.session").exists()


def test_run_with_a_table_is_refused_in_one_line(capsys, tmp_path):
    from helpers import one_line

    code, _, err = _cli(capsys, "session", "new", "--from-csv", tmp_path / "t.csv", "--target",
                        "y", "--run", "3", "--out", tmp_path / "s.session")
    assert code == 2
    assert "--run goes with --dataset or --corpus only" in one_line(err)


def test_a_body_refused_unread_is_not_invited_by_100_continue(tmp_path, new_session_file):
    """A client that asks before sending a body over the limit (Expect: 100-continue) is
    answered 413 at once, not invited to send it; one within the limit is invited, once."""
    import socket
    import threading

    from elicit.session.web import make_server

    p = tmp_path / "m.session"
    shutil.copyfile(new_session_file, p)
    server, app = make_server(p, port=0, timeout=30)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    def first_reply(size: int) -> bytes:
        with socket.create_connection(("127.0.0.1", server.server_port)) as sock:
            sock.sendall(b"POST /answer HTTP/1.1\r\nHost: 127.0.0.1\r\nOrigin: http://127.0.0.1"
                         b"\r\nContent-Type: application/x-www-form-urlencoded\r\n"
                         b"Expect: 100-continue\r\nContent-Length: %d\r\n\r\n" % size)
            sock.settimeout(600)  # a hang guard only
            reply = sock.recv(64)
            if reply.startswith(b"HTTP/1.1 100"):  # a second invitation would follow at once
                sock.settimeout(0.5)
                with contextlib.suppress(TimeoutError):
                    reply += sock.recv(64)
            return reply

    try:
        over = first_reply(app.config["MAX_CONTENT_LENGTH"] + 1)
        assert over.startswith(b"HTTP/1.1 413"), over
        assert first_reply(10) == b"HTTP/1.1 100 Continue\r\n\r\n"
    finally:
        server.shutdown()
        server.server_close()
        app.config["ELICIT_SESSION"].close()
