"""The paper's experiments: problems, sweeps, baselines, Table 1, benchmarks, report.

The pieces a simulation study of your own needs (``docs/simulations.md``) are here:
:class:`RunProblem` (one run's data and simulated expert), :class:`SweepConfig` and
:func:`sweep` (deterministic, resumable MSE curves of the query strategies), and
:class:`ProblemsDir` (``elicit synthetic --problems DIR``); the oracles are
:class:`elicit.GroupOracle` and :class:`elicit.SignOracle`.
"""

from elicit.paper.problems import ProblemsDir, RunProblem
from elicit.paper.sweep import SweepConfig, sweep

__all__ = ["ProblemsDir", "RunProblem", "SweepConfig", "sweep"]
