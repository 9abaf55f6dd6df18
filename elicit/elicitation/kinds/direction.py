"""Direction questions (docs/models.md, "Direction answers"); a simulated expert answers
``weight_sign(k)`` (0: don't know).

The utility is the expected KL of the predictive,

    u_k = r_k (q_k KL(N_raises || N_0) + (1 - q_k) KL(N_lowers || N_0)),

``q_k = P(beta_k > 0)`` at the MAP and ``r_k`` the chance that the expert can answer (as a
pair's feature). The delta-line screen holds S at the round's and refits delta alone: with
``m' = X s'`` the log density in delta is ``-a* log(b_sigma + (c0 - 2 delta c1 + delta^2 c2)
/ 2) - delta^2 / (2 sd^2)``, ``c0 = y' S^-1 y``, ``c1 = m'' S^-1 y``, ``c2 = m'' S^-1 m'``,
for every candidate at once (a few Newton steps from ``c1 / c2``). delta must move: before
the first answer its MAP is 0, where no answer moves the predictive.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from elicit.elicitation.gains import Scores, Utility, kl_gauss, register_utility
from elicit.elicitation.kinds.base import DONT_KNOW, Answer, QuestionKind, agreed, register_kind
from elicit.elicitation.table import feature_rows
from elicit.model.names import DIRECTION_MODEL, PAPER

if TYPE_CHECKING:  # the model and scipy load when a round is scored, not for the kind's words
    from elicit.elicitation.questions import Query
    from elicit.elicitation.utility import ScoringRound
    from elicit.model.marginal import Marginal
    from elicit.model.spec import ModelData

NAME = "direction"
#: raises: the outcome goes up when the feature is present (s_k = +1); key p (plus), as ^
#: is a dead key on German, French and Spanish layouts (it still reads as raises)
RAISES = Answer.define("raises", NAME, 1, "Raises", "p", aliases=("raise", "^"))
#: lowers: it goes down (s_k = -1)
LOWERS = Answer.define("lowers", NAME, 0, "Lowers", "v", aliases=("lower",))


class DirectionScorer:
    """One round's direction-question pieces, beside the round's scorer."""

    #: how much the delta-line screen may underestimate a gain, for stopping the refinement
    #: early (the exact gain was within -4%/+3% of it on Amazon and Yelp)
    margin: float = 0.05

    def __init__(self, round_: ScoringRound) -> None:
        self.round, self.scorer = round_, round_.scorer
        self.data: ModelData = self.scorer.data
        self.mg: Marginal = self.scorer.marginal
        self.s = np.asarray(self.data.direction_signs)

    @cached_property
    def p_raises(self) -> np.ndarray:
        """q_k = P(beta_k > 0) of every feature at the MAP: beta_k's NIG marginal is Student-t,
        2 a* degrees of freedom and scale sqrt(b*/a* var), not the normal of its variance."""
        mg = self.mg
        KXt = mg.XK.T
        var = mg.tau2 - mg.tau2**2 * np.einsum("kn,kn->k", KXt @ mg.Sinv, KXt)
        mu = mg.tau2 * (KXt @ mg.alpha)
        if mg.h is not None:
            mu, var = mg.h * mu, mg.h**2 * var
        if mg.s is not None:
            mu = mu + float(mg.delta or 0.0) * mg.s
        from scipy.special import stdtr

        return stdtr(2.0 * mg.a_star, mu / np.sqrt(np.maximum(var, 1e-300) * mg.b_star / mg.a_star))

    @cached_property
    def answerable(self) -> np.ndarray:
        """r_k: the chance the expert can answer (1 without relevance classes)."""
        rel = self.round.relevance
        return np.ones(self.data.p) if rel is None else rel.r

    @cached_property
    def screened(self) -> np.ndarray:
        """The screened expected gain of every feature (module docstring)."""
        mg, data = self.mg, self.data
        # the marginal's working form: (X, y), or (R, Q'y) on a tall table (elicit.model.tall),
        # whose rest of y beside X's columns is the same for every answer
        X, y, s = mg._W, mg._z, self.s
        Z = mg.Sinv @ X
        Sy, m = mg.Sinv @ y, X @ s
        Sm = Z @ s
        c0, c1m, c2m = mg._rest + y @ Sy, m @ Sy, m @ Sm
        xSy, xSm, xSx = X.T @ Sy, X.T @ Sm, np.einsum("nk,nk->k", X, Z)
        a, b, sd2 = mg.a_star, mg.b_sigma, data.delta_sd**2
        base = (y - Sy)[:, None]
        diag = (2.0 - mg.sinv_diag)[:, None]
        gain = np.zeros(data.p)
        for answer, q in ((1.0, self.p_raises), (-1.0, 1.0 - self.p_raises)):
            d = answer - s
            c1, c2 = c1m + d * xSy, c2m + 2.0 * d * xSm + d**2 * xSx
            delta = np.maximum(c1 / np.maximum(c2, 1e-300), 0.0)
            for _ in range(4):                # Newton on delta >= 0 (the prior added)
                B = b + 0.5 * (c0 - 2.0 * delta * c1 + delta**2 * c2)
                e = delta * c2 - c1
                g1 = -a * e / B - delta / sd2
                g2 = np.minimum(-a * c2 / B + a * e**2 / B**2 - 1.0 / sd2, -1.0 / sd2)
                delta = np.maximum(delta - g1 / g2, 0.0)
            B = b + 0.5 * (c0 - 2.0 * delta * c1 + delta**2 * c2)
            mean = mg.lift(base + delta[None, :] * (Sm[:, None] + d[None, :] * Z))
            var = (B / (a - 1.0))[None, :] * diag
            gain += q * kl_gauss(mean, var, self.scorer.m0[:, None], self.scorer.v0[:, None])
        return self.answerable * gain

    def exact_one(self, k: int) -> float:
        """The expected gain of feature ``k`` by refitting the MAP for both answers."""
        r = self.answerable[k]
        if r == 0.0:
            return 0.0
        gain = 0.0
        for answer, q in ((1.0, self.p_raises[k]), (-1.0, 1.0 - self.p_raises[k])):
            s = np.array(self.s)
            s[k] = answer
            gain += q * self.scorer.refit_kl(self.data.with_direction(s))
        return float(r * gain)


def _pieces(round_: ScoringRound) -> DirectionScorer:
    # the round's one, built once (setdefault would build a throwaway one on every call)
    if (sc := round_.__dict__.get("_direction")) is None:
        sc = round_.__dict__["_direction"] = DirectionScorer(round_)
    return sc


@dataclass(frozen=True)
class DirectionUtility(Utility):
    """A utility of direction questions, scored at one MAP of a model with a direction mean."""

    candidates: ClassVar[str] = "direction questions"
    #: re-score every candidate by refits (the ``exact`` mode) instead of the screen's best
    every: bool = False

    def score(self, round_: ScoringRound, features: np.ndarray, refine: int = 10,
              reach: float = -np.inf) -> Scores:
        sc = _pieces(round_)
        k = np.asarray(features, dtype=int)
        u = sc.screened[k]  # a copy: the refits below overwrite entries
        exact = np.zeros(len(k), bool)
        order = np.argsort(-u, kind="stable")
        if not self.every:
            order = order[:refine]
        best = reach
        for c in order:
            if not self.every and u[c] * (1.0 + sc.margin) <= best:
                break                          # sorted: no later one can win either
            u[c], exact[c] = sc.exact_one(int(k[c])), True
            best = max(best, u[c])
        return Scores(feature_rows(k), u, exact, sc.p_raises[k])


_NOTE = ("direction questions are scored with the shipped direction models' analytic "
         "marginal, which a custom Stan file does not have; use the shipped programs")
register_utility(DirectionUtility("direction-fast", "predictive", _NOTE))
register_utility(DirectionUtility("direction-exact", "predictive", _NOTE, every=True))


@dataclass(frozen=True, eq=False)
class DirectionKind(QuestionKind):
    """Questions about the direction of one feature's effect."""

    def model_with(self, model: str | None) -> str | None:
        """The model with a direction mean beside ``model``'s other parts."""
        from elicit.model.variants import MODELS, get_model

        name = {None: DIRECTION_MODEL, PAPER: DIRECTION_MODEL}.get(model, f"{model}-{NAME}")
        if model is not None and get_model(model).direction:
            return model
        return name if name in MODELS else model

    def model_refusal(self, model: str) -> str | None:
        from elicit.model.variants import get_model

        return None if get_model(model).direction else "need a model with a direction mean"

    def enter(self, data: ModelData, rows: Sequence[tuple[int, int]],
              answers: Sequence[Answer]) -> ModelData:
        return agreed(data, "direction", rows, answers, lambda a: 1 if a.outcome == 1 else -1, 0)

    def ask(self, expert: Any, query: Query) -> Answer:
        got = self._method_of(expert)(*query.features)
        if isinstance(got, str):
            return Answer.parse(got, self)
        return RAISES if got > 0 else LOWERS if got < 0 else DONT_KNOW

    def takes(self, utility: Utility) -> bool:
        return isinstance(utility, DirectionUtility)

    def score(self, utility: Utility, round: ScoringRound, rows: np.ndarray, refine: int,
              reach: float) -> Scores:
        assert isinstance(utility, DirectionUtility)
        return utility.score(round, np.asarray(rows)[:, 0], refine, reach)

    def answer_probability(self, round: ScoringRound, rows: np.ndarray) -> np.ndarray:
        return _pieces(round).p_raises[np.asarray(rows)[:, 0]]


DIRECTION = register_kind(DirectionKind(
    NAME, 1, (RAISES, LOWERS), "weight_sign", "direction questions", "a direction question",
    "when feature k is present, does the outcome go up or down?",
    "When {0} is present, does {target} go up or down?",
    utilities={("fast", "predictive"): "direction-fast",
               ("exact", "predictive"): "direction-exact"},
    plural="direction questions", comment_example="p customers who mention it rate higher",
    pool="all", order=2, model=DIRECTION_MODEL, resets_hessian=True, numbers=False))
