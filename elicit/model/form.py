"""Which form a marginal of the data takes: the structured path (sparse-plus-offset inputs,
:mod:`elicit.model.structure`), the p x p form (more rows than features,
:mod:`elicit.model.tall`) or the n x n one; decided here for the marginal, its cache and the
batched density."""

from __future__ import annotations

import numpy as np

from elicit.internal.cache import LRUCache
from elicit.model.spec import ModelData
from elicit.model.structure import OffsetSparse, structure_of
from elicit.model.tall import TallBasis, is_tall


def data_structure(data: ModelData) -> OffsetSparse | None:
    """The structure of X if the marginals of ``data`` take the structured path, else None."""
    if data.kernel_mask is not None or data.model.relevance:
        return None
    return structure_of(data.X, data.d)


#: the bases of the last few X (computed once per array)
_bases = LRUCache(4)


def basis_of(X: np.ndarray, structure: OffsetSparse | None,
             tall: bool | None = None) -> TallBasis | None:
    """The basis X = Q R if a marginal of X takes the p x p form (``tall`` True or False
    forces the choice; never on the structured path), else None."""
    if structure is not None or not (is_tall(*X.shape) if tall is None else tall):
        return None
    return _bases.of_array(X, TallBasis)

