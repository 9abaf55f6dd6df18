"""One registry of named objects, shared by the model variants, the strategies, the
utilities and the question kinds.
"""

from __future__ import annotations

import inspect
from collections.abc import Iterator, Mapping
from typing import Generic, TypeVar

from elicit.errors import ElicitError

T = TypeVar("T")


class Registry(Mapping[str, T], Generic[T]):
    """Named objects of one ``kind`` ("model", "strategy", ...: for the error messages), in
    registration order, read-only but for :meth:`add` and :meth:`remove`; ``hint`` is appended
    to the unknown-name message (say, where the names are described)."""

    def __init__(self, kind: str, hint: str = "") -> None:
        self.kind = kind
        self.hint = hint
        self._items: dict[str, T] = {}

    def __getitem__(self, name: str) -> T:
        return self._items[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)

    def __repr__(self) -> str:
        return f"Registry({self.kind!r}: {', '.join(self._items)})"

    def add(self, name: object, obj: T) -> T:
        """Register ``obj`` under ``name`` (a name docs/extending.md allows) and return it; its
        methods must take the arguments of the abstract ones they implement, not fail in a round."""
        if (not isinstance(name, str) or not name or name != name.strip() or not name.isprintable()
                or set(",/\\") & set(name) or name in (".", "..") or len(name.encode()) > 255):
            raise ElicitError(f"a {self.kind} needs a name without commas or surrounding "
                              f"spaces that can name a folder (printable, no slash, . or .., "
                              f"at most 255 bytes), got {name!r}")
        if name in self._items:
            raise ElicitError(f"a {self.kind} named {name!r} is already registered; choose "
                              "another name")
        for base in type(obj).__mro__[1:]:
            for m in getattr(base, "__abstractmethods__", ()):
                args = list(inspect.signature(getattr(base, m)).parameters)[1:]
                try:
                    inspect.signature(getattr(obj, m)).bind(*args)
                except TypeError:
                    raise ElicitError(f"{self.kind} {name!r}: {m}() must take ("
                                      f"{', '.join(args)}), as {base.__name__}.{m} does") from None
        self._items[name] = obj
        return obj

    def remove(self, name: str) -> None:
        if name not in self._items:
            raise ElicitError(f"no {self.kind} named {name!r} is registered")
        del self._items[name]

    def lookup(self, name: object) -> T:
        """The object called ``name``, else one line listing the registered names."""
        if isinstance(name, str) and name in self._items:
            return self._items[name]
        raise ElicitError(f"unknown {self.kind} {name!r}; choose one of {', '.join(self._items)}"
                          f"{self.hint}; one of your own is known only in the process that "
                          "registers it (docs/extending.md)")
