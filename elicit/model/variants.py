"""Model variants: which assumptions a fit makes, as registered objects.

Every variant shares the paper's regression ``y = X beta + eps``,
``beta | sigma2 ~ N(0, sigma2 tau2 K)`` and ``gamma ~ N+(1, 0.5)``. A :class:`ModelVariant`
supplies the three parts that may change, each an object:

* **the threshold prior** (:class:`~elicit.model.priors.ThresholdPrior`): ``xi ~ N+(m, c m)``.
  The paper has c = 1/2: the threshold is learned with gamma. On real reviews the answers
  then mostly move xi (raising it toward m) instead of gamma, and predictions barely change.
  A *tied* threshold assumes that the similarity threshold is set by the meta-features'
  distance scale, which m already measures (the mean of ``gamma0 . w`` over the candidate
  pairs), so c = :data:`TIED_THRESHOLD_SD` = 0.02: xi stays within a few percent of m and an
  answer can only be explained by moving gamma.
* **the covariance** (:mod:`elicit.model.covariance`): the paper couples every pair of
  features through one gamma. If the expert can judge only a set J of features (on Amazon
  about 43 of 340 keywords), the same gamma also couples the unjudged features to their
  neighbours, and whatever the answers teach about J is cancelled outside it. *Known
  coupling* keeps K_ij only when i and j are both in J (``K = blockdiag(K_gamma[J, J], I)``);
  J is data (:attr:`~elicit.model.spec.ModelData.coupled`), by default the features of the
  candidate pairs (:func:`elicit.prior.setup.coupled_features`), so with all pairs as
  candidates the variant equals the paper's model.
  *Relevance* (:data:`~elicit.model.covariance.RELEVANCE`) keeps the full kernel as the prior
  correlation and scales each feature by the expert's relevance answers:
  ``beta ~ N(0, sigma2 tau2 L^(1/2) K L^(1/2))`` with ``lambda_j`` 1 (relevant), eps
  (irrelevant) or ``lambda_u(zeta)`` (not judged), zeta ~ N(logit(0.1), 1) a parameter (the
  logit of the share of relevant features among the unjudged ones). The answers are data
  (:attr:`~elicit.model.spec.ModelData.relevance`), not a likelihood on zeta: the features a
  utility asks about are chosen for being likely relevant, so the answered share overstates
  the unasked one.
* **the feedback link** (:mod:`elicit.model.link`): ``f ~ Bernoulli(logistic(xi - gamma . w))``
  in the paper.

The parameter vector has the layout ``(gamma, xi[, tau2][, zeta])``
(:mod:`elicit.model.layout`; zeta only when the covariance scales the features), so every
numpy code path (the density, batched refits, the utility screen, the Hessian) reads the
variant's objects and serves any variant unchanged.

The Stan programs (:class:`StanPrograms`) state each named variant for the Stan engines: the
paper's model in ``stan/elicit_{fixed,learned}_tau.stan``, written as the paper states it, and
the threshold and coupling variants in ``stan/elicit_general_{fixed,learned}_tau.stan``, which
take the variant's two knobs as data (``threshold_sd`` = c and the ``coupled`` indicator of J,
all ones for the full kernel), and the relevance model in
``stan/elicit_relevance_{fixed,learned}_tau.stan`` (data: the classes ``relevance``,
``irrelevant_scale`` and zeta's prior; parameter ``zeta``). A variant with another link has
no shipped program: it runs on the numpy engine (or a Stan engine with a ``stan_file`` of
one's own).

The registry :data:`MODELS` maps each name to its variant; :func:`register_model` adds one
from outside the package, :func:`get_model` is the one place a name is validated.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from elicit.errors import ElicitError
from elicit.internal.registry import Registry
from elicit.model.covariance import (
    FULL,
    KNOWN_COUPLING,
    RELEVANCE,
    Covariance,
    FullKernel,
    KnownCoupling,
    RelevanceScales,
    has_scales,
)
from elicit.model.link import LOGISTIC, Link, Logistic
from elicit.model.priors import PAPER_THRESHOLD, ThresholdPrior

#: prior sd of xi relative to its mean m in the paper's model: xi ~ N+(m, m/2)
PAPER_THRESHOLD_SD = PAPER_THRESHOLD.sd
#: prior sd of xi relative to m when the threshold is tied to the distance scale
TIED_THRESHOLD_SD = 0.02
#: the Stan data of a variant's two knobs: the prior sd of xi relative to m, the coupled set J
KNOBS = ("threshold_sd", "coupled")
#: the Stan data of the relevance model: the classes, the scale of an irrelevant feature and
#: zeta's prior
RELEVANCE_DATA = ("relevance", "irrelevant_scale", "zeta_prior_mean", "zeta_prior_sd")


@dataclass(frozen=True)
class StanPrograms:
    """The shipped Stan programs of a variant: ``stan/<stem>_{fixed,learned}_tau.stan``.

    Attributes
    ----------
    stem
        File name stem.
    knobs
        Whether the programs take the variant's knobs as data (``threshold_sd``, the prior sd
        of xi relative to m, and ``coupled``, the coupled set J); else they state the paper's
        values themselves.
    relevance
        Whether the programs are the relevance model's (data :data:`RELEVANCE_DATA`,
        parameter ``zeta``).
    """

    stem: str
    knobs: bool
    relevance: bool = False

    def file_name(self, variant: str) -> str:
        """File name of the program of the ``"fixed"`` or ``"learned"`` tau2 variant."""
        return f"{self.stem}_{variant}_tau.stan"

    @property
    def extra_data(self) -> tuple[str, ...]:
        """Data names these programs take beyond the paper's contract."""
        return (KNOBS if self.knobs else ()) + (RELEVANCE_DATA if self.relevance else ())


#: the paper's programs, as the paper states the model
PAPER_PROGRAMS = StanPrograms("elicit", knobs=False)
#: the programs of every other named variant (logistic link, Gaussian kernel on a coupled set)
GENERAL_PROGRAMS = StanPrograms("elicit_general", knobs=True)
#: the relevance model's programs (the paper's threshold prior and full kernel, per-feature
#: relevance scales)
RELEVANCE_PROGRAMS = StanPrograms("elicit_relevance", knobs=False, relevance=True)


@dataclass(frozen=True)
class ModelVariant:
    """One named model.

    Attributes
    ----------
    name
        The name used by ``--model`` and ``Hyper(model=...)``.
    assumes
        One line: what the model assumes beyond the shared regression.
    xi_prior
        The threshold prior ``xi ~ N+(m, sd m)`` (:class:`~elicit.model.priors.ThresholdPrior`).
    covariance
        Which features K couples (:mod:`elicit.model.covariance`).
    link
        How an answer depends on ``z = xi - gamma . w`` (:mod:`elicit.model.link`).
    programs
        The shipped Stan programs that state this variant (:data:`GENERAL_PROGRAMS` can state
        any variant with the logistic link); ``None`` (the default): the numpy engine only,
        or a Stan engine given a ``stan_file`` of one's own.
    """

    name: str
    assumes: str
    xi_prior: ThresholdPrior = PAPER_THRESHOLD
    covariance: Covariance = field(default=FULL)
    link: Link = field(default=LOGISTIC, compare=False)
    programs: StanPrograms | None = None

    @property
    def threshold_sd(self) -> float:
        """Prior sd of xi relative to its mean m (``xi ~ N+(m, threshold_sd * m)``)."""
        return self.xi_prior.sd

    @property
    def known_coupling(self) -> bool:
        """Whether K depends on the coupled set J (the model sets J up from the candidates)."""
        return self.covariance.uses_coupled_set

    @property
    def relevance(self) -> bool:
        """Whether the covariance scales the features by their relevance classes (the
        model has the parameter zeta and reads ``ModelData.relevance``)."""
        return has_scales(self.covariance)

    def stan_name(self, variant: str) -> str:
        """File name of the Stan program of the ``"fixed"`` or ``"learned"`` tau2 variant."""
        if self.programs is None:
            raise ElicitError(f"model {self.name!r} has no shipped Stan program; fit it with "
                              "the numpy engine, or give a Stan engine a stan_file of your own")
        return self.programs.file_name(variant)

    @property
    def extra_data(self) -> tuple[str, ...]:
        """Data names this model's programs take beyond the paper's contract: the knobs
        (:data:`KNOBS`), unless its shipped programs state the paper's values themselves. A
        custom program for a variant without shipped programs gets the knobs too."""
        return self.programs.extra_data if self.programs is not None else KNOBS

    def describe(self) -> str:
        """Two lines for ``elicit models``: the assumption, then the Stan programs."""
        if self.programs is None:
            where = f"no Stan program (link: {self.link.name}; numpy engine)"
        else:
            where = f"stan/{self.stan_name('fixed')}, stan/{self.stan_name('learned')}"
            if self.programs.knobs:
                J = "J" if self.known_coupling else "all 1"
                where += f" (data: threshold_sd = {self.threshold_sd:g}, coupled = {J})"
            if self.programs.relevance:
                where += " (data: the relevance classes; parameter zeta)"
        return f"{self.name}: {self.assumes}\n    {where}"


PAPER = "paper"
#: the name of the relevance model
RELEVANCE_MODEL = "relevance"

_SHIPPED = (
    ModelVariant(PAPER, "the paper's model: xi ~ N+(m, m/2) is learned with gamma; one gamma "
                 "couples all features", programs=PAPER_PROGRAMS),
    ModelVariant("tied-threshold", "the similarity threshold is set by the meta-features' "
                 f"distance scale: xi ~ N+(m, {TIED_THRESHOLD_SD:g} m), so answers move gamma",
                 xi_prior=ThresholdPrior(TIED_THRESHOLD_SD), programs=GENERAL_PROGRAMS),
    ModelVariant("known-coupling", "only features the expert can judge (those in the candidate "
                 "pairs) are coupled: K = blockdiag(K_gamma on them, I)",
                 covariance=KNOWN_COUPLING, programs=GENERAL_PROGRAMS),
    ModelVariant("known-coupling-tied", "both: a tied threshold and coupling only among the "
                 "features the expert can judge", xi_prior=ThresholdPrior(TIED_THRESHOLD_SD),
                 covariance=KNOWN_COUPLING, programs=GENERAL_PROGRAMS),
    ModelVariant(RELEVANCE_MODEL, "features the expert called relevant keep the prior scale 1, "
                 f"irrelevant ones {RELEVANCE.irrelevant_scale:g}, the others a scale learned "
                 "from the data (zeta: the share of relevant features among them)",
                 covariance=RELEVANCE, programs=RELEVANCE_PROGRAMS),
)
#: the registered model variants by name (a read-only mapping; add with :func:`register_model`)
MODELS: Registry[ModelVariant] = Registry("model", " (`elicit models` describes them)")


#: what a link must do (the methods of the Link protocol)
_LINK_METHODS = tuple(n for n, v in vars(Link).items() if callable(v) and not n.startswith("_"))


def _check(variant: ModelVariant) -> None:
    """Refuse a variant whose parts are not objects of the right kind, or whose Stan programs
    cannot state it (the numpy twin and the Stan engines must fit the same model)."""
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
    if not callable(getattr(variant.xi_prior, "at", None)):
        raise ElicitError(f"model {variant.name!r}: xi_prior must be a ThresholdPrior")
    if not (callable(getattr(variant.covariance, "mask", None))
            and isinstance(getattr(variant.covariance, "uses_coupled_set", None), bool)):
        raise ElicitError(f"model {variant.name!r}: covariance must be a Covariance "
                          "(elicit.model.covariance)")
    if has_scales(variant.covariance) and not callable(getattr(variant.covariance, "scales",
                                                                  None)):
        raise ElicitError(f"model {variant.name!r}: a covariance with has_scales needs a "
                          "scales(classes, zeta) method (elicit.model.covariance)")
    progs = variant.programs
    if progs is None:
        return
    states = (isinstance(variant.link, Logistic) and isinstance(variant.xi_prior, ThresholdPrior)
              and isinstance(variant.covariance, (FullKernel, KnownCoupling)))
    if progs.relevance:
        ok = (progs == RELEVANCE_PROGRAMS and isinstance(variant.link, Logistic)
              and variant.xi_prior == PAPER_THRESHOLD
              and isinstance(variant.covariance, RelevanceScales))
    elif progs.knobs:
        ok = states and progs == GENERAL_PROGRAMS
    else:
        ok = (states and progs == PAPER_PROGRAMS and variant.xi_prior == PAPER_THRESHOLD
              and isinstance(variant.covariance, FullKernel))
    if not ok:
        raise ElicitError(f"model {variant.name!r}: the shipped Stan programs "
                          f"{progs.stem}_*.stan cannot state it (they have the logistic link, "
                          "a ThresholdPrior and the full or known-coupling covariance, or the "
                          "relevance scales with the paper's threshold prior); set "
                          "programs=None")


def register_model(variant: ModelVariant) -> ModelVariant:
    """Add ``variant`` to :data:`MODELS`, so that ``Hyper(model=variant.name)`` and
    ``--model`` accept it; returns it.

    Raises
    ------
    ElicitError
        One line, if the name is taken or the variant's parts are not what a fit needs.
    """
    _check(variant)
    return MODELS.add(variant.name, variant)


def unregister_model(name: str) -> None:
    """Remove the model called ``name`` (a variant registered for a test, say)."""
    MODELS.remove(name)


def get_model(name: str) -> ModelVariant:
    """The model called ``name``.

    Raises
    ------
    ElicitError
        One line listing the valid names, if ``name`` is not one of them.
    """
    return MODELS.lookup(name)


for _m in _SHIPPED:
    register_model(_m)
