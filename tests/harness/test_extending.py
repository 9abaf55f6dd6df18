"""docs/extending.md runs as written: a model variant, a strategy, a utility and a kind of
question registered from outside the package (no edit in elicit/), then a 2-run sweep with
the first three; and the strategy works with every kind of question."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import toykind
from conftest import small_arrays

from elicit.elicitation.elicitor import Elicitor
from elicit.elicitation.kinds import KINDS, model_for
from elicit.elicitation.strategies import answer_probabilities
from elicit.model import variants
from elicit.model.spec import Hyper

DOC = Path(__file__).resolve().parents[2] / "docs" / "extending.md"
pytestmark = pytest.mark.usefixtures("registries_restored", "one_blas_thread")


def _blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", DOC.read_text(), flags=re.S)


@pytest.fixture
def namespace(tmp_path, monkeypatch):
    """Run the page's examples in one namespace (registries_restored undoes them)."""
    monkeypatch.chdir(tmp_path)
    return {}


def test_the_page_has_the_five_examples():
    assert len(_blocks()) == 5


@pytest.mark.usefixtures("unsaved_figures")  # reads the tables
def test_the_registered_objects_run_a_two_run_sweep(namespace, capsys):
    for code in _blocks():
        exec(compile(code, str(DOC), "exec", dont_inherit=True), namespace)
    printed = capsys.readouterr().out
    assert "'least-sure'" in printed and "'random'" in printed
    out = Path(namespace["out"])
    cfg = json.loads((out / "config.json").read_text())
    assert cfg["model"] == "semi-tied" and cfg["utility"] == "answer-entropy"
    df = pd.read_csv(out / "mse.csv")
    curves = df[df.strategy.isin(["random", "least-sure"])]
    assert sorted(curves.groupby("strategy").run.nunique().items()) == [("least-sure", 2),
                                                                         ("random", 2)]
    assert set(curves.n_feedback) == {0, 1, 2, 3}
    parts = out / "parts" / "synthetic" / "least-sure"
    asked = json.loads((parts / "run000.json").read_text())["asked"]
    assert len(asked) == 3


def test_the_variant_is_the_registered_object_with_its_knob(namespace):
    exec(compile(_blocks()[0], str(DOC), "exec", dont_inherit=True), namespace)
    v = variants.get_model("semi-tied")
    assert v.threshold_sd == 0.2 and not v.known_coupling


def test_the_new_kind_is_asked_beside_the_pairs(namespace, capsys):
    for code in _blocks()[1:4]:
        exec(compile(code, str(DOC), "exec", dont_inherit=True), namespace)
    assert "sign" in KINDS
    el = namespace["el"]
    kinds = [h.kind for h in el.history]
    assert len(kinds) == 3 and "sign" in kinds
    assert namespace["q"].kind in ("pairs", "sign")
    # the sign answers entered no model part: the fit is the one of the pair answers alone
    pairs_only = [h for h in el.history if h.kind == "pairs"]
    assert len(el.data.f) == len(pairs_only)
    assert str(kinds) in capsys.readouterr().out


@pytest.mark.parametrize("questions", ["pairs", "relevance", "both", "all"])
def test_the_least_sure_strategy_asks_the_least_predictable_question_of_every_kind(
        namespace, questions):
    """It indexed candidate pairs, and raised IndexError with questions="both"; now it reads
    the kinds' answer probabilities (the toy kind of tests/toykind.py included)."""
    exec(compile(_blocks()[1], str(DOC), "exec", dont_inherit=True), namespace)
    with toykind.registered():
        a = small_arrays()
        model = model_for(questions) or "relevance"
        el = Elicitor(a.X, a.y, a.U, Hyper(tau2=0.5, model=model), engine="numpy",
                      questions=questions, pool_size=6)
        seen = set()
        for _ in range(6):
            # the pool the strategy draws, drawn again from the same stream
            pool_rng, rng = np.random.default_rng(4), np.random.default_rng(4)
            from elicit.elicitation.strategies import round_pool

            pool = round_pool(el, el.open_questions(), pool_rng)
            p = answer_probabilities(el, pool)
            q = el.next_query("least-sure", rng)
            t = int(np.argmin(np.abs(p - 0.5)))
            assert el.query(int(pool[t])) == q
            seen.add(q.kind)
            el.answer(q.i, q.j, "dont_know", kind=q.kind)
        assert seen <= set(el.questions) and seen


def test_the_utility_scores_pairs_under_the_relevance_model(namespace):
    """The page's utility took no ``weight``: under a model with relevance classes every
    round failed with "score() takes from 3 to 4 positional arguments but 5 were given"."""
    exec(compile(_blocks()[2], str(DOC), "exec", dont_inherit=True), namespace)
    a = small_arrays()
    el = Elicitor(a.X, a.y, a.U, Hyper(tau2=0.5, model="relevance"), engine="numpy",
                  questions="both", utility="answer-entropy", pool_size=6)
    el.answer(0, None, "relevant")
    sc = el.score(np.array([[1, 2], [3, 4]]))
    entropy = namespace["entr"](sc.p_answer) + namespace["entr"](1 - sc.p_answer)
    # weighted by the chance that both features are relevant, which is below 1
    assert sc.utility.shape == (2,) and np.all(sc.utility < entropy)
