"""Atomic file writes.

Resumable experiments skip every task whose result file exists, so a result file must
never exist half-written: a process killed mid-write (Ctrl-C, an out-of-memory kill, a
crashed worker) would otherwise leave a truncated file that the next pass takes for a
finished result. Each write here goes to a temporary file in the target's folder, is flushed
to disk and then renamed over the target; a rename within one file system is atomic, so
readers see the old file or the new one, never a mix.
"""

from __future__ import annotations

import json
import os
import secrets
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any


def replace_atomic(path: str | os.PathLike, write: Callable[[IO[bytes]], Any]) -> Path:
    """Create or replace ``path`` with what ``write`` writes, atomically.

    Parameters
    ----------
    path
        The file to create or replace; its folder is created if missing.
    write
        Called with a binary file object open on a temporary file in the same folder (a
        rename is atomic only within one file system).

    Returns
    -------
    Path
        ``path``.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    # A unique temporary name: two writers of the same target (e.g. two worker processes)
    # must not share one temporary file. Not tempfile.mkstemp: its files are private (0600)
    # and the result would keep that mode; "x" creates with the usual umask-based mode.
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
    try:
        with open(tmp, "xb") as fh:
            write(fh)
            fh.flush()
            # Without fsync the rename can reach the disk before the data does, and a power
            # loss would leave an empty file under the final name.
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        # Also on KeyboardInterrupt: never leave the temporary file behind.
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
    return path


def write_bytes_atomic(path: str | os.PathLike, data: bytes) -> Path:
    """Create or replace ``path`` with ``data``, atomically (see :func:`replace_atomic`)."""
    return replace_atomic(path, lambda fh: fh.write(data))


def write_text_atomic(path: str | os.PathLike, text: str, encoding: str = "utf-8") -> Path:
    """Create or replace ``path`` with ``text``, atomically (see :func:`replace_atomic`)."""
    return write_bytes_atomic(path, text.encode(encoding))


def write_json_atomic(path: str | os.PathLike, obj: Any, **dumps_kw: Any) -> Path:
    """Create or replace ``path`` with ``json.dumps(obj, **dumps_kw)``, atomically."""
    return write_text_atomic(path, json.dumps(obj, **dumps_kw))
