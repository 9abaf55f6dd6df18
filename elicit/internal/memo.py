"""A content-addressed memo of JSON results on disk, shared by processes.

Several experiments of one reproduction compute the same thing for the same run: the
regression baselines of a run depend only on its standardised data, not on the model or the
questions of the sweep, so the Amazon sweeps with the paper's pairs, the recommended
configuration and feature questions would each fit them again. A :class:`Memo` stores such a
result once under the hash of exactly its inputs (arrays by dtype, shape and bytes; numbers,
strings and their containers by value) and of its name and version, and hands it back to any
later computation with the same inputs, in this process or another.

Results are JSON (numbers, strings, lists, dicts with string keys): a float goes through JSON
as its shortest repr, which reads back as the same float, so a memoised result is the
computed one to the last bit. Each entry is written to a temporary file and renamed into
place (:func:`elicit.internal.io.write_json_atomic`), so worker processes computing the same
entry at once both write a whole file and a reader never sees half of one; an unreadable
entry counts as a miss.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from elicit.internal.io import write_json_atomic


def memo_key(name: str, version: int, inputs: Mapping[str, Any]) -> str:
    """The hex SHA-256 of ``name``, ``version`` and ``inputs`` (by field name, in sorted
    order; see :func:`_feed` for how a value is hashed)."""
    h = hashlib.sha256()
    _feed(h, (str(name), int(version)))
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
        a = np.ascontiguousarray(value)
        put(b"a", f"{a.dtype.str}{a.shape}".encode())
        put(b"d", a.tobytes())
    elif isinstance(value, (tuple, list)):
        put(b"l", str(len(value)).encode())
        for v in value:
            _feed(h, v)
    elif isinstance(value, Mapping):
        put(b"m", str(len(value)).encode())
        for k in sorted(value, key=str):
            _feed(h, str(k))
            _feed(h, value[k])
    else:
        raise TypeError(f"cannot hash a {type(value).__name__} into a memo key")


class Memo:
    """Results stored in ``folder`` under :func:`memo_key` of their inputs; None: none are
    stored (every call computes).

    Parameters
    ----------
    folder
        Where the entries live (``<key[:2]>/<key>.json``); created when the first is stored.
    """

    def __init__(self, folder: str | os.PathLike | None) -> None:
        self.folder = None if folder is None else Path(folder)

    def path(self, key: str) -> Path:
        """The file of the entry ``key``."""
        assert self.folder is not None
        return self.folder / key[:2] / f"{key}.json"

    def __call__(self, name: str, version: int, inputs: Mapping[str, Any],
                 compute: Callable[[], Any]) -> Any:
        """The result of ``compute()`` for ``inputs``: the stored one if there is one, else
        computed, stored and returned as read back from JSON (so a first call and a later
        hit return equal values).

        ``name`` and ``version`` tell results apart: raise ``version`` whenever what
        ``compute`` does changes in a way ``inputs`` do not show (a new default, a fix).
        """
        if self.folder is None:
            return compute()
        path = self.path(memo_key(name, version, inputs))
        try:
            return json.loads(path.read_text())
        except (OSError, ValueError):
            pass  # not stored yet (or unreadable: computed again and replaced)
        value = json.loads(json.dumps(compute()))
        write_json_atomic(path, value)
        return value
