"""The machinery of simulated-expert sweeps, for the paper's experiments and for your own
(``docs/simulations.md``): run problems, results folders, sweeps, the parallel task runner,
figures and labels. (``sweep`` is not imported here: the name is also its module's.)
"""

from elicit.harness.problem import ProblemsDir, RunProblem
from elicit.harness.store import SweepStore
from elicit.harness.sweep import SweepConfig

__all__ = ["ProblemsDir", "RunProblem", "SweepConfig", "SweepStore"]
