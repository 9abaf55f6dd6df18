"""Pair questions, the paper's: "do features i and j affect the outcome in the same way?"

An answer is a Bernoulli observation of the feedback link at ``xi - gamma . w_ij``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, cast

import numpy as np

from elicit.elicitation.kinds.base import Answer, QuestionKind, register_kind

if TYPE_CHECKING:
    from elicit.elicitation.gains import PairUtility, Scores, Utility
    from elicit.elicitation.utility import ScoringRound
    from elicit.model.spec import ModelData

NAME = "pairs"
#: similar: the two features affect the outcome in the same way (the link's f = 1)
SIMILAR = Answer.define("similar", NAME, 1, "Similar", "s", aliases=("same",))
#: dissimilar: they do not (f = 0)
DISSIMILAR = Answer.define("dissimilar", NAME, 0, "Dissimilar", "d", aliases=("different",))


@dataclass(frozen=True, eq=False)
class PairKind(QuestionKind):
    """Questions about pairs of features."""

    def add(self, data: ModelData, row: tuple[int, int], answer: Answer) -> ModelData:
        data = data.with_feedback(np.vstack([data.pairs, [row[0], row[1]]]),
                                  np.append(data.f, int(answer.outcome)))  # type: ignore[arg-type]
        return self.judged(data, [row])

    def enter(self, data: ModelData, rows: Sequence[tuple[int, int]],
              answers: Sequence[Answer]) -> ModelData:
        # every answer is its own Bernoulli observation, also several experts' to one pair
        data = data.with_feedback(np.array(rows, dtype=int).reshape(-1, 2),
                                  np.array([a.outcome for a in answers], dtype=int))
        return self.judged(data, rows)

    def resets(self, model: str) -> bool:
        from elicit.model.variants import get_model  # the model and scipy: when asked for

        return get_model(model).relevance

    def judged(self, data: ModelData, rows: Sequence[tuple[int, int]] | np.ndarray) -> ModelData:
        """``data`` with the features of the answered pairs ``rows`` relevant where no feature
        answer judged them, in a model with relevance classes: the expert could say how the
        two affect the outcome, so both do. A feature several experts disagree about (not
        judged) becomes relevant too; a feature answer that is not disputed stands, also
        "irrelevant" from the expert who answered the pair. The feature answers keep this
        class where they disagree, so a replay that enters the kinds in table order (pairs
        first, :meth:`~elicit.elicitation.elicitor.Elicitor.set_answers`) gives the classes
        of the answers given one at a time."""
        if not data.model.relevance or not len(rows):
            return data
        from elicit.model.covariance import RELEVANT, UNASKED

        classes = np.array(data.relevance)
        features = np.unique(np.asarray(rows, dtype=int).reshape(-1))
        open_ = features[classes[features] == UNASKED]
        if not open_.size:
            return data
        classes[open_] = RELEVANT
        return data.with_relevance(classes)

    def takes(self, utility: Utility) -> bool:
        from elicit.elicitation.gains import PairUtility

        return isinstance(utility, PairUtility)

    def score(self, utility: Utility, round: ScoringRound, rows: np.ndarray, refine: int,
              reach: float) -> Scores:
        utility = cast("PairUtility", utility)  # as takes() checked
        if round.relevance is None:
            return utility.score(round.scorer, rows, refine)
        # the chance that the expert can answer at all: both features relevant
        return utility.score_beside(round.scorer, rows, refine,
                                    round.relevance.answerable(rows), reach)

    def answer_probability(self, round: ScoringRound, rows: np.ndarray) -> np.ndarray:
        return round.scorer.prepare(rows)[2]


PAIRS = register_kind(PairKind(
    NAME, 2, (SIMILAR, DISSIMILAR), "answer", "pair questions", "a pair question",
    "do features i and j affect the outcome in the same way?",
    "Do these two features affect {target} in the same way?",
    utilities={("fast", "predictive"): "predictive-fast",
               ("exact", "predictive"): "predictive-exact",
               ("fast", "params"): "params-bald", ("exact", "params"): "params-bald"},
    aliases=("pair",), noun="pair", plural="pairs",
    comment_example="s both praise the product", pool="sample", order=1))
