"""How a configuration declares what its results folder records.

An experiment's configuration is a frozen dataclass whose fields are of two kinds:

* :func:`setting`: the results depend on it. ``config.json`` records it
  (:meth:`Recorded.to_json`), and :class:`~elicit.harness.store.SweepStore` refuses a rerun
  with another value;
* :func:`option`: how much or how to run (runs, strategies, worker processes, a cluster, a
  check). Not recorded: it may change between reruns, and more runs only add runs.

So a new option is one field, declared once with its kind; :meth:`Recorded.to_json` and
:meth:`Recorded.recorded` (reading ``config.json`` back) follow from the declarations.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import field, fields
from typing import Any, ClassVar

from elicit.harness.store import LEGACY_CONFIG


def setting(default: Any, record: Callable[[Any], dict] | None = None,
            legacy: Any = None) -> Any:
    """A field the results depend on: ``config.json`` records it and a rerun with another
    value is refused.

    ``default`` may be ``dataclasses.MISSING`` (a required field). ``record(cfg)`` gives its
    entries in ``config.json`` (default ``{name: value}``; a file by its path and content
    hash, say); ``legacy`` is the value of a folder written before the setting existed
    (default :data:`~elicit.harness.store.LEGACY_CONFIG`'s, else the field's default: a new
    setting's default must reproduce what the sweeps did without it).
    """
    return field(default=default, metadata={"setting": True, "record": record,
                                            "legacy": legacy})


def option(default: Any) -> Any:
    """A field that says how much or how to run: not recorded, so it may change between
    reruns."""
    return field(default=default, metadata={"setting": False})


class Recorded:
    """``to_json`` and the reading of ``config.json``, from the fields' declarations (a mixin
    of configuration dataclasses)."""

    #: ``config.json``'s constant entries before the settings (the experiment's name, say)
    RECORD_HEAD: ClassVar[dict[str, object]] = {}

    def to_json(self) -> dict:
        """What ``config.json`` records: the settings the results depend on, in the order of
        the fields."""
        out = dict(self.RECORD_HEAD)
        for f in fields(self):  # type: ignore[arg-type]
            if f.metadata.get("setting"):
                record = f.metadata["record"]
                out.update(record(self) if record else {f.name: getattr(self, f.name)})
        return out

    @classmethod
    def recorded(cls, d: dict) -> dict[str, Any]:
        """The settings a ``config.json`` records, by field name; a setting it lacks is the
        value the sweeps before it used (see :func:`setting`)."""
        out = {}
        for f in fields(cls):  # type: ignore[arg-type]
            if f.metadata.get("setting"):
                legacy = f.metadata["legacy"]
                out[f.name] = d.get(f.name, legacy if legacy is not None
                                    else LEGACY_CONFIG.get(f.name, f.default))
        return out
