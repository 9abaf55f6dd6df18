"""Which form a marginal of the data takes: the structured path (sparse-plus-offset inputs,
:mod:`elicit.model.structure`), the p x p form (more rows than features,
:mod:`elicit.model.tall`) or the n x n one.

Decided here in one place for :class:`~elicit.model.marginal.Marginal`, its cache
(:mod:`elicit.model.marginal_cache`) and the batched density (:mod:`elicit.model.batch`).
"""

from __future__ import annotations

import numpy as np

from elicit.model.spec import ModelData
from elicit.model.structure import OffsetSparse, structure_of
from elicit.model.tall import TallBasis, is_tall, tall_basis


def data_structure(data: ModelData) -> OffsetSparse | None:
    """The structure of X with which the marginals of ``data`` take the structured path
    (sparse plus offset: see :class:`~elicit.model.marginal.Marginal`), or None (the dense
    path)."""
    if data.kernel_mask is not None or data.model.relevance:
        return None
    return structure_of(data.X, data.d)


def basis_of(X: np.ndarray, structure: OffsetSparse | None,
             tall: bool | None = None) -> TallBasis | None:
    """The basis X = Q R of the p x p form when a marginal of X takes it, else None: with
    more rows than features (:func:`~elicit.model.tall.is_tall`; ``tall`` True or False
    forces the choice) and off the structured path. :class:`~elicit.model.marginal.Marginal`
    and the batched density both ask here."""
    if structure is not None or not (is_tall(*X.shape) if tall is None else tall):
        return None
    return tall_basis(X)


def data_basis(data: ModelData) -> TallBasis | None:
    """:func:`basis_of` the marginals of ``data`` (see
    :class:`~elicit.model.marginal.Marginal`)."""
    return basis_of(data.X, data_structure(data))


def takes_structure(data: ModelData) -> bool:
    """Whether the marginals of ``data`` take the structured path (:func:`data_structure`)."""
    return data_structure(data) is not None
