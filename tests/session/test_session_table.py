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
import shutil

import numpy as np
import pandas as pd
import pytest
from helpers import files_opened

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


def table_session(path, **kw) -> Session:
    """A session as ``elicit session new --from-csv mine.csv --target response`` makes it."""
    from elicit.session.loaders import table_inputs

    csv = path.with_suffix(".csv")
    mixed_unit_table().to_csv(csv, index=False)
    kw.setdefault("engine", "numpy")
    return Session.create(path=path, **table_inputs(csv, "response"), **kw)


def sign_expert(q) -> str:
    """Similar when both features' true weights have the same sign (0 counts as a sign)."""
    sign = np.zeros(30)
    sign[:3], sign[3:6] = 1, -1
    return "similar" if sign[q.i] == sign[q.j] else "dissimilar"


def test_a_table_and_its_meta_features_are_each_read_once(tmp_path):
    """`session new --from-csv t.csv --meta-features m.csv` opened t.csv four times (two
    header checks, the table, then its lines counted to name a value's place) and m.csv four
    times (two header checks, the table, then its names as written): each is read once now,
    and a value is still placed on its line."""
    from elicit.session.loaders import table_inputs

    df = mixed_unit_table(n=8, p=6)
    t, m = tmp_path / "t.csv", tmp_path / "m.csv"
    df.to_csv(t, index=False)
    pd.DataFrame({"name": df.columns[:4], "u": [1.0, 2.0, 3.0, 4.0]}).to_csv(m, index=False)
    with files_opened() as opened:
        inputs = table_inputs(t, "response", meta_features=m)
    assert (opened.count(t), opened.count(m)) == (1, 1)
    assert list(inputs["X"].index) == list(range(2, 10))
    assert inputs["X"].index.name == "line" and list(inputs["meta_features"].index) == \
        list(df.columns[:4])


# --------------------------------------------------------------------------------------------
# Default meta-features of a plain table
# --------------------------------------------------------------------------------------------

def test_a_mixed_unit_table_gets_informative_questions_not_column_order(tmp_path):
    with table_session(tmp_path / "t.session") as s:
        qs = []
        for _ in range(3):
            q = s.next_query()
            qs.append(q)
            s.answer(q, sign_expert(q))
    # ~1e-3 nats with the default meta-features; ~1e-8 with the transposed raw table
    assert all(q.expected_gain > 1e-5 for q in qs), [q.expected_gain for q in qs]
    assert (qs[0].i, qs[0].j) != (0, 1)
    assert [(q.i, q.j) for q in qs] != [(0, 1), (0, 2), (0, 3)]


def test_answers_plus_questions_need_no_lbfgs_fallbacks(tmp_path, monkeypatch):
    """The cause of the seconds per click: on the raw-unit meta-features the warm Newton
    refits failed and fell back to L-BFGS-B (about 7,500 evaluations per answer plus
    question). With the default meta-features they converge; count the evaluations."""
    import elicit.engines.numpy_engine as ne

    with table_session(tmp_path / "t.session") as s:
        evals = []
        original = ne.minimize

        def counted(*args, **kwargs):
            res = original(*args, **kwargs)
            evals.append(int(res.nfev))
            return res

        monkeypatch.setattr(ne, "minimize", counted)
        for _ in range(5):
            q = s.next_query()
            s.answer(q, sign_expert(q))
        s.next_query()
    assert sum(evals) < 100, f"{len(evals)} L-BFGS-B runs, {sum(evals)} evaluations"


def test_table_meta_features_are_unit_free_correlation_distances():
    from elicit.data.metafeatures import TABLE_SQ_DISTANCE, pair_sq_distances, table_meta_features

    X = mixed_unit_table().drop(columns="response").to_numpy()
    U = table_meta_features(X)
    assert U.shape == (30, 10)
    d = pair_sq_distances(U)
    assert np.median(d) == pytest.approx(TABLE_SQ_DISTANCE, rel=1e-12)
    # units and offsets do not matter (a negative unit flips a column: not the same)
    rng = np.random.default_rng(3)
    rescaled = X * rng.uniform(1e-6, 1e6, size=30) + rng.normal(size=30) * 1e5
    np.testing.assert_allclose(table_meta_features(rescaled), U, atol=1e-9)
    # with every direction kept, the distances are c * 2 (1 - r_ij), r from np.corrcoef
    full = table_meta_features(X, dim=30)
    i, j = np.triu_indices(30, k=1)
    two_one_minus_r = 2.0 * (1.0 - np.corrcoef(X.T)[i, j])
    ratio = pair_sq_distances(full) / two_one_minus_r
    np.testing.assert_allclose(ratio, ratio[0], rtol=1e-9)
    assert ratio[0] == pytest.approx(TABLE_SQ_DISTANCE / np.median(two_one_minus_r), rel=1e-9)
    # ten directions keep the order of the correlations
    assert np.corrcoef(d, two_one_minus_r)[0, 1] > 0.99


def test_table_meta_features_edge_cases():
    from elicit.data.metafeatures import table_meta_features

    rng = np.random.default_rng(0)
    X = rng.normal(size=(5, 7))
    X[:, 2] = 7.0                                   # constant: the origin
    X = np.column_stack([X, 3 * X[:, 0] + 1])       # the same measurement as column 0
    U = table_meta_features(X, dim=10)
    assert U.shape == (8, 4)                        # 5 centred rows have rank 4: k <= rank
    np.testing.assert_allclose(U[2], 0.0, atol=1e-12)
    np.testing.assert_allclose(U[7], U[0], atol=1e-12)
    assert table_meta_features(X, dim=2).shape == (8, 2)
    big = X.copy()
    big[1, 1] = 1e300                               # squares would overflow
    assert np.all(np.isfinite(table_meta_features(big)))
    assert np.array_equal(table_meta_features(np.ones((4, 3))), np.zeros((3, 1)))
    # bit for bit the same whatever the memory layout (a DataFrame's values are in F order)
    assert np.array_equal(table_meta_features(X), table_meta_features(np.asfortranarray(X)))


def test_the_summary_says_what_the_default_is(tmp_path):
    with table_session(tmp_path / "t.session") as s:
        line = next(x for x in s.summary if x.startswith("meta-features"))
        assert not s.notes  # the default meta-features couple the features
    assert "principal directions of the standardised training matrix" in line
    assert "K = 0.14" in line


# --------------------------------------------------------------------------------------------
# Worth and the stop hint
# --------------------------------------------------------------------------------------------

def test_worth_is_the_gain_over_the_best_so_far_and_the_stop_hint_comes(tmp_path):
    """Worth never exceeds 100%, and a scripted expert reaches the stop hint before the
    pairs run out (gains fall as the answers accumulate). Under the old yardstick, the first
    question, later questions of this session were worth more than 100%."""
    rng = np.random.default_rng(2)
    X = rng.normal(size=(12, 8))
    beta = rng.choice([-1.0, 0.0, 1.0], 8)
    y = X @ beta + 0.3 * rng.normal(size=12)
    gains, worths, hint_at = [], [], None
    with Session.create(X, y, path=tmp_path / "w.session", engine="numpy", seed=2) as s:
        while not s.is_done():
            q = s.next_query()
            gains.append(q.expected_gain)
            worths.append(q.worth)
            s.answer(q, "similar" if np.sign(beta[q.i]) == np.sign(beta[q.j]) else "dissimilar")
            if hint_at is None and s.stop_hint() is not None:
                hint_at = len(gains)
                assert "worth less than 5% of the best question so far" in s.stop_hint()
        n_pairs = s.n_pairs
    g = np.array(gains)
    expected = np.maximum(g, 0) / np.maximum.accumulate(g)
    np.testing.assert_allclose(worths, expected, rtol=1e-12)
    assert max(worths) <= 1.0 and worths[0] == 1.0
    assert hint_at is not None and hint_at < n_pairs


def test_worth_over_a_session_with_rising_gains_stays_at_most_one(tmp_path):
    """Gains that rise after the first question (as on the Amazon data) gave worths of
    several hundred per cent; now a new best question is worth 100%."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(12, 8))
    beta = rng.choice([-1.0, 0.0, 1.0], 8)
    y = X @ beta + 0.3 * rng.normal(size=12)
    gains, worths = [], []
    with Session.create(X, y, path=tmp_path / "r.session", engine="numpy", seed=0) as s:
        for _ in range(6):
            q = s.next_query()
            gains.append(q.expected_gain)
            worths.append(q.worth)
            s.answer(q, "similar" if np.sign(beta[q.i]) == np.sign(beta[q.j]) else "dissimilar")
    assert max(gains[1:]) > gains[0]          # the situation of the report
    assert all(0.0 <= w <= 1.0 for w in worths), worths
    assert worths[int(np.argmax(gains))] == 1.0


def test_the_stop_hint_needs_five_answers_under_five_percent(tmp_path):
    import sqlite3

    from elicit.session.record import STOP_FRACTION, STOP_WINDOW, worth

    assert worth(None, 1.0) is None and worth(0.5, None) is None and worth(0.5, 0.0) is None
    assert worth(-1e-16, 2.0) == 0.0 and worth(1.0, 4.0) == 0.25
    X, y = np.random.default_rng(1).normal(size=(12, 8)), np.arange(12.0)
    with Session.create(X, y, path=tmp_path / "h.session", engine="numpy") as s:
        for _ in range(STOP_WINDOW + 1):
            s.answer(s.next_query(), "similar")
        best = max(g for (g,) in sqlite3.connect(s.path).execute(
            "SELECT expected_gain FROM queries"))
        raw = sqlite3.connect(s.path)
        # the first question is the best; the later ones worth just under / over 5% of it
        raw.execute("UPDATE queries SET expected_gain = ? WHERE id = 1", (best,))
        raw.execute("UPDATE queries SET expected_gain = ? WHERE id > 1",
                    (0.99 * STOP_FRACTION * best,))
        raw.commit()
        assert s.stop_hint() is not None
        raw.execute("UPDATE queries SET expected_gain = ? WHERE id = 3",
                    (1.01 * STOP_FRACTION * best,))
        raw.commit()
        raw.close()
        assert s.stop_hint() is None


# --------------------------------------------------------------------------------------------
# The kernel note out of hiding
# --------------------------------------------------------------------------------------------

def bad_scale_session(path) -> Session:
    """A user's meta-features file in raw units: K is the identity at the start."""
    df = mixed_unit_table(n=20, p=6)
    X = df.drop(columns="response")
    U = pd.DataFrame(X.to_numpy().T * 1e3, index=X.columns)
    return Session.create(X, df["response"], U, path=path, engine="numpy", standardize=True)


@pytest.fixture(scope="module")
def bad_scale_file(tmp_path_factory):
    """That session with its first question chosen (saved as pending), made once: the choice
    costs 0.1 s of refits (half a second before zero-probability answers were no longer
    refitted), and the two tests below only show it (each takes a copy of the file)."""
    path = tmp_path_factory.mktemp("bad_scale") / "b.session"
    with bad_scale_session(path) as s:
        s.next_query()
    return path


def test_a_kernel_that_is_the_identity_is_shown_before_the_question(tmp_path, bad_scale_file):
    from elicit.session.terminal import run_ask

    with Session.open(shutil.copyfile(bad_scale_file, tmp_path / "b.session")) as s:
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


def test_the_web_page_shows_the_kernel_note_outside_the_summary(tmp_path, bad_scale_file):
    pytest.importorskip("flask")
    from elicit.session.web import create_app

    app = create_app(shutil.copyfile(bad_scale_file, tmp_path / "b.session"))
    html = app.test_client().get("/", headers=SAME).get_data(as_text=True)
    app.config["ELICIT_SESSION"].close()
    before_summary = html.split('<details id="summary">')[0]
    assert re.search(r'class="hint kernel-note">note: at the start K is practically the '
                     r'identity', before_summary)
