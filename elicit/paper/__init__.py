"""The paper's experiments (Afrabandpey et al. 2019, Sec. 4), built on :mod:`elicit.harness`.

* :mod:`~elicit.paper.configs`: one configuration per experiment, :class:`SyntheticConfig`
  and :class:`RealDataConfig` (what ``config.json`` records);
* :mod:`~elicit.paper.synthetic`: the synthetic data and experiment (Figs. 3-4,
  ``elicit synthetic``);
* :mod:`~elicit.paper.realdata`: the Amazon/Yelp/corpus experiment (Fig. 5,
  ``elicit realdata``), with one run's problem in :mod:`~elicit.paper.real_problem`, its
  simulated expert in :mod:`~elicit.paper.lasso_expert`, its baselines and reference lines in
  :mod:`~elicit.paper.baselines` and :mod:`~elicit.paper.runinfo`;
* :mod:`~elicit.paper.table1`: Table 1, with the sample-addition loops of
  :mod:`~elicit.paper.samples` (``elicit table1``);
* :mod:`~elicit.paper.bench`: ``elicit bench``.

The report on the results is :mod:`elicit.report`.
"""

from elicit.paper.configs import RealDataConfig, SyntheticConfig
from elicit.paper.realdata import run_realdata
from elicit.paper.synthetic import run_synthetic
from elicit.paper.table1 import run_table1

__all__ = ["RealDataConfig", "SyntheticConfig", "run_realdata", "run_synthetic", "run_table1"]
