"""The engine registry: build an engine by name (``--engine``)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from elicit.errors import ElicitError, EngineUnavailable

if TYPE_CHECKING:  # the model and scipy load when an engine is built, not for these names
    from elicit.engines.base import Engine

ENGINES = ("auto", "numpy", "cmdstan", "pystan")


def get_engine(name: str | Engine = "auto", variant: str = "fixed",
               stan_file: str | Path | None = None, check: bool | str = False) -> Engine:
    """Build an engine of the tau2 ``variant`` (``"fixed"`` or ``"learned"``) by ``name`` (an
    :class:`Engine` is returned as it is): ``"numpy"``, ``"cmdstan"``, ``"pystan"`` or
    ``"auto"``: numpy for the shipped programs, CmdStan (if installed, else PyStan) for a
    ``stan_file`` of one's own (``docs/stan.md``). ``check``: every fit checked against the
    numpy twin (:class:`~elicit.engines.checked.CheckedEngine`; ``True`` is ``"higher"``)."""
    from elicit.engines.base import Engine

    if isinstance(name, Engine):
        return name
    if check and stan_file is not None:  # refused before any build
        raise ElicitError("--check-engine compares every fit with the numpy engine, which runs "
                          "only the shipped Stan programs, not a custom --stan-file")
    modes = "higher" if check is True else check
    if not modes:
        return _build(name, variant, stan_file)
    from elicit.engines.checked import CheckedEngine, check_modes

    modes = check_modes(modes)  # before any build
    return CheckedEngine(_build(name, variant, stan_file), modes=modes)


def _build(name: str, variant: str, stan_file: str | Path | None) -> Engine:
    if name not in ENGINES:
        raise ElicitError(f"unknown engine {name!r}; choose one of {', '.join(ENGINES)}")
    if name == "auto":
        # numpy is by far the fastest (CmdStan: ~40x slower cold fits at Amazon size)
        if stan_file is None:
            name = "numpy"
        else:
            from elicit.engines.cmdstan_engine import cmdstan_missing

            if (why := cmdstan_missing()) and os.environ.get("CMDSTAN"):
                raise EngineUnavailable(why)  # a set CMDSTAN is meant: no silent PyStan build
            name = "pystan" if why else "cmdstan"
    if name == "numpy":
        from elicit.engines.numpy_engine import NumpyEngine

        return NumpyEngine(variant, stan_file=stan_file)
    if name == "cmdstan":
        from elicit.engines.cmdstan_engine import CmdStanEngine

        return CmdStanEngine(variant, stan_file=stan_file)
    from elicit.engines.pystan_engine import PyStanEngine

    return PyStanEngine(variant, stan_file=stan_file)
