"""Where a result or measurement was made (the code and the machine), so that figures of
different code and machines are told apart.
"""

from __future__ import annotations

import contextlib
import functools
import os
import platform
import subprocess
from pathlib import Path

from elicit.internal.memo import code_salt


@functools.lru_cache(maxsize=1)
def code_version() -> str:
    """The code this process runs (asked once, at import: whatever the checkout becomes later),
    as records and measurements name it: the checkout's commit (``abc1234567``), else
    ``abc1234567+changes`` (elicit/, stan/, experiments/ or pyproject.toml differ from it) or
    ``elicit`` (no git checkout of elicit: an installed copy, even inside a project's checkout),
    then ``+`` the start of :func:`code_salt`."""
    root = Path(__file__).resolve().parents[2]

    def git(*a: str) -> str:
        return subprocess.run(["git", "-C", str(root), "--git-dir=.git", *a], text=True,
                              capture_output=True, check=True).stdout.strip()

    try:
        head = git("rev-parse", "--short=10", "HEAD")
        dirty = git("status", "--porcelain", "--", "elicit", "stan", "experiments",
                    "pyproject.toml")
    except (OSError, subprocess.CalledProcessError):
        return f"elicit+{code_salt()[:10]}"
    return head + (f"+changes+{code_salt()[:10]}" if dirty else "")


code_version()  # at import (above)


def machine_info() -> dict:
    """The machine: CPU model, logical cores, operating system and Python version."""
    cpu = platform.processor() or platform.machine()
    with contextlib.suppress(OSError), open("/proc/cpuinfo") as f:
        cpu = next((line.split(":", 1)[1].strip() for line in f
                    if line.startswith("model name")), cpu)
    return {"cpu": cpu, "cores": os.cpu_count(), "system": platform.platform(terse=True),
            "python": platform.python_version()}
