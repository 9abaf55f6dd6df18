"""A registered model variant with a Stan program of its own, through the registry: the
example of docs/stan.md ("A model variant with a program of its own"), run as written, then
checked through PyStan and CmdStan against its numpy twin.

The variant's program is compiled once per machine (PyStan: per Python executable) the first
time: marked slow, and pystan or cmdstan.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
from helpers import rel_diff

from elicit.engines.numpy_engine import NumpyEngine
from elicit.errors import ElicitError
from elicit.model.density import log_density
from elicit.model.spec import Hyper, ModelData
from elicit.model.theta import theta_of
from elicit.model.variants import MODELS, unregister_model

pytestmark = pytest.mark.slow

DOC = Path(__file__).resolve().parents[2] / "docs" / "stan.md"


@pytest.fixture(scope="module")
def sloped(tmp_path_factory) -> dict:
    """The namespace of docs/stan.md's example (its variant registered, its program written;
    what it printed under ``"printed"``); the variant is unregistered afterwards. The example
    fits through PyStan."""
    import contextlib
    import io
    import os

    from conftest import missing

    if (why := missing("pystan")) is not None:
        pytest.skip(why)
    text = DOC.read_text()
    blocks = [b for b in re.findall(r"```python\n(.*?)```", text, flags=re.S)
              if "register_model" in b]
    assert len(blocks) == 1
    cwd = os.getcwd()
    os.chdir(tmp_path_factory.mktemp("sloped"))
    ns: dict = {}
    out = io.StringIO()
    try:
        with contextlib.redirect_stdout(out):
            exec(compile(blocks[0], str(DOC), "exec"), ns)
    finally:
        os.chdir(cwd)
    ns["printed"] = out.getvalue()
    yield ns
    if "sloped" in MODELS:
        unregister_model("sloped")


def problem(seed: int = 3) -> ModelData:
    """A small problem of the sloped model whose answers move gamma."""
    rng = np.random.default_rng(seed)
    n, p, d = 20, 12, 3
    X, U = rng.normal(size=(n, p)), rng.normal(size=(p, d))
    y = X @ (U[:, 0] - U[:, 1]) + 0.3 * rng.normal(size=n)
    pairs = np.array([(i, j) for i in range(p) for j in range(i + 1, p)])[::4]
    w = ((U[pairs[:, 0]] - U[pairs[:, 1]]) ** 2)[:, :1].sum(axis=1)
    f = (w < np.median(w)).astype(int)
    return ModelData(X, y, U, Hyper(model="sloped", threshold_mean=float(np.median(w)) + 1.0),
                     pairs, f)


def check_engine(engine, data: ModelData, tol: float) -> None:
    """The engine's MAP is the twin's, and its log density differs from the twin's by one
    constant with the same gradient, at three points."""
    ref = NumpyEngine("fixed").fit(data)
    got = engine.fit(data)
    assert got.converged and ref.converged, (got.message, ref.message)
    assert rel_diff(got, ref, data) <= tol
    t = theta_of(ref, data)
    points = [t, t * np.array([1.3, 0.6, 1.1, 0.9]), t * np.array([0.5, 1.4, 0.8, 1.2])]
    stan = [engine.log_prob(data, x) for x in points]
    twin = [log_density(x, data) for x in points]
    np.testing.assert_allclose(np.diff([s[0] for s in stan]), np.diff([v for v, _ in twin]),
                               rtol=1e-9, atol=1e-8)
    for (_, g_stan), (_, g_twin) in zip(stan, twin):
        np.testing.assert_allclose(g_stan, g_twin, rtol=1e-6, atol=1e-8)


@pytest.mark.pystan
def test_the_docs_example_fits_through_pystan(sloped):
    """The example prints that PyStan's fit of the variant's program is its twin's (after
    PyStan's progress dots, when it compiled the program)."""
    assert sloped["printed"].rstrip().endswith("True True"), sloped["printed"]
    assert MODELS["sloped"].link.slope == 0.5


@pytest.mark.pystan
def test_a_variant_with_its_own_program_and_part_matches_its_twin_in_pystan(sloped):
    from elicit.engines.pystan_engine import PyStanEngine

    data = problem()
    # the variant's own part reaches the program: its data, read from the variant's link
    assert data.to_stan()["answer_slope"] == 0.5
    engine = PyStanEngine("fixed")
    assert engine.program(data).path == Path(sloped["program"])
    check_engine(engine, data, 1e-6)


@pytest.mark.pystan
def test_the_variants_program_states_one_tau2_variant(sloped):
    from elicit.engines.pystan_engine import PyStanEngine

    base = problem()
    data = ModelData(base.X, base.y, base.U, Hyper(variant="learned", model="sloped",
                                                    threshold_mean=base.m), base.pairs, base.f)
    with pytest.raises(ElicitError, match=r"of model 'sloped': data block lacks a_tau, b_tau; "
                                          r"parameters block lacks tau; data block declares "
                                          r"tau_fixed as a scalar"):
        PyStanEngine("learned").fit(data)


@pytest.mark.cmdstan
def test_a_variant_with_its_own_program_and_part_matches_its_twin_in_cmdstan(sloped):
    from elicit.engines.cmdstan_engine import CmdStanEngine

    # CmdStan's L-BFGS stops on its own tolerances in log space (test_cmdstan.py)
    check_engine(CmdStanEngine("fixed"), problem(), 1e-3)
