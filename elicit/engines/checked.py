"""``--check-engine``: every fit of a Stan engine checked against its numpy twin.

The numpy engine implements the shipped Stan programs analytically; CmdStan and PyStan run
the programs themselves. :class:`CheckedEngine` fits with the engine in use, refits the same
data from the same start with the numpy twin, and compares the two MAPs. A disagreement is an
:class:`~elicit.errors.EngineError` that reports both points and the log density at each, by
the numpy formula (the engines' own ``lp__`` values differ by constants), so the reader sees
at once whether one engine stopped early or the two found different modes of a multimodal
posterior.
"""

from __future__ import annotations

import numpy as np

from elicit.engines.base import Engine
from elicit.errors import EngineError
from elicit.model.density import log_density, theta_of
from elicit.model.result import MAPResult
from elicit.model.spec import ModelData, Params


class CheckedEngine(Engine):
    """Fit with ``engine``; check each MAP against ``twin`` (default: the numpy engine).

    Parameters
    ----------
    engine
        The engine in use (its results are returned).
    twin
        The reference; default the numpy engine of the same variant. It must run the same
        model: a custom Stan file has no numpy twin (``get_engine`` refuses the pair).
    rtol
        Tolerance on each parameter, relative to max(1, |value|) (xi relative to its prior
        mean, whose scale it lives on).
    """

    def __init__(self, engine: Engine, twin: Engine | None = None, rtol: float = 1e-3) -> None:
        if twin is None:
            from elicit.engines.numpy_engine import NumpyEngine

            twin = NumpyEngine(engine.variant)
        super().__init__(engine.variant)
        self.engine, self.twin, self.rtol = engine, twin, float(rtol)
        self.name = engine.name
        self.uses_hessian = engine.uses_hessian
        self.checks = 0

    def _fit(self, data: ModelData, start: Params, warm: MAPResult | None,
             hessian: np.ndarray | None) -> MAPResult:
        init = warm if warm is not None else start
        res = self.engine.fit(data, init, hessian=hessian)
        ref = self.twin.fit(data, init, hessian=hessian if self.twin.uses_hessian else None)
        a, b = theta_of(res, data), theta_of(ref, data)
        lay = data.layout
        scale = np.maximum(1.0, np.abs(b))
        xi = lay.index("xi")
        scale[xi] = max(scale[xi], data.m)
        self.checks += 1
        if np.all(np.abs(a - b) <= self.rtol * scale):
            return res
        worst = int(np.argmax(np.abs(a - b) / scale))
        names = lay.labels()
        la, lb = log_density(a, data)[0], log_density(b, data)[0]
        raise EngineError(
            f"--check-engine: {self.engine.name} and its numpy twin disagree on the MAP after "
            f"{len(data.f)} answers: {names[worst]} = {a[worst]:.6g} vs {b[worst]:.6g}; log "
            f"density (numpy's formula) {la:.6f} at {self.engine.name}'s MAP, {lb:.6f} at "
            f"numpy's: one engine stopped early or the two found different modes")
