"""The data of the Stan program, one part of the model at a time: each part is a frozen dataclass
whose fields are its data contract (one :func:`stan_field` per Stan data name, in the
program's order). docs/stan.md ("One program: the parts of the model") says how the shipped
program switches a part off and what a new part takes.
"""

from __future__ import annotations

import re
from dataclasses import MISSING, dataclass, field, fields
from typing import TYPE_CHECKING, Any, ClassVar, cast

import numpy as np

from elicit.model.covariance import RelevanceScales, has_scales
from elicit.model.priors import PAPER_THRESHOLD, ZETA_PRIOR

if TYPE_CHECKING:  # the data of a fit; elicit.model.spec imports this module
    from elicit.model.spec import ModelData
    from elicit.model.variants import ModelVariant


def stan_field(stan_type: str, meaning: str, *, flag: bool = False, scalar: bool = False) -> Any:
    """A field of a part: one Stan data name, its declaration in the shipped program and one line
    of meaning. ``flag``: it only switches a part on or off (a program of one's own need not
    declare it); ``scalar``: an array of at most one entry, which a program of one's own may
    declare as a scalar."""
    return field(metadata={"type": stan_type, "meaning": meaning, "flag": flag, "scalar": scalar})


def _array(values, dtype=float) -> np.ndarray:
    return np.asarray(values, dtype=dtype)


@dataclass(frozen=True)
class StanPart:
    """The base of a part's data class (see the module docstring)."""

    #: the blocks of theta (:mod:`elicit.model.layout`) the part adds when a fit uses it
    params: ClassVar[tuple[str, ...]] = ()

    @classmethod
    def of(cls, data: ModelData) -> StanPart:
        """The part's data for the fit ``data`` (switched off if its model does not use it)."""
        raise NotImplementedError

    @classmethod
    def uses(cls, model: ModelVariant, learned: bool) -> bool:
        """Whether a fit of ``model`` (tau2 ``learned`` or fixed) uses the part (default: yes)."""
        return True

    @classmethod
    def params_of(cls, model: ModelVariant, learned: bool) -> tuple[str, ...]:
        """The blocks of theta the part adds to a fit of ``model`` (:attr:`params` if used)."""
        return cls.params if cls.uses(model, learned) else ()

    @classmethod
    def required(cls, model: ModelVariant, learned: bool) -> tuple[str, ...]:
        """The data names a program of ``model`` must declare (the non-flag fields if used)."""
        if not cls.uses(model, learned):
            return ()
        return tuple(f.name for f in fields(cls) if not f.metadata["flag"])

    def to_dict(self) -> dict[str, Any]:
        """The part's data by Stan name."""
        return {f.name: getattr(self, f.name) for f in fields(self)}


@dataclass(frozen=True)
class RegressionData(StanPart):
    """The regression ``y = X beta + noise`` and the meta-features U of the features
    (every model); the parameter gamma of the kernel."""

    params: ClassVar[tuple[str, ...]] = ("gamma",)

    N: int = stan_field("int<lower=1>", "number of training samples n")
    M: int = stan_field("int<lower=1>", "number of features p")
    d: int = stan_field("int<lower=1>", "number of meta-features")
    y: np.ndarray = stan_field("vector[N]", "targets")
    X: np.ndarray = stan_field("matrix[N, M]", "inputs")
    FD: np.ndarray = stan_field("matrix[M, d]", "meta-features U, one row per feature")
    a_sigma: float = stan_field("real<lower=0>", "inverse-gamma prior of sigma^2: shape (paper: 2)")
    b_sigma: float = stan_field("real<lower=0>", "inverse-gamma prior of sigma^2: scale (paper: 7)")

    @classmethod
    def of(cls, data: ModelData) -> RegressionData:
        h = data.hyper
        return cls(N=data.n, M=data.p, d=data.d, y=data.y, X=data.X, FD=data.U,
                   a_sigma=h.a_sigma, b_sigma=h.b_sigma)


@dataclass(frozen=True)
class AnswersData(StanPart):
    """The expert's answers about pairs of features (every model; none is allowed)."""

    N_f: int = stan_field("int<lower=0>", "number of answers (0 is allowed)")
    f: np.ndarray = stan_field("array[N_f] int<lower=0, upper=1>",
                               "answers, 1 = similar, 0 = dissimilar")
    W_f: np.ndarray = stan_field("matrix[N_f, d]",
                                 "squared meta-feature differences of the asked pairs")

    @classmethod
    def of(cls, data: ModelData) -> AnswersData:
        k = len(data.f)
        return cls(N_f=k, f=data.f.astype(int), W_f=data.W_f.reshape(k, data.d))


@dataclass(frozen=True)
class ThresholdData(StanPart):
    """The threshold's prior ``xi ~ N+(m, threshold_sd m)`` (the model's
    :class:`~elicit.model.priors.ThresholdPrior`); the parameter xi."""

    params: ClassVar[tuple[str, ...]] = ("xi",)

    threshold_mean: float = stan_field("real<lower=0>", "prior mean m of the threshold xi")
    threshold_sd: float = stan_field(
        "real<lower=0>", "prior sd of xi relative to m (paper: 0.5, tied threshold: 0.02)")

    @classmethod
    def of(cls, data: ModelData) -> ThresholdData:
        return cls(threshold_mean=data.m, threshold_sd=data.model.threshold_sd)

    @classmethod
    def required(cls, model: ModelVariant, learned: bool) -> tuple[str, ...]:
        # A program may state the paper's m / 2 itself; a model with another prior sd needs
        # a program that takes it.
        if model.threshold_sd == PAPER_THRESHOLD.sd:
            return ("threshold_mean",)
        return super().required(model, learned)


@dataclass(frozen=True)
class TauData(StanPart):
    """tau^2: data (the fixed variant) or a parameter ``tau ~ InvGamma(a_tau, b_tau)`` (the
    learned variant); as in the authors' code the Stan name ``tau`` holds the *variance*."""

    params: ClassVar[tuple[str, ...]] = ("tau2",)

    tau_learned: int = stan_field("int<lower=0, upper=1>",
                                  "1: tau^2 is a parameter (learned); 0: data (fixed)", flag=True)
    tau_fixed: np.ndarray = stan_field("array[1 - tau_learned] real<lower=0>",
                                       "tau^2 of the fixed variant (paper: 0.01)", scalar=True)
    a_tau: np.ndarray = stan_field("array[tau_learned] real<lower=0>",
                                   "inverse-gamma prior of tau^2: shape (paper: 2)", scalar=True)
    b_tau: np.ndarray = stan_field("array[tau_learned] real<lower=0>",
                                   "inverse-gamma prior of tau^2: scale (paper: 4)", scalar=True)

    @classmethod
    def of(cls, data: ModelData) -> TauData:
        h = data.hyper
        learned = h.variant == "learned"
        return cls(tau_learned=int(learned), tau_fixed=_array([] if learned else [h.tau2]),
                   a_tau=_array([h.a_tau] if learned else []),
                   b_tau=_array([h.b_tau] if learned else []))

    @classmethod
    def required(cls, model: ModelVariant, learned: bool) -> tuple[str, ...]:
        return ("a_tau", "b_tau") if learned else ("tau_fixed",)

    @classmethod
    def params_of(cls, model: ModelVariant, learned: bool) -> tuple[str, ...]:
        return ("tau2",) if learned else ()


@dataclass(frozen=True)
class CouplingData(StanPart):
    """The coupled set J of the known-coupling models (:attr:`ModelData.kernel_mask`; every
    other model couples every feature)."""

    coupled: np.ndarray = stan_field("array[M] int<lower=0, upper=1>",
                                     "1 = the feature is in the coupled set J")

    @classmethod
    def of(cls, data: ModelData) -> CouplingData:
        mask = data.kernel_mask
        return cls(coupled=np.ones(data.p, dtype=int) if mask is None else mask.astype(int))

    @classmethod
    def uses(cls, model: ModelVariant, learned: bool) -> bool:
        return model.known_coupling


@dataclass(frozen=True)
class RelevanceData(StanPart):
    """The relevance model's data (:class:`~elicit.model.covariance.RelevanceScales`); the
    parameter zeta."""

    params: ClassVar[tuple[str, ...]] = ("zeta",)

    has_relevance: int = stan_field("int<lower=0, upper=1>",
                                    "1: the features are scaled by relevance (parameter zeta)",
                                    flag=True)
    relevance: np.ndarray = stan_field(
        "array[has_relevance ? M : 0] int<lower=-1, upper=1>",
        "relevance class: 1 relevant, 0 irrelevant, -1 not judged")
    irrelevant_scale: np.ndarray = stan_field(
        "array[has_relevance] real<lower=0, upper=1>",
        "prior variance scale lambda of an irrelevant feature (eps = 0.01)", scalar=True)
    zeta_prior_mean: np.ndarray = stan_field("array[has_relevance] real",
                                             "zeta ~ N(zeta_prior_mean, zeta_prior_sd)",
                                             scalar=True)
    zeta_prior_sd: np.ndarray = stan_field("array[has_relevance] real<lower=0>",
                                           "prior sd of zeta", scalar=True)
    relevance_signal: np.ndarray = stan_field(
        "vector[has_relevance ? M : 0]",
        "each feature's neighbours' weighted mean answer (+1 relevant, -1 irrelevant)")
    relevance_spread: np.ndarray = stan_field(
        "array[has_relevance] real", "how far an answer reaches: logit share += spread x "
        "signal", scalar=True)

    @classmethod
    def of(cls, data: ModelData) -> RelevanceData:
        if not cls.uses(data.model, data.hyper.variant == "learned"):
            return cls(has_relevance=0, relevance=_array([], int), irrelevant_scale=_array([]),
                       zeta_prior_mean=_array([]), zeta_prior_sd=_array([]),
                       relevance_signal=_array([]), relevance_spread=_array([]))
        cov = cast(RelevanceScales, data.model.covariance)
        # ModelData.__post_init__ makes relevance an array
        return cls(has_relevance=1, relevance=np.asarray(data.relevance).astype(int),
                   irrelevant_scale=_array([cov.irrelevant_scale]),
                   zeta_prior_mean=_array([ZETA_PRIOR.mean]),
                   zeta_prior_sd=_array([ZETA_PRIOR.sd]),
                   relevance_signal=np.array(data.relevance_signal, dtype=float),
                   relevance_spread=_array([cov.spread]))

    @classmethod
    def uses(cls, model: ModelVariant, learned: bool) -> bool:
        return has_scales(model.covariance)


@dataclass(frozen=True)
class DirectionData(StanPart):
    """The direction answers' prior mean ``delta s`` of beta (:mod:`elicit.model.direction`):
    the signs s and the prior sd of the parameter delta."""

    params: ClassVar[tuple[str, ...]] = ("delta",)

    has_direction: int = stan_field("int<lower=0, upper=1>",
                                    "1: beta has the prior mean delta s (parameter delta)",
                                    flag=True)
    direction_signs: np.ndarray = stan_field(
        "vector[has_direction ? M : 0]", "s: +1 raises, -1 lowers, 0 not known")
    delta_prior_sd: np.ndarray = stan_field("array[has_direction] real<lower=0>",
                                            "delta ~ N+(0, delta_prior_sd)", scalar=True)

    @classmethod
    def of(cls, data: ModelData) -> DirectionData:
        if not cls.uses(data.model, data.hyper.variant == "learned"):
            return cls(has_direction=0, direction_signs=_array([]), delta_prior_sd=_array([]))
        return cls(has_direction=1, direction_signs=np.array(data.direction_signs, dtype=float),
                   delta_prior_sd=_array([data.delta_sd]))

    @classmethod
    def uses(cls, model: ModelVariant, learned: bool) -> bool:
        return model.direction


#: the parts of the shipped program ``stan/elicit.stan``, in its data block's order
SHIPPED_PARTS: tuple[type[StanPart], ...] = (RegressionData, AnswersData, ThresholdData,
                                             TauData, CouplingData, RelevanceData, DirectionData)


@dataclass(frozen=True)
class Declared:
    """What a Stan declaration holds: element type (``int`` or ``real``) and dimensions."""

    type: str
    dims: int


#: a Stan type (``array[N_f] int<...>``, ``matrix[N, M]``, ``real``): its array brackets and
#: its element type
_TYPE = re.compile(r"\s*(?:array\[(?P<dims>[^\]]*)\]\s*)?(?P<base>\w+)")
#: dimensions of Stan's element types
_BASE_DIMS = {"int": 0, "real": 0, "vector": 1, "row_vector": 1, "simplex": 1,
              "unit_vector": 1, "ordered": 1, "positive_ordered": 1, "sum_to_zero_vector": 1,
              "matrix": 2, "cov_matrix": 2, "corr_matrix": 2, "cholesky_factor_cov": 2,
              "cholesky_factor_corr": 2}


def declared(stan_type: str) -> Declared:
    """What the Stan type ``stan_type`` holds; ValueError if it is no Stan type this reads."""
    m = _TYPE.match(stan_type)
    if m is None or m.group("base") not in _BASE_DIMS:
        raise ValueError(f"not a Stan data type: {stan_type!r}")
    arrays = m.group("dims").count(",") + 1 if m.group("dims") is not None else 0
    base = m.group("base")
    return Declared("int" if base == "int" else "real", arrays + _BASE_DIMS[base])


def part_fields(parts: tuple[type[StanPart], ...]) -> dict[str, Any]:
    """The fields of ``parts`` by data name; ValueError if a name is in two parts, or a field is
    not a :func:`stan_field` of a Stan type without a default."""
    out: dict[str, Any] = {}
    for part in parts:
        for f in fields(part):
            where = f"{part.__name__}.{f.name}"
            if f.name in out:
                raise ValueError(f"data name {f.name} is in two parts")
            if "type" not in f.metadata:
                raise ValueError(f"{where}: declare it with stan_field(stan_type, meaning)")
            if f.default is not MISSING or f.default_factory is not MISSING:
                raise ValueError(f"{where}: a part's fields have no default")
            declared(f.metadata["type"])
            out[f.name] = f
    return out
