"""A content-addressed memo of JSON results on disk, shared by processes: a result is stored
once under the hash of its inputs, name and the code (:func:`code_salt`). A float goes
through JSON as its shortest repr, which reads back as the same float.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import os
from collections.abc import Callable, Mapping
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np

from elicit.internal.io import write_json_atomic


@functools.lru_cache(maxsize=1)
def code_salt() -> str:
    """The hex SHA-256 of elicit's ``.py`` and shipped ``.stan`` files (path and bytes) and
    the versions of numpy, scipy and scikit-learn."""
    pkg = Path(__file__).resolve().parents[1]
    files = sorted(pkg.rglob("*.py"))
    for folder in (pkg / "stan", pkg.parent / "stan"):
        files += sorted(folder.glob("*.stan")) if folder.is_dir() else []
    h = hashlib.sha256()
    for f in files:
        _feed(h, (f.relative_to(pkg.parent).as_posix(), np.frombuffer(f.read_bytes(), np.uint8)))
    for dist in ("numpy", "scipy", "scikit-learn"):
        try:
            _feed(h, (dist, metadata.version(dist)))
        except metadata.PackageNotFoundError:
            _feed(h, (dist, None))
    return h.hexdigest()


def memo_key(name: str, inputs: Mapping[str, Any]) -> str:
    """The hex SHA-256 of ``name``, ``inputs`` and :func:`code_salt`."""
    h = hashlib.sha256()
    _feed(h, (str(name), code_salt()))
    _feed(h, dict(inputs))
    return h.hexdigest()


def _feed(h: Any, value: Any) -> None:
    # Every value is written with a type tag and its length, so that no two different
    # inputs give the same byte stream (an int 1 and a float 1.0, ("ab",) and ("a", "b")).
    def put(tag: bytes, body: bytes) -> None:
        h.update(tag + len(body).to_bytes(8, "little") + body)

    if value is None or isinstance(value, (bool, np.bool_)):
        put(b"b", repr(None if value is None else bool(value)).encode())
    elif isinstance(value, (int, np.integer)):
        put(b"i", str(int(value)).encode())
    elif isinstance(value, (float, np.floating)):
        put(b"f", float(value).hex().encode())
    elif isinstance(value, str):
        put(b"s", value.encode())
    elif isinstance(value, np.ndarray):
        if value.dtype.hasobject:  # its bytes are pointers, not values
            raise TypeError("cannot hash an array of Python objects into a memo key")
        a = np.ascontiguousarray(value)
        put(b"a", f"{a.dtype.str}{a.shape}".encode())
        put(b"d", a.tobytes())
    elif isinstance(value, (tuple, list)):
        put(b"l", str(len(value)).encode())
        for v in value:
            _feed(h, v)
    elif isinstance(value, Mapping):
        put(b"m", str(len(value)).encode())
        for k in sorted(value, key=lambda k: (type(k).__name__, str(k))):
            _feed(h, k)     # with its type tag: {1: v} and {"1": v} differ
            _feed(h, value[k])
    else:
        raise TypeError(f"cannot hash a {type(value).__name__} into a memo key")


class Memo:
    """Results stored in ``folder`` (``<key[:2]>/<key>.json``) under :func:`memo_key` of
    their inputs; ``folder`` None: every call computes."""

    def __init__(self, folder: str | os.PathLike | None) -> None:
        self.folder = None if folder is None else Path(folder)

    def path(self, key: str) -> Path:
        assert self.folder is not None
        return self.folder / key[:2] / f"{key}.json"

    def __call__(self, name: str, inputs: Mapping[str, Any], compute: Callable[[], Any]) -> Any:
        """The stored result for ``inputs``, else ``compute()`` stored and returned as read
        back from JSON (a change of ``compute`` changes :func:`code_salt`)."""
        if self.folder is None:
            return compute()
        key = memo_key(name, inputs)
        path = self.path(key)
        # not stored yet (or unreadable: computed again and replaced)
        with contextlib.suppress(OSError, ValueError):
            entry = json.loads(path.read_text())
            if isinstance(entry, dict) and entry.get("key") == key and "value" in entry:
                return entry["value"]
        value = json.loads(json.dumps(compute()))
        # a folder that cannot be written: the result is still the computed one
        with contextlib.suppress(OSError):
            write_json_atomic(path, {"name": name, "key": key, "value": value})
        return value
