"""How a configuration declares what its results folder records: an experiment's
configuration is a frozen dataclass whose fields are either a :func:`setting` (the results
depend on it: ``config.json`` records it and a rerun with another value is refused) or an
:func:`option` (how much or how to run: not recorded).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import InitVar, dataclass, field, fields, replace
from operator import attrgetter
from typing import Any, ClassVar

from elicit.elicitation.settings import RoundSettings
from elicit.harness.store import LEGACY_CONFIG


def setting(default: Any, record: Callable[[Any], dict] | None = None,
            legacy: Any = None, read: Callable[[dict], Any] | None = None) -> Any:
    """A field the results depend on. ``record(cfg)`` gives its entries in ``config.json``
    (default ``{name: value}``), ``read(d)`` its value from a ``config.json`` ``d``;
    ``legacy`` is its value in a folder written before it existed (default ``LEGACY_CONFIG``'s,
    else the field's default: a new setting's default must reproduce what the sweeps did)."""
    return field(default=default, metadata={"setting": True, "record": record,
                                            "legacy": legacy, "read": read})


def round_settings(default: RoundSettings | None = None,
                   legacy: dict[str, Any] | None = None) -> Any:
    """The ``settings`` field (default the paper's): ``config.json`` records each entry under
    its own name; an old folder's lacking entries are ``legacy``'s or ``LEGACY_CONFIG``'s."""
    return setting(default or RoundSettings(), record=lambda c: c.settings.to_json(),
                   read=lambda d: RoundSettings.from_json(d, {**LEGACY_CONFIG, **(legacy or {})}))


#: the keywords of :class:`RoundKeywords`, in the order of its fields
_KEYWORDS = tuple(f.name for f in fields(RoundSettings) if f.name != "strategy")


@dataclass(frozen=True, kw_only=True)
class RoundKeywords:
    """The round settings as keywords of an experiment's configuration (``engine="numpy"``,
    ...): each one given (not None) replaces its entry of ``settings``, which alone holds
    them. A subclass checks itself in ``check``."""

    settings: RoundSettings = round_settings()
    model: InitVar[str | None] = None
    engine: InitVar[str | None] = None
    utility: InitVar[str | None] = None
    utility_target: InitVar[str | None] = None
    refine: InitVar[int | None] = None
    stan_file: InitVar[str | os.PathLike | None] = None
    questions: InitVar[object] = None
    pool_size: InitVar[int | None] = None
    seed: InitVar[int | None] = None

    def __post_init__(self, *given: Any) -> None:
        keywords = {k: v for k, v in zip(_KEYWORDS, given, strict=True) if v is not None}
        object.__setattr__(self, "settings", replace(self.settings, **keywords))
        self.check()

    def check(self) -> None:
        """Check the configuration and resolve its settings (``settings.validate()``)."""
        object.__setattr__(self, "settings", self.settings.validate())


# ``cfg.engine`` reads ``cfg.settings.engine``: an InitVar's default would otherwise stay
# behind as a class attribute and answer None whatever the settings hold.
for _name in _KEYWORDS:
    setattr(RoundKeywords, _name, property(attrgetter(f"settings.{_name}"),
                                           doc=f"``settings.{_name}`` (read only)"))


def option(default: Any) -> Any:
    """A field that says how much or how to run: not recorded."""
    return field(default=default, metadata={"setting": False})


class Recorded:
    """``to_json`` and the reading of ``config.json``, from the fields' declarations (a mixin
    of configuration dataclasses)."""

    #: ``config.json``'s constant entries before the settings (the experiment's name, say)
    RECORD_HEAD: ClassVar[dict[str, object]] = {}
    #: ``config.json``'s keys in the order its folders have them; the keys not named follow
    RECORD_ORDER: ClassVar[tuple[str, ...]] = ()

    def to_json(self) -> dict:
        """What ``config.json`` records: the settings, in the order of :attr:`RECORD_ORDER`,
        then of the fields."""
        out = dict(self.RECORD_HEAD)
        for f in fields(self):  # type: ignore[arg-type]
            if f.metadata.get("setting"):
                record = f.metadata["record"]
                out.update(record(self) if record else {f.name: getattr(self, f.name)})
        return {**{k: out[k] for k in self.RECORD_ORDER if k in out}, **out}

    @classmethod
    def recorded(cls, d: dict) -> dict[str, Any]:
        """The settings a ``config.json`` records, by field name; a setting it lacks is the
        value the sweeps before it used (:func:`setting`)."""
        out = {}
        for f in fields(cls):  # type: ignore[arg-type]
            if f.metadata.get("read"):
                out[f.name] = f.metadata["read"](d)
            elif f.metadata.get("setting"):
                legacy = f.metadata["legacy"]
                out[f.name] = d.get(f.name, legacy if legacy is not None
                                    else LEGACY_CONFIG.get(f.name, f.default))
        return out
