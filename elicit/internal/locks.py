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
from collections.abc import Callable, Iterator
from pathlib import Path


def lock_dir() -> Path:
    """``$XDG_CACHE_HOME/elicit/locks`` (default ``~/.cache/elicit/locks``)."""
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "elicit" / "locks"


@contextlib.contextmanager
def file_lock(name: str, on_wait: Callable[[Path], None] | None = None) -> Iterator[Path]:
    """Hold an exclusive lock on ``lock_dir() / name`` (blocking) for the ``with`` block.

    The lock is released when the block ends or the process dies (the operating system
    drops it with the file descriptor), so a killed build never leaves a stale lock.
    ``on_wait(path)`` is called once, before blocking, if another holder makes this one wait
    (to tell the user why nothing happens).
    """
    path = lock_dir() / name
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        if not _lock(fd, blocking=False):
            if on_wait is not None:
                on_wait(path)
            _lock(fd, blocking=True)
        yield path
    finally:
        os.close(fd)  # closing the descriptor releases the lock


def _lock(fd: int, blocking: bool) -> bool:
    """Lock ``fd``; without ``blocking``, return False at once if another holder has it."""
    try:
        import fcntl
    except ImportError:  # Windows
        import msvcrt

        mode = msvcrt.LK_LOCK if blocking else msvcrt.LK_NBLCK  # type: ignore[attr-defined]
        try:
            msvcrt.locking(fd, mode, 1)  # type: ignore[attr-defined]
        except OSError:
            if blocking:
                raise
            return False
        return True
    try:
        fcntl.flock(fd, fcntl.LOCK_EX if blocking else fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True
