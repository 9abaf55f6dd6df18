"""Names and display labels of the strategies, baselines, reference lines and data sets, in
the order of the figures, tables and ``mse.csv`` (whose ``strategy`` column holds any of the
first three).
"""

from __future__ import annotations

from elicit.elicitation.strategies import STRATEGIES, STRATEGY_REGISTRY


def strategy_label(name: str) -> str | None:
    """The display label of the registered query strategy ``name``, or None if ``name`` is no
    query strategy (a baseline or a reference line)."""
    strategy = STRATEGY_REGISTRY.get(name)
    return None if strategy is None else strategy.label


#: Regression baselines of the real-data figures (no expert; the paper's real-data runs).
BASELINES: tuple[str, ...] = ("lasso", "ridge", "elasticnet")
BASELINE_LABELS: dict[str, str] = {"lasso": "LASSO", "ridge": "Ridge", "elasticnet": "Elastic net"}

#: Reference lines: predicting the training mean (every sweep); on real data the model with
#: every answer at once (``ceiling``: a reference, not a bound) and the expert's full
#: knowledge (:func:`elicit.paper.baselines.expert_yardstick`).
REFERENCES: tuple[str, ...] = ("mean", "ceiling", "yardstick")
REFERENCE_LABELS: dict[str, str] = {"mean": "predict the mean",
                                    "ceiling": "all answers given",
                                    "yardstick": "expert's full knowledge (yardstick)"}


def ceiling_label(n_answers: float) -> str:
    """The all-answers line's label with the number of answers it used:
    ``all ~780 answers given``."""
    return f"all ~{n_answers:.0f} answers given"


#: Every label above by name, the paper's strategies' from their objects, then the paper's
#: data sets' (Sec. 4.1 and 4.2).
LABELS: dict[str, str] = {**{s: STRATEGY_REGISTRY[s].label for s in STRATEGIES},
                          **BASELINE_LABELS, **REFERENCE_LABELS,
                          "synthetic": "Synthetic data", "amazon": "Amazon", "yelp": "Yelp"}
