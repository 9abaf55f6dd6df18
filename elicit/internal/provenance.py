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
    """The code this process runs (asked once: it runs the code it imported), as its records
    and measurements name it: the commit of the checkout holding this package
    (``abc1234567``) or, where that does not pin the code, ``abc1234567+changes`` (the code
    differs from it: elicit/, stan/, experiments/, pyproject.toml) or ``elicit`` (no git
    checkout of elicit; installed into a project's checkout: not that project's), then ``+``
    the start of :func:`code_salt`, the hash of elicit's source and numerical libraries."""
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


def machine_info() -> dict:
    """The machine: CPU model, logical cores, operating system and Python version."""
    cpu = platform.processor() or platform.machine()
    with contextlib.suppress(OSError), open("/proc/cpuinfo") as f:
        cpu = next((line.split(":", 1)[1].strip() for line in f
                    if line.startswith("model name")), cpu)
    return {"cpu": cpu, "cores": os.cpu_count(), "system": platform.platform(terse=True),
            "python": platform.python_version()}
