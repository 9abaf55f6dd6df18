"""Named model variants: which assumptions a fit makes, and the Stan programs that state them.

Every variant shares the paper's regression ``y = X beta + eps``,
``beta | sigma2 ~ N(0, sigma2 tau2 K)``, ``gamma ~ N+(1, 0.5)`` and feedback
``f ~ Bernoulli(logistic(xi - gamma . w_ij))``, ``w_ij = (u_i - u_j)^2``. They differ in two
places, each a separate assumption:

**The threshold prior.** The paper has ``xi ~ N+(m, m/2)``: the threshold is learned with
gamma. On real reviews the answers then mostly move xi (raising it toward m) instead of
gamma, and predictions barely change. A *tied* threshold assumes that the similarity
threshold is set by the meta-features' distance scale, which ``m`` already measures (the
mean of ``gamma0 . w`` over the candidate pairs), so ``xi ~ N+(m, c m)`` with the small
:data:`TIED_THRESHOLD_SD` ``c = 0.02``: xi stays within a few percent of m and an answer
can only be explained by moving gamma. The parameter vector keeps its layout
``(gamma, xi[, tau2])``; only the prior sd of xi changes, so every numpy code path (batched
refits, the utility screen, the Hessian) serves it unchanged.

**The coupling.** The paper couples every pair of features through one gamma. If the expert
can judge only a set J of features (on Amazon about 43 of 340 keywords), the same gamma also
couples the unjudged features to their neighbours, and whatever the answers teach about J is
cancelled outside it. *Known coupling* assumes that only the features in J are coupled::

    K_ij = k_ij   if i and j are both in J,     K_ij = delta_ij   otherwise,

i.e. ``K = blockdiag(K_gamma[J, J], I)`` up to a permutation: a principal block of a kernel
matrix plus an identity block, so K stays positive semi-definite. J is data (the Stan
programs' ``coupled`` indicator, :attr:`~elicit.model.spec.ModelData.coupled`); by default
it is the set of features that appear in the candidate pairs
(:func:`elicit.prior.setup.coupled_features`, applied in
:func:`elicit.prior.setup.fit_no_feedback`),
so with all pairs as candidates the variant equals the paper's model. The numpy twin masks K
where it is built (:func:`elicit.model.kernel.kernel`); its derivatives contract
``(X'GX) o K`` with the squared differences, so the masked entries drop out of them too.

The registry :data:`MODELS` maps each name to a :class:`ModelVariant`; :func:`get_model` is
the one place a name is validated.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from elicit.errors import ElicitError
from elicit.model.link import LOGISTIC, Link

#: prior sd of xi relative to its mean m in the paper's model: xi ~ N+(m, m/2)
PAPER_THRESHOLD_SD = 0.5
#: prior sd of xi relative to m when the threshold is tied to the distance scale
TIED_THRESHOLD_SD = 0.02


@dataclass(frozen=True)
class ModelVariant:
    """One named model.

    Attributes
    ----------
    name
        The name used by ``--model`` and ``Hyper(model=...)``.
    assumes
        One line: what the model assumes beyond the shared regression.
    threshold_sd
        Prior sd of xi relative to its mean m (``xi ~ N+(m, threshold_sd * m)``).
    known_coupling
        Whether only the features of the coupled set J are coupled (the programs then take
        the extra data ``coupled``).
    stem
        The Stan programs are ``stan/<stem>_fixed_tau.stan`` and
        ``stan/<stem>_learned_tau.stan``.
    link
        How an answer depends on ``z = xi - gamma . w`` (:mod:`elicit.model.link`; the
        paper's logistic link by default).
    """

    name: str
    assumes: str
    threshold_sd: float
    known_coupling: bool
    stem: str
    link: Link = field(default=LOGISTIC, compare=False)

    def stan_name(self, variant: str) -> str:
        """File name of the Stan program of the ``"fixed"`` or ``"learned"`` tau2 variant."""
        return f"{self.stem}_{variant}_tau.stan"

    @property
    def extra_data(self) -> tuple[str, ...]:
        """Data names this model's programs take beyond the paper's contract."""
        return ("coupled",) if self.known_coupling else ()


PAPER = "paper"

MODELS: dict[str, ModelVariant] = {m.name: m for m in (
    ModelVariant(PAPER, "the paper's model: xi ~ N+(m, m/2) is learned with gamma; one gamma "
                 "couples all features", PAPER_THRESHOLD_SD, False, "elicit"),
    ModelVariant("tied-threshold", "the similarity threshold is set by the meta-features' "
                 f"distance scale: xi ~ N+(m, {TIED_THRESHOLD_SD:g} m), so answers move gamma",
                 TIED_THRESHOLD_SD, False, "tied_threshold"),
    ModelVariant("known-coupling", "only features the expert can judge (those in the candidate "
                 "pairs) are coupled: K = blockdiag(K_gamma on them, I)",
                 PAPER_THRESHOLD_SD, True, "known_coupling"),
    ModelVariant("known-coupling-tied", "both: a tied threshold and coupling only among the "
                 "features the expert can judge", TIED_THRESHOLD_SD, True,
                 "known_coupling_tied"),
)}


def get_model(name: str) -> ModelVariant:
    """The model called ``name``.

    Raises
    ------
    ElicitError
        One line listing the valid names, if ``name`` is not one of them.
    """
    if isinstance(name, str) and name in MODELS:
        return MODELS[name]
    raise ElicitError(f"unknown model {name!r}; choose one of {', '.join(MODELS)} "
                      "(`elicit models` describes them)")
