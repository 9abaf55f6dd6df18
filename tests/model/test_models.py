"""The named model variants (elicit.model.variants): registry, numpy twins, Stan programs.

The PyStan comparison of each new model's MAP with its numpy twin's is marked slow like the
tests of test_stan_engines.py (which compares the log densities of every named model);
everything else runs in the fast suite.
"""

from __future__ import annotations

import numpy as np
import pytest
from conftest import make_small_data, needs_stanc
from helpers import (
    assert_derivatives_match_finite_differences,
    dense_log_density,
    make_data,
    own_program,
    rel_diff,
    some_direction,
    some_relevance,
    theta_point,
)
from scipy import special, stats

from elicit.elicitation.elicitor import Elicitor
from elicit.engines.base import model_stan_file, shipped_stan_file
from elicit.engines.contract import check_stan_contract
from elicit.engines.numpy_engine import NumpyEngine
from elicit.errors import ElicitError
from elicit.model.batch import BatchDensity
from elicit.model.covariance import IRRELEVANT_SCALE, RELEVANCE
from elicit.model.density import hessian_base, log_density
from elicit.model.kernel import kernel, pair_weights
from elicit.model.priors import ZETA_PRIOR, ThresholdPrior
from elicit.model.spec import Hyper, ModelData, all_pairs, auto_threshold_mean
from elicit.model.theta import join_theta
from elicit.model.variants import (
    MODELS,
    PAPER,
    RELEVANCE_MODEL,
    SHIPPED_PROGRAM,
    TIED_THRESHOLD_SD,
    ModelVariant,
    get_model,
    register_model,
    unregister_model,
)
from elicit.prior.setup import coupled_features

NEW_MODELS = [m for m in MODELS if m != PAPER]
#: the models with another threshold prior or coupled set than the paper's (the knobs)
KNOB_MODELS = [m for m in NEW_MODELS if MODELS[m].threshold_sd != 0.5
               or MODELS[m].known_coupling]
VARIANTS = ("fixed", "learned")
#: a model registered by the tests themselves (a threshold half-way between the paper's and
#: the tied one, stated by the shipped program): "every model" is the shipped ones and this
#: one
TOY_MODEL = "test-toy-threshold"


@pytest.fixture(params=[*MODELS, TOY_MODEL])
def every_model(request):
    """Each shipped model, then a model registered here (and removed afterwards)."""
    if request.param != TOY_MODEL:
        yield request.param
        return
    register_model(ModelVariant(TOY_MODEL, "xi ~ N+(m, 0.3 m)", xi_prior=ThresholdPrior(0.3),
                                program=SHIPPED_PROGRAM))
    try:
        yield TOY_MODEL
    finally:
        unregister_model(TOY_MODEL)


def with_model(data: ModelData, model: str, coupled=None, relevance="mixed") -> ModelData:
    """``data`` under another model (and coupled set, and relevance classes: by default
    :func:`some_relevance`, which only the relevance models read; the direction answers of
    :func:`some_direction`, which only the direction models read)."""
    h = Hyper(**{**data.hyper.__dict__, "model": model})
    if isinstance(relevance, str):
        relevance = some_relevance(data.p)
    return ModelData(data.X, data.y, data.U, h, data.pairs, data.f, coupled=coupled,
                     relevance=relevance, direction=some_direction(data.p))


def some_coupled(p: int) -> np.ndarray:
    # Features 0..p-4 coupled: a proper subset, with feedback pairs inside and outside it.
    c = np.ones(p, dtype=bool)
    c[-3:] = False
    return c


# -- the registry --------------------------------------------------------------------------


@needs_stanc
@pytest.mark.parametrize("variant", VARIANTS)
def test_the_shipped_program_follows_every_models_contract(every_model, variant):
    model = every_model
    path = model_stan_file(model)
    assert path == shipped_stan_file() and path.name == "elicit.stan"
    check_stan_contract(path, variant, model)
    # what the parts take from the registry, as the numpy twin reads it
    data = with_model(make_small_data(variant), model, coupled=some_coupled(10)).to_stan()
    m = get_model(model)
    assert data["threshold_sd"] == m.threshold_sd
    assert data["coupled"].tolist() == ([1] * 7 + [0] * 3 if m.known_coupling else [1] * 10)
    assert data["tau_learned"] == (variant == "learned")
    assert len(data["tau_fixed"]) == (variant == "fixed") == 1 - len(data["a_tau"])
    assert data["has_relevance"] == m.relevance
    assert data["has_direction"] == m.direction
    # a relevance model's irrelevant class takes a feature's sign
    signs = np.where((some_relevance(10) == 0) & m.relevance, 0, some_direction(10))
    assert data["direction_signs"].tolist() == (signs.tolist() if m.direction else [])
    if m.relevance:
        assert data["relevance"].tolist() == some_relevance(10).tolist()
        assert data["irrelevant_scale"].tolist() == [IRRELEVANT_SCALE]
        assert (data["zeta_prior_mean"].tolist(), data["zeta_prior_sd"].tolist()) == (
            [ZETA_PRIOR.mean], [ZETA_PRIOR.sd])
        md = with_model(make_small_data(variant, n_feedback=3), model)
        np.testing.assert_array_equal(data["relevance_signal"], md.relevance_signal)
        assert np.any(md.relevance_signal != 0) and data["relevance_spread"].tolist() == [
            RELEVANCE.spread]
    else:
        assert all(len(data[n]) == 0 for n in ("relevance", "irrelevant_scale",
                                               "zeta_prior_mean", "zeta_prior_sd",
                                               "relevance_signal", "relevance_spread"))


def test_one_program_states_every_shipped_model():
    # one program, one build: its parts switched on and off by data
    assert {MODELS[m].program for m in MODELS} == {SHIPPED_PROGRAM}
    assert get_model("tied-threshold").threshold_sd == TIED_THRESHOLD_SD


@needs_stanc
def test_contract_check_asks_for_the_models_extra_data(tmp_path):
    paper_file = tmp_path / "paper_only.stan"
    paper_file.write_text(own_program(learned=False))
    check_stan_contract(paper_file, "fixed", PAPER)
    for model in KNOB_MODELS:
        m = get_model(model)
        lacks = ", ".join(["threshold_sd"] * (m.threshold_sd != 0.5)
                          + ["coupled"] * m.known_coupling)
        with pytest.raises(ElicitError, match=f"of model '{model}': data block lacks {lacks}\\."):
            check_stan_contract(paper_file, "fixed", model)
    with pytest.raises(ElicitError, match="of model 'relevance': data block lacks relevance, "
                       "irrelevant_scale, zeta_prior_mean, zeta_prior_sd, relevance_signal, "
                       "relevance_spread; parameters block lacks zeta"):
        check_stan_contract(paper_file, "fixed", RELEVANCE_MODEL)
    # the shipped program declares every model's data, of which the paper's model uses some
    check_stan_contract(shipped_stan_file(), "learned", PAPER)


def test_coupled_mask_is_validated():
    base = make_small_data()
    with pytest.raises(ElicitError, match="coupled must be a boolean mask of the 10 features"):
        ModelData(base.X, base.y, base.U, base.hyper, coupled=np.ones(3, bool))
    d = with_model(base, "known-coupling", coupled=some_coupled(base.p))
    assert d.to_stan()["coupled"].tolist() == [1] * 7 + [0] * 3
    # the paper's model couples every feature whatever the data's coupled set
    paper = with_model(base, PAPER, coupled=some_coupled(base.p)).to_stan()
    assert paper["coupled"].tolist() == [1] * base.p
    # All features coupled: the full kernel, so the paper's arithmetic.
    assert with_model(base, "known-coupling", coupled=np.ones(base.p, bool)).kernel_mask is None


# -- the numpy twins -----------------------------------------------------------------------

def test_masked_kernel_is_block_plus_identity():
    base = make_small_data()
    c = some_coupled(base.p)
    gamma = np.array([0.4, 1.3, 0.8])
    K = kernel(base.U, gamma, c)
    J, out = np.flatnonzero(c), np.flatnonzero(~c)
    np.testing.assert_array_equal(K[np.ix_(J, J)], kernel(base.U[J], gamma))
    assert np.all(K[np.ix_(out, J)] == 0) and np.all(K[np.ix_(J, out)] == 0)
    np.testing.assert_array_equal(K[np.ix_(out, out)], np.eye(len(out)))
    assert np.linalg.eigvalsh(K).min() > -1e-12
    d = with_model(base, "known-coupling", coupled=c)
    fit = NumpyEngine("fixed").fit(d)
    np.testing.assert_array_equal(fit.K, kernel(base.U, fit.gamma, c))


@pytest.mark.parametrize("model", NEW_MODELS)
@pytest.mark.parametrize("n_feedback", [0, 6])
def test_new_models_gradient_and_hessian_match_finite_differences(variant, model, n_feedback):
    base = make_small_data(variant, n_feedback=n_feedback)
    assert_derivatives_match_finite_differences(
        with_model(base, model, coupled=some_coupled(base.p)))


def test_each_model_has_its_own_density(variant, every_model):
    """Each named model's density is its own formula written out directly (dense K, the mask
    of J applied entrywise, its xi prior, the relevance scales and zeta's prior), not the
    paper's: a variant that silently fell back to the paper's density would match the
    paper's formula instead."""
    model = every_model
    base = make_small_data(variant, n_feedback=6)
    J = some_coupled(base.p)
    data = with_model(base, model, coupled=J)
    theta = theta_point(data)
    got = log_density(theta, data)[0]
    spec = get_model(model)
    own = dense_log_density(theta, base, spec.threshold_sd, J if spec.known_coupling else None,
                            relevance=data.relevance if spec.relevance else None,
                            direction=data.direction if spec.direction else None)
    paper = dense_log_density(theta, base, get_model(PAPER).threshold_sd, None)
    assert got == pytest.approx(own, rel=1e-10, abs=1e-9)
    if model != PAPER:
        # measured: the variants differ from the paper's density by 1.8 to 114 nats here
        assert abs(got - paper) > 0.1


def assert_batched_density_is_log_density(data: ModelData, answer: int) -> None:
    """The batched density (the utility's refits) with the answer ``answer`` to one of two new
    pairs, at two points: its value and gradient are ``log_density``'s with that answer."""
    new_pairs = np.array([[0, 8], [1, 2]])
    thetas = np.stack([theta_point(data, 1), theta_point(data, 2)])
    bd = BatchDensity(data, pair_weights(data.U, new_pairs), answer)
    val, grad, _ = bd.at(thetas, np.arange(2))
    for c in range(2):
        dc = data.with_feedback(np.vstack([data.pairs, new_pairs[c]]), np.append(data.f, answer))
        v, g = log_density(thetas[c], dc)
        np.testing.assert_allclose(val[c], v, rtol=1e-10)
        np.testing.assert_allclose(grad[c], g, rtol=1e-8, atol=1e-8 * np.max(np.abs(g)))


@pytest.mark.parametrize("model", NEW_MODELS)
def test_batched_density_is_the_models(model):
    # The utility screen's batched refits evaluate the same density as log_density.
    base = make_small_data("learned", n_feedback=4)
    data = with_model(base, model, coupled=some_coupled(base.p))
    assert_batched_density_is_log_density(data, answer=1)


def test_known_coupling_with_every_feature_coupled_equals_paper():
    base = make_small_data(n_feedback=6)
    eng = NumpyEngine("fixed")
    a = eng.fit(with_model(base, PAPER))
    b = eng.fit(with_model(base, "known-coupling", coupled=np.ones(base.p, bool)))
    np.testing.assert_array_equal(a.gamma, b.gamma)
    assert a.xi == b.xi and a.log_density == b.log_density


def test_paper_model_ignores_the_coupled_set():
    base = make_small_data(n_feedback=6)
    eng = NumpyEngine("fixed")
    a = eng.fit(base)
    b = eng.fit(with_model(base, PAPER, coupled=some_coupled(base.p)))
    np.testing.assert_array_equal(a.gamma, b.gamma)
    np.testing.assert_array_equal(a.K, b.K)


def _two_groups(model: str):
    """Two groups of features told apart by meta-feature 0; meta-feature 1 is noise."""
    rng = np.random.default_rng(0)
    p, n = 16, 12
    g = np.repeat([0, 1], p // 2)
    U = np.column_stack([2.0 * g, rng.poisson(1.0, p).astype(float)])
    X = rng.normal(size=(n, p))
    y = X @ (g - 0.5) + 0.3 * rng.normal(size=n)
    eng = NumpyEngine("fixed")
    pairs = all_pairs(p)
    probe = eng.fit(ModelData(X, y, U, Hyper(model=model, threshold_mean=1.0)))
    m = auto_threshold_mean(U, probe.gamma, pairs)
    data = ModelData(X, y, U, Hyper(model=model, threshold_mean=m))
    return data, eng.fit(data), pairs, m


def test_tied_threshold_makes_answers_move_gamma():
    # The expert calls every pair similar, the two groups included. The paper's model
    # explains that mostly by raising xi; with the threshold tied to m it must lower gamma_0.
    out = {}
    for model in (PAPER, "tied-threshold"):
        data, fit0, pairs, m = _two_groups(model)
        fit = NumpyEngine("fixed").fit(data.with_feedback(pairs, np.ones(len(pairs), int)),
                                       init=fit0)
        out[model] = (fit0, fit, m)
    (p0, p1, m), (t0, t1, _) = out[PAPER], out["tied-threshold"]
    np.testing.assert_allclose(p0.gamma, t0.gamma, rtol=1e-6)  # no answers: same gamma
    assert p1.xi > 1.5 * m                    # the paper's xi absorbs the answers
    assert abs(t1.xi - m) < 0.05 * m          # the tied one stays at m
    assert t1.gamma[0] < 0.5 * p1.gamma[0]    # so gamma moves instead


def test_elicitor_couples_the_features_of_its_candidates():
    base = make_small_data(n_feedback=0)
    cands = np.array([[0, 1], [1, 2], [2, 5], [0, 5]])
    el = Elicitor(base.X, base.y, base.U, Hyper(tau2=0.5, model="known-coupling-tied"),
                  engine="numpy", candidates=cands)
    np.testing.assert_array_equal(el.data.coupled, coupled_features(base.p, cands))
    np.testing.assert_array_equal(np.flatnonzero(el.data.coupled), [0, 1, 2, 5])
    off = np.flatnonzero(~el.data.coupled)
    K = el.fit.K
    assert np.all(K[np.ix_(off, off)] == np.eye(len(off))) and np.all(K[off][:, [0, 1]] == 0)
    q = el.next_query("sequential", np.random.default_rng(0))   # the fast utility screen
    fit = el.answer(q.i, q.j, "similar")
    assert fit.converged and fit.coupled is el.data.coupled
    # The tied threshold held xi at its prior mean.
    assert abs(el.fit.xi - el.data.m) < 0.05 * el.data.m


# -- a variant registered from outside the package ------------------------------------------


class Probit:
    """A toy link: ``p(f = 1 | z) = Phi(z)``, the standard normal cdf (not in elicit)."""

    name = "probit"

    @staticmethod
    def _mills(z):
        # phi(z) / Phi(z), from logs: no 0/0 far in the lower tail
        return np.exp(stats.norm.logpdf(z) - special.log_ndtr(z))

    def prob(self, z):
        return special.ndtr(z)

    def log_lik(self, z, f):
        return f * special.log_ndtr(z) + (1 - f) * special.log_ndtr(-z)

    def score(self, z, f):
        return f * self._mills(z) - (1 - f) * self._mills(-z)

    def curvature(self, z, f):
        m1, m0 = self._mills(z), self._mills(-z)
        return f * m1 * (z + m1) + (1 - f) * m0 * (m0 - z)

    def density(self, z):
        return stats.norm.pdf(z)

    def entropy(self, z):
        return -(special.ndtr(z) * special.log_ndtr(z) + special.ndtr(-z) * special.log_ndtr(-z))

    def step_residual(self, t, z, f):
        return t - self.score(z, f)


@pytest.fixture
def probit_model():
    """A probit variant registered as a user would, removed again afterwards."""
    variant = register_model(ModelVariant("probit-test", "answers follow a probit link",
                                          link=Probit()))
    yield variant
    unregister_model(variant.name)


def test_registered_probit_variant_density_matches_independent_formula(probit_model, variant):
    base = make_small_data(variant, n_feedback=6)
    data = with_model(base, probit_model.name)
    assert data.model is probit_model and data.link is probit_model.link
    # derivatives of the whole log density against finite differences
    assert_derivatives_match_finite_differences(data)
    # the value: the paper's density with the logistic feedback terms swapped for probit
    # ones, evaluated with scipy.stats
    theta = theta_point(data)
    gamma, xi = theta[:data.d], theta[data.d]
    z = xi - pair_weights(data.U, data.pairs) @ gamma
    logit_terms = stats.bernoulli(special.expit(z)).logpmf(data.f).sum()
    probit_terms = np.where(data.f == 1, stats.norm.logcdf(z), stats.norm.logsf(z)).sum()
    np.testing.assert_allclose(log_density(theta, data)[0],
                               log_density(theta, with_model(base, PAPER))[0]
                               - logit_terms + probit_terms, rtol=1e-12)
    # the batched density (the utility's refits) reads the same link
    assert_batched_density_is_log_density(data, answer=0)


def test_numpy_engine_fits_a_registered_probit_variant(probit_model, variant):
    base = make_small_data(variant, n_feedback=6)
    data = with_model(base, probit_model.name)
    engine = NumpyEngine(variant)
    cold = engine.fit(data)
    assert cold.converged
    theta = join_theta(cold.gamma, cold.xi, cold.tau2, data)
    lb = data.layout.lower_bounds()
    v, g = log_density(theta, data)
    pg = np.where((theta <= lb) & (g < 0), 0.0, g)
    pg[data.d] *= data.m                          # xi on the scale of its prior mean
    assert np.max(np.abs(pg)) < 1e-4
    assert cold.log_density == v
    # the link matters: the probit MAP is not the logistic one
    paper = NumpyEngine(variant).fit(with_model(base, PAPER))
    assert np.max(np.abs(cold.gamma - paper.gamma)) > 1e-3
    # a warm Newton refit after one more answer reaches the cold fit of the new data
    more = data.with_feedback(np.vstack([data.pairs, [0, 9]]), np.append(data.f, 1))
    warm = engine.fit(more, init=cold, hessian=hessian_base(theta, data))
    again = NumpyEngine(variant).fit(more)
    assert "Newton" in warm.message and warm.converged and again.converged
    scale = np.ones(len(theta))
    scale[data.d] = data.m
    np.testing.assert_allclose(join_theta(warm.gamma, warm.xi, warm.tau2, more) / scale,
                               join_theta(again.gamma, again.xi, again.tau2, more) / scale,
                               rtol=1e-5, atol=1e-7)


def test_elicitor_runs_a_registered_probit_variant(probit_model):
    """A query round (the fast utility reads the variant's link) and a refit after the
    answer, with the registered variant."""
    base = make_small_data(n_feedback=0)
    el = Elicitor(base.X, base.y, base.U, Hyper(tau2=0.5, model=probit_model.name),
                  engine="numpy")
    assert el.data.link is probit_model.link
    q = el.next_query("sequential", np.random.default_rng(0))
    assert q.expected_gain is not None and q.expected_gain > 0
    fit = el.answer(q.i, q.j, "similar")
    assert fit.converged and len(el.data.f) == 1
    # the same answer under the paper's logistic link moves the MAP elsewhere
    paper = Elicitor(base.X, base.y, base.U, Hyper(tau2=0.5), engine="numpy")
    other = paper.answer(q.i, q.j, "similar")
    assert np.max(np.abs(fit.gamma - other.gamma)) > 1e-4


def test_registered_variant_without_programs_is_refused_by_stan_engines(probit_model):
    from elicit.engines.pystan_engine import PyStanEngine

    data = with_model(make_small_data(), probit_model.name)
    with pytest.raises(ElicitError, match="model 'probit-test' has no Stan program; "
                                          "fit it with the numpy engine"):
        PyStanEngine("fixed").fit(data)
    assert "probit-test: answers follow a probit link" in probit_model.describe()


def test_register_model_refuses_what_it_cannot_run(probit_model):
    with pytest.raises(ElicitError, match="a model named 'probit-test' is already registered"):
        register_model(ModelVariant("probit-test", "again", link=Probit()))
    class NoCurvature(Probit):
        curvature = None
        entropy = None

    with pytest.raises(ElicitError, match=r"'no-curvature': its link lacks curvature, entropy "
                                          r"\(see "):
        register_model(ModelVariant("no-curvature", "x", link=NoCurvature()))
    # the shipped Stan program states the logistic link only
    with pytest.raises(ElicitError, match="cannot state it .*program=StanProgram\\(path\\), "
                                          "or set program=None"):
        register_model(ModelVariant("probit-stan", "x", link=Probit(),
                                    program=SHIPPED_PROGRAM))
    with pytest.raises(ElicitError, match="register_model takes a ModelVariant"):
        register_model("probit")
    # sd <= 0 was taken: -0.5 fitted as +0.5 (sd squared), 0 ended in a ZeroDivisionError
    for sd in (-0.5, 0.0, float("inf")):
        with pytest.raises(ElicitError, match=r"'bad-sd': xi_prior must be a ThresholdPrior "
                                              r"with a positive, finite sd, got "):
            register_model(ModelVariant("bad-sd", "x", xi_prior=ThresholdPrior(sd)))
    # a name that questions= / --strategies (comma-separated lists) could never spell
    for name in ("sign,v2", " padded"):
        with pytest.raises(ElicitError, match=r"a model needs a name without commas or "
                                              r"surrounding spaces"):
            MODELS.add(name, MODELS["paper"])
    assert "no-curvature" not in MODELS and "probit-stan" not in MODELS
    # a variant the shipped program can state may use it
    wide = register_model(ModelVariant("wide-threshold", "xi ~ N+(m, m)",
                                       xi_prior=ThresholdPrior(1.0), program=SHIPPED_PROGRAM))
    try:
        d = with_model(make_small_data(), wide.name).to_stan()
        assert d["threshold_sd"] == 1.0 and model_stan_file(wide.name) == shipped_stan_file()
    finally:
        unregister_model(wide.name)


def test_register_model_checks_a_program_of_its_own(tmp_path):
    """A variant may ship its own program (and parts of its own): refused in one line when
    the file is missing or a part is no StanPart dataclass; accepted otherwise, its data the
    composition of its parts."""
    from dataclasses import dataclass

    from elicit.model.stan_data import SHIPPED_PARTS, StanPart, stan_field
    from elicit.model.variants import StanProgram

    @dataclass(frozen=True)
    class Slope(StanPart):
        slope: float = stan_field("real<lower=0>", "the probit link's slope")

        @classmethod
        def of(cls, data):
            return cls(slope=2.0)

    missing = tmp_path / "missing.stan"
    with pytest.raises(ElicitError, match=f"'own': its Stan program {missing} does not exist"):
        register_model(ModelVariant("own", "x", link=Probit(), program=StanProgram(missing)))
    path = tmp_path / "own.stan"
    path.write_text("// a program of its own\n")
    with pytest.raises(ElicitError, match="must be StanPart dataclasses"):
        register_model(ModelVariant("own", "x", program=StanProgram(path, (dict,))))

    @dataclass(frozen=True)
    class Twice(StanPart):
        N: int = stan_field("int", "again")

    with pytest.raises(ElicitError, match="'own': data name N is in two parts"):
        register_model(ModelVariant("own", "x", program=StanProgram(path, (*SHIPPED_PARTS,
                                                                            Twice))))

    @dataclass(frozen=True)
    class Plain(StanPart):
        slope: float

    @dataclass(frozen=True)
    class Odd(StanPart):
        slope: float = stan_field("tuple(real, int)", "not read")

    for part, why in ((Plain, "Plain.slope: declare it with stan_field"),
                      (Odd, r"not a Stan data type: 'tuple\(real, int\)'")):
        with pytest.raises(ElicitError, match=f"'own': {why}"):
            register_model(ModelVariant("own", "x", program=StanProgram(path, (part,))))
    assert "own" not in MODELS
    own = register_model(ModelVariant("own", "probit answers", link=Probit(),
                                      program=StanProgram(path, (*SHIPPED_PARTS, Slope))))
    try:
        assert model_stan_file("own") == path.resolve()
        d = with_model(make_small_data(), "own").to_stan()
        assert d["slope"] == 2.0 and d["N"] == 12
        assert f"{path.resolve()} (its own program)" in own.describe()
    finally:
        unregister_model("own")


def test_docs_example_of_a_model_of_ones_own_runs(capsys):
    """The example of docs/models.md, run as written."""
    import re
    from pathlib import Path

    text = (Path(__file__).parents[2] / "docs" / "models.md").read_text()
    # the page's model of one's own (its other block measures on the data directory)
    blocks = [b for b in re.findall(r"```python\n(.*?)```", text, flags=re.S)
              if "register_model" in b]
    assert len(blocks) == 1
    try:
        exec(compile(blocks[0], "docs/models.md", "exec"), {})
        assert MODELS["probit"].link.name == "probit"
    finally:
        if "probit" in MODELS:
            unregister_model("probit")
    assert capsys.readouterr().out.startswith("True [")


# -- the command line and sweeps -----------------------------------------------------------


# -- the Stan programs through PyStan (slow) -------------------------------------------------

@pytest.fixture(scope="module")
def pystan_engines():
    from elicit.engines.pystan_engine import PyStanEngine

    # One engine per tau2 variant: it picks each model's program from the data.
    return {v: PyStanEngine(v) for v in VARIANTS}


def _stan_data(variant: str, model: str, n_f: int, seed: int, **shape) -> ModelData:
    base = make_data(variant, n_f=n_f, seed=seed, **shape)
    c = some_coupled(base.p)
    c[:2] = False   # the answered pairs' features are not all coupled
    return with_model(base, model, coupled=c)


@pytest.mark.slow
@pytest.mark.pystan
@pytest.mark.parametrize("model", NEW_MODELS)
@pytest.mark.parametrize("variant", VARIANTS)
def test_pystan_map_of_new_models_matches_numpy(pystan_engines, variant, model):
    data = _stan_data(variant, model, n_f=40, seed=21, n=20, p=25, d=9, counts=False)
    ref = NumpyEngine(variant).fit(data)
    got = pystan_engines[variant].fit(data)
    assert ref.converged and got.converged, (ref.message, got.message)
    assert rel_diff(got, ref, data) <= 1e-4
    np.testing.assert_allclose(got.K, ref.K, atol=1e-4)
    if get_model(model).known_coupling:
        off = np.flatnonzero(~data.coupled)
        assert np.all(got.K[np.ix_(off, off)] == np.eye(len(off)))


@pytest.mark.parametrize("model", ["paper", "relevance", "direction", "relevance-direction"])
def test_answers_key_holds_exactly_the_answers_the_model_reads(model):
    """A cache key of a fit (the numpy engine's memo) tells apart the relevance classes of a
    relevance model and the direction signs of a direction model, and nothing else."""
    data = with_model(make_small_data(), model)
    spec = data.model
    other_rel = data.with_relevance(np.where(data.relevance == 1, 0, data.relevance))
    other_dir = data.with_direction(-data.direction)
    key = data.answers_key()
    assert (other_rel.answers_key() != key) == bool(spec.relevance)
    assert (other_dir.answers_key() != key) == bool(spec.direction)
    assert data.with_feedback(data.pairs[:1], data.f[:1]).answers_key() == key
