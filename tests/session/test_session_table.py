"""A researcher's own table in a session: default meta-features, speed, worth and notes.

The bugs these tests were written for (first seen failing): on a 60 x 30 table whose columns
are in different units, without meta-features, every question's expected gain was ~0, the
questions went down the columns, an answer plus the next question ran thousands of L-BFGS-B
evaluations, "worth" (a fraction of the first question) grew far past 100% so the stop hint
never came, and the note that K is practically the identity hid in the summary.
"""

from __future__ import annotations

import io
import re

import numpy as np
import pandas as pd
import pytest

from elicit.session.session import Session

SAME = {"Origin": "http://localhost", "Host": "localhost"}


def mixed_unit_table(n: int = 60, p: int = 30, seed: int = 0) -> pd.DataFrame:
    """A table as a researcher has it: three latent factors behind the columns, each column
    in its own unit (scales 1e-3 to 1e4, arbitrary offsets), and a response."""
    rng = np.random.default_rng(seed)
    Z = rng.standard_normal((n, 3))
    Xs = Z @ rng.standard_normal((3, p)) + 0.7 * rng.standard_normal((n, p))
    units = 10.0 ** rng.uniform(-3, 4, size=p)
    X = Xs * units + rng.uniform(-5, 5, size=p) * units
    beta = np.zeros(p)
    beta[:6] = [1, 1, 1, -1, -1, -1]
    df = pd.DataFrame(X, columns=[f"gene_{k:02d}" for k in range(p)])
    df["response"] = Xs @ beta + 0.5 * rng.standard_normal(n)
    return df


# --------------------------------------------------------------------------------------------
# The kernel note out of hiding
# --------------------------------------------------------------------------------------------

def bad_scale_session(path) -> Session:
    """A user's meta-features file in raw units: K is the identity at the start."""
    df = mixed_unit_table(n=20, p=6)
    X = df.drop(columns="response")
    U = pd.DataFrame(X.to_numpy().T * 1e3, index=X.columns)
    return Session.create(X, df["response"], U, path=path, engine="numpy", standardize=True)


def test_a_kernel_that_is_the_identity_is_shown_before_the_question(tmp_path):
    from elicit.session.terminal import run_ask

    with bad_scale_session(tmp_path / "b.session") as s:
        assert len(s.notes) == 1 and "K is practically the identity" in s.notes[0]
        assert s.notes[0] in s.summary
        out = io.StringIO()
        run_ask(s, io.StringIO("q\n"), out)
    text = out.getvalue()
    assert text.index("K is practically the identity") < text.index("Question 1")


def test_the_transposed_raw_table_as_meta_features_gets_the_note(tmp_path):
    """The old default given as a file: most pairs start uncoupled, a few columns with small
    units tied (the largest K_ij is near 1, which the old check on it missed)."""
    df = mixed_unit_table()
    X = df.drop(columns="response")
    U = pd.DataFrame(X.to_numpy().T, index=X.columns)
    with Session.create(X, df["response"], U, path=tmp_path / "raw.session", engine="numpy",
                        standardize=True) as s:
        assert len(s.notes) == 1
        assert "K is practically the identity for most pairs" in s.notes[0]


def test_a_kernel_of_all_ones_gets_a_note(tmp_path):
    X, y = np.random.default_rng(1).normal(size=(12, 8)), np.arange(12.0)
    U = np.random.default_rng(2).normal(size=(8, 2)) * 1e-3
    with Session.create(X, y, U, path=tmp_path / "o.session", engine="numpy") as s:
        assert len(s.notes) == 1 and "practically all ones" in s.notes[0]


def test_the_web_page_shows_the_kernel_note_outside_the_summary(tmp_path):
    pytest.importorskip("flask")
    from elicit.session.web import create_app

    path = tmp_path / "b.session"
    bad_scale_session(path).close()
    app = create_app(path)
    html = app.test_client().get("/", headers=SAME).get_data(as_text=True)
    app.config["ELICIT_SESSION"].close()
    before_summary = html.split('<details id="summary">')[0]
    assert re.search(r'class="hint kernel-note">note: at the start K is practically the '
                     r'identity', before_summary)
