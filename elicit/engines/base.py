"""The engine interface: one small abstract backend, as in prophet's ``IStanBackend``.

:class:`Engine` does the common work of a fit; :class:`StanProgramEngine` adds the common set-up
of the engines that run a Stan program (cmdstan, pystan). Each engine implements ``_fit``.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import replace
from pathlib import Path
from typing import cast

import numpy as np

from elicit.engines.contract import check_stan_contract
from elicit.errors import ElicitError
from elicit.model.covariance import ScaledCovariance
from elicit.model.result import MAPResult
from elicit.model.spec import ModelData, Params
from elicit.model.variants import PAPER, get_model


class Engine(ABC):
    """Fits the MAP of a model variant to :class:`~elicit.model.spec.ModelData`.

    :meth:`fit` does the work common to every engine (the variant check and the start point)
    and calls :meth:`_fit`, which each engine implements.

    Parameters
    ----------
    variant
        ``"fixed"`` or ``"learned"`` tau2; must match the data's ``hyper.variant``.
    """

    #: short name used on the command line
    name: str = "abstract"
    #: whether warm fits use a base Hessian (:meth:`fit`'s ``hessian``); the utility scorer
    #: hands over the one it computed only to engines that use it
    uses_hessian: bool = False

    def __init__(self, variant: str = "fixed") -> None:
        if variant not in ("fixed", "learned"):
            raise ElicitError(f"variant must be 'fixed' or 'learned', got {variant!r}")
        self.variant = variant

    def fit(self, data: ModelData, init: Params | MAPResult | None = None, *,
            hessian: np.ndarray | None = None) -> MAPResult:
        """Return the MAP, warm-started from ``init`` when given.

        Parameters
        ----------
        data
            The model data with the answers so far.
        init
            A previous MAP (a warm start) or a parameter point; default: the prior means.
        hessian
            The base Hessian (y-likelihood and priors) at ``init``, if the caller has it:
            engines with :attr:`uses_hessian` start Newton iterations from it; the others
            ignore it.
        """
        if data.hyper.variant != self.variant:
            raise ElicitError(f"engine built for the {self.variant!r} variant got data of the "
                              f"{data.hyper.variant!r} variant")
        start = init.params if isinstance(init, MAPResult) else init
        if start is None:
            start = data.initial_params()
        k = np.size(start.gamma)
        if k != data.d:
            raise ElicitError(f"the start point has {k} gamma values; the data has "
                              f"d = {data.d} meta-features")
        if data.model.relevance and start.zeta is None:
            # a start point of a model without zeta (e.g. the paper model's MAP): zeta
            # starts at its prior mean
            start = replace(start, zeta=data.initial_params().zeta)
        warm = init if isinstance(init, MAPResult) else None
        res = self._fit(data, start, warm, hessian)
        mask = data.kernel_mask
        if mask is not None and res.coupled is not mask:
            # Here rather than in each engine: the result's K must be the model's K.
            res = replace(res, coupled=mask)
        if data.model.relevance:
            # and its scales the model's scales (the prior covariance tau2 diag(h) K diag(h))
            cov = cast(ScaledCovariance, data.model.covariance)
            # ModelData.__post_init__ makes relevance an array; a relevance fit has a zeta
            classes, zeta = cast(np.ndarray, data.relevance), cast(float, res.zeta)
            res = replace(res, scales=cov.scales(classes, zeta).h)
        return res

    @abstractmethod
    def _fit(self, data: ModelData, start: Params, warm: MAPResult | None,
             hessian: np.ndarray | None) -> MAPResult:
        """Fit from ``start``; ``warm`` is the previous MAP when this is a warm refit."""


class StanProgramEngine(Engine):
    """An engine that runs a Stan program: the shipped one of a variant or a user's file.

    The shipped program is chosen per fit from the data's model (``data.hyper.model``), so one
    engine serves every named model (:meth:`program`).

    Parameters
    ----------
    variant
        ``"fixed"`` or ``"learned"`` tau2.
    stan_file
        A custom Stan program honouring the contract (``docs/stan.md``); ``None`` runs the
        shipped program of ``variant`` and the data's model.
    """

    def __init__(self, variant: str = "fixed", stan_file: str | Path | None = None) -> None:
        super().__init__(variant)
        self.custom = stan_file is not None
        if stan_file is None:
            self.stan_file = shipped_stan_file(variant)
        else:
            self.stan_file = Path(stan_file)
            check_stan_contract(self.stan_file, variant)
        self.program_code = self.stan_file.read_text()
        self._programs: dict[str, tuple[Path, str]] = {}

    def program(self, data: ModelData) -> tuple[Path, str]:
        """(path, text) of the Stan program that fits ``data``: the custom file, else the
        shipped program of the data's model."""
        model = data.hyper.model
        if model not in self._programs:
            if self.custom:
                # A custom file must take the model's extra data (its knobs) too.
                check_stan_contract(self.stan_file, self.variant, model)
                path = self.stan_file
            else:
                path = shipped_stan_file(self.variant, model)
            self._programs[model] = (path, path.read_text())
        return self._programs[model]


def shipped_stan_file(variant: str, model: str = PAPER) -> Path:
    """Path of the shipped Stan program of a variant (``fixed`` or ``learned``) and a named
    model (:mod:`elicit.model.variants`); an :class:`~elicit.errors.ElicitError` for a model
    without shipped programs.

    Installed, the programs are package data in ``elicit/stan/``; in a source checkout (and an
    editable install) they are the top-level ``stan/`` folder. That folder has no
    ``__init__.py`` on purpose: a regular package named ``stan`` at the repository root would
    shadow PyStan's ``stan`` whenever the root is on ``sys.path``.
    """
    name = get_model(model).stan_name(variant)
    pkg = Path(__file__).resolve().parents[1]  # the elicit package folder
    for folder in (pkg / "stan", pkg.parent / "stan"):
        if (folder / name).is_file():
            return folder / name
    raise FileNotFoundError(f"the shipped Stan program {name} is missing from {pkg / 'stan'}; "
                            "reinstall elicit")
