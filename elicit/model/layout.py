"""The parameter vector theta of a fit, ``(gamma_1..gamma_d, xi[, tau2][, zeta][, delta])``, and
its named blocks (:class:`ParamLayout`), so that code reads ``theta[lay["gamma"]]``. The parts
of a model (:mod:`elicit.model.stan_data`) say which blocks a fit has; a new block is one
:class:`Block` in :data:`BLOCKS`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from functools import cached_property, lru_cache

import numpy as np

#: tau2 is kept strictly positive: S = I + tau2 X K X' and the InvGamma prior need tau2 > 0
TAU2_FLOOR = 1e-10


@dataclass(frozen=True)
class Block:
    """One block of theta: the paper's symbol ``name``, its ``stan`` name, ``size``, the ``lower``
    bound of every entry (``-inf``: unbounded) and whether Stan declares a ``vector``."""

    name: str
    stan: str
    size: int
    lower: float
    vector: bool = False


class ParamLayout:
    """The blocks of theta, in order: ``lay[name]`` is a block's slice, :meth:`index` the
    position of a one-entry block."""

    def __init__(self, blocks: tuple[Block, ...]) -> None:
        self.blocks = tuple(blocks)
        self._slices: dict[str, slice] = {}
        self._blocks = {b.name: b for b in self.blocks}
        start = 0
        for b in self.blocks:
            self._slices[b.name] = slice(start, start + b.size)
            start += b.size
        self.size = start

    def __contains__(self, name: str) -> bool:
        return name in self._slices

    def __getitem__(self, name: str) -> slice:
        return self._slices[name]

    def at(self, name: str) -> slice | int:
        """A vector block's slice, a one-entry block's position."""
        b = self._blocks[name]
        return self._slices[name] if b.vector else self._slices[name].start

    def index(self, name: str) -> int:
        """Position of the one-entry block ``name`` (``xi``, ``tau2``)."""
        sl = self._slices[name]
        if sl.stop - sl.start != 1:
            raise ValueError(f"block {name} has {sl.stop - sl.start} entries, not one")
        return sl.start

    def bounded(self) -> np.ndarray:
        """Which entries of theta have a lower bound (Stan's ``<lower=0>``)."""
        return np.isfinite(self.lower_bounds())

    def lower_bounds(self) -> np.ndarray:
        """Lower bounds of theta (a new array)."""
        lb = np.zeros(self.size)
        for b in self.blocks:
            lb[self._slices[b.name]] = b.lower
        return lb

    # a vector block may come as a list (the Stan engines read one entry at a time)
    def join(self, values: Mapping[str, np.ndarray | Sequence[float] | float]) -> np.ndarray:
        """theta from one value per block."""
        theta = np.empty(self.size)
        for b in self.blocks:
            theta[self._slices[b.name]] = values[b.name]
        return theta

    def labels(self) -> list[str]:
        """One label per entry (``gamma[0]``, ..., ``xi``, ``tau2``), for messages."""
        return [f"{b.name}[{i}]" if b.vector else b.name
                for b in self.blocks for i in range(b.size)]

    @cached_property
    def marginal_index(self) -> np.ndarray:
        """Positions of the parameters the marginal likelihood of y depends on, in the order of its
        derivatives: gamma[, tau2][, zeta][, delta]."""
        idx = list(range(self.size))[self["gamma"]]
        for name in ("tau2", "zeta", "delta"):
            if name in self:
                idx.append(self.index(name))
        return np.array(idx, dtype=int)


#: every block theta may have, by name (a vector block's ``size`` is set per fit: d)
BLOCKS = {b.name: b for b in (Block("gamma", "gamma", 0, 0.0, vector=True),
                              Block("xi", "threshold", 1, 0.0),
                              Block("tau2", "tau", 1, TAU2_FLOOR),
                              Block("zeta", "zeta", 1, -np.inf),
                              Block("delta", "delta", 1, 0.0))}


@lru_cache(maxsize=64)
def layout_of(d: int, names: tuple[str, ...]) -> ParamLayout:
    """The layout with the blocks ``names`` (of :data:`BLOCKS`) and ``d`` meta-features."""
    return ParamLayout(tuple(replace(BLOCKS[n], size=d) if BLOCKS[n].vector else BLOCKS[n]
                             for n in names))
