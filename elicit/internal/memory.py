"""How much memory this process may use (to refuse, in one line and up front, a problem whose
arrays cannot fit), and its peak resident size.
"""

from __future__ import annotations

import contextlib
import functools
import os
from pathlib import Path

# cgroup v2 and v1 files holding a container's memory limit ("max" or a huge number: none).
_CGROUP_LIMITS = ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes")


@functools.lru_cache(maxsize=1)
def memory_limit() -> int | None:
    """The memory this process may use, in bytes: the machine's physical memory, or its
    container's limit when that is lower; None when neither can be read."""
    total: int | None = None
    with contextlib.suppress(AttributeError, OSError, ValueError):
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    for name in _CGROUP_LIMITS:
        with contextlib.suppress(OSError):
            text = Path(name).read_text().strip()
            if text.isdigit() and (total is None or int(text) < total):
                total = int(text)
    return total if total else None


def peak_rss_mb() -> float:
    """This process's peak resident set size in MB, since :func:`reset_peak_rss` where that
    worked (Linux), else since the process started."""
    with contextlib.suppress(OSError), open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return float(line.split()[1]) / 1024.0
    import resource
    import sys

    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    # Linux reports kilobytes, macOS bytes.
    return float(peak) / (1024.0**2 if sys.platform == "darwin" else 1024.0)


def reset_peak_rss() -> bool:
    """Start :func:`peak_rss_mb` afresh (Linux); False where the peak cannot be reset."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False
