"""``Session.to_estimator()``: a session's model as a scikit-learn regressor."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from elicit.session.session import Session

pytest.importorskip("sklearn")


def _session(tmp_path, standardize: bool):
    rng = np.random.default_rng(3)
    n, p = 40, 8
    X = pd.DataFrame(rng.normal(5, 3, size=(n, p)), columns=[f"f{i}" for i in range(p)])
    y = pd.Series(100 + X.to_numpy() @ rng.normal(size=p) + rng.normal(size=n), name="out")
    s = Session.create(X, y, path=tmp_path / "s.session", engine="numpy",
                       standardize=standardize)
    for a in ("similar", "dissimilar", "similar", "dont_know"):
        s.answer(s.next_query(), a)
    return s, X, rng


@pytest.mark.parametrize("standardize", [True, False])
def test_the_estimator_is_the_sessions_model(tmp_path, standardize):
    s, X, rng = _session(tmp_path, standardize)
    with s:
        est = s.to_estimator()
        np.testing.assert_allclose(est.gamma_, s.fit.gamma, rtol=1e-6, atol=1e-8)
        assert est.tau2_ == s.fit.tau2
        # every similar/dissimilar answer of the session is the estimator's feedback
        assert len(est.feedback_) == 4 and len(s.active_answers()) == 4
        X_new = pd.DataFrame(rng.normal(5, 3, size=(6, X.shape[1])), columns=X.columns)
        np.testing.assert_allclose(est.predict(X_new), s.predict(X_new), rtol=1e-9, atol=1e-9)
        if standardize:  # the level of y is in the predictions: centred X predicts its mean
            assert float(np.mean(est.predict(X))) == pytest.approx(float(np.mean(s.y)))
        mean, sd = est.predict(X_new, return_std=True)
        assert np.all(sd > 0) and np.allclose(mean, est.predict(X_new))


def test_a_known_coupling_session_gives_its_own_model(tmp_path):
    """The estimator of a known-coupling session has the session's coupled set J (the
    features its questions are about: a constant column is left out) and its MAP."""
    from elicit.model.spec import Hyper

    rng = np.random.default_rng(4)
    n, p = 40, 7
    X = pd.DataFrame(rng.normal(5, 3, size=(n, p)), columns=[f"f{i}" for i in range(p)])
    X["f6"] = 2.0                                   # constant: not asked about, not in J
    y = pd.Series(X.to_numpy() @ rng.normal(size=p) + rng.normal(size=n), name="out")
    s = Session.create(X, y, path=tmp_path / "kc.session", engine="numpy",
                       hyper=Hyper(model="known-coupling"))
    with s:
        for a in ("similar", "dissimilar", "similar"):
            s.answer(s.next_query(), a)
        est = s.to_estimator()
        assert est.model == "known-coupling"
        assert list(X.columns[est.coupled_]) == [f"f{i}" for i in range(6)]
        np.testing.assert_allclose(est.gamma_, s.fit.gamma, rtol=1e-6, atol=1e-8)
        K = est.K_
        assert np.all(K[6, :6] == 0) and K[6, 6] == 1.0
        X_new = pd.DataFrame(rng.normal(5, 3, size=(5, p)), columns=X.columns)
        np.testing.assert_allclose(est.predict(X_new), s.predict(X_new), rtol=1e-8, atol=1e-8)


def test_a_clone_refitted_on_the_sessions_data_is_the_sessions_model(tmp_path):
    """`clone` (and so `cross_val_score`) kept the parameters that fit the session's
    preprocessed data (no intercept, no standardisation): refitted on the data in its own
    units, it predicted 65.1, 62.4, 84.8 where the session predicts 71.4, 70.4, 70.0."""
    from sklearn.base import clone

    s, X, rng = _session(tmp_path, standardize=True)
    with s:
        twin = clone(s.to_estimator()).fit(X, s.y)
        X_new = pd.DataFrame(rng.normal(5, 3, size=(6, X.shape[1])), columns=X.columns)
        np.testing.assert_allclose(twin.predict(X_new), s.predict(X_new), rtol=1e-6)
