"""End to end in a real headless browser: Debian's chromium driven by Playwright.

The test serves a session with ``elicit.web.make_server`` (the server ``elicit serve`` runs),
clicks through several answers, reloads, opens a second tab on the same question, undoes, and
checks the session file after each step. A page on another origin then submits a form to the
server (with the right token even) and must get 403, and fires GETs at it with ``<img>`` tags,
which must leave the session file untouched. The screenshot of the page is saved to
``docs/img/web.png`` for the README.

Needs ``pip install playwright`` and ``apt-get install chromium``; without them the test is
skipped with the reason. ``ELICIT_CHROMIUM`` overrides the browser path.
"""

from __future__ import annotations

import contextlib
import http.server
import importlib.util
import os
import shutil
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from helpers import sql_rows

from elicit.session.session import Session

ROOT = Path(__file__).resolve().parents[2]
# The README's screenshot is refreshed only on request (ELICIT_UPDATE_SCREENSHOT=1), so that
# a test run leaves the tracked file alone; otherwise it goes to a temporary file.
SCREENSHOT = (ROOT / "docs" / "img" / "web.png" if os.environ.get("ELICIT_UPDATE_SCREENSHOT")
              else Path(tempfile.gettempdir()) / "elicit-web-test.png")
CHROMIUM = os.environ.get("ELICIT_CHROMIUM") or shutil.which("chromium") or \
    shutil.which("chromium-browser")
LAUNCH_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
               "--no-first-run", "--disable-background-networking",
               "--disable-component-update", "--disable-sync"]

# Found, not imported: importing Playwright costs half a second, which every pytest call
# paid at collection, `make test-fast` too, where these tests do not run.
HAVE_PLAYWRIGHT = importlib.util.find_spec("playwright") is not None

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not HAVE_PLAYWRIGHT,
                       reason="the playwright Python package is not installed "
                              "(pip install playwright)"),
    pytest.mark.skipif(CHROMIUM is None,
                       reason="no chromium browser found (apt-get install chromium)"),
]

IMAGE_LOADED = ("() => { const i = document.getElementById('kplot');"
                " return i && i.complete && i.naturalWidth > 0; }")


def session_inputs() -> dict:
    """The paper's Amazon data when it is available (a realistic screenshot), else a small
    synthetic problem with kitchen-review words as feature names."""
    try:
        from elicit.session.loaders import dataset_inputs

        return {**dataset_inputs("amazon", run=7), "pool_size": 60}
    except Exception:  # no data directory: fall back to synthetic data
        words = ["great", "love", "easy", "return", "broke", "waste", "sturdy", "cheap",
                 "price", "quality", "disappointed", "recommend"]
        rng = np.random.default_rng(0)
        X = rng.normal(size=(20, len(words)))
        U = np.abs(rng.normal(size=(len(words), 4)))
        y = X @ rng.normal(size=len(words))
        texts = {w: [f"... the {w} part of this review ..."] for w in words}
        return {"X": X, "y": y, "meta_features": U, "feature_names": words, "texts": texts,
                "description": "synthetic data with review words as feature names"}


def file_answers(path: Path) -> list[tuple]:
    return sql_rows(path, "SELECT query_id, answer, comment, undone_at IS NOT NULL "
                          "FROM answers ORDER BY id")


def pending_names(path: Path) -> tuple[str, str]:
    with Session.open(path) as s:
        q = s.pending()[0]
        return q.names


def shown_names(page) -> tuple[str, str]:
    return page.inner_text("#feature-1"), page.inner_text("#feature-2")


def start(server) -> threading.Thread:
    t = threading.Thread(target=server.serve_forever, daemon=True)
    t.start()
    return t


@contextlib.contextmanager
def browser_on(path: Path) -> Iterator[tuple[Any, str]]:
    """A server of the session file ``path`` and a browser: (the browser, the page's address);
    the server stopped and the session closed however the test ends."""
    from playwright.sync_api import sync_playwright

    from elicit.session.web import make_server

    server, app = make_server(path, port=0)
    start(server)
    try:
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=CHROMIUM, args=LAUNCH_ARGS)
            yield browser, f"http://127.0.0.1:{server.server_port}/"
            browser.close()
    finally:
        server.shutdown()
        server.server_close()
        app.config["ELICIT_SESSION"].close()


def test_answer_in_a_real_browser(tmp_path):
    path = tmp_path / "browser.session"
    Session.create(path=path, engine="numpy", seed=7, **session_inputs()).close()
    evil = None
    try:
        with browser_on(path) as (browser, url):
            page = browser.new_page(viewport={"width": 1300, "height": 880})
            page.goto(url)
            page.wait_for_function(IMAGE_LOADED)

            # Three answers, one with a comment, by clicking the big buttons.
            asked = []
            for answer, comment in (("similar", ""), ("dissimilar", "opposite sentiment"),
                                    ("dont_know", "")):
                asked.append(shown_names(page))
                if comment:
                    page.fill("#comment", comment)
                with page.expect_navigation():  # POST, then the redirect to the next question
                    page.click(f"#btn-{answer}")
                assert page.inner_text("#message").startswith("Saved")
            rows = file_answers(path)
            assert [r[1] for r in rows] == ["similar", "dissimilar", "dont_know"]
            assert rows[1][2] == "opposite sentiment" and not any(r[3] for r in rows)
            with Session.open(path) as s:
                h = s.history
            assert list(zip(h.feature_i, h.feature_j)) == asked

            # A keyboard shortcut answers too, once: a second key pressed while the next
            # question is being chosen is not sent (it would answer this question again).
            before = shown_names(page)
            with page.expect_navigation():
                page.keyboard.press("s")
                page.keyboard.press("d")
            assert page.inner_text("#message").startswith("Saved")
            assert len(file_answers(path)) == 4 and shown_names(page) != before
            assert file_answers(path)[-1][1] == "similar"

            # Reload: the same open question comes back, and the progress is right.
            current = shown_names(page)
            page.reload()
            page.wait_for_function(IMAGE_LOADED)
            assert shown_names(page) == current == pending_names(path)
            assert "4 of" in page.inner_text("#progress")
            SCREENSHOT.parent.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(SCREENSHOT), full_page=True)

            # Two tabs on one question: the second click gets "already answered".
            tab2 = browser.new_page()
            tab2.goto(url)
            assert shown_names(tab2) == current
            with page.expect_navigation():
                page.click("#btn-similar")
            with tab2.expect_response(lambda r: r.url.endswith("/answer")) as resp:
                tab2.click("#btn-dissimilar")
            assert resp.value.status == 409
            tab2.wait_for_load_state()
            assert "already answered" in tab2.inner_text("#message")
            rows = file_answers(path)
            assert len(rows) == 5 and rows[-1][1] == "similar"

            # Undo: the answer is kept in the file, marked undone; its question is back.
            with page.expect_navigation():
                page.click("#btn-undo")
            assert page.inner_text("#message").startswith("Undone")
            assert file_answers(path)[-1][3] == 1
            assert shown_names(page) == current

            # A page on another origin posts a form (even with the right token): 403.
            html = page.content()
            token = page.get_attribute("input[name=csrf_token]", "value")
            qid = page.get_attribute("input[name=query_id]", "value")
            assert token and token in html
            evil = _evil_server(url, token, qid)
            start(evil)
            bad = browser.new_page()
            with bad.expect_response(lambda r: r.url.endswith("/answer")) as resp:
                bad.goto(f"http://127.0.0.1:{evil.server_address[1]}/")
            assert resp.value.status == 403
            bad.wait_for_load_state()
            assert "cross-site request refused" in bad.inner_text("#message")
            assert bad.get_attribute("a", "href") == "/"  # a page of its own, with a way back
            assert len(file_answers(path)) == 5

            # A page on another origin fires GETs at the server with <img src> (with new
            # expert names): the session file is not touched.
            before = path.read_bytes()
            bad.goto(f"http://127.0.0.1:{evil.server_address[1]}/img")
            bad.wait_for_function("() => Array.from(document.images).every(i => i.complete)")
            assert path.read_bytes() == before
    finally:
        if evil is not None:
            evil.shutdown()
            evil.server_close()
    # The file alone resumes the session where the browser left it.
    with Session.open(path) as s:
        assert s.progress()["answered"] == 4 and s.progress()["undone"] == 1
    assert SCREENSHOT.stat().st_size > 10_000


def test_two_named_experts_in_a_real_browser(tmp_path):
    """Two experts in two tabs: each answers under their own name, each gets their own next
    question, and undo withdraws only one's own answer."""
    path = tmp_path / "experts.session"
    Session.create(path=path, engine="numpy", seed=3, **session_inputs()).close()
    with browser_on(path) as (browser, url):
        alice = browser.new_page()
        alice.goto(url)
        # Alice names herself with the field at the top of the page.
        alice.fill("#expert", "alice")
        with alice.expect_navigation():
            alice.click("#btn-expert")
        assert "expert=alice" in alice.url
        bob = browser.new_page()
        bob.goto(url + "?expert=bob")  # an address: it shows a button, records nothing
        assert bob.input_value("#expert") == "bob" and bob.locator("#btn-next").count()
        with bob.expect_navigation():
            bob.keyboard.press("n")
        pair_a, pair_b = shown_names(alice), shown_names(bob)
        if alice.locator("blockquote").count():
            assert alice.locator("blockquote mark").count() >= 1  # the keyword marked
        with alice.expect_navigation():
            alice.click("#btn-similar")
        # bob's form names him in its address (/answer?expert=bob)
        with bob.expect_response(lambda r: "/answer?" in r.url) as resp:
            bob.click("#btn-dissimilar")
        assert resp.value.status == 303  # bob answers his own question
        bob.wait_for_load_state()
        assert bob.inner_text("#message").startswith("Saved")
        assert "1 of" in alice.inner_text("#progress") and "by alice" in \
            alice.inner_text("#progress")
        assert "1 of" in bob.inner_text("#progress") and "by bob" in \
            bob.inner_text("#progress")
        assert shown_names(alice) != pair_a and shown_names(bob) != pair_b
        # Undo is per expert: bob's undo withdraws his answer only.
        with bob.expect_navigation():
            bob.click("#btn-undo")
        assert shown_names(bob) == pair_b
        alice.reload()
        assert "1 of" in alice.inner_text("#progress")
    with Session.open(path) as s:
        h = s.history
        assert list(zip(h["expert"], h["answer"], h["undone"])) == [
            ("alice", "similar", False), ("bob", "dissimilar", True)]
        assert (h.loc[0, "feature_i"], h.loc[0, "feature_j"]) == pair_a
        assert (h.loc[1, "feature_i"], h.loc[1, "feature_j"]) == pair_b


def _evil_server(target: str, token: str, qid: str) -> http.server.HTTPServer:
    page = (f"<!doctype html><form id='f' method='post' action='{target}answer'>"
            f"<input name='csrf_token' value='{token}'><input name='query_id' value='{qid}'>"
            "<input name='answer' value='similar'></form>"
            "<script>document.getElementById('f').submit()</script>").encode()

    images = "".join(f"<img src='{target}?expert=mallory{k}&m=saved'>" for k in range(5))
    img_page = f"<!doctype html>{images}".encode()

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 - http.server's naming
            body = img_page if self.path == "/img" else page
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    return http.server.HTTPServer(("127.0.0.1", 0), Handler)


def test_a_narrow_screen_the_keyboard_and_the_working_notice(tmp_path):
    """At 320 CSS pixels (a phone, or 400% zoom) the page scrolled sideways: the three
    answer buttons side by side and an unbroken word in a comment of the history were wider
    than the screen. After an answer by key, focus starts at "Saved" and the next question.
    The working notice gets its text when a form is sent, in a live region already there."""
    from helpers import create_session

    path = tmp_path / "narrow.session"
    create_session(path, texts={"price": ["the price was fair for what you get"]}).close()
    width = "() => [document.documentElement.scrollWidth, document.documentElement.clientWidth]"
    with browser_on(path) as (browser, url):
        page = browser.new_page(viewport={"width": 320, "height": 640})
        page.set_default_timeout(10_000)
        page.goto(url)
        page.fill("#comment", "see " + "x" * 60)
        page.keyboard.press("Shift+Tab")  # out of the comment box, where letters are typed
        with page.expect_navigation():
            page.keyboard.press("d")
        assert page.evaluate("() => document.activeElement.id") == "message"
        assert page.inner_text("#message").startswith("Saved")
        scroll, client = page.evaluate(width)
        assert scroll <= client, f"{scroll} px wide on a screen of {client}"
        assert page.inner_text("#working") == ""
        # the form is sent (and its navigation cancelled here): the notice speaks
        page.evaluate("""() => { const f = document.getElementById('answer-form');
            f.addEventListener('submit', e => e.preventDefault()); f.requestSubmit(); }""")
        assert page.inner_text("#working").startswith("Saving and choosing")


def test_the_comment_key_and_a_k_image_that_fails(tmp_path):
    """No key reached the comment box; c does, without typing itself there, and Esc leaves
    it so that the answers' keys work again. A K image the server could not draw (503) was a
    broken image: the page says so and offers to load it again."""
    from helpers import create_session

    path = tmp_path / "keys.session"
    create_session(path).close()
    focused = "() => document.activeElement.id"
    with browser_on(path) as (browser, url):
        page = browser.new_page(viewport={"width": 1000, "height": 800})
        page.set_default_timeout(10_000)
        busy = "503: the model is busy or failed; reload the page for the K image\n"
        page.route("**/k.png*", lambda route: route.fulfill(status=503, body=busy))
        page.goto(url)
        page.wait_for_function("() => document.getElementById('kplot-failed').textContent")
        assert "could not be drawn" in page.inner_text("#kplot-failed")
        assert not page.is_visible("#kplot") and page.is_visible("#kplot-reload")
        page.unroute("**/k.png*")
        page.click("#kplot-reload")
        page.wait_for_function(IMAGE_LOADED)
        assert page.inner_text("#kplot-failed") == "" and not page.is_visible("#kplot-reload")

        page.keyboard.press("c")
        assert page.evaluate(focused) == "comment"
        page.keyboard.type("the same lid")  # letters of answers' keys among them
        page.keyboard.press("Escape")
        assert page.evaluate(focused).startswith("question-")
        with page.expect_navigation():
            page.keyboard.press("s")
        assert page.inner_text("#message").startswith("Saved")
        assert file_answers(path) == [(file_answers(path)[0][0], "similar", "the same lid",
                                       0)]


def test_a_comment_typed_before_skip_is_kept_not_lost(tmp_path):
    """A comment typed in the box, then Skip (or k): the question was skipped and the text was
    gone, as a skip keeps no comment (the terminal refuses `k some text` the same way). Now
    nothing is sent, the page says why and the text stays; with the box empty Skip skips."""
    from helpers import create_session

    path = tmp_path / "skip.session"
    create_session(path).close()
    skipped = "SELECT COUNT(*) FROM queries WHERE status = 'skipped'"
    with browser_on(path) as (browser, url):
        page = browser.new_page(viewport={"width": 1000, "height": 800})
        page.set_default_timeout(10_000)
        page.goto(url)
        first = shown_names(page)
        page.fill("#comment", "not sure what lid means")
        page.click("#btn-skip")
        assert "a skip keeps no comment" in page.inner_text("#working")
        page.keyboard.press("Escape")
        page.keyboard.press("k")  # the key, as the button
        assert "a skip keeps no comment" in page.inner_text("#working")
        assert shown_names(page) == first
        assert page.input_value("#comment") == "not sure what lid means"
        assert sql_rows(path, skipped) == [(0,)]
        page.fill("#comment", "")
        with page.expect_navigation():
            page.click("#btn-skip")
        assert page.inner_text("#message").startswith("Skipped")
        assert sql_rows(path, skipped) == [(1,)]
