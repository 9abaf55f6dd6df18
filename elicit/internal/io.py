"""Atomic file writes: resumable experiments skip every task whose result file exists, so a
result file must never exist half-written. Each write goes to a temporary file in the
target's folder, is flushed to disk and renamed over the target (atomic in one file system).
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any


def replace_atomic(path: str | os.PathLike, write: Callable[[IO[bytes]], Any]) -> Path:
    """Create or replace ``path`` (its folder made if missing) with what ``write`` writes to
    a binary temporary file in the same folder, atomically; returns ``path``."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    # Unique per writer; not tempfile.mkstemp, whose files are private (0600) and the result
    # would keep that mode; "x" creates with the umask's.
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
    try:
        with open(tmp, "xb") as fh:
            write(fh)
            fh.flush()
            # else the rename can reach the disk before the data (an empty file on power loss)
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    return path


def write_bytes_atomic(path: str | os.PathLike, data: bytes) -> Path:
    """Create or replace ``path`` with ``data``, atomically."""
    return replace_atomic(path, lambda fh: fh.write(data))


def write_text_atomic(path: str | os.PathLike, text: str) -> Path:
    """Create or replace ``path`` with ``text`` (UTF-8), atomically."""
    return write_bytes_atomic(path, text.encode("utf-8"))


def write_json_atomic(path: str | os.PathLike, obj: Any, **dumps_kw: Any) -> Path:
    """Create or replace ``path`` with ``json.dumps(obj, **dumps_kw)``, atomically."""
    return write_text_atomic(path, json.dumps(obj, **dumps_kw))
