"""``--check-engine``: every fit of a Stan engine checked against its numpy twin; the four
steps of :meth:`CheckedEngine._fit` are docs/stan.md's ("Checking an engine against the numpy
twin"). Any disagreement is an :class:`~elicit.errors.EngineError` saying where and how much.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np

from elicit.engines.base import Engine
from elicit.errors import ElicitError, EngineError
from elicit.model.refit_checks import local_gain
from elicit.model.result import MAPResult
from elicit.model.spec import ModelData, Params
from elicit.model.theta import params_of, theta_of

logger = logging.getLogger(__name__)

#: what ``--check-engine`` does when the engines report different stationary points
MODES = ("higher", "stop")


def check_modes(modes: object) -> str:
    """``modes`` if it is one of :data:`MODES`, else a one-line error."""
    if modes not in MODES:
        raise ElicitError(f"--check-engine takes {' or '.join(MODES)}, got {modes!r}")
    return str(modes)


@dataclass(frozen=True)
class ModeRecord:
    """Two engines' different stationary points of one fit, and whose point was kept."""

    n_answers: int
    lp_engine: float
    lp_twin: float
    kept: str


def _scale(b: np.ndarray, data: ModelData) -> np.ndarray:
    scale = np.maximum(1.0, np.abs(b))
    xi = data.layout.index("xi")
    scale[xi] = max(scale[xi], data.m)
    return scale


def same_point(a: np.ndarray, b: np.ndarray, data: ModelData, rtol: float = 1e-3) -> bool:
    """Whether each parameter is within ``rtol`` relative to max(1, |b|) (xi: to m)."""
    return bool(np.all(np.abs(a - b) <= rtol * _scale(b, data)))


class CheckedEngine(Engine):
    """Fit with ``engine`` (its results are returned); check each fit against its numpy twin
    (of the same variant). At different stationary points ``modes`` ``"higher"`` continues
    from the higher one, ``"stop"`` raises :class:`~elicit.errors.EngineError`."""

    #: a point is stationary when the twin's density rises by at most this much near it
    #: (CmdStan's L-BFGS stops 0.011 below a maximum on an Amazon-size problem)
    gain_tol = 0.05

    def __init__(self, engine: Engine, modes: str = "higher") -> None:
        from elicit.engines.numpy_engine import NumpyEngine

        super().__init__(engine.variant)
        self.modes = check_modes(modes)
        self.engine, self.twin = engine, NumpyEngine(engine.variant)
        self.name = engine.name
        self.uses_hessian = engine.uses_hessian
        self.checks = 0
        #: the fits whose engines reported different stationary points
        self.records: list[ModeRecord] = []

    #: how many of those :attr:`records` are logged as warnings (the rest at INFO level)
    warn_first = 10

    def _fit(self, data: ModelData, start: Params, warm: MAPResult | None,
             hessian: np.ndarray | None) -> MAPResult:
        init = warm if warm is not None else start
        res = self.engine.fit(data, init, hessian=hessian)
        ref = self.twin.fit(data, init, hessian=hessian if self.twin.uses_hessian else None)
        self.checks += 1
        name, n = self.engine.name, len(data.f)
        a, b = theta_of(res, data), theta_of(ref, data)

        # the steps of docs/stan.md: 2. both points stationary for the twin's density
        la, _, gain_a = local_gain(a, data)
        lb, _, gain_b = local_gain(b, data)
        for who, gain, lp in ((f"{name}'s MAP", gain_a, la), ("the numpy twin's MAP", gain_b, lb)):
            if not gain <= self.gain_tol:
                raise EngineError(
                    f"--check-engine: after {n} answers {who} is not a stationary point of "
                    f"the twin's density: it rises by {gain:.3g} nearby (log density "
                    f"{lp:.6f}; tolerance {self.gain_tol:g}): {name} stopped early or "
                    f"solves another problem")

        # 3. the engine's own density at both points (the Stan engines have a log_prob)
        if (log_prob := getattr(self.engine, "log_prob", None)) is not None:
            self._same_density(data, a, b, log_prob)

        # 4. one point, or two stationary points
        if same_point(a, b, data):
            return res
        # An engine that stops on looser tolerances than the twin's (CmdStan) may leave a point
        # a little short of the twin's, farther than same_point's rtol: the twin, started there,
        # says which maximum the engine's point belongs to.
        c = self.twin.fit(data, params_of(a, data))
        if same_point(theta_of(c, data), b, data):
            return res
        kept = "engine" if c.log_density >= lb else "twin"
        self.records.append(ModeRecord(n, la, lb, kept))
        worst = int(np.argmax(np.abs(a - b) / _scale(b, data)))
        label = data.layout.labels()[worst]
        what = (f"--check-engine: after {n} answers {name} and the numpy twin report different "
                f"stationary points of the same density ({label} = {a[worst]:.6g} vs "
                f"{b[worst]:.6g}): log density {la:.6f} at {name}'s, {lb:.6f} at the twin's")
        if self.modes == "stop":
            raise EngineError(what + " (--check-engine stop)")
        shown = len(self.records) <= self.warn_first
        logger.log(logging.WARNING if shown else logging.INFO, "%s; continuing from %s%s", what,
                   f"{name}'s" if kept == "engine" else "the twin's",
                   "" if len(self.records) != self.warn_first else
                   " (further ones of this engine are logged at INFO level)")
        if kept == "engine":
            return res
        return replace(ref, engine=res.engine, log_density=res.log_density + (lb - la),
                       message=f"{ref.message}; the numpy twin's MAP, higher than {name}'s "
                               f"by {lb - la:.3g} (--check-engine)", warm_hessian=None)

    def _same_density(self, data: ModelData, a: np.ndarray, b: np.ndarray,
                      log_prob: Callable) -> None:
        """The gradients at a and b, and lp(b) - lp(a), must agree with the twin's."""
        from elicit.model.density import log_density

        name, n = self.engine.name, len(data.f)
        # Stan works in u = log(x) for a bounded entry: a point on the boundary x = 0 is
        # evaluated a hair above it, by both.
        bounded = data.layout.bounded()
        floor = np.where(bounded, 1e-12 * np.maximum(1.0, np.abs(b)), -np.inf)
        lps = []
        for who, x in ((f"{name}'s MAP", a), ("the twin's MAP", b)):
            x = np.maximum(x, floor)
            lp_twin, g_twin = log_density(x, data)
            try:
                lp_stan, g_stan = log_prob(data, x)
            except EngineError as exc:
                raise EngineError(f"--check-engine: after {n} answers {name}'s program has "
                                  f"no log density at {who}: {exc}") from exc
            # compared in u, where both are O(1) near a maximum
            du = np.where(bounded, x, 1.0)
            gu_s, gu_t = g_stan * du, g_twin * du
            bad = np.abs(gu_s - gu_t) > 1e-5 * (1.0 + np.abs(gu_t))
            if bad.any():
                k = int(np.argmax(np.abs(gu_s - gu_t)))
                u = ("log " if bounded[k] else "") + data.layout.labels()[k]
                raise EngineError(
                    f"--check-engine: after {n} answers {name} and the numpy twin disagree at "
                    f"the same point ({who}): d log p / d {u} = "
                    f"{gu_s[k]:.6g} vs {gu_t[k]:.6g}: they do not fit the same model")
            lps.append((lp_stan, lp_twin))
        d_stan, d_twin = lps[1][0] - lps[0][0], lps[1][1] - lps[0][1]
        if abs(d_stan - d_twin) > 1e-6 + 1e-9 * (abs(lps[0][1]) + abs(lps[1][1])):
            raise EngineError(
                f"--check-engine: after {n} answers {name} and the numpy twin disagree on the "
                f"log density: from {name}'s MAP to the twin's it changes by {d_stan:.9g} by "
                f"{name}'s program, {d_twin:.9g} by the twin's formula: they do not fit the "
                f"same model")
