"""One parallel, resumable task runner for the experiments: every long computation is a list
of independent tasks, one per run, each writing its result files atomically, so the outcome
depends neither on ``jobs`` nor on how many earlier passes were interrupted.
"""

from __future__ import annotations

import contextlib
import resource
import threading
import time
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, CancelledError, Future, ThreadPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from contextvars import ContextVar, copy_context
from dataclasses import dataclass
from typing import Any, TypeVar

from elicit.errors import ElicitError
from elicit.harness.cluster import scoped_executor, task_executor

Task = TypeVar("Task", bound=tuple)
T = TypeVar("T")


@dataclass
class CpuMeter:
    """CPU time of one piece of work, by its thread and by the workers running its tasks."""

    thread: float = 0.0
    tasks: float = 0.0


_METER: ContextVar[CpuMeter | None] = ContextVar("elicit_cpu_meter", default=None)
#: Set when the pipeline an item runs in stops (:func:`run_pipeline`).
_STOP: ContextVar[threading.Event | None] = ContextVar("elicit_pipeline_stop", default=None)
#: How often (seconds) a pipeline's item looks at that flag while it waits for its tasks.
STOP_POLL_S = 0.5


@contextlib.contextmanager
def cpu_meter() -> Iterator[CpuMeter]:
    """Measure the CPU time of the block: this thread's, and that of every task
    :func:`run_tasks` sends to worker processes inside it (unlike the rusage of a process's
    children, known while a shared pool's workers live on, and per thread)."""
    meter = CpuMeter()
    token = _METER.set(meter)
    t0 = time.thread_time()
    try:
        yield meter
    finally:
        meter.thread += time.thread_time() - t0
        _METER.reset(token)


def _metered(func: Callable[..., Any], *args: Any) -> float:
    t0 = resource.getrusage(resource.RUSAGE_SELF)
    func(*args)
    t1 = resource.getrusage(resource.RUSAGE_SELF)
    return (t1.ru_utime + t1.ru_stime) - (t0.ru_utime + t0.ru_stime)


def run_tasks(func: Callable[..., Any], tasks: Iterable[Task], *, jobs: int = 1,
              desc: str = "", progress: bool = True,
              left: Callable[[Task], Task | None] | None = None,
              cluster: str | None = None) -> int:
    """Run ``func(*task)`` for every task not finished yet; return how many ran.

    ``func`` is a module-level function (worker processes pickle it by name) that writes its
    own results; ``left(task)`` is None for a finished task, else the (possibly narrowed)
    arguments to run. ``jobs`` worker processes run them (1, or one task left: inline), or
    ``cluster``, or an enclosing :func:`~elicit.harness.cluster.cluster_scope`'s executor. The
    first task to fail stops the runner with its exception.
    """
    if not (todo := [t for t in (tasks if left is None else map(left, tasks)) if t is not None]):
        return 0
    from tqdm.auto import tqdm

    stop = _STOP.get()
    with tqdm(total=len(todo), desc=desc, disable=not progress) as bar:
        scoped = scoped_executor() if cluster is None else None
        if scoped is None and cluster is None and (jobs <= 1 or len(todo) == 1):
            for t in todo:
                _check(stop)
                func(*t)
                bar.update()
        else:
            # a scope's executor outlives this call; an own one is closed at its end
            with (contextlib.nullcontext(scoped) if scoped
                  else task_executor(min(jobs, len(todo)), cluster)) as pool:
                futures = [pool.submit(_metered, func, *t) for t in todo]
                meter = _METER.get()
                try:
                    pending = set(futures)
                    while pending:
                        # inside a pipeline, wake up to look at its stop flag: after Ctrl-C a
                        # worker can die under a pool already shut down, and its future then
                        # never ends
                        finished, pending = wait(
                            pending, timeout=None if stop is None else STOP_POLL_S,
                            return_when=FIRST_COMPLETED)
                        for fut in finished:
                            try:
                                cpu = fut.result()
                            except BrokenProcessPool:
                                raise ElicitError(
                                    "a worker process died (killed, or out of memory?); the "
                                    "finished runs are kept: run the same command again to go "
                                    "on") from None
                            if meter is not None:
                                meter.tasks += cpu
                            bar.update()
                        _check(stop)
                except BaseException:
                    # report a failure (or Ctrl-C) once the running tasks end, without
                    # starting the queued ones first
                    for fut in futures:
                        fut.cancel()
                    raise
    return len(todo)


def _check(stop: threading.Event | None) -> None:
    if stop is not None and stop.is_set():
        raise CancelledError("the pipeline stopped (another item failed or was interrupted)")


def run_pipeline(items: Sequence[str], func: Callable[[str], T], *, width: int = 1,
                 after: Mapping[str, Collection[str]] | None = None,
                 done: Callable[[str, T, float, float], None] | None = None,
                 ) -> dict[str, T]:
    """Run ``func(item)`` for every item in order, up to ``width`` at a time in threads (1: in
    this thread); return ``item -> func(item)`` in the order the items ended.

    Each item runs with a copy of the caller's context, so its tasks go to the enclosing
    :func:`~elicit.harness.cluster.cluster_scope`'s executor and ``width`` items keep one pool
    busy. ``after`` maps an item to the items it must wait for (what it reads from them or
    shares through a memo). ``done(item, result, wall, cpu)`` is called in the caller's
    thread as each item ends. The first item to fail (or Ctrl-C) ends the pipeline: no other
    item starts, the running ones cancel their queued tasks, and its exception is raised.
    """
    after = {k: [d for d in after.get(k, ()) if d in items] for k in items} if after else {}
    results: dict[str, T] = {}

    def one(item: str) -> tuple[T, float, float]:
        t0 = time.perf_counter()
        with cpu_meter() as m:
            r = func(item)
        return r, time.perf_counter() - t0, m.thread + m.tasks

    def ended(item: str, r: T, wall: float, cpu: float) -> None:
        results[item] = r
        if done is not None:
            done(item, r, wall, cpu)

    if width <= 1:
        for item in items:
            ended(item, *one(item))
        return results
    waiting = list(items)
    running: dict[Future, str] = {}
    stop = threading.Event()
    token = _STOP.set(stop)    # in the context each item's thread copies
    try:
        with ThreadPoolExecutor(max_workers=width, thread_name_prefix="elicit-step") as threads:
            try:
                while waiting or running:
                    ready = [k for k in waiting if all(d in results for d in after.get(k, ()))]
                    for item in ready[:width - len(running)]:
                        waiting.remove(item)
                        running[threads.submit(copy_context().run, one, item)] = item
                    if not running:  # cannot happen with acyclic ``after``; never hang
                        raise RuntimeError(f"run_pipeline: {waiting} wait for each other")
                    finished, _ = wait(list(running), return_when=FIRST_COMPLETED)
                    for fut in finished:
                        ended(running.pop(fut), *fut.result())
            except BaseException:
                # The other items stop waiting at their next look at the flag and cancel
                # their queued tasks; the pool is not shut down here, so that a worker's death
                # still ends its task's future.
                stop.set()
                raise
    finally:
        _STOP.reset(token)
    return results
