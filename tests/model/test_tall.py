"""The p x p form of the marginal for data with more rows than features (:mod:`elicit.model.tall`).

Checked three ways: against the n x n form at the same point (``Marginal(tall=False)``, an
independent formula: nothing of the QR enters it), the tall form's gradient and Hessian
against finite differences of its own value and gradient, and the batched density and a
whole session on the two forms against each other.
"""

from __future__ import annotations

import numpy as np
import pytest
from conftest import make_small_data
from helpers import (
    assert_derivatives_match_finite_differences,
    fd_grad,
    some_relevance,
    theta_point,
)

import elicit.model.form as form_mod
import elicit.model.marginal_cache as marginal_cache_mod
from elicit.elicitation.features import FeatureScorer
from elicit.model.batch import BatchDensity
from elicit.model.density import log_density
from elicit.model.form import basis_of, data_structure
from elicit.model.kernel import pair_weights
from elicit.model.marginal import Marginal
from elicit.model.posterior import NIGPosterior
from elicit.model.spec import Hyper, ModelData, all_pairs, model_bytes, row_numbers
from elicit.model.theta import data_mean, data_scales, params_of
from elicit.model.variants import RELEVANCE_DIRECTION_MODEL, RELEVANCE_MODEL


def _rel(a, b) -> float:
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    return float(np.max(np.abs(a - b)) / max(np.max(np.abs(b)), 1e-300))


def _tall_data(variant: str = "learned", n: int = 60, p: int = 8, d: int = 3,
               collinear: bool = False, relevance: bool = False,
               direction: bool = False) -> ModelData:
    data = make_small_data(variant, n=n, p=p, d=d)
    X = data.X.copy()
    if collinear:
        X[:, 1] = 2.0 * X[:, 0]          # R singular: S_p = I + tau2 R K R' is not
    model = RELEVANCE_DIRECTION_MODEL if direction else RELEVANCE_MODEL if relevance else None
    hyper = data.hyper if model is None else Hyper(**{**data.hyper.__dict__, "model": model})
    signs = np.resize([1, -1, 0], p) if direction else None
    return ModelData(X, data.y, data.U, hyper, data.pairs, data.f,
                     relevance=some_relevance(p) if relevance or direction else None,
                     direction=signs)


def _pair(data: ModelData, theta: np.ndarray, coupled=None) -> tuple[Marginal, Marginal]:
    pt = params_of(theta, data)
    scales = data_scales(data, pt.zeta) if pt.zeta is not None else None
    h = data.hyper
    mean = data_mean(data, pt.delta)
    return tuple(Marginal(data.X, data.y, data.U, pt.gamma, pt.tau2, h.a_sigma, h.b_sigma,
                          coupled=coupled, scales=scales, tall=tall, mean=mean)
                 for tall in (True, False))  # type: ignore[return-value]


CASES = {
    "fixed": dict(variant="fixed"),
    "learned": dict(variant="learned"),
    "collinear": dict(variant="learned", collinear=True),
    "barely_tall": dict(variant="learned", n=9, p=8),
    "relevance": dict(variant="learned", relevance=True),
    # the direction answers' prior mean delta s: its residual y - delta X s on both forms
    "direction": dict(variant="learned", direction=True),
}


@pytest.mark.parametrize("case", list(CASES))
def test_p_form_equals_n_form(case):
    data = _tall_data(**CASES[case])
    theta = theta_point(data)
    theta[0] = 0.0                               # a gamma on its bound: K may be singular
    a, b = _pair(data, theta)
    assert a.basis is not None and b.basis is None
    learned = data.hyper.variant == "learned"
    # measured: at most 4e-14 relative (the Hessian's smallest entries aside)
    tol = 1e-10
    assert a.value == pytest.approx(b.value, rel=1e-13)
    assert _rel(a.grad_gamma(), b.grad_gamma()) < tol
    assert a.grad_tau2() == pytest.approx(b.grad_tau2(), rel=tol)
    if a.scales is not None:
        assert a.grad_zeta() == pytest.approx(b.grad_zeta(), rel=tol)
    assert _rel(a.hessian(learned), b.hessian(learned)) < tol
    for x, y in zip(a.predictive(), b.predictive()):
        assert x.shape == (data.n,) and _rel(x, y) < tol
    assert _rel(a.mean_jacobian(learned), b.mean_jacobian(learned)) < tol
    feats = np.arange(data.p)
    for x, y in zip(a.scale_change(feats, 0.3), b.scale_change(feats, 0.3)):
        assert _rel(x, y) < 1e-9
    for x, y in zip(FeatureScorer._jacobians(a), FeatureScorer._jacobians(b)):
        assert _rel(x, y) < tol
    pa, pb = NIGPosterior(a), NIGPosterior(b)
    assert _rel(pa.mu, pb.mu) < tol and _rel(pa.Sigma, pb.Sigma) < tol
    X_new = np.random.default_rng(3).normal(size=(5, data.p))
    ta, tb = pa.predict(X_new), pb.predict(X_new)
    assert _rel(ta.mean, tb.mean) < tol and _rel(ta.scale2, tb.scale2) < tol


def test_p_form_with_a_coupled_set_equals_n_form():
    data = _tall_data()
    mask = np.zeros(data.p, dtype=bool)
    mask[:4] = True
    a, b = _pair(data, theta_point(data), coupled=mask)
    assert a.value == pytest.approx(b.value, rel=1e-13)
    assert _rel(a.hessian(True), b.hessian(True)) < 1e-10


@pytest.mark.parametrize("case", ["fixed", "learned", "collinear", "relevance", "direction"])
def test_derivatives_of_the_p_form_match_finite_differences(case):
    data = _tall_data(**CASES[case], n=200)
    assert basis_of(data.X, data_structure(data)) is not None   # log_density: the p x p form
    assert Marginal.at(theta_point(data), data).basis is not None
    assert_derivatives_match_finite_differences(data)


def test_mean_jacobian_of_the_p_form_matches_finite_differences():
    data = _tall_data(n=200)
    h = data.hyper
    gamma0, tau20 = np.array([0.5, 1.3, 0.2]), 0.7
    mg = Marginal(data.X, data.y, data.U, gamma0, tau20, h.a_sigma, h.b_sigma)
    assert mg.basis is not None
    Jm = mg.mean_jacobian(True)

    def mean(t):
        return Marginal(data.X, data.y, data.U, t[:3], t[3], h.a_sigma,
                        h.b_sigma).predictive()[0]

    J_fd = fd_grad(mean, np.append(gamma0, tau20), rel=1e-6)
    np.testing.assert_allclose(Jm, J_fd, rtol=1e-6, atol=1e-7 * np.abs(Jm).max())


@pytest.mark.parametrize("case", ["learned", "relevance", "direction"])
def test_batched_density_on_the_p_form_equals_the_n_form_marginal(case):
    data = _tall_data(**CASES[case])
    pairs = all_pairs(data.p)[:3]
    bd = BatchDensity(data, pair_weights(data.U, pairs), 1)
    assert bd.basis is not None
    thetas = np.stack([theta_point(data, seed=s) for s in range(3)])
    value, grad, (mean, var) = bd.at(thetas, np.arange(3))
    assert mean.shape == var.shape == (3, data.n)
    for c, th in enumerate(thetas):
        _, b = _pair(data, th)
        np.testing.assert_allclose(mean[c], b.predictive()[0], rtol=0,
                                   atol=1e-11 * np.abs(b.predictive()[0]).max())
        np.testing.assert_allclose(var[c], b.predictive()[1], rtol=1e-11)
    # the batch's value is the scalar density's with the new answer (the n x n form's value
    # enters through the y-part: compare the y-part by removing the other terms)
    with_new = ModelData(data.X, data.y, data.U, data.hyper,
                         np.vstack([data.pairs, pairs[:1]]), np.append(data.f, 1),
                         relevance=data.relevance, direction=data.direction)
    ref, ref_g = log_density(thetas[0], with_new, marginal=_pair(with_new, thetas[0])[1])
    assert value[0] == pytest.approx(ref, rel=1e-12)
    np.testing.assert_allclose(grad[0], ref_g, rtol=1e-9, atol=1e-9 * np.abs(ref_g).max())


def test_a_tall_session_asks_and_learns_as_the_n_form_does(monkeypatch, tmp_path):
    """End to end: a 40 x 6 table's session (creation, five questions and answers) with
    the p x p form and with the n x n form forced (the chooser says never tall)."""
    from elicit.session.session import Session

    rng = np.random.default_rng(0)
    n, p = 40, 6  # tall (n > p) is the property; 300 rows cost 0.5 s more
    Z = rng.standard_normal((n, 2))
    X = Z @ rng.standard_normal((2, p)) + 0.7 * rng.standard_normal((n, p))
    sign = np.array([1.0, 1.0, -1.0, -1.0, 0.0, 0.0])
    y = X @ sign + 0.5 * rng.standard_normal(n)

    def run(name: str):
        marginal_cache_mod.marginal_cache.clear()
        s = Session.create(X, y, path=tmp_path / f"{name}.session")
        out = []
        for _ in range(5):
            q = s.next_query()
            out.append((q.i, q.j, q.expected_gain))
            s.answer(q, "similar" if sign[q.i] == sign[q.j] else "dissimilar")
        return out, s.posterior().mu

    tall, mu_tall = run("tall")
    # the form's chooser and the cache's estimate of a marginal's size
    monkeypatch.setattr(form_mod, "is_tall", lambda n, p: False)
    monkeypatch.setattr(marginal_cache_mod, "is_tall", lambda n, p: False)
    square, mu_square = run("square")
    assert [t[:2] for t in tall] == [s[:2] for s in square]
    np.testing.assert_allclose([t[2] for t in tall], [s[2] for s in square], rtol=1e-6)
    np.testing.assert_allclose(mu_tall, mu_square, rtol=1e-6, atol=1e-9)


def test_the_p_form_needs_memory_in_proportion_to_the_rows():
    """Past p rows the model's memory grows by row_numbers a row, not with n^2."""
    p, d = 30, 10
    n = 10_000
    step = model_bytes(n + 1000, p, d) - model_bytes(n, p, d)
    assert step == 8 * 1000 * row_numbers(p, d)
    # below p rows the n x n form: n^2 terms
    assert model_bytes(20, p, d) - 2 * model_bytes(10, p, d) + model_bytes(0, p, d) > 0


def test_the_row_limit_names_the_rows_that_fit(monkeypatch):
    import elicit.model.spec as spec_mod
    from elicit.errors import ElicitError

    limit = 2.0**30
    monkeypatch.setattr(spec_mod, "memory_limit", lambda: limit)
    p, d = 30, 10
    with pytest.raises(ElicitError, match="numbers per row") as err:
        spec_mod.check_size(10**8, p, d)
    rows = int(str(err.value).split("use at most ")[1].split(" rows")[0].replace(",", ""))
    assert model_bytes(rows, p, d) <= limit < model_bytes(rows + 1, p, d)
    assert rows > 100_000                   # the n x n form's limit at 1 GiB was ~1,800


def test_the_feature_limit_names_the_features_that_fit(monkeypatch):
    """With fewer rows than features the message said "use fewer features or fewer
    meta-features" without saying how many fit."""
    import elicit.model.spec as spec_mod
    from elicit.errors import ElicitError

    limit = 2.0**30
    monkeypatch.setattr(spec_mod, "memory_limit", lambda: limit)
    n, d = 50, 10
    with pytest.raises(ElicitError, match="p x p arrays") as err:
        spec_mod.check_size(n, 20_000, d)
    feats = int(str(err.value).split("use at most ")[1].split(" features")[0].replace(",", ""))
    assert model_bytes(n, feats, d) <= limit < model_bytes(n, feats + 1, d)
    with pytest.raises(ElicitError, match=r": use fewer meta-features$"):
        spec_mod.check_size(n, 20_000, 10**6)  # two features do not fit either


def test_features_known_before_x_are_refused_only_when_no_form_of_x_fits(monkeypatch):
    """A corpus's keywords are checked before X is built (check_size with ``fewer``): a size
    that sparse-plus-offset inputs touching no column fit is let through (the check on the
    built X decides; the early one must not refuse what ran before), and the advice keeps
    the features the dense form fits, a bound on every form there."""
    import elicit.model.spec as spec_mod
    from elicit.errors import ElicitError

    n, d, p = 100, 10, 20_000
    least, dense = model_bytes(n, p, d, 0), model_bytes(n, p, d)
    assert least < dense
    monkeypatch.setattr(spec_mod, "memory_limit", lambda: (least + dense) / 2)
    spec_mod.check_size(n, p, d, fewer=str)     # the structured form may fit: not refused
    limit = least / 2
    monkeypatch.setattr(spec_mod, "memory_limit", lambda: limit)
    with pytest.raises(ElicitError, match=r"^20,000 words are too many .*: use (\d+)$") as err:
        spec_mod.check_size(n, p, d, fewer=str, noun="words")
    q = int(str(err.value).rsplit(" ", 1)[1])
    assert model_bytes(n, q, d) <= limit < model_bytes(n, q + 1, d)


def test_a_corpus_ppmi_meta_features_are_in_the_early_check(monkeypatch):
    """--meta-features ppmi builds about six p x p arrays (the co-occurrences, their PMI, an
    eigendecomposition) before the model: between the sizes the structured form fits and the
    dense bound, a sweep passed the early check and then ran out of memory in the embedding.
    They count now; lsa holds no p x p array, so its check is as before."""
    from types import SimpleNamespace

    import elicit.data.sources as sources_mod
    import elicit.model.spec as spec_mod
    from elicit.data.sources import DataSource
    from elicit.errors import ElicitError

    n, d, p = 100, 10, 20_000
    limit = 2 * model_bytes(n, p, d, 0)  # the structured form fits, six p x p arrays do not
    assert limit < 6 * 8 * p * p
    monkeypatch.setattr(spec_mod, "memory_limit", lambda: limit)
    corpus = SimpleNamespace(p=p, min_df_keeping=lambda q: f"at most {q} keywords")
    monkeypatch.setattr(sources_mod, "_load", lambda src: corpus)
    src = DataSource("shop", corpus="shop.jsonl")
    src.check_keywords(spec_mod.check_size, "lsa", d)  # an embedding without p x p arrays
    with pytest.raises(ElicitError, match=r"^20,000 keywords are too many for this machine "
                                          r"\(.*\): use at most (\d+) keywords$") as err:
        src.check_keywords(spec_mod.check_size, "ppmi", d)
    # the advice keeps what the dense form fits, which the six arrays fit too
    q = int(str(err.value).rsplit(" ", 2)[1])
    assert model_bytes(n, q, d) <= limit < model_bytes(n, q + 1, d) and 6 * 8 * q * q <= limit


def test_a_corpus_run_the_model_would_refuse_gets_the_keywords_advice(monkeypatch):
    """The early check lets a corpus's keywords through when inputs touching no column fit;
    the run's built inputs, touching many, were then refused by the model's check with "use
    at most N rows (a random sample of them)" or "N features", which a corpus's 100 training
    reviews and its keywords rule cannot follow. Given the run, the check refuses just what the
    model's would, with the keywords' advice: the most keywords any run fits (the dense bound,
    as the early check's)."""
    from types import SimpleNamespace

    import elicit.data.sources as sources_mod
    import elicit.model.spec as spec_mod
    from elicit.data.sources import DataSource
    from elicit.errors import ElicitError
    from elicit.model.structure import structure_of

    n, d, p, touched = 100, 10, 2000, 1500
    X = np.full((n, p), -0.25)  # standardised counts: a word's column is its offset but where used
    X[np.arange(touched) % n, np.arange(touched)] = 4.0
    assert len(structure_of(X, d).cols) == touched
    limit = (model_bytes(n, p, d, 0) + model_bytes(n, p, d, touched)) / 2
    monkeypatch.setattr(spec_mod, "memory_limit", lambda: limit)
    with pytest.raises(ElicitError, match=r"use at most [\d,]+ (features|rows)"):
        spec_mod.check_size(n, p, d, X)  # the model's own check, as validate_regression calls it
    corpus = SimpleNamespace(p=p, min_df_keeping=lambda q: f"at most {q} keywords")
    monkeypatch.setattr(sources_mod, "_load", lambda src: corpus)
    src = DataSource("shop", corpus="shop.jsonl")
    src.check_keywords(spec_mod.check_size, "lsa", d)  # the early check lets it through
    run = SimpleNamespace(X_train=X, U=np.zeros((p, d)))
    with pytest.raises(ElicitError, match=r"^2,000 keywords are too many for this machine "
                                          r"\(.*\): use at most (\d+) keywords$") as err:
        src.check_keywords(spec_mod.check_size, "lsa", d, run)
    q = int(str(err.value).rsplit(" ", 2)[1])
    assert model_bytes(n, q, d) <= limit < model_bytes(n, q + 1, d)
    X[:, 50:] = -0.25  # few columns touched: what the model fits is let through
    src.check_keywords(spec_mod.check_size, "lsa", d, run)
