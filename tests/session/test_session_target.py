"""A session keeps its utility target."""

from __future__ import annotations

import json
import sqlite3


def test_session_keeps_the_target_and_old_files_read_as_predictive(tmp_path):
    from conftest import SESSION_NAMES, make_session_data

    from elicit.session.session import Session

    X, y, U = make_session_data()
    path = tmp_path / "t.session"
    with Session.create(X, y, U, SESSION_NAMES, path=path, engine="numpy",
                        utility_target="params") as s:
        assert s.settings["utility_target"] == "params"
        assert s.elicitor.target == "params"
    with Session.open(path) as s:
        assert s.elicitor.target == "params"
        q = s.next_query()
        assert q.exact_gain and q.expected_gain is not None
    # a file written before the target existed has no key: it was predictive
    with sqlite3.connect(path) as conn:
        (raw,) = conn.execute("SELECT value FROM meta WHERE key = 'settings'").fetchone()
        settings = json.loads(raw)
        del settings["utility_target"]
        conn.execute("UPDATE meta SET value = ? WHERE key = 'settings'", (json.dumps(settings),))
    conn.close()
    with Session.open(path) as s:
        assert s.elicitor.target == "predictive"
