"""One parallel, resumable task runner for the experiments.

Every long computation of the paper's pipeline is a list of independent tasks, one per run
(a sweep's strategies, a run's baselines and tau2 CV, a run's Table 1 sample loops), each
writing its result files atomically (:mod:`elicit.internal.io`). :func:`run_tasks` runs the
unfinished ones, inline or in worker processes, with a progress bar. Because a task's result
depends only on its arguments (every random stream is derived from the seed and the run, see
:mod:`elicit.harness.problem`), the outcome does not depend on ``jobs`` nor on how many
earlier passes were interrupted.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable
from concurrent.futures import as_completed
from typing import Any, TypeVar

from elicit.harness.cluster import scoped_executor, task_executor

Task = TypeVar("Task", bound=tuple)


def run_tasks(func: Callable[..., Any], tasks: Iterable[Task], *, jobs: int = 1,
              desc: str = "", progress: bool = True,
              left: Callable[[Task], Task | None] | None = None,
              cluster: str | None = None) -> int:
    """Run ``func(*task)`` for every task not finished yet.

    Parameters
    ----------
    func
        A module-level function (worker processes pickle it by name). It writes its own
        results; its return value is ignored.
    tasks
        Argument tuples, one per task.
    jobs
        Worker processes; 1 runs the tasks inline, in order (also when only one is left:
        a pool would only add its start-up time).
    desc
        Label of the progress bar.
    progress
        Show a progress bar.
    left
        What is left of a task: ``None`` when it is finished (its results exist), else the
        argument tuple to run, possibly narrowed to the unfinished parts (the strategies of
        a run without a result file, say). Default: every task runs.
    cluster
        Run the tasks on a Dask cluster instead of local processes: ``"local:N"`` or a
        scheduler address (:mod:`elicit.harness.cluster`); ``jobs`` is then ignored. Inside a
        :func:`~elicit.harness.cluster.cluster_scope` the scope's cluster is used.

    Returns
    -------
    int
        The number of tasks run.

    Notes
    -----
    The first task to fail stops the runner with its exception; tasks finished before are
    kept, so a rerun continues from there.
    """
    todo = [t for t in (tasks if left is None else map(left, tasks)) if t is not None]
    if not todo:
        return 0
    from tqdm.auto import tqdm

    with tqdm(total=len(todo), desc=desc, disable=not progress) as bar:
        scoped = scoped_executor() if cluster is None else None
        if scoped is None and cluster is None and (jobs <= 1 or len(todo) == 1):
            for t in todo:
                func(*t)
                bar.update()
        else:
            with contextlib.ExitStack() as stack:
                # a scope's executor outlives this call; an own one is closed at its end
                pool = scoped or stack.enter_context(
                    task_executor(min(jobs, len(todo)), cluster))
                futures = [pool.submit(func, *t) for t in todo]
                try:
                    for fut in as_completed(futures):
                        fut.result()
                        bar.update()
                except BaseException:
                    # Report a failure (or Ctrl-C) once the running tasks end, without
                    # starting the queued ones first.
                    for fut in futures:
                        fut.cancel()
                    raise
    return len(todo)
