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
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from elicit.elicitation.kinds.base import DONT_KNOW, Answer, QuestionKind, agreed, register_kind
from elicit.model.names import DIRECTION_MODEL, PAPER

if TYPE_CHECKING:
    from elicit.elicitation.features import DirectionUtility
    from elicit.elicitation.gains import Scores, Utility
    from elicit.elicitation.questions import Query
    from elicit.elicitation.utility import ScoringRound
    from elicit.model.spec import ModelData

NAME = "direction"
#: raises: the outcome goes up when the feature is present (s_k = +1); key p (plus), as ^
#: is a dead key on German, French and Spanish layouts (it still reads as raises)
RAISES = Answer.define("raises", NAME, 1, "Raises", "p", aliases=("raise", "^"))
#: lowers: it goes down (s_k = -1)
LOWERS = Answer.define("lowers", NAME, 0, "Lowers", "v", aliases=("lower",))


@dataclass(frozen=True, eq=False)
class DirectionKind(QuestionKind):
    """Questions about the direction of one feature's effect."""

    def model_with(self, model: str | None) -> str | None:
        """The model with a direction mean beside ``model``'s other parts."""
        from elicit.model.variants import MODELS, get_model  # the model and scipy: when asked

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
        from elicit.elicitation.features import DirectionUtility  # the utility and scipy

        return isinstance(utility, DirectionUtility)

    def score(self, utility: Utility, round: ScoringRound, rows: np.ndarray, refine: int,
              reach: float) -> Scores:
        utility = cast("DirectionUtility", utility)  # as takes() checked
        return utility.score(round, np.asarray(rows)[:, 0], refine, reach)

    def answer_probability(self, round: ScoringRound, rows: np.ndarray) -> np.ndarray:
        from elicit.elicitation.features import round_pieces

        return round_pieces(round).p_raises[np.asarray(rows)[:, 0]]


DIRECTION = register_kind(DirectionKind(
    NAME, 1, (RAISES, LOWERS), "weight_sign", "direction questions", "a direction question",
    "when feature k is present, does the outcome go up or down?",
    "When {0} is present, does {target} go up or down?",
    utilities={("fast", "predictive"): "direction-fast",
               ("exact", "predictive"): "direction-exact"},
    plural="direction questions", comment_example="p customers who mention it rate higher",
    pool="all", order=2, model=DIRECTION_MODEL, resets_hessian=True, numbers=False))
