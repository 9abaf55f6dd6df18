"""Running the experiments' tasks on a Dask cluster gives what local processes give."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from helpers import assert_same_sweep

from elicit.errors import ElicitError
from elicit.harness.cluster import parse_cluster
from elicit.harness.runner import run_tasks
from elicit.internal.io import write_json_atomic

# the sweeps here are read by their tables: figures drawn, not saved (conftest)
pytestmark = pytest.mark.usefixtures("unsaved_figures")

distributed = pytest.importorskip("distributed")


def _tasks(out: Path, n: int = 6) -> list[tuple]:
    # write_json_atomic is importable on any worker: a task of the real runner's shape
    return [(out / f"run{r:03d}.json", {"run": r, "value": r * r}) for r in range(n)]


def _read(out: Path) -> dict[str, dict]:
    return {p.name: json.loads(p.read_text()) for p in sorted(out.glob("*.json"))}


def test_cluster_values_are_checked():
    assert parse_cluster(None) is None
    assert parse_cluster(" local:3 ") == "local:3"
    assert parse_cluster("tcp://127.0.0.1:8786") == "tcp://127.0.0.1:8786"
    with pytest.raises(ElicitError, match="local:N needs a positive number of workers"):
        parse_cluster("local:0")
    with pytest.raises(ElicitError, match="must be local:N or a Dask scheduler address"):
        parse_cluster("my-cluster")


@pytest.mark.slow
def test_a_local_cluster_runs_what_local_processes_run(tmp_path):
    local, dask = tmp_path / "local", tmp_path / "dask"
    assert run_tasks(write_json_atomic, _tasks(local), jobs=2, progress=False) == 6
    assert run_tasks(write_json_atomic, _tasks(dask), cluster="local:2", progress=False) == 6
    assert _read(local) == _read(dask) and len(_read(dask)) == 6
    # resumable: what exists is not run again
    def done(task):
        return None if Path(task[0]).exists() else task

    assert run_tasks(write_json_atomic, _tasks(dask, 8), cluster="local:2", progress=False,
                     left=done) == 2


def test_an_unreachable_scheduler_is_one_line(tmp_path, monkeypatch):
    # a refused connection is retried until the timeout: a second is enough to see the message
    monkeypatch.setattr("elicit.harness.cluster.CONNECT_TIMEOUT", "1s")
    with pytest.raises(ElicitError, match="cannot reach the Dask scheduler at tcp://127.0.0.1:9"):
        run_tasks(write_json_atomic, _tasks(tmp_path), cluster="tcp://127.0.0.1:9",
                  progress=False)


@pytest.fixture
def scheduler(tmp_path):
    """A scheduler and two single-threaded workers started by hand on loopback."""
    bin_dir = Path(sys.executable).parent
    dask_cli = bin_dir / "dask"
    if not dask_cli.exists():
        pytest.skip("the dask command is not installed beside this Python")
    sched_file = tmp_path / "scheduler.json"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(Path(__file__).resolve().parents[2]), os.environ.get("PYTHONPATH", "")])}
    procs = [subprocess.Popen([str(dask_cli), "scheduler", "--host", "127.0.0.1", "--port", "0",
                               "--no-dashboard", "--scheduler-file", str(sched_file)],
                              env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)]
    try:
        deadline = time.time() + 600  # a hang guard, not a speed limit
        while not sched_file.exists() and time.time() < deadline:
            time.sleep(0.2)
        address = json.loads(sched_file.read_text())["address"]
        procs.append(subprocess.Popen(
            [str(dask_cli), "worker", address, "--nworkers", "2", "--nthreads", "1",
             "--no-dashboard", "--local-directory", str(tmp_path / "workers")],
            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        from distributed import Client

        with Client(address, timeout="600s") as c:  # hang guards, not speed limits
            c.wait_for_workers(2, timeout=600)
        yield address
    finally:
        for p in reversed(procs):
            p.terminate()
        for p in procs:
            p.wait(timeout=600)


@pytest.mark.slow
def test_a_scheduler_started_by_hand_runs_the_synthetic_sweep_like_local_processes(
        scheduler, tmp_path):
    """The issue's check: the same mse.csv from --cluster tcp://... as from --jobs 2 (to
    rounding), and the same records of every run."""
    from elicit.cli.main import main

    common = ["synthetic", "--runs", "4", "--rounds", "10", "--seed", "5", "--quiet"]
    assert main(common + ["--jobs", "2", "--out", str(tmp_path / "local")]) == 0
    assert main(common + ["--cluster", scheduler, "--out", str(tmp_path / "dask")]) == 0
    # the same results to rounding (each is computed in other processes than the other)
    assert_same_sweep(tmp_path / "local", tmp_path / "dask")


@pytest.mark.slow
def test_a_local_cluster_scope_serves_every_step_of_a_pipeline(tmp_path):
    from elicit.harness.cluster import cluster_scope, scoped_executor

    with cluster_scope("local:1"):
        ex = scoped_executor()
        assert ex is not None
        run_tasks(write_json_atomic, _tasks(tmp_path / "a"), progress=False)
        run_tasks(write_json_atomic, _tasks(tmp_path / "b"), progress=False)
        assert scoped_executor() is ex
    assert scoped_executor() is None
    assert _read(tmp_path / "a") == _read(tmp_path / "b")
