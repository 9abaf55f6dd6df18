"""How much memory this process may use: the machine's, or a lower limit of its container.

Used to refuse, in one line and up front, a problem whose arrays cannot fit, instead of a
``MemoryError`` traceback minutes into a run.
"""

from __future__ import annotations

import functools
import os
from pathlib import Path

# cgroup v2 and v1 files holding a container's memory limit ("max" or a huge number: none).
_CGROUP_LIMITS = ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes")


@functools.lru_cache(maxsize=1)
def memory_limit() -> int | None:
    """The memory this process may use, in bytes: the machine's physical memory, or its
    container's limit when that is lower; None when neither can be read."""
    try:
        total: int | None = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, OSError, ValueError):
        total = None
    for name in _CGROUP_LIMITS:
        try:
            text = Path(name).read_text().strip()
        except OSError:
            continue
        if text.isdigit() and (total is None or int(text) < total):
            total = int(text)
    return total if total else None
