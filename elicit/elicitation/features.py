"""The expected gain of a feature question, and how likely a pair is answerable.

In the relevance model (``model="relevance"``, :mod:`elicit.model.variants`) the prior variance
of feature k's weight is ``tau2 lambda_k``: 1 if the expert called k relevant, eps if
irrelevant, and ``lambda_u(zeta)`` if k has not been judged (:mod:`elicit.model.covariance`).
Asking "does feature k affect the outcome?" moves ``lambda_k`` to 1 or to eps.

**The utility** is the one the pair questions have (:mod:`elicit.elicitation.scorer`): the
expected KL of the Gaussian predictive at the training inputs,

    u_k = p_k KL(N_relevant || N_0) + (1 - p_k) KL(N_irrelevant || N_0),

so pair and feature gains are on one scale and compared directly.

**The probability of "relevant"** is the spike-and-slab posterior of feature k at the current
MAP: prior odds ``s(zeta)`` (the share of relevant features among the unjudged ones) times the
Bayes factor of the data,

    p_k = s(zeta + log BF_k),   log BF_k = log p(y | lambda_k = 1) - log p(y | lambda_k = eps).

**The screen** (:meth:`FeatureScorer.screen`) holds the parameters at the MAP and changes
``lambda_k`` alone: a rank-two update of S per candidate, all candidates at once
(:meth:`~elicit.model.density.Marginal.scale_change`), which gives both answers' predictives
and the log marginal changes (hence ``p_k``). **The exact gain** (:meth:`FeatureScorer.exact`)
refits the MAP (gamma, xi[, tau2], zeta) with feature k's class changed, warm-started from the
current MAP and the round's base Hessian (:attr:`FeatureScorer.start_hessian`), with the
engine in use; the ``fast`` utility re-scores the screen's ``refine`` best
so (:meth:`FeatureScorer.refine_best`). The answer probability stays the screen's ``p_k``.

**A pair is answerable** only about two relevant features (an expert cannot say whether two
keywords affect the rating in the same way if one of them does not affect it), so in the
relevance model a pair's expected gain is weighted by ``P(answerable) = r_i r_j``
(:meth:`FeatureScorer.answerable`), r = 1 for a feature called relevant, 0 for one called
irrelevant, ``p_k`` for one not judged.
"""

from __future__ import annotations

from functools import cached_property
from typing import TYPE_CHECKING, cast

import numpy as np
from scipy.special import expit

from elicit.elicitation.scorer import kl_gauss
from elicit.model.covariance import IRRELEVANT, RELEVANT, ScaledCovariance
from elicit.model.density import Marginal
from elicit.model.result import MAPResult
from elicit.model.spec import ModelData

if TYPE_CHECKING:
    from elicit.elicitation.scorer import UtilityScorer


class FeatureScorer:
    """One query round's feature-question pieces, beside the round's
    :class:`~elicit.elicitation.scorer.UtilityScorer` (same data, MAP, engine and current
    predictive).

    Parameters
    ----------
    scorer
        The round's scorer; its data must be of a model with relevance classes.
    """

    def __init__(self, scorer: UtilityScorer) -> None:
        self.scorer = scorer
        self.data: ModelData = scorer.data
        self.fit: MAPResult = scorer.fit
        #: the scale lambda of an irrelevant feature (eps)
        # the data is of a model with relevance classes (see above), so a scaled covariance
        self.eps = float(cast(ScaledCovariance, self.data.model.covariance).irrelevant_scale)

    @cached_property
    def _screen_all(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(p_k, KL if relevant, KL if irrelevant) of every feature: one rank-two pass each
        for lambda = 1 and lambda = eps."""
        mg, m0, v0 = self.scorer.marginal, self.scorer.m0, self.scorer.v0
        every = np.arange(self.data.p)
        up = mg.scale_change(every, 1.0)
        down = mg.scale_change(every, self.eps)
        kl1 = kl_gauss(up.mean, up.var, m0[:, None], v0[:, None])
        kl0 = kl_gauss(down.mean, down.var, m0[:, None], v0[:, None])
        zeta = self.fit.zeta
        p = expit(zeta + up.dvalue - down.dvalue)
        return p, kl1, kl0

    def p_relevant(self, features: np.ndarray) -> np.ndarray:
        """p_k = s(zeta + log BF_k) of each of ``features`` at the MAP."""
        return self._screen_all[0][np.asarray(features, dtype=int)]

    def screen(self, features: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The screened expected gains of ``features`` and their p_k (rank-two, the MAP's
        parameters held fixed)."""
        k = np.asarray(features, dtype=int)
        p, kl1, kl0 = (a[k] for a in self._screen_all)
        return p * kl1 + (1.0 - p) * kl0, p

    def answerable(self, pairs: np.ndarray) -> np.ndarray:
        """P(answerable) = r_i r_j of each pair (r: 1 relevant, 0 irrelevant, p_k unjudged)."""
        pairs = np.asarray(pairs, dtype=int).reshape(-1, 2)
        cls = self.data.relevance
        r = np.where(cls == RELEVANT, 1.0,
                     np.where(cls == IRRELEVANT, 0.0, self._screen_all[0]))
        return r[pairs[:, 0]] * r[pairs[:, 1]]

    # -- exact ---------------------------------------------------------------------------
    def with_class(self, k: int, c: int) -> ModelData:
        """The round's data with feature ``k`` in class ``c`` (1 relevant, 0 irrelevant)."""
        classes = np.array(self.data.relevance)
        classes[int(k)] = c
        return self.data.with_relevance(classes)

    @property
    def start_hessian(self) -> np.ndarray | None:
        """The base Hessian the refits with changed classes start from: the round's, at the
        MAP (:attr:`~elicit.elicitation.scorer.UtilityScorer.hessian`), for an engine that
        uses one (None otherwise).

        It belongs to the old classes' y-likelihood, a rank-two change of S away from the new
        ones (:meth:`~elicit.model.density.Marginal.scale_change`); the projected Newton of a
        warm refit converges from it to the same MAP, in about as many iterations as from a
        fresh one, and a fresh one would cost more than the refit itself (it is one Hessian
        per round instead of one per refit). The elicitor's refit after the answer starts the
        same way, from the MAP and the Hessian the round hands over
        (:attr:`~elicit.elicitation.scorer.Scores.hessian`), and the numpy engine then serves
        it from its memo of this round's refits.
        """
        return self.scorer.hessian if self.scorer.engine.uses_hessian else None

    def exact(self, features: np.ndarray, p: np.ndarray) -> np.ndarray:
        """Expected KL by refitting the MAP for both answers of each feature."""
        return np.array([self.exact_one(k, p[c]) for c, k in enumerate(features)])

    def exact_one(self, k: int, p: float) -> float:
        m0, v0 = self.scorer.m0, self.scorer.v0
        kl = {}
        for c in (RELEVANT, IRRELEVANT):
            d2 = self.with_class(k, c)
            fit_c = self.scorer.engine.fit(d2, init=self.fit, hessian=self.start_hessian)
            kl[c] = kl_gauss(*Marginal.of_fit(d2, fit_c).predictive(), m0, v0)
        return float(p * kl[RELEVANT] + (1.0 - p) * kl[IRRELEVANT])

    def refine_best(self, features: np.ndarray, p: np.ndarray, u: np.ndarray,
                    exact: np.ndarray, refine: int) -> None:
        """Replace the screen's ``refine`` best gains by exact ones (in place)."""
        for c in np.argsort(-u, kind="stable")[:refine]:
            u[c] = self.exact_one(features[c], p[c])
            exact[c] = True
