"""The paper's experiments: problems, the synthetic and real-data experiments, baselines,
Table 1 and benchmarks (the sweep machinery is :mod:`elicit.harness`, the report
:mod:`elicit.report`).

The pieces a simulation study of your own needs (``docs/simulations.md``):
:class:`RunProblem` (one run's data and simulated expert), :class:`ProblemsDir`
(``elicit synthetic --problems DIR``), :class:`elicit.harness.sweep.SweepConfig` and
:func:`elicit.harness.sweep.sweep` (deterministic, resumable MSE curves of the query
strategies); the oracles are :class:`elicit.GroupOracle` and :class:`elicit.SignOracle`.
"""

from elicit.paper.problems import ProblemsDir, RunProblem

__all__ = ["ProblemsDir", "RunProblem"]
