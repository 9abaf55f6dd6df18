"""The machinery of simulated-expert sweeps, for the paper's experiments and for your own.

* :mod:`~elicit.harness.problem`: :class:`RunProblem` (one run's data, model settings and
  simulated expert), the maker protocol ``make_problem(seed, run)``, :class:`ProblemsDir`
  (``elicit synthetic --problems DIR``) and the random streams of a run;
* :mod:`~elicit.harness.store`: :class:`SweepStore`, a results folder that owns its settings
  (``config.json``) and keeps every resumable record;
* :mod:`~elicit.harness.sweep`: :class:`SweepConfig` and ``sweep(make_problem, cfg, out)``
  (deterministic, resumable MSE curves of the query strategies; ``docs/simulations.md``);
* :mod:`~elicit.harness.runner`, :mod:`~elicit.harness.cluster`: the parallel task runner,
  on local processes or a Dask cluster;
* :mod:`~elicit.harness.figures`, :mod:`~elicit.harness.labels`: the MSE and kernel figures
  and the display names.

The oracles are :class:`elicit.GroupOracle` and :class:`elicit.SignOracle`. (``sweep`` is
not imported here: the name is also its module's.)
"""

from elicit.harness.problem import ProblemsDir, RunProblem
from elicit.harness.store import SweepStore
from elicit.harness.sweep import SweepConfig

__all__ = ["ProblemsDir", "RunProblem", "SweepConfig", "SweepStore"]
