"""docs/extending.md runs as written: a model variant, a strategy and a utility registered from
outside the package (no edit in elicit/), then a 2-run sweep with all three."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pandas as pd
import pytest

from elicit.elicitation.strategies import STRATEGY_REGISTRY, unregister_strategy
from elicit.elicitation.utility import UTILITIES, unregister_utility
from elicit.model import variants

DOC = Path(__file__).resolve().parents[2] / "docs" / "extending.md"


def _blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", DOC.read_text(), flags=re.S)


@pytest.fixture
def namespace():
    """Run the page's examples in one namespace; undo the registrations afterwards."""
    ns: dict = {}
    yield ns
    for name in ("least-sure",):
        if name in STRATEGY_REGISTRY:
            unregister_strategy(name)
    if "answer-entropy" in UTILITIES:
        unregister_utility("answer-entropy")
    if "semi-tied" in variants.MODELS:
        variants.unregister_model("semi-tied")


def test_the_page_has_the_four_examples():
    assert len(_blocks()) == 4


def test_the_registered_objects_run_a_two_run_sweep(namespace, capsys):
    for code in _blocks():
        exec(compile(code, str(DOC), "exec"), namespace)
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
    # the toy strategy asked what it says: at each answer the least predictable pair
    parts = out / "parts" / "synthetic" / "least-sure"
    asked = json.loads((parts / "run000.json").read_text())["asked"]
    assert len(asked) == 3


def test_the_variant_is_the_registered_object_with_its_knob(namespace):
    exec(compile(_blocks()[0], str(DOC), "exec"), namespace)
    v = variants.get_model("semi-tied")
    assert v.threshold_sd == 0.2 and not v.known_coupling
