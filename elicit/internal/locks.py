"""Inter-process locks, for work that two processes must not do at once (two builds of one
Stan program into a shared cache break each other: "Text file busy"; two sweeps into one folder)."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator
from pathlib import Path


def user_cache(name: str) -> Path:
    """``$XDG_CACHE_HOME/elicit/<name>`` (default ``~/.cache/elicit/<name>``)."""
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "elicit" / name


@contextlib.contextmanager
def file_lock(name: str, on_wait: Callable[[Path], None] | None = None) -> Iterator[Path]:
    """Hold an exclusive lock on ``user_cache("locks") / name`` for the ``with`` block;
    released when the block ends or the process dies (no stale lock). ``on_wait(path)`` is
    called once before blocking, if another holder makes this one wait."""
    path = user_cache("locks") / name
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


_HELD: dict[Path, int] = {}  # the folders this process holds, one open descriptor each


def hold_folder(folder: Path, hold: bool = True) -> bool:
    """Lock ``folder`` for this process, once (a second lock here would refuse this process),
    until it ends or lets go (``hold`` False); False if another process holds it. Windows
    cannot open a folder: not locked."""
    if not hold and (key := folder.resolve()) in _HELD:
        os.close(_HELD.pop(key))
    elif hold and (key := folder.resolve()) not in _HELD and os.name != "nt":
        _HELD[key] = os.open(key, os.O_RDONLY)
        if not _lock(_HELD[key], blocking=False):
            os.close(_HELD.pop(key))
            return False
    return True


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
