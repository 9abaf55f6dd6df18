"""Guards a mutation audit of the session's record, exports, inputs and loaders and of the
scikit-learn estimator found missing: each test fails on a small slip in the code it names
(an answer's pair or word exported wrong, an undo that withdraws another expert's question,
a bad input accepted, a snippet cut wrong, an estimator's parameter or statistic mixed up)."""

from __future__ import annotations

import shutil

import numpy as np
import pandas as pd
import pytest
from conftest import SESSION_NAMES as NAMES
from conftest import make_session_data as make_data
from conftest import small_arrays
from helpers import create_session

from elicit.errors import ElicitError
from elicit.model.spec import Hyper
from elicit.session.session import Session

#: the experts' answers of :func:`two_experts`, in answer order: one pair alike, one in conflict
WORDS = ["similar", "similar", "similar", "dissimilar"]
EXPERTS = ["alice", "bob", "alice", "bob"]


@pytest.fixture(scope="module")
def two_experts(tmp_path_factory):
    """A session (X not standardised) where alice and bob answered the same two pairs, each
    asked to both at one state: the first alike, the second in conflict; each then has one
    pending query. Made once (0.2 s of fits); returns the file and the two pairs."""
    path = tmp_path_factory.mktemp("experts") / "e.session"
    pairs = []
    with create_session(path, seed=2) as s:
        for k in (0, 2):
            qa, qb = s.next_query("alice"), s.next_query("bob")
            assert (qa.i, qa.j) == (qb.i, qb.j)
            pairs.append((qa.i, qa.j))
            s.answer(qa, WORDS[k])
            s.answer(qb, WORDS[k + 1])
        s.next_query("alice")
        s.next_query("bob")
    return path, pairs


@pytest.fixture
def experts_copy(tmp_path, two_experts):
    """A copy of :func:`two_experts`'s file, and its pairs in answer order."""
    path, pairs = two_experts
    return shutil.copyfile(path, tmp_path / "e.session"), [p for p in pairs for _ in (0, 1)]


# -- exports -----------------------------------------------------------------------------------

def test_the_netcdf_export_holds_each_answers_pair_word_and_expert(experts_copy):
    pytest.importorskip("arviz")
    path, pairs = experts_copy
    with Session.open(path, read_only=True) as s:
        idata = s.to_inferencedata()
    const = idata.constant_data
    assert [tuple(p) for p in const["answer_pair"].values.tolist()] == pairs
    assert list(const["answer"].values) == WORDS
    assert list(const["answer_expert"].values) == EXPERTS
    assert idata.posterior.attrs["standardized"] == 0  # create_session does not standardise


def test_the_json_export_names_each_answers_two_features(experts_copy, tmp_path):
    import json

    path, pairs = experts_copy
    with Session.open(path, read_only=True) as s:
        doc = json.loads(s.export_prior(tmp_path / "prior.json").read_text())
    assert [(a["i"], a["j"], a["feature_i"], a["feature_j"], a["answer"], a["expert"])
            for a in doc["answers"]] == [(i, j, NAMES[i], NAMES[j], w, e)
                                         for (i, j), w, e in zip(pairs, WORDS, EXPERTS)]


def test_the_history_and_the_queries_name_the_features_i_and_j(experts_copy):
    from elicit.session.export import history, queries
    from elicit.session.opening import read

    path, pairs = experts_copy
    with read(path) as r:
        h, q = history(r), queries(r)
    assert list(zip(h["i"], h["j"])) == pairs
    assert len(q) == 6
    for df in (h, q):
        assert list(df["feature_i"]) == [NAMES[i] for i in df["i"]]
        assert list(df["feature_j"]) == [NAMES[j] for j in df["j"]]


def test_agreement_lists_the_conflicts_first(experts_copy):
    """The conflict was answered second; the table puts it first (docs: conflicts first)."""
    from elicit.session.export import agreement
    from elicit.session.opening import read

    with read(experts_copy[0]) as r:
        ag = agreement(r)
    assert (ag.compared, ag.agreeing) == (2, 1)
    assert list(ag.pairs["conflict"]) == [True, False]
    assert ag.pairs.loc[0, "answers"] == "'alice': similar; 'bob': dissimilar"


def test_to_estimator_of_a_session_where_two_experts_answered_one_pair(experts_copy):
    """The session's model counts both answers to a pair (test_session_experts.py); the
    docs: ``to_estimator()`` takes every expert's answers and predicts as the session."""
    pytest.importorskip("sklearn")
    with Session.open(experts_copy[0], read_only=True) as s:
        est = s.to_estimator()
        X = pd.DataFrame(s.X, columns=NAMES)
        np.testing.assert_allclose(est.predict(X), s.predict(X), rtol=1e-6, atol=1e-8)


# -- the record: undo, skips, experts ------------------------------------------------------------

def test_an_undo_withdraws_only_its_own_experts_pending_query(experts_copy):
    with Session.open(experts_copy[0]) as s:
        [qb] = s.pending("bob")
        s.undo("alice")
        assert s.pending("bob") == [qb]


def test_an_undo_brings_back_the_questions_its_expert_skipped(experts_copy):
    """Skipped questions are not asked again before the expert's next answer *or undo*."""
    from elicit.session.record import skipped_questions

    with Session.open(experts_copy[0]) as s:
        [qa] = s.pending("alice")
        s.skip(qa)
        assert skipped_questions(s.conn, "alice") == {(qa.kind, qa.i, qa.j)}
        s.undo("alice")
        assert skipped_questions(s.conn, "alice") == set()


def test_an_expert_name_of_the_longest_length_is_taken():
    from elicit.session.record import MAX_EXPERT, check_expert

    assert check_expert("x" * MAX_EXPERT) == "x" * MAX_EXPERT
    with pytest.raises(ElicitError, match="limit is"):
        check_expert("x" * (MAX_EXPERT + 1))


# -- questions -----------------------------------------------------------------------------------

def test_the_candidate_pairs_leave_out_the_excluded_features():
    from elicit.session.questions import question_pairs

    U = np.arange(8.0).reshape(4, 2)  # four different rows
    assert {tuple(p) for p in question_pairs(U, [0]).tolist()} == {(1, 2), (1, 3), (2, 3)}
    assert {tuple(p) for p in question_pairs(U, [2]).tolist()} == {(0, 1), (0, 3), (1, 3)}


def test_a_reopened_session_never_asks_about_a_left_out_column(tmp_path):
    from elicit.session.opening import read

    X, y, U = make_data()
    X = np.column_stack([X, np.full(len(X), 2.0)])
    U = np.vstack([U, U[0] + 1.0])
    path = tmp_path / "c.session"
    Session.create(X, y, U, [*NAMES, "const"], path=path, engine="numpy",
                   strategy="random").close()
    with read(path) as r:
        assert r.excluded == {"const": "constant column"}
        assert 8 not in r.candidates() and r.n_pairs == 8 * 7 // 2


# -- inputs of a new session ---------------------------------------------------------------------

def _prepare(X, y, **kw):
    from elicit.session.inputs import prepare

    return prepare(X, y, **{"meta_features": None, "feature_names": None, "texts": None,
                            "hyper": None, "strategy": "sequential", "seed": 0,
                            "y_offset": 0.0, **kw})


def test_three_rows_are_enough_for_the_default_meta_features():
    X, y, _ = make_data(n=3, p=4)
    assert _prepare(X, y).U.shape[0] == 4


@pytest.mark.parametrize("offset", [float("nan"), float("inf")])
def test_a_y_offset_that_is_no_number_is_refused(offset):
    X, y, _ = make_data()
    with pytest.raises(ElicitError, match="y_offset must be a finite number"):
        _prepare(X, y, y_offset=offset)


def test_standardising_a_constant_column_gives_finite_values():
    X, y, _ = make_data()
    X[:, 2] = 5.0
    pr = _prepare(X, y, standardize=True)
    Z = (pr.X - np.asarray(pr.x_centre)) / np.asarray(pr.x_scale)
    assert np.all(np.isfinite(Z)) and np.all(Z[:, 2] == 0)


# -- snippets ------------------------------------------------------------------------------------

def test_a_keyword_gets_at_most_three_snippets_from_the_first_texts():
    from elicit.session.loaders import keyword_snippets

    texts = [f"the kettle number {k}" for k in range(5)]
    assert keyword_snippets(["kettle"], texts) == [texts[:3]]


def test_a_snippet_near_the_start_of_a_long_text_keeps_its_keyword():
    from elicit.session.loaders import keyword_snippets

    text = "a" * 20 + " kettle " + "b " * 100
    [[snippet]] = keyword_snippets(["kettle"], [text])
    assert snippet.startswith("a" * 20 + " kettle b") and snippet.endswith("b…")


# -- the estimator -------------------------------------------------------------------------------

@pytest.mark.parametrize("feature, message", [
    (-1, "feedback entry 0: feature index -1 is out of range"),
    (True, "feedback entry 0: a feature must be a name or a column index, got True"),
])
def test_a_feedback_feature_that_is_no_column_index_is_refused(feature, message):
    from elicit import ElicitRegressor

    a = small_arrays(seed=1, n=20, p=4)
    X, y = a.X, a.y
    with pytest.raises(ElicitError, match=message):
        ElicitRegressor(feedback=[(feature, 2, "similar")], tau2=0.3).fit(X, y)


def test_cv_tau2_on_fewer_samples_than_folds_uses_one_fold_per_sample():
    from elicit import ElicitRegressor

    a = small_arrays(seed=1, n=4, p=3)
    X, y = a.X, a.y
    est = ElicitRegressor(meta_features=np.eye(3), tau2="cv", tau2_grid=[0.1, 1.0]).fit(X, y)
    assert set(est.tau2_scores_) >= {0.1, 1.0} and np.isfinite(est.coef_).all()


def test_from_answers_keeps_relevant_and_irrelevant_given_as_parameters():
    from elicit import ElicitRegressor

    answers = [(0, None, "relevant"), (1, None, "irrelevant")]
    hyper = Hyper(model="relevance")
    est = ElicitRegressor.from_answers(np.eye(4), answers, hyper=hyper)
    assert (est.relevant, est.irrelevant) == ([0], [1])
    est = ElicitRegressor.from_answers(np.eye(4), answers, hyper=hyper, relevant=[2],
                                       irrelevant=[3])
    assert (est.relevant, est.irrelevant) == ([2], [3])


def test_sigma2_is_the_posterior_mean_of_the_noise_variance():
    from scipy import stats

    from elicit import ElicitRegressor

    a = small_arrays(seed=1, n=20, p=4)
    X, y = a.X, a.y
    est = ElicitRegressor(tau2=0.3).fit(X, 10.0 * y)
    post = est.posterior_
    mean = stats.invgamma(post.a_star, scale=post.b_star).mean()  # on the scaled target
    assert est.sigma2_ == pytest.approx(mean * est.y_scale_**2, rel=1e-9)


def test_standardize_false_centres_the_columns_without_scaling_them():
    from elicit import ElicitRegressor

    a = small_arrays(seed=1, n=20, p=4)
    X, y = a.X, a.y
    X = X * [1.0, 3.0, 0.2, 7.0]  # columns of other scales
    U = np.random.default_rng(2).normal(size=(4, 2))
    est = ElicitRegressor(U, tau2=0.3, standardize=False).fit(X, y)
    ref = ElicitRegressor(U, tau2=0.3, standardize=False, fit_intercept=False).fit(
        X - X.mean(axis=0), y - y.mean())
    np.testing.assert_allclose(est.coef_, ref.coef_, rtol=1e-9)
    np.testing.assert_array_equal(est.x_scale_, np.ones(4))


def test_to_estimator_of_an_unstandardised_session_keeps_its_preprocessing(tmp_path):
    """A clone refits as the session preprocesses (X not standardised here), and the
    parameters given to ``to_estimator`` stay set."""
    pytest.importorskip("sklearn")
    from sklearn.base import clone

    with create_session(tmp_path / "s.session", strategy="random") as s:
        s.answer(s.next_query(), "similar")
        twin = clone(s.to_estimator()).fit(pd.DataFrame(s.X, columns=NAMES), s.y)
        np.testing.assert_array_equal(twin.x_scale_, np.ones(len(NAMES)))
        assert s.to_estimator(fit_intercept=False).fit_intercept is False
