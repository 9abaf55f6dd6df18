"""Model variants: which assumptions a fit makes, as registered objects (docs/models.md: the
parts a :class:`ModelVariant` may change, and the :class:`StanProgram` that states it).
:data:`MODELS` maps each name to its variant; :func:`register_model` adds one,
:func:`get_model` is the one place a name is validated.
"""

from __future__ import annotations

from dataclasses import dataclass, field, is_dataclass, replace
from pathlib import Path

from elicit.errors import ElicitError
from elicit.internal.registry import Registry
from elicit.model.covariance import (
    FULL,
    KNOWN_COUPLING,
    RELEVANCE,
    Covariance,
    FullKernel,
    KnownCoupling,
    has_scales,
)
from elicit.model.direction import DIRECTION, DirectionMean
from elicit.model.link import LOGISTIC, Link, Logistic
from elicit.model.names import (  # noqa: F401  (re-exported)
    DIRECTION_MODEL,
    PAPER,
    RELEVANCE_DIRECTION_MODEL,
    RELEVANCE_MODEL,
)
from elicit.model.priors import PAPER_THRESHOLD, ThresholdPrior
from elicit.model.stan_data import SHIPPED_PARTS, StanPart, part_fields

#: prior sd of xi relative to m when the threshold is tied to the distance scale
TIED_THRESHOLD_SD = 0.02


@dataclass(frozen=True)
class StanProgram:
    """The Stan program that states a model variant for the Stan engines: ``file``, the shipped
    program's name in ``stan/`` or the path of a program of one's own; ``parts``, the parts of
    its data (:mod:`elicit.model.stan_data`) in its data block's order; ``shipped``, whether it
    is ``stan/elicit.stan``."""

    file: str | Path
    parts: tuple[type[StanPart], ...] = SHIPPED_PARTS
    shipped: bool = False

    def __post_init__(self) -> None:
        if not self.shipped:
            object.__setattr__(self, "file", Path(self.file).resolve())

    @property
    def name(self) -> str:
        """How ``elicit models`` names the program."""
        return f"stan/{self.file}" if self.shipped else str(self.file)


#: the shipped program ``stan/elicit.stan``: every part of :data:`SHIPPED_PARTS`, switched
#: on and off by data
SHIPPED_PROGRAM = StanProgram("elicit.stan", SHIPPED_PARTS, shipped=True)


@dataclass(frozen=True)
class ModelVariant:
    """One named model.

    Attributes
    ----------
    name
        The name used by ``--model`` and ``Hyper(model=...)``.
    assumes
        One line: what the model assumes beyond the shared regression.
    xi_prior, covariance, link
        The threshold prior, which features K couples, and how an answer depends on
        ``z = xi - gamma . w`` (module docstring).
    prior_mean
        ``None`` (zero, the paper's) or a :class:`~elicit.model.direction.DirectionMean`.
    program
        The Stan program that states this variant; ``None``: the numpy engine only, or a Stan
        engine given a ``stan_file`` of one's own."""

    name: str
    assumes: str
    xi_prior: ThresholdPrior = PAPER_THRESHOLD
    covariance: Covariance = field(default=FULL)
    link: Link = field(default=LOGISTIC, compare=False)
    program: StanProgram | None = None
    prior_mean: DirectionMean | None = None

    @property
    def threshold_sd(self) -> float:
        """Prior sd of xi relative to its mean m (``xi ~ N+(m, threshold_sd * m)``)."""
        return self.xi_prior.sd

    @property
    def known_coupling(self) -> bool:
        """Whether K depends on the coupled set J."""
        return self.covariance.uses_coupled_set

    @property
    def relevance(self) -> bool:
        """Whether the covariance scales the features (parameter zeta, reads ``relevance``)."""
        return has_scales(self.covariance)

    @property
    def direction(self) -> bool:
        """Whether beta has the prior mean ``delta s`` (parameter delta, reads ``direction``)."""
        return self.prior_mean is not None

    @property
    def parts(self) -> tuple[type[StanPart], ...]:
        """The parts of the model's Stan data: its program's, else the shipped ones."""
        return self.program.parts if self.program is not None else SHIPPED_PARTS

    def params(self, learned: bool) -> tuple[str, ...]:
        """The blocks of theta (:mod:`elicit.model.layout`) of a fit, as the parts say."""
        return tuple(n for part in self.parts for n in part.params_of(self, learned))

    def describe(self, folder: str | Path = "stan") -> str:
        """Two lines for ``elicit models``: the assumption, then the Stan program (a shipped
        one in ``folder``: the command gives the engines' ``stan_folder()``)."""
        prog = self.program
        if prog is None:
            return (f"{self.name}: {self.assumes}\n    no Stan program (link: {self.link.name}; "
                    "numpy engine)")
        if prog.shipped:
            data = [text for on, text in (
                (self.threshold_sd != PAPER_THRESHOLD.sd, f"threshold_sd = {self.threshold_sd:g}"),
                (self.known_coupling, "coupled = J"),
                (self.relevance, "the relevance classes; parameter zeta"),
                (self.direction, "the direction signs; parameter delta")) if on]
            where = f"{Path(folder) / prog.file}" + (f" (data: {', '.join(data)})" if data else "")
        else:
            where = f"{prog.name} (its own program)"
        return f"{self.name}: {self.assumes}\n    {where}"


_SHIPPED = (
    ModelVariant(PAPER, "the paper's model: xi ~ N+(m, m/2) is learned with gamma; one gamma "
                 "couples all features"),
    ModelVariant("tied-threshold", "the similarity threshold is set by the meta-features' "
                 f"distance scale: xi ~ N+(m, {TIED_THRESHOLD_SD:g} m), so answers move gamma",
                 xi_prior=ThresholdPrior(TIED_THRESHOLD_SD)),
    ModelVariant("known-coupling", "only features the expert can judge (those in the candidate "
                 "pairs) are coupled: K = blockdiag(K_gamma on them, I)",
                 covariance=KNOWN_COUPLING),
    ModelVariant("known-coupling-tied", "both: a tied threshold and coupling only among the "
                 "features the expert can judge", xi_prior=ThresholdPrior(TIED_THRESHOLD_SD),
                 covariance=KNOWN_COUPLING),
    ModelVariant(RELEVANCE_MODEL, "features the expert called relevant keep the prior scale 1, "
                 f"irrelevant ones {RELEVANCE.irrelevant_scale:g}, the others a scale learned "
                 "from the data (zeta: the share of relevant features among them)",
                 covariance=RELEVANCE),
    ModelVariant(DIRECTION_MODEL, "the paper's model with the prior mean delta s of beta: "
                 "s the expert's direction answers (+1 raises, -1 lowers), delta >= 0 learned",
                 prior_mean=DIRECTION),
    ModelVariant(RELEVANCE_DIRECTION_MODEL, "the relevance model with the prior mean delta s "
                 "of the direction answers", covariance=RELEVANCE, prior_mean=DIRECTION),
)
#: the registered model variants by name (a read-only mapping; add with :func:`register_model`)
MODELS: Registry[ModelVariant] = Registry("model", " (`elicit models` describes them)")


#: what a link must do (the methods of the Link protocol)
_LINK_METHODS = tuple(n for n, v in vars(Link).items() if callable(v) and not n.startswith("_"))


def _check(variant: ModelVariant) -> None:
    """Refuse a variant whose parts are not objects of the right kind, or whose Stan program
    cannot state it (a program of one's own is checked when a Stan engine first reads it)."""
    if not isinstance(variant, ModelVariant):
        raise ElicitError(f"register_model takes a ModelVariant, got {type(variant).__name__}")
    if not (isinstance(variant.name, str) and variant.name.strip() == variant.name
            and variant.name):
        raise ElicitError(f"a model name must be a non-empty string without surrounding "
                          f"spaces, got {variant.name!r}")
    missing = [m for m in _LINK_METHODS if not callable(getattr(variant.link, m, None))]
    if missing:
        raise ElicitError(f"model {variant.name!r}: its link lacks {', '.join(missing)} "
                          "(see elicit.model.link.Link)")
    sd = getattr(variant.xi_prior, "sd", None)
    if not callable(getattr(variant.xi_prior, "at", None)) \
            or not (isinstance(sd, (int, float)) and 0 < sd < float("inf")):
        raise ElicitError(f"model {variant.name!r}: xi_prior must be a ThresholdPrior with a "
                          f"positive, finite sd, got {variant.xi_prior!r}")
    if not (callable(getattr(variant.covariance, "mask", None))
            and isinstance(getattr(variant.covariance, "uses_coupled_set", None), bool)):
        raise ElicitError(f"model {variant.name!r}: covariance must be a Covariance "
                          "(elicit.model.covariance)")
    if has_scales(variant.covariance) and not callable(getattr(variant.covariance, "scales", None)):
        raise ElicitError(f"model {variant.name!r}: a covariance with has_scales needs a "
                          "scales(classes, zeta) method (elicit.model.covariance)")
    if variant.prior_mean is not None and not isinstance(variant.prior_mean, DirectionMean):
        raise ElicitError(f"model {variant.name!r}: prior_mean must be None or a "
                          "DirectionMean (elicit.model.direction)")
    prog = variant.program
    if prog is None:
        return
    if not isinstance(prog, StanProgram):
        raise ElicitError(f"model {variant.name!r}: program must be a StanProgram or None, got "
                          f"{type(prog).__name__}")
    bad = [p for p in prog.parts
           if not (isinstance(p, type) and issubclass(p, StanPart) and is_dataclass(p))]
    if bad:
        raise ElicitError(f"model {variant.name!r}: the parts of its Stan program must be "
                          f"StanPart dataclasses (elicit.model.stan_data), got {bad[0]!r}")
    try:
        part_fields(prog.parts)
    except ValueError as exc:
        raise ElicitError(f"model {variant.name!r}: {exc}") from None
    if not prog.shipped:
        if not Path(prog.file).is_file():
            raise ElicitError(f"model {variant.name!r}: its Stan program {prog.file} does not "
                              "exist")
        return
    states = (prog == SHIPPED_PROGRAM and isinstance(variant.link, Logistic)
              and isinstance(variant.xi_prior, ThresholdPrior)
              and isinstance(variant.covariance, (FullKernel, KnownCoupling)))
    if not states:
        raise ElicitError(f"model {variant.name!r}: the shipped Stan program {prog.name} "
                          "cannot state it (it has the shipped parts, the logistic link, a "
                          "ThresholdPrior and the full, known-coupling or relevance "
                          "covariance); give it a program of its own, "
                          "program=StanProgram(path), or set program=None")


def register_model(variant: ModelVariant) -> ModelVariant:
    """Add ``variant`` to :data:`MODELS`, so that ``Hyper(model=variant.name)`` and
    ``--model`` accept it; returns it (a one-line ElicitError if the name is invalid or taken,
    a part is not what a fit needs, or the shipped Stan program cannot state the variant)."""
    _check(variant)
    return MODELS.add(variant.name, variant)


unregister_model = MODELS.remove
get_model = MODELS.lookup


for _m in _SHIPPED:
    register_model(replace(_m, program=SHIPPED_PROGRAM))
