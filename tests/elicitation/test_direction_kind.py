"""The direction questions (elicit/elicitation/kinds/direction.py) and their model part
(elicit/model/direction.py): the prior mean delta s of beta against independent formulas,
the kind's screen and exact gain, the experts, an Elicitor, a session (answered, undone,
reopened) and a two-run sweep with every kind."""

from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import pytest
import scipy.stats
from conftest import SESSION_NAMES, make_session_data, small_arrays
from helpers import fd_grad, sql_rows
from scipy.optimize import minimize_scalar

from elicit.elicitation.answers import Answer, GroupOracle, SignOracle
from elicit.elicitation.elicitor import Elicitor
from elicit.elicitation.kinds import DIRECTION, get_kind, model_for, parse_questions
from elicit.elicitation.kinds.direction import DirectionScorer
from elicit.elicitation.questions import Query
from elicit.elicitation.scorer import UtilityScorer
from elicit.elicitation.settings import RoundSettings
from elicit.elicitation.utility import ScoringRound, kl_gauss
from elicit.engines.numpy_engine import NumpyEngine
from elicit.errors import ElicitError
from elicit.harness.problem import RunProblem
from elicit.harness.store import SweepStore
from elicit.harness.sweep import SweepConfig, load_part, sweep
from elicit.model.density import log_density
from elicit.model.kernel import kernel
from elicit.model.marginal import Marginal
from elicit.model.posterior import NIGPosterior
from elicit.model.spec import Hyper, ModelData
from elicit.model.theta import theta_of
from elicit.paper.lasso_expert import LassoExpert
from elicit.paper.synthetic import SyntheticMaker
from elicit.session.session import Session

# the sweeps here are read by their tables: figures drawn, not saved (conftest)
pytestmark = pytest.mark.usefixtures("one_blas_thread", "unsaved_figures")


def data_with(model: str = "direction", direction=None, relevance=None,
              n: int = 12) -> ModelData:
    a = small_arrays(n=n)
    p = a.X.shape[1]
    s = np.array([(1, -1, 0)[j % 3] for j in range(p)]) if direction is None else direction
    return ModelData(a.X, a.y, a.U, Hyper(tau2=0.5, threshold_mean=2.0, model=model),
                     direction=s,
                     relevance=relevance)


def test_the_kind_is_registered_and_takes_the_direction_models():
    assert parse_questions("all") == ("pairs", "relevance", "direction")
    assert parse_questions("both") == ("pairs", "relevance")
    assert model_for("pairs,direction") == "direction" and model_for("direction") == "direction"
    assert model_for("all") == "relevance-direction" and model_for("both") == "relevance"
    assert model_for("pairs") is None
    with pytest.raises(ElicitError, match=r"^questions='direction' asks direction questions, "
                                          r"which need a model with a direction mean: use "
                                          r"model='direction' \(the model is 'relevance'\)$"):
        a = small_arrays()
        Elicitor(a.X, a.y, a.U, Hyper(model="relevance"), questions="direction")
    # the model that takes every kind asked, not one that another kind refuses in turn
    with pytest.raises(ElicitError, match=r"^questions='pairs,direction' asks direction "
                                          r"questions, .*: use model='direction' "):
        Elicitor(a.X, a.y, a.U, Hyper(model="known-coupling"), questions="pairs,direction")
    # the direction kind refusing beside feature questions: 'direction' (the kind's own model)
    # would drop the relevance classes, which the feature questions then refuse
    with pytest.raises(ElicitError, match=r"^questions='relevance,direction' asks direction "
                                          r"questions, .*: use model='relevance-direction' "
                                          r"\(the model is 'relevance'\)$"):
        Elicitor(a.X, a.y, a.U, Hyper(model="relevance"), questions="relevance,direction")


def test_the_experts_answer_from_the_sign_of_their_weights():
    beta = np.array([0.5, -2.0, 0.0])
    for expert in (SignOracle(beta), LassoExpert.from_coef(beta),
                   GroupOracle([0, 1, -1], beta=beta)):
        got = [DIRECTION.ask(expert, Query(k, None, kind="direction")).value for k in range(3)]
        assert got == ["raises", "lowers", "dont_know"]
    with pytest.raises(ElicitError, match=r"^this oracle knows no weights"):
        DIRECTION.ask(GroupOracle([0, 1]), Query(0, None, kind="direction"))
    # on synthetic problems the oracle reads beta
    pr = SyntheticMaker(irrelevant=3)(1, 0)
    beta = pr.extra["beta"]
    assert [pr.expert.weight_sign(k) for k in range(len(beta))] == np.sign(beta).tolist()


@pytest.mark.parametrize("model", ["direction", "relevance-direction"])
def test_the_posterior_with_the_prior_mean_is_the_conjugate_formula(model):
    """mu* and Sigma* against the p x p conjugate update with the prior mean delta s:
    Sigma* = (P^-1 + X'X)^-1, mu* = Sigma* (P^-1 delta s + X'y), P = tau2 diag(h) K diag(h)."""
    rel = np.array([1, 0, -1, -1] * 3)[: small_arrays().X.shape[1]]
    data = data_with(model, relevance=rel)
    # delta s, without the sign of a feature the relevance model's class calls irrelevant
    m0 = 0.7 * np.where((rel == 0) & (model == "relevance-direction"), 0, data.direction)
    rng = np.random.default_rng(4)
    gamma, delta = rng.uniform(0.3, 1.5, data.d), 0.7
    mg = Marginal.from_data(data, gamma, 0.5, zeta=-1.0 if "zeta" in data.layout else None,
                            delta=delta)
    post = NIGPosterior(mg)
    h = np.ones(data.p) if mg.h is None else mg.h
    P = 0.5 * h[:, None] * kernel(data.U, gamma) * h[None, :]
    Pinv = np.linalg.inv(P)
    Sigma = np.linalg.inv(Pinv + data.X.T @ data.X)
    mu = Sigma @ (Pinv @ m0 + data.X.T @ data.y)
    np.testing.assert_allclose(post.mu, mu, rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(post.Sigma, Sigma, rtol=1e-7, atol=1e-10)
    # b* = b + (y'y + m0' P^-1 m0 - mu*' Sigma*^-1 mu*) / 2
    b = data.hyper.b_sigma + 0.5 * (data.y @ data.y + m0 @ Pinv @ m0
                                    - mu @ np.linalg.solve(Sigma, mu))
    assert mg.b_star == pytest.approx(b, rel=1e-8)


def test_a_feature_called_irrelevant_has_no_prior_mean():
    """An irrelevant class pulls a weight to 0 (docs/session.md), also where a direction answer
    gave it a sign: the mean delta s_k pinned it near +-delta instead, within a tenth of the
    prior's sd, so that "irrelevant" after "raises" made the weight larger."""
    rel = np.array([1, 0, -1, -1] * 3)[: small_arrays().X.shape[1]]
    signed = data_with("relevance-direction", relevance=rel)  # feature 1: lowers, irrelevant
    unsigned = data_with("relevance-direction", direction=np.where(rel == 0, 0, signed.direction),
                         relevance=rel)
    gamma = np.random.default_rng(4).uniform(0.3, 1.5, signed.d)
    mu = [NIGPosterior(Marginal.from_data(d, gamma, 0.5, zeta=-1.0, delta=0.7)).mu
          for d in (signed, unsigned)]
    np.testing.assert_allclose(mu[0], mu[1], rtol=1e-10, atol=1e-12)


def round_of(data: ModelData) -> tuple[ScoringRound, DirectionScorer]:
    eng = NumpyEngine("fixed")
    rnd = ScoringRound(UtilityScorer(data, eng.fit(data), eng))
    return rnd, DirectionScorer(rnd)


def test_the_answer_probability_is_the_posteriors_sign_probability():
    data = data_with()
    rnd, sc = round_of(data)
    post = NIGPosterior(rnd.scorer.marginal)
    # beta_k's marginal under the NIG posterior is Student-t with 2 a* degrees of freedom and
    # scale sqrt(b*/a* Sigma_kk) (not the normal of the same variance: a* is small at n = 12)
    t = scipy.stats.t(df=2 * post.a_star, loc=post.mu,
                      scale=np.sqrt(post.b_star / post.a_star * np.diag(post.Sigma)))
    np.testing.assert_allclose(sc.p_raises, t.sf(0.0), rtol=1e-9)


@pytest.mark.parametrize("n", [12, 8])       # the p x p form, and the n x n form
def test_the_mean_jacobians_delta_column_matches_finite_differences(n):
    """The fast screen's d mean / d theta, its delta column included (the prior mean delta s
    moves the predictive through the residual y - delta X s), against central differences."""
    data = data_with(n=n)
    theta = theta_of(NumpyEngine("fixed").fit(data), data)
    theta[data.layout.index("delta")] = 0.4    # a delta away from 0, where its column matters
    idx = np.asarray(data.layout.marginal_index)
    J = Marginal.at(theta, data).mean_jacobian(False)
    assert J.shape == (data.n, len(idx)) and np.abs(J[:, -1]).max() > 0

    def mean(t):
        full = theta.copy()
        full[idx] = t
        return Marginal.at(full, data).predictive()[0]

    np.testing.assert_allclose(J, fd_grad(mean, theta[idx], rel=1e-6), rtol=1e-5,
                               atol=1e-6 * np.abs(J).max())


@pytest.mark.parametrize("n", [12, 8])       # the p x p form, and the n x n form
def test_the_screen_refits_delta_alone_and_the_exact_gain_refits_everything(n):
    s = np.zeros(small_arrays().X.shape[1])
    s[0] = 1
    data = data_with(direction=s, n=n)
    assert (Marginal.from_data(data, np.ones(data.d), 0.5, delta=0.1).basis is None) == (n < 10)
    rnd, sc = round_of(data)
    fit = rnd.scorer.fit
    m0, v0 = rnd.scorer.m0, rnd.scorer.v0
    for k in (1, 4):
        screen = exact = 0.0
        for a, q in ((1.0, sc.p_raises[k]), (-1.0, 1.0 - sc.p_raises[k])):
            s2 = s.copy()
            s2[k] = a
            d2 = data.with_direction(s2)
            # the screen: delta maximising the log density with gamma (and tau2) held
            theta = theta_of(fit, d2)
            i = d2.layout.index("delta")

            def neg(x, theta=theta, d2=d2, i=i):
                t = theta.copy()
                t[i] = x
                return -log_density(t, d2)[0]

            best = minimize_scalar(neg, bounds=(0.0, 10.0), method="bounded",
                                   options={"xatol": 1e-10}).x
            mg = Marginal.from_data(d2, fit.gamma, fit.tau2, delta=best)
            screen += q * kl_gauss(*mg.predictive(), m0, v0)
            # exact: a cold refit of everything
            refit = NumpyEngine("fixed").fit(d2)
            exact += q * kl_gauss(*Marginal.of_fit(d2, refit).predictive(), m0, v0)
        assert sc.screened[k] == pytest.approx(screen, rel=1e-5)
        assert sc.exact_one(k) == pytest.approx(exact, rel=1e-4)


def test_an_elicitor_asks_direction_beside_the_others_and_undo_refits_the_same():
    a = small_arrays()
    beta = np.where(a.groups == 0, 1.0, -1.0)
    beta[5] = 0.0
    expert = SignOracle(beta)
    el = Elicitor(a.X, a.y, a.U, Hyper(tau2=0.5, model=model_for("all")), questions="all",
                  engine="numpy", refine=2)
    rng = np.random.default_rng(0)
    asked = []
    for _ in range(8):
        q = el.next_query("sequential", rng)
        ans = get_kind(q.kind).ask(expert, q)
        el.answer(q.i, q.j, ans, kind=q.kind)
        asked.append((q.kind, q.i, q.j, ans))
    kinds = {k for k, *_ in asked}
    assert "direction" in kinds, asked
    for kind, i, _, ans in asked:
        if kind == "direction" and ans.outcome is not None:
            assert el.data.direction[i] == np.sign(beta[i])
    fit = el.fit
    assert fit.delta is not None and fit.delta > 0
    # the same answers entered at once (resume, undo) give the same MAP
    el.set_answers([(k, i, j, ans) for k, i, j, ans in asked])
    np.testing.assert_allclose(theta_of(el.fit, el.data), theta_of(fit, el.data), rtol=1e-5,
                               atol=1e-7)


def test_a_session_asks_stores_undoes_and_reopens_direction_questions(tmp_path):
    path = tmp_path / "d.session"
    X, y, U = make_session_data()
    with Session.create(X, y, U, SESSION_NAMES, path=path, questions="pairs,direction",
                        engine="numpy", refine=1, strategy="random") as s:
        assert s.questions == ("pairs", "direction")
        q = next(q for q in iter(s.next_query, None) if q.kind == "direction" or
                 s.answer(q, "dont_know") is None)
        assert q.j is None
        # printed as what it asks (not a feature question's "does 'x' matter")
        assert f"{q.names[0]!r} is present, does the outcome go up or down" in str(q)
        rec = s.answer(q, "p")
        assert (rec.kind, rec.answer.value) == ("direction", "raises")
        # the word is stored, not the key (so a key can change): "^", the key before, still
        # reads as raises
        assert sql_rows(path, "SELECT answer FROM answers WHERE kind = 'direction'") == [
            ("raises",)]
        assert Answer.parse("^", DIRECTION) == "raises"
        assert s.elicitor.data.direction[q.i] == 1
        undone = s.undo()
        assert (undone.kind, undone.i) == ("direction", q.i)
        assert s.elicitor.data.direction[q.i] == 0
        again = s.next_query()
        assert (again.kind, again.i) == ("direction", q.i)
        s.answer(again, "v")
        answers = s.active_answers()
    with Session.open(path) as s2:
        assert s2.active_answers() == answers
        assert s2.elicitor.data.direction[q.i] == -1
        assert s2.elicitor.data.hyper.model == "direction"


def test_a_two_run_sweep_asks_every_kind(tmp_path):
    # 3 rounds: run 1's sequential strategy asks its two direction questions by then
    cfg = SweepConfig("all", runs=2, rounds=3, strategies=("random", "sequential"),
                      settings=RoundSettings(engine="numpy", questions="all", refine=1))
    assert cfg.settings.model == "relevance-direction"
    sweep(SyntheticMaker(irrelevant=4), cfg, tmp_path / "o", progress=False)
    store = SweepStore.find(tmp_path / "o")
    config = json.loads((tmp_path / "o" / "config.json").read_text())
    assert config["questions"] == "pairs,relevance,direction"
    kinds = set()
    for run in range(2):
        beta = SyntheticMaker(irrelevant=4)(cfg.settings.seed, run).extra["beta"]
        for strategy in cfg.strategies:
            part = load_part(store, cfg, strategy, run)
            for (i, _, a), kind in zip(part["asked"], part["kinds"]):
                if kind == "direction":
                    assert a == ("dont_know" if beta[i] == 0 else
                                 "raises" if beta[i] > 0 else "lowers")
            kinds |= set(part["kinds"])
    assert "direction" in kinds


class SignMaker:
    """A problem whose oracle's weights are -1 or 0: every direction answer is lowers or
    don't know."""

    def __call__(self, seed: int, run: int) -> RunProblem:
        a = small_arrays(seed=run)
        beta = np.where(np.arange(a.X.shape[1]) % 2 == 0, -1.0, 0.0)
        return RunProblem(a.X, a.y, a.U, a.X, a.y, SignOracle(beta),
                          Hyper(variant="fixed", tau2=0.5))


def test_a_sweep_answers_through_the_kind_every_sign_and_dont_know(tmp_path):
    p = small_arrays().X.shape[1]
    cfg = SweepConfig("d", runs=1, rounds=p, strategies=("random",),
                      settings=RoundSettings(engine="numpy", questions="direction", refine=1))
    sweep(SignMaker(), cfg, tmp_path / "o", progress=False)
    part = load_part(SweepStore.find(tmp_path / "o"), cfg, "random", 0)
    got = {i: a for i, _, a in part["asked"]}
    assert got == {k: "lowers" if k % 2 == 0 else "dont_know" for k in range(p)}


def test_the_direction_model_with_no_answers_fits_delta_to_zero():
    # a model without answers has delta's prior alone: its MAP is at the bound 0, and the
    # fit equals the paper model's
    data = data_with(direction=np.zeros(small_arrays().X.shape[1]))
    fit = NumpyEngine("fixed").fit(data)
    paper = NumpyEngine("fixed").fit(ModelData(data.X, data.y, data.U,
                                               replace(data.hyper, model="paper")))
    assert fit.delta == pytest.approx(0.0, abs=1e-8)
    np.testing.assert_allclose(fit.gamma, paper.gamma, rtol=1e-5, atol=1e-7)


def test_several_experts_set_a_sign_where_they_agree():
    """Direction answers from several experts (a "don't know" never reaches the data) enter
    as the sign they agree on and as 0 (no prior mean) where they disagree; one expert's
    answer is entered as is."""
    from conftest import make_small_data

    from elicit.elicitation.kinds.direction import LOWERS, RAISES
    from elicit.model.spec import Hyper, ModelData

    base = make_small_data("fixed", p=5)
    data = ModelData(base.X, base.y, base.U, Hyper(**{**base.hyper.__dict__,
                                                      "model": "direction"}),
                     base.pairs, base.f)
    rows = [(0, -1), (0, -1), (1, -1), (1, -1), (2, -1)]
    answers = [RAISES, RAISES, RAISES, LOWERS, LOWERS]
    got = DIRECTION.enter(data, rows, answers)
    assert got.direction.tolist() == [1, 0, -1, 0, 0]
    assert DIRECTION.add(data, (4, -1), LOWERS).direction.tolist() == [0, 0, 0, 0, -1]
