"""The engine interface: :class:`Engine`, and :class:`StanProgramEngine` for the Stan ones."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import replace
from pathlib import Path

import numpy as np

from elicit.engines.contract import StanProgramFile, check_stan_contract, find_stanc, stan_folder
from elicit.errors import ElicitError
from elicit.model.result import MAPResult
from elicit.model.spec import ModelData, Params
from elicit.model.theta import data_scales, with_parts
from elicit.model.variants import PAPER, SHIPPED_PROGRAM, get_model


class Engine(ABC):
    """Fits the MAP of a model ``variant`` (``"fixed"`` or ``"learned"`` tau2, as the data's
    ``hyper.variant``); :meth:`fit` does the common work, then :meth:`_fit`."""

    #: short name used on the command line
    name: str = "abstract"
    #: whether warm fits use a base Hessian (:meth:`fit`'s ``hessian``)
    uses_hessian: bool = False

    def __init__(self, variant: str = "fixed") -> None:
        if variant not in ("fixed", "learned"):
            raise ElicitError(f"variant must be 'fixed' or 'learned', got {variant!r}")
        self.variant = variant

    def fit(self, data: ModelData, init: Params | MAPResult | None = None, *,
            hessian: np.ndarray | None = None) -> MAPResult:
        """The MAP of ``data`` (with the answers so far), warm-started from ``init``: a previous
        MAP or a parameter point (default: the prior means). ``hessian``: the base Hessian
        (y-likelihood and priors) at ``init``, if the caller has it (:attr:`uses_hessian`)."""
        if data.hyper.variant != self.variant:
            raise ElicitError(f"engine built for the {self.variant!r} variant got data of the "
                              f"{data.hyper.variant!r} variant")
        start = init.params if isinstance(init, MAPResult) else init
        start = data.initial_params() if start is None else start
        k = np.size(start.gamma)
        if k != data.d:
            raise ElicitError(f"the start point has {k} gamma values; the data has "
                              f"d = {data.d} meta-features")
        # a start of another model (e.g. the paper model's MAP) gets this model's own blocks
        start = with_parts(start, data)
        warm = init if isinstance(init, MAPResult) else None
        res = self._fit(data, start, warm, hessian)
        if (mask := data.kernel_mask) is not None and res.coupled is not mask:
            res = replace(res, coupled=mask)
        if (scales := data_scales(data, res.zeta)) is not None:
            res = replace(res, scales=scales.h)
        return res

    @abstractmethod
    def _fit(self, data: ModelData, start: Params, warm: MAPResult | None,
             hessian: np.ndarray | None) -> MAPResult:
        """Fit from ``start``; ``warm`` is the previous MAP when this is a warm refit."""


class StanProgramEngine(Engine):
    """An engine that runs a Stan program: ``stan_file``, a user's program honouring the
    contract (``docs/stan.md``), or (None) that of the data's model."""

    def __init__(self, variant: str = "fixed", stan_file: str | Path | None = None) -> None:
        super().__init__(variant)
        self.custom = stan_file is not None
        self.stan_file = Path(stan_file) if stan_file is not None else shipped_stan_file()
        # read now, so that a wrong file is refused at once
        self._programs: dict[str, StanProgramFile] = {PAPER: self._read(PAPER)}

    def _read(self, model: str) -> StanProgramFile:
        path = self.stan_file if self.custom else model_stan_file(model)
        return check_stan_contract(path, self.variant, model, stanc=find_stanc(self.name))

    def program(self, data: ModelData) -> StanProgramFile:
        """The Stan program that fits ``data`` (checked against its model's contract)."""
        model = data.hyper.model
        if model not in self._programs:
            self._programs[model] = self._read(model)
        return self._programs[model]


def shipped_stan_file() -> Path:
    return stan_folder() / str(SHIPPED_PROGRAM.file)


def model_stan_file(model: str = PAPER) -> Path:
    """Path of the Stan program of a named model (ElicitError: it has none)."""
    if (prog := get_model(model).program) is None:
        raise ElicitError(f"model {model!r} has no Stan program; fit it with the numpy engine, "
                          "or give a Stan engine a stan_file of your own")
    return shipped_stan_file() if prog.shipped else Path(prog.file)
