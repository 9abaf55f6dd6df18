"""An inter-process file lock, for work that two processes must not do at once.

Stan programs are compiled into caches shared by every process of a user (CmdStan's
executable beside the cached ``.stan`` file, httpstan's ``~/.cache/httpstan``). Two processes
that compile the same program at once (two sweep workers, two test processes) break each
other's build ("Text file busy", a missing ``stderr.log``). Holding an exclusive lock on a
file named after the program makes the second process wait and then reuse the first one's
build.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path


def lock_dir() -> Path:
    """``$XDG_CACHE_HOME/elicit/locks`` (default ``~/.cache/elicit/locks``)."""
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "elicit" / "locks"


@contextlib.contextmanager
def file_lock(name: str) -> Iterator[Path]:
    """Hold an exclusive lock on ``lock_dir() / name`` (blocking) for the ``with`` block.

    The lock is released when the block ends or the process dies (the operating system
    drops it with the file descriptor), so a killed build never leaves a stale lock.
    """
    path = lock_dir() / name
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        _lock(fd)
        yield path
    finally:
        os.close(fd)  # closing the descriptor releases the lock


def _lock(fd: int) -> None:
    try:
        import fcntl
    except ImportError:  # Windows
        import msvcrt

        msvcrt.locking(fd, msvcrt.LK_LOCK, 1)  # type: ignore[attr-defined]
        return
    fcntl.flock(fd, fcntl.LOCK_EX)
