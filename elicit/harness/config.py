"""How a configuration declares what its results folder records.

An experiment's configuration is a frozen dataclass whose fields are of two kinds:

* :func:`setting`: the results depend on it. ``config.json`` records it
  (:meth:`Recorded.to_json`), and :class:`~elicit.harness.store.SweepStore` refuses a rerun
  with another value;
* :func:`option`: how much or how to run (runs, strategies, worker processes, a cluster, a
  check). Not recorded: it may change between reruns, and more runs only add runs.

So a new option is one field, declared once with its kind; :meth:`Recorded.to_json` and
:meth:`Recorded.recorded` (reading ``config.json`` back) follow from the declarations.

The settings of the question rounds are one object,
:class:`~elicit.elicitation.settings.RoundSettings`, which every configuration holds as its
``settings`` field and records whole: a sweep's configuration is given it
(:func:`round_settings`), an experiment's builds it from its own options of the same names
(:func:`composed`, :func:`round_setting`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import field, fields
from typing import Any, ClassVar

from elicit.elicitation.settings import RoundSettings
from elicit.harness.store import LEGACY_CONFIG


def setting(default: Any, record: Callable[[Any], dict] | None = None,
            legacy: Any = None, read: Callable[[dict], Any] | None = None) -> Any:
    """A field the results depend on: ``config.json`` records it and a rerun with another
    value is refused.

    ``default`` may be ``dataclasses.MISSING`` (a required field). ``record(cfg)`` gives its
    entries in ``config.json`` (default ``{name: value}``; a file by its path and content
    hash, say); ``legacy`` is the value of a folder written before the setting existed
    (default :data:`~elicit.harness.store.LEGACY_CONFIG`'s, else the field's default: a new
    setting's default must reproduce what the sweeps did without it). ``read(d)`` gives its
    value from a ``config.json`` ``d`` (default: its entry, or the legacy value).
    """
    return field(default=default, metadata={"setting": True, "record": record,
                                            "legacy": legacy, "read": read})


def round_settings() -> Any:
    """The field of a sweep's round settings (:class:`~elicit.elicitation.settings.RoundSettings`,
    default the paper's): ``config.json`` records each of its entries under its own name
    (:meth:`~elicit.elicitation.settings.RoundSettings.to_json`), as the folders written before
    the object existed did, and reads it back with their values for the entries they lack."""
    return setting(RoundSettings(), record=lambda c: c.settings.to_json(),
                   read=lambda d: RoundSettings.from_json(d, LEGACY_CONFIG))


def round_setting(default: Any, record: Callable[[Any], dict] | None = None,
                  legacy: Any = None) -> Any:
    """An option of an experiment that is one of its round settings (``engine``, ``model``,
    ...), which its :func:`composed` ``settings`` is made of: a :func:`setting` (recorded
    where the folders written before the settings were one object have it; the
    ``settings`` record the rest)."""
    return setting(default, record=record, legacy=legacy)


def composed() -> Any:
    """The ``settings`` field of an experiment's configuration: the
    :class:`~elicit.elicitation.settings.RoundSettings` it builds, in its ``__post_init__``,
    from its :func:`round_setting` fields (:meth:`Recorded.compose_settings`); recorded whole
    (an entry its fields recorded keeps its place and value), not given."""
    return field(init=False, default=None, metadata={
        "setting": True, "record": lambda c: c.settings.to_json(), "composed": True})


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
            if f.metadata.get("composed"):
                continue  # made from the other fields
            if f.metadata.get("read"):
                out[f.name] = f.metadata["read"](d)
            elif f.metadata.get("setting"):
                legacy = f.metadata["legacy"]
                out[f.name] = d.get(f.name, legacy if legacy is not None
                                    else LEGACY_CONFIG.get(f.name, f.default))
        return out

    def compose_settings(self, **given: Any) -> None:
        """Set the :func:`composed` ``settings`` from the fields of the same names as
        :class:`~elicit.elicitation.settings.RoundSettings`' (``given`` overrides or adds
        some), checked (:meth:`~elicit.elicitation.settings.RoundSettings.validate`); the
        resolved model and questions are written back to their fields."""
        names = [f.name for f in fields(RoundSettings)]
        mine = {f.name for f in fields(self)}  # type: ignore[arg-type]
        settings = RoundSettings(**{**{n: getattr(self, n) for n in names if n in mine},
                                    **given}).validate()
        object.__setattr__(self, "settings", settings)
        for n in ("model", "questions"):
            if n in mine:
                object.__setattr__(self, n, getattr(settings, n))
