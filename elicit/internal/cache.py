"""A small least-recently-stored cache for results keyed by the arrays they were made from:
by the arrays' *identity* (hashing megabytes of X at every lookup would cost more than some
results) plus a checksum of their bytes, so an array modified in place never serves a stale
result. An entry keeps its arrays alive (``pin``), so no other array can take over their ids.
"""

from __future__ import annotations

import functools
import threading
import weakref
import zlib
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Any

import numpy as np


def arrays_key(*arrays: np.ndarray) -> tuple[int, ...]:
    """The ids of ``arrays`` followed by the :func:`checksum` of each."""
    return (*(id(a) for a in arrays), *(checksum(a) for a in arrays))


#: the random odd weights of :func:`checksum` (fixed: a key means the same in every process)
_WEIGHTS = np.random.default_rng(20261127).integers(1, 2**63, size=1 << 16,
                                                     dtype=np.uint64) | np.uint64(1)


def frozen(a: np.ndarray) -> np.ndarray:
    """``a`` if it is :func:`is_frozen`, else a read-only copy: what a model holds, so its
    caches can trust an array's identity and the caller's later writes cannot reach it."""
    if is_frozen(a):
        return a
    out = np.array(a, copy=True)
    out.flags.writeable = False
    return out


def freeze_fields(obj: object, *names: str) -> None:
    """Set each attribute ``names`` of ``obj`` to its :func:`frozen` float array (so the
    models built from it share the arrays and the caches keyed by them)."""
    for name in names:
        setattr(obj, name, frozen(np.asarray(getattr(obj, name), dtype=float)))


def is_frozen(a: object) -> bool:
    """Whether nothing can write to ``a``'s memory: it and every array down to the owner
    are read-only (a read-only view of a writable array is not frozen)."""
    while isinstance(a, np.ndarray):
        if a.flags.writeable:
            return False
        if a.base is None:
            return True
        a = a.base
    return isinstance(a, bytes)


#: checksums of frozen arrays by id, each with a weak reference that drops it with its array
_frozen_sums: dict[int, tuple[weakref.ref, int]] = {}


def _forget(key: int, ref: weakref.ref) -> None:
    if (got := _frozen_sums.get(key)) is not None and got[0] is ref:
        del _frozen_sums[key]


def checksum(a: np.ndarray) -> int:
    """A checksum of the bytes of ``a``: the sum, modulo 2^64, of its 8-byte words times fixed
    random odd weights, and its length. Any change of one word changes it, and so does any
    exchange of two words that differ (unless 65,536 apart); four times faster than CRC32.

    A frozen array's checksum is remembered while the array lives (recomputing it for X cost
    4% of a real-data sweep's CPU)."""
    if not is_frozen(a):
        return _checksum(a)
    key = id(a)
    if (got := _frozen_sums.get(key)) is not None and got[0]() is a:
        return got[1]
    value = _checksum(a)
    _frozen_sums[key] = (weakref.ref(a, functools.partial(_forget, key)), value)
    return value


def _checksum(a: np.ndarray) -> int:
    b = np.ascontiguousarray(a).view(np.uint8).ravel()
    n = len(b) // 8
    words = b[:8 * n].view(np.uint64)
    w = _WEIGHTS
    total = 0
    for i0 in range(0, n, len(w)):
        chunk = words[i0:i0 + len(w)]
        total += int(np.dot(chunk, w[:len(chunk)]))
    tail = zlib.crc32(b[8 * n:].tobytes())
    return (total + tail * 0x9E3779B97F4A7C15 + len(b)) % (1 << 64)


class LRUCache:
    """A thread-safe map of at most ``size`` entries, dropping the one stored longest ago; a
    pickled cache arrives empty (the ids in the keys mean nothing in another process)."""

    def __init__(self, size: int) -> None:
        self.size = int(size)
        self._entries: OrderedDict = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: Hashable, refresh: bool = False) -> Any | None:
        """The value stored under ``key``, or None; ``refresh`` makes it the newest entry."""
        with self._lock:
            entry = self._entries.get(key)
            if refresh and entry is not None:
                self._entries.move_to_end(key)
        return None if entry is None else entry[1]

    def put(self, key: Hashable, value: Any, pin: Any = None, limit: int | None = None) -> None:
        """Store ``value`` under ``key``, keeping ``pin`` (the arrays whose ids the key holds)
        alive with it; ``limit`` (at most :attr:`size`) caps the entries kept this time."""
        keep = self.size if limit is None else min(self.size, int(limit))
        with self._lock:
            self._entries[key] = (pin, value)
            self._entries.move_to_end(key)
            while len(self._entries) > keep:
                self._entries.popitem(last=False)

    def of_array(self, a: np.ndarray, compute: Callable[[np.ndarray], Any]) -> Any:
        """``compute(a)``, once per array (:func:`arrays_key`); None is remembered too."""
        key = arrays_key(a)
        hit = self.get(key)
        if hit is None:
            hit = (compute(a),)
            self.put(key, hit, pin=a)
        return hit[0]

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()

    def __len__(self) -> int:
        return len(self._entries)

    def __getstate__(self) -> dict:
        return {"size": self.size}

    def __setstate__(self, state: dict) -> None:
        type(self).__init__(self, state["size"])
