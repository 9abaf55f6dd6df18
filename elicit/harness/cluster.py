"""Where the experiments' tasks run (``docs/scaling.md``): ``jobs`` local worker processes,
a Dask ``LocalCluster`` started here (``"local:N"``) or an existing Dask scheduler.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
import time
from collections.abc import Iterator
from concurrent.futures import Executor, ProcessPoolExecutor
from contextvars import ContextVar

from elicit.errors import ElicitError

#: Resubmissions of a task that raised on a cluster (a worker killed by its host's memory
#: limit, say); a deterministic error fails every attempt and then stops the sweep.
RETRIES = 2

_SCOPE: ContextVar[Executor | None] = ContextVar("elicit_cluster_scope", default=None)


def parse_cluster(text: str | None) -> str | None:
    """Check a ``--cluster`` value: ``None``, ``local:N`` (N >= 1) or a scheduler address."""
    if text is None:
        return None
    text = text.strip()
    if text.startswith("local:"):
        n = text.removeprefix("local:")
        if not n.isdigit() or int(n) < 1:
            raise ElicitError(f"--cluster local:N needs a positive number of workers, got "
                              f"{text!r} (for example local:2)")
        return f"local:{int(n)}"
    if "://" not in text:
        raise ElicitError(f"--cluster must be local:N or a Dask scheduler address such as "
                          f"tcp://127.0.0.1:8786, got {text!r}")
    return text


#: how long Dask keeps trying to reach a scheduler before the one-line error
CONNECT_TIMEOUT = "20s"


def _end_with_parent(parent: int) -> None:
    """In a worker: exit when the sweep that started it is gone (killed: no Ctrl-C path ran),
    instead of computing its queued runs and then idling for good."""
    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(0.5)
        os._exit(1)

    threading.Thread(target=watch, daemon=True).start()


@contextlib.contextmanager
def task_executor(jobs: int, cluster: str | None = None) -> Iterator[Executor]:
    """An executor for the runner's tasks (see the module docstring); closed on exit."""
    cluster = parse_cluster(cluster)
    if cluster is None:
        with ProcessPoolExecutor(max_workers=jobs, initializer=_end_with_parent,
                                 initargs=(os.getpid(),)) as pool:
            yield pool
        return
    try:
        from distributed import Client, LocalCluster
    except ImportError:
        raise ElicitError("--cluster needs Dask's distributed package: "
                          "pip install 'dask[distributed]'") from None
    # Dask logs every worker start and stop at INFO; keep its warnings and errors.
    logging.getLogger("distributed").setLevel(logging.WARNING)
    with contextlib.ExitStack() as stack:
        if cluster.startswith("local:"):
            n = int(cluster.removeprefix("local:"))
            # One thread per worker: the tasks limit BLAS to one thread and hold the GIL.
            local = stack.enter_context(LocalCluster(
                n_workers=n, threads_per_worker=1, processes=True, dashboard_address=None))
            client = stack.enter_context(Client(local))
        else:
            try:
                client = stack.enter_context(Client(cluster, timeout=CONNECT_TIMEOUT))
            except (OSError, TimeoutError) as exc:
                raise ElicitError(f"cannot reach the Dask scheduler at {cluster} ({exc}); "
                                  "start it (dask scheduler) or check the address") from None
        yield client.get_executor(retries=RETRIES, pure=False)


@contextlib.contextmanager
def cluster_scope(cluster: str | None, jobs: int = 1) -> Iterator[None]:
    """Run every :func:`~elicit.harness.runner.run_tasks` call inside the block on one
    executor: ``cluster``, or with ``cluster`` None and ``jobs`` > 1 a pool of ``jobs`` local
    worker processes (shared by the steps of a pipeline). ``None`` with ``jobs`` 1 changes
    nothing: an enclosing scope stays in force."""
    if parse_cluster(cluster) is None and jobs <= 1:
        yield
        return
    with task_executor(jobs, cluster) as executor:
        if isinstance(executor, ProcessPoolExecutor):
            # fork the workers now, from this thread: a fork while a pipeline's other
            # threads hold locks could copy a held lock into the worker
            executor.submit(int).result()
        token = _SCOPE.set(executor)
        try:
            yield
        finally:
            _SCOPE.reset(token)


def scoped_executor() -> Executor | None:
    """The executor of the enclosing :func:`cluster_scope`, if any."""
    return _SCOPE.get()
