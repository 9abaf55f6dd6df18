"""One small least-recently-stored cache for results keyed by the arrays they were made from.

The numpy engine remembers its last warm refits and the query round the y-likelihood at the
current MAP; both key an entry by the *identity* of the data arrays (hashing megabytes of X
at every lookup would cost more than some of the results) plus a CRC32 checksum of their
bytes (:func:`arrays_key`), so that an array modified in place never serves a stale result.
An entry keeps its arrays alive (``pin``): while it exists, no other array can take over
their ids.
"""

from __future__ import annotations

import threading
import zlib
from collections import OrderedDict
from collections.abc import Hashable
from typing import Any

import numpy as np


def arrays_key(*arrays: np.ndarray) -> tuple[int, ...]:
    """The ids of ``arrays`` followed by a CRC32 checksum of each one's bytes."""
    return (*(id(a) for a in arrays),
            *(zlib.crc32(np.ascontiguousarray(a).data) for a in arrays))


class LRUCache:
    """A thread-safe map of at most ``size`` entries; storing beyond that drops the entry
    stored longest ago. A lookup does not refresh an entry unless asked to.

    A pickled cache arrives empty (engines travel to worker processes; the ids in the keys
    would mean nothing there).
    """

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

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()

    def __len__(self) -> int:
        return len(self._entries)

    def __getstate__(self) -> dict:
        return {"size": self.size}

    def __setstate__(self, state: dict) -> None:
        # The class's __init__, looked up as self.__init__ would be (no instance has its
        # own), spelt so that the type checker accepts the call on an instance.
        type(self).__init__(self, state["size"])
