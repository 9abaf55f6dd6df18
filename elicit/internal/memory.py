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
    """The memory this process may use, in bytes: the least of the machine's physical memory,
    its address-space limit (``ulimit -v``) and its container's; None when none can be read."""
    found = []
    with contextlib.suppress(AttributeError, OSError, ValueError):
        found.append(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))
    with contextlib.suppress(ImportError, OSError):  # no resource module on Windows
        import resource
        found.append(resource.getrlimit(resource.RLIMIT_AS)[0])  # unlimited: -1 on Linux
    for name in _CGROUP_LIMITS:
        with contextlib.suppress(OSError, ValueError):  # "max": no limit
            found.append(int(Path(name).read_text()))
    return min((v for v in found if v > 0), default=None)


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
