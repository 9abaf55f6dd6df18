"""Where a measurement was made (the source commit and the machine), so that figures of
different commits and machines are told apart.
"""

from __future__ import annotations

import contextlib
import os
import platform
import subprocess
from pathlib import Path


def source_commit() -> str | None:
    """The commit of the checkout holding this package (``abc1234``, ``abc1234+changes`` when
    the code differs from it: elicit/, stan/, experiments/, pyproject.toml), or None outside
    a git checkout of elicit (installed into a project's checkout: not that project's)."""
    root = Path(__file__).resolve().parents[2]

    def git(*a: str) -> str:
        return subprocess.run(["git", "-C", str(root), "--git-dir=.git", *a], text=True,
                              capture_output=True, check=True).stdout.strip()

    try:
        head = git("rev-parse", "--short=10", "HEAD")
        dirty = git("status", "--porcelain", "--", "elicit", "stan", "experiments",
                    "pyproject.toml")
    except (OSError, subprocess.CalledProcessError):
        return None
    return head + ("+changes" if dirty else "")


def machine_info() -> dict:
    """The machine: CPU model, logical cores, operating system and Python version."""
    cpu = platform.processor() or platform.machine()
    with contextlib.suppress(OSError), open("/proc/cpuinfo") as f:
        cpu = next((line.split(":", 1)[1].strip() for line in f
                    if line.startswith("model name")), cpu)
    return {"cpu": cpu, "cores": os.cpu_count(), "system": platform.platform(terse=True),
            "python": platform.python_version()}
