"""What the expert sees: the page template, its style sheet and its keyboard shortcuts, and
the fixed texts the application puts into it (:mod:`elicit.session.web.app` renders it)."""

from pathlib import Path

#: Messages after a successful POST (redirect target ``/?m=<code>``); a fixed set so that no
#: request text is ever echoed into the page.
MESSAGES = {
    "saved": "Saved. Here is the next question.",
    "skipped": "Skipped; that pair may come back later.",
    "undone": "Undone: the last answer was withdrawn; you can answer that question again.",
}


# Files beside this module: the page's template (page.html, which Flask compiles once, not
# at every page), its style sheet, its keyboard shortcuts (a file: the Content-Security-Policy
# forbids inline code) and the page of a refusal (str.format's {status}, {message}, {back}).
CSS, JS, REFUSAL = (Path(__file__).resolve().with_name(name).read_text("utf-8")
                    for name in ("app.css", "app.js", "refusal.html"))
