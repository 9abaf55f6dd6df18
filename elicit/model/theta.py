"""The parameter vector theta of a model's data: its blocks, conversions from and to a fit or a
:class:`~elicit.model.spec.Params` point, and the scales (zeta) and prior mean (delta) it sets.
"""

from __future__ import annotations

from typing import cast

import numpy as np

from elicit.model.covariance import RelevanceScales, Scales
from elicit.model.spec import ModelData, Params


def split_theta(theta: np.ndarray, data: ModelData) -> tuple[np.ndarray, float, float]:
    """(gamma, xi, tau2) from a parameter vector (tau2 the fixed value if not learned)."""
    lay = data.layout
    tau2 = float(theta[lay.index("tau2")]) if "tau2" in lay else data.hyper.tau2
    return theta[lay["gamma"]], float(theta[lay.index("xi")]), tau2


def join_theta(gamma: np.ndarray, xi: float, tau2: float, data: ModelData,
               zeta: float | None = None, delta: float | None = None) -> np.ndarray:
    """The parameter vector of (gamma, xi, tau2[, zeta][, delta]) (tau2, zeta and delta only
    where the layout has them; there they are needed)."""
    for name, v in (("zeta", zeta), ("delta", delta)):
        if v is None and name in data.layout:
            raise ValueError(f"model {data.hyper.model!r} has the parameter {name}: pass "
                             f"{name}= (or use theta_of with a fit or Params)")
    # None only for blocks the layout lacks (above), which join does not read
    return data.layout.join({"gamma": gamma, "xi": xi, "tau2": tau2,
                             "zeta": cast(float, zeta), "delta": cast(float, delta)})


def with_parts(point, data: ModelData) -> Params:
    """A fit or Params point as the Params of ``data``'s model: a block the model has and the
    point lacks (a start from another model's MAP) at its start."""
    zeta, delta = getattr(point, "zeta", None), getattr(point, "delta", None)
    if (zeta is None and "zeta" in data.layout) or (delta is None and "delta" in data.layout):
        start = data.initial_params()
        zeta = start.zeta if zeta is None else zeta
        delta = start.delta if delta is None else delta
    return Params(point.gamma, point.xi, point.tau2, zeta, delta)


def theta_of(point, data: ModelData) -> np.ndarray:
    """The parameter vector of a fit or a Params point (:func:`with_parts`)."""
    p = with_parts(point, data)
    return join_theta(p.gamma, p.xi, p.tau2, data, p.zeta, p.delta)


def params_of(theta: np.ndarray, data: ModelData) -> Params:
    """The :class:`~elicit.model.spec.Params` of a parameter vector (zeta and delta ``None``
    where the model has none)."""
    lay = data.layout
    gamma, xi, tau2 = split_theta(theta, data)
    zeta, delta = (float(theta[lay.index(n)]) if n in lay else None for n in ("zeta", "delta"))
    return Params(gamma, xi, tau2, zeta, delta)


def data_scales(data: ModelData, zeta: float | None) -> Scales | None:
    """The per-feature scales of ``data``'s model at ``zeta`` (``None``: the model has none)."""
    if not data.model.relevance:
        return None
    if zeta is None:
        raise ValueError(f"model {data.hyper.model!r} scales the features by zeta: pass zeta")
    # a relevance model's covariance; relevance is an array after ModelData.__post_init__
    cov = cast(RelevanceScales, data.model.covariance)
    return cov.scales(cast(np.ndarray, data.relevance), zeta, data.relevance_signal)


def data_mean(data: ModelData, delta: float | None) -> tuple[np.ndarray, float] | None:
    """The prior mean ``(s, delta)`` of ``data``'s model at ``delta`` (``None``: none)."""
    if not data.model.direction:
        return None
    if delta is None:
        raise ValueError(f"model {data.hyper.model!r} has a direction mean: pass delta")
    return data.direction_signs, float(delta)
