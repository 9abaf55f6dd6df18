"""Names and display labels of the paper's strategies, baselines and data sets.

The orders are those of the figures, tables and ``mse.csv``: the ``strategy`` column of an
``mse.csv`` holds a query strategy, a baseline or a reference line, and reports list them in
these orders. A review corpus of the user's is labelled by its own name.
"""

from __future__ import annotations

from elicit.elicitation.strategies import STRATEGIES

#: Query strategies, in the order of the paper's figures.
STRATEGY_ORDER: tuple[str, ...] = STRATEGIES
STRATEGY_LABELS: dict[str, str] = {"random": "Random", "nonsequential": "Non-sequential",
                                   "sequential": "Sequential"}

#: Regression baselines of the real-data figures (no expert; :mod:`elicit.paper.baselines`).
BASELINES: tuple[str, ...] = ("lasso", "ridge", "elasticnet")
BASELINE_LABELS: dict[str, str] = {"lasso": "LASSO", "ridge": "Ridge",
                                   "elasticnet": "Elastic net"}

#: Reference lines of the real-data figures and tables (:mod:`elicit.paper.runinfo`): what
#: predicting the training mean achieves, and the model with every answerable pair answered.
REFERENCES: tuple[str, ...] = ("mean", "ceiling")
REFERENCE_LABELS: dict[str, str] = {"mean": "predict the mean",
                                    "ceiling": "all answers (ceiling)"}


def ceiling_label(n_answers: float) -> str:
    """The ceiling's label with the number of answers it used: ``all ~780 answers (ceiling)``."""
    return f"all ~{n_answers:.0f} answers (ceiling)"


#: The real data sets (paper Sec. 4.2).
DATASET_LABELS: dict[str, str] = {"amazon": "Amazon", "yelp": "Yelp"}

#: Every label above, by name.
LABELS: dict[str, str] = {**STRATEGY_LABELS, **BASELINE_LABELS, **REFERENCE_LABELS,
                          **DATASET_LABELS}
