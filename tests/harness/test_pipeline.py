"""Steps side by side on one pool of workers (``run_pipeline``, ``cpu_meter``) and the
reproduction's use of them (``elicit.paper.steps.run_steps``)."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pandas as pd
import pytest
from conftest import REAL_DATA_DIR, needs_data

from elicit.errors import ElicitError
from elicit.harness.cluster import cluster_scope, scoped_executor
from elicit.harness.runner import cpu_meter, run_pipeline, run_tasks

#: Long enough that nothing in the test waits that long unless the pipeline is broken; not a
#: time limit on the machine (a busy machine only makes the waits shorter than this).
NEVER = 120.0


def burn(cpu_s: float, path: Path) -> None:
    """A task that takes ``cpu_s`` of its own thread's CPU time (not wall time: the same on a
    busy machine; not the process's, which other threads of the process add to) and writes
    ``path``."""
    t0 = time.thread_time()
    x = 0
    while time.thread_time() - t0 < cpu_s:
        x += 1
    path.write_text(str(x))


def test_items_run_side_by_side_each_after_the_ones_it_waits_for():
    log: list[str] = []
    lock = threading.Lock()
    b_started = threading.Event()

    def work(item: str) -> str:
        with lock:
            log.append(f"start {item}")
        if item == "b":
            b_started.set()
        if item == "a":
            # ends only once b runs beside it: with one item at a time this would wait
            assert b_started.wait(NEVER), "b never ran beside a"
        with lock:
            log.append(f"end {item}")
        return item.upper()

    ended: list[tuple[str, str, str]] = []
    got = run_pipeline(["a", "b", "c"], work, width=2, after={"c": ["a"]},
                       done=lambda k, r, wall, cpu: ended.append(
                           (k, r, threading.current_thread().name)))
    assert got == {k: k.upper() for k in ("a", "b", "c")}
    # c waited for a; b ran beside a
    assert log.index("start c") > log.index("end a")
    assert log.index("start b") < log.index("end a")
    # done is called in the caller's thread, once per item
    assert sorted(k for k, _, _ in ended) == ["a", "b", "c"]
    assert {t for _, _, t in ended} == {threading.current_thread().name}


def test_one_at_a_time_runs_in_order_in_the_callers_thread():
    seen = []
    got = run_pipeline(["x", "y"], lambda k: seen.append((k, threading.current_thread()))
                       or k, width=1)
    assert list(got) == ["x", "y"]
    assert [k for k, _ in seen] == ["x", "y"]
    assert all(t is threading.current_thread() for _, t in seen)


def test_the_first_failure_stops_the_pipeline_and_is_raised():
    started = []

    def work(item: str) -> str:
        started.append(item)
        if item == "b":
            raise ElicitError("b went wrong")
        return item

    with pytest.raises(ElicitError, match="b went wrong"):
        run_pipeline(["a", "b", "c", "d"], work, width=2, after={"c": ["b"], "d": ["b"]})
    # c and d waited for b, which failed: they never started
    assert sorted(started) == ["a", "b"]


def wait_for(marker: Path, started: Path, out: Path, limit_s: float) -> None:
    """A task that says it started, waits until ``marker`` exists (at most ``limit_s``),
    then writes ``out``."""
    started.touch()
    t0 = time.monotonic()
    while not marker.exists() and time.monotonic() - t0 < limit_s:
        time.sleep(0.05)
    out.write_text("done")


def _wait_file(path: Path) -> None:
    t0 = time.monotonic()
    while not path.exists():
        assert time.monotonic() - t0 < NEVER, f"{path.name} never appeared"
        time.sleep(0.05)


def test_a_failure_does_not_wait_for_the_other_items_tasks(tmp_path):
    """An item fails while another one waits for a task that runs on: the pipeline raises at
    once (the other item stops waiting; Ctrl-C takes the same path), not after that task."""
    marker, started, out = tmp_path / "go", tmp_path / "started", tmp_path / "out"

    def work(item: str) -> None:
        if item == "slow":
            run_tasks(wait_for, [(marker, started, out, NEVER)], jobs=2, progress=False)
        else:
            _wait_file(started)          # the slow item's task runs in a worker
            raise ElicitError("this item failed")

    with cluster_scope(None, jobs=2):
        try:
            with pytest.raises(ElicitError, match="this item failed"):
                run_pipeline(["slow", "fail"], work, width=2)
            # raised while the task still waited: the pipeline did not wait for it
            assert not out.exists()
        finally:
            marker.touch()               # the task ends, so the pool can close
    # a running task is not killed: it ends and keeps its result (the pool, shut down
    # without waiting, lets it finish)
    _wait_file(out)
    assert out.read_text() == "done"


def test_a_step_that_waits_for_itself_is_refused_not_hung():
    with pytest.raises(RuntimeError, match="wait for each other"):
        run_pipeline(["a", "b"], lambda k: k, width=2, after={"a": ["b"], "b": ["a"]})


def test_cpu_meter_counts_the_tasks_in_the_workers_of_each_item_apart(tmp_path):
    """Two items share one pool: each one's CPU time is its own tasks' (measured in the
    workers, while the pool lives on), not the other's and not the pool's."""
    def work(item: str) -> float:
        cpu_s = {"heavy": 0.08, "light": 0.01}[item]
        run_tasks(burn, [(cpu_s, tmp_path / f"{item}{k}") for k in range(3)], jobs=2,
                  progress=False)
        return cpu_s

    cpus: dict[str, float] = {}
    with cluster_scope(None, jobs=2):
        pool = scoped_executor()
        assert pool is not None
        run_pipeline(["heavy", "light"], work, width=2,
                     done=lambda k, r, wall, cpu: cpus.__setitem__(k, cpu))
        assert scoped_executor() is pool      # one pool served both items
    assert scoped_executor() is None
    assert len(list(tmp_path.iterdir())) == 6
    # each task burns at least its CPU time, by construction; the light item's three tasks
    # (0.03 s together) are far from the heavy one's 0.24 s
    assert cpus["heavy"] >= 3 * 0.08
    assert cpus["light"] < 3 * 0.08


def test_cpu_meter_without_workers_is_the_threads_own_time(tmp_path):
    with cpu_meter() as m:
        run_tasks(burn, [(0.05, tmp_path / "a"), (0.05, tmp_path / "b")], jobs=1,
                  progress=False)
    assert m.tasks == 0.0            # inline: no worker's time to add
    assert m.thread >= 0.1


def test_step_after_names_what_each_step_reads_or_shares():
    from elicit.paper.steps import STEPS, step_after

    assert step_after("table1") == ("amazon", "yelp")
    assert step_after("amazon-mixed") == ("amazon",)
    assert step_after("kitchen-mixed") == ("kitchen",)
    assert step_after("yelp-paper") == ("yelp",)
    assert step_after("synthetic") == ()
    # every step waits only for steps that run before it in a reproduction
    for step in STEPS:
        assert all(STEPS.index(d) < STEPS.index(step) for d in step_after(step))
    with pytest.raises(ElicitError, match="unknown step 'amazn'"):
        step_after("amazn")


@needs_data
@pytest.mark.slow
def test_steps_side_by_side_make_what_they_make_one_after_the_other(tmp_path):
    """The same rows in every ``mse.csv`` whether the steps run one after the other inline
    or two at a time on a shared pool of two workers (each task's streams derive from the
    seed and its run)."""
    from elicit.paper.steps import StepSettings, run_steps

    todo = ["synthetic", "yelp", "yelp-mixed"]
    for jobs, name in ((1, "inline"), (2, "pool")):
        s = StepSettings(runs=2, real_runs=2, rounds=3, mixed_runs=2, mixed_rounds=3,
                         jobs=jobs, data_dir=REAL_DATA_DIR, memo=tmp_path / name / ".memo")
        ended: list[str] = []
        run_steps(todo, tmp_path / name, s, progress=False,
                  done=lambda step, summary, wall, cpu, seen=ended: seen.append(step))
        assert sorted(ended) == sorted(todo)
    for step in todo:
        a = pd.read_csv(tmp_path / "inline" / step / "mse.csv")
        b = pd.read_csv(tmp_path / "pool" / step / "mse.csv")
        pd.testing.assert_frame_equal(a, b, check_exact=True)


def test_a_worker_that_dies_ends_the_run_with_one_line_not_a_traceback():
    """A worker killed mid-task (the out-of-memory killer, say) broke the pool, and the sweep
    ended in a 25-line BrokenProcessPool traceback."""
    import os

    with pytest.raises(ElicitError, match="^a worker process died .* run the same command "
                                          "again to go on$"):
        run_tasks(os._exit, [(1,), (1,)], jobs=2, progress=False)


@pytest.mark.slow
def test_the_workers_of_a_killed_sweep_stop_with_it(tmp_path):
    """SIGKILL (or SIGTERM) of a --jobs 2 sweep left its workers computing the queued runs
    and then idle for good."""
    import os
    import signal
    import subprocess
    import sys

    out = tmp_path / "out"
    proc = subprocess.Popen([sys.executable, "-m", "elicit", "synthetic", "--runs",
                             "6", "--rounds", "10", "--out", str(out), "--jobs", "2", "--quiet"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    workers: set[int] = set()
    while len(workers) < 2 and proc.poll() is None:
        time.sleep(0.05)
        found = subprocess.run(["ps", "-o", "pid=", "--ppid", str(proc.pid)],
                               capture_output=True, text=True).stdout.split()
        workers = {int(w) for w in found}
    assert proc.poll() is None, "the sweep ended before it could be killed"
    proc.send_signal(signal.SIGKILL)
    proc.wait()

    def alive() -> set[int]:
        left = set()
        for w in workers:
            try:
                os.kill(w, 0)
            except ProcessLookupError:
                continue
            state = Path(f"/proc/{w}/stat").read_text().split(")")[-1].split()[0]
            if state != "Z":             # a zombie has ended; only its entry is left
                left.add(w)
        return left

    # the workers look at their parent twice a second; a minute allows for a busy machine
    for _ in range(600):
        if not alive():
            break
        time.sleep(0.1)
    left = alive()
    for w in left:
        os.kill(w, signal.SIGKILL)
    assert not left, f"workers {sorted(left)} outlived their killed sweep"
