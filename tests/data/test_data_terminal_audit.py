"""Splits, meta-features, tables, the terminal and the internal helpers: each test pins a
behaviour that a one-line slip could break without any other test failing (a negative seed,
an embedding as wide as p, PPMI's diagonal, a median of zero, a rank cap, the keys exit,
undo and Enter, the goodbye line's grammar, a listing of exactly ``limit`` items, ...)."""

from __future__ import annotations

import numpy as np
import pytest

from elicit.data import BowDataset, prepare_run
from elicit.data.metafeatures import meta_features, scale_to_typical, table_meta_features
from elicit.errors import ElicitError


def test_a_negative_seed_is_refused_in_one_line():
    # numpy's own ValueError ("expected non-negative integer") would be a traceback
    rng = np.random.default_rng(0)
    ds = BowDataset(rng.poisson(1.0, size=(30, 4)), rng.integers(1, 6, size=30),
                    [f"w{i}" for i in range(4)], "toy")
    with pytest.raises(ElicitError, match="seed must be a non-negative integer"):
        prepare_run(ds, -1, n_model=20, n_train=5)


@pytest.mark.parametrize("kind", ["ppmi", "lsa"])
def test_an_embedding_may_have_as_many_dimensions_as_features(kind):
    counts = np.random.default_rng(2).poisson(0.8, size=(40, 5))
    assert meta_features(kind, counts, dim=5).shape == (5, 5)


@pytest.mark.parametrize("kind", ["ppmi", "lsa"])
def test_a_keyword_absent_from_the_unlabelled_reviews_is_the_origin(kind):
    # an eigen or singular vector's entry for a keyword in no review is 0 only up to
    # rounding (1e-16), which unit rows would blow up into a full direction
    for seed in range(6):
        counts = np.random.default_rng(seed).poisson(0.5, size=(12, 6))
        counts[:, 3] = 0
        U = meta_features(kind, counts, dim=3)
        assert np.all(U[3] == 0.0)


def test_ppmi_gives_a_keyword_that_shares_no_review_no_direction():
    # w0 and w1 always appear together, w2 always alone: off the diagonal, PPMI knows w2 only
    # as sharing nothing, so w2 gets the origin and w0, w1 one point (M_ii would give w2 an
    # axis of its own from how rare it is)
    counts = np.array([[1, 1, 0], [2, 1, 0], [0, 0, 1], [0, 0, 3], [0, 0, 0]])
    U = meta_features("ppmi", counts, dim=2)
    assert np.allclose(U[2], 0.0) and np.allclose(U[0], U[1]) and not np.allclose(U[0], 0.0)


def test_scaling_when_most_rows_coincide_uses_the_nonzero_distances():
    # 6 of the 10 pair distances are 0 (median 0): the median of the nonzero ones, 1, is
    # scaled to the target 2, so the odd row ends at sqrt(2) from the others
    U = scale_to_typical(np.array([[0.0], [0.0], [0.0], [0.0], [1.0]]), 2.0)
    assert U[:4, 0].tolist() == [0.0] * 4 and U[4, 0] == pytest.approx(np.sqrt(2.0))


def test_table_meta_features_keep_no_more_dimensions_than_the_columns_rank():
    # the third column is an affine copy of the first: the standardised table has rank 2
    a = np.array([1.0, 4.0, 2.0, 8.0, 5.0, 3.0])
    b = np.array([2.0, 1.0, 7.0, 3.0, 3.0, 9.0])
    U = table_meta_features(np.column_stack([a, b, 3 * a - 2]), dim=10)
    assert U.shape == (3, 2)
    assert np.allclose(U[0], U[2])  # correlation 1: the same point


def test_a_csv_column_name_holding_a_semicolon_is_not_taken_for_another_separator(tmp_path):
    # only a header of ONE column betrays a file separated by ';' or tabs
    from elicit.data.tables import read_table

    path = tmp_path / "m.csv"
    path.write_text("word;stem,x,y\nw0,1,2\nw1,3,4\n", encoding="utf-8")
    df = read_table(path, "--meta-features", index_col=0)
    assert list(df.columns) == ["x", "y"] and list(df.index) == ["w0", "w1"]


@pytest.mark.parametrize("worth, said", [(0.01, "worth 1% of"), (0.004, "worth under 1% of"),
                                         (0.0, "worth 0% of"), (0.355, "worth 36% of")])
def test_worth_is_shown_in_whole_percent_and_under_one_percent_says_so(worth, said):
    from elicit.session.questions import SessionQuery
    from elicit.session.terminal import worth_text

    q = SessionQuery(id=1, i=0, j=1, names=("a", "b"), expected_gain=0.1, exact_gain=True,
                     session_uid="u", worth=worth)
    assert worth_text(q).startswith(said)


@pytest.mark.parametrize("n, said", [(0, "0 answers are saved"), (1, "1 answer is saved"),
                                     (2, "2 answers are saved")])
def test_the_goodbye_line_counts_answers_in_good_english(n, said):
    from elicit.session.terminal import _saved

    assert _saved(n, "w.session", "").startswith(said + " in w.session; resume with `elicit ask")


def test_a_printed_line_keeps_its_indent_and_only_its_leading_newlines_raw():
    from elicit.internal.text import printable_line

    assert printable_line("  A: w0") == "  A: w0"
    assert printable_line("\n\n  hint\x1b[2J\n") == "\n\n  hint\\x1b[2J\\n"


def test_a_listing_of_exactly_limit_items_adds_no_count():
    from elicit.internal.text import listing

    assert listing(["a", "b"], limit=2) == "'a', 'b'"
    assert listing(["a", "b", "c"], limit=2) == "'a', 'b' and 1 more"


def test_a_numpy_bool_is_a_bool_and_a_word_is_not():
    from elicit.internal.checks import check_bool

    assert check_bool(np.bool_(True), "standardize") is True
    assert check_bool(np.array([1, 0])[1] == 1, "standardize") is False  # a comparison's bool
    with pytest.raises(ElicitError, match="standardize must be True or False, got 'no'"):
        check_bool("no", "standardize")


def test_ask_takes_a_batch_of_exactly_the_questions_left(tmp_path, monkeypatch):
    # three features: three pairs left, so --batch 3 passes the check (and goes on to load
    # the model, stopped here to keep the test cheap) while --batch 4 is refused
    import io

    from conftest import SESSION_NAMES, make_session_data

    from elicit.session.session import Session
    from elicit.session.terminal import ask

    X, y, U = make_session_data()
    path = tmp_path / "three.session"
    Session.create(X[:, :3], y, U[:3], SESSION_NAMES[:3], path=path, engine="numpy").close()
    with pytest.raises(ElicitError, match="--batch 4 is larger than the 3 pair"):
        ask(path, batch=4, inp=io.StringIO("q\n"), out=io.StringIO())

    class ModelLoads(Exception):
        pass

    def loads(*args, **kw):
        raise ModelLoads

    monkeypatch.setattr(Session, "open", loads)
    with pytest.raises(ModelLoads):
        ask(path, batch=3, inp=io.StringIO("q\n"), out=io.StringIO())


def test_the_terminal_keys_undo_help_and_exit_do_what_they_say(tmp_path):
    # "undo" spelled out undoes, an empty line shows the keys again, "exit" quits; two of a
    # feature's three snippets are shown
    import io

    from conftest import SESSION_NAMES
    from helpers import create_session

    from elicit.session.terminal import run_ask

    texts = {n: [f"first {n}", f"second {n}", f"third {n}"] for n in SESSION_NAMES}
    with create_session(tmp_path / "k.session", texts=texts) as s:
        out = io.StringIO()
        assert run_ask(s, io.StringIO("s\nundo\n\nexit\n"), out) == 0
        said = out.getvalue()
        assert "undid answer 1:" in said and "unknown key" not in said
        assert said.count("Add a comment after the key") == 2  # the header's keys, the help
        assert said.rstrip().endswith("bye: 0 answers are saved in "
                                      f"{s.path}; resume with `elicit ask {s.path}`")
        assert '"second ' in said and '"third ' not in said


def test_an_output_file_that_is_a_folder_is_refused_in_one_line(tmp_path):
    from elicit.internal.paths import check_output_file

    with pytest.raises(ElicitError, match="--out .* is a folder; give a file name"):
        check_output_file(tmp_path, "--out")


def test_a_split_without_training_reviews_is_refused():
    from elicit.data import split_indices

    with pytest.raises(ElicitError, match="n_train must be at least 1, got 0"):
        split_indices(10, np.random.default_rng(0), n_model=5, n_train=0)


@pytest.mark.parametrize("kind", ["ppmi", "lsa"])
def test_negative_unlabelled_counts_are_refused(kind):
    counts = np.random.default_rng(0).poisson(1.0, size=(10, 4))
    counts[3, 1] = -2
    with pytest.raises(ElicitError, match="must be finite and non-negative"):
        meta_features(kind, counts, dim=2)
