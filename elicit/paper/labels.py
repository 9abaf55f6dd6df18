"""Names and display labels of the paper's strategies, baselines and data sets.

The orders are those of the figures, tables and ``mse.csv``: the ``strategy`` column of an
``mse.csv`` holds a query strategy or a baseline, and reports list them in these orders.
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

#: The real data sets (paper Sec. 4.2).
DATASETS: tuple[str, ...] = ("amazon", "yelp")
DATASET_LABELS: dict[str, str] = {"amazon": "Amazon", "yelp": "Yelp"}

#: Every label above, by name.
LABELS: dict[str, str] = {**STRATEGY_LABELS, **BASELINE_LABELS, **DATASET_LABELS}
