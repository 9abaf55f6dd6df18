"""The paper's experiments: problems, sweeps, baselines, Table 1, benchmarks, report.

The pieces a simulation study of your own needs (``docs/simulations.md``):
:class:`RunProblem` (one run's data and simulated expert), :class:`ProblemsDir`
(``elicit synthetic --problems DIR``), :class:`SweepConfig` and
:func:`elicit.paper.sweep.sweep` (deterministic, resumable MSE curves of the query
strategies); the oracles are :class:`elicit.GroupOracle` and :class:`elicit.SignOracle`.
(``sweep`` is not imported here: the name is also its module's.)
"""

from elicit.paper.problems import ProblemsDir, RunProblem
from elicit.paper.sweep import SweepConfig

__all__ = ["ProblemsDir", "RunProblem", "SweepConfig"]
