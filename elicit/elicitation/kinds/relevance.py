"""Feature questions: "does feature k affect the outcome?"

An answer sets the feature's relevance class (``ModelData.relevance``: 1 relevant, 0
irrelevant); a feature called irrelevant closes the other kinds' questions about it. An
answer that is not disputed stands over the other kinds' judgement, in either order, so
answers given one at a time or replayed at once give the same classes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, cast

import numpy as np

from elicit.elicitation.kinds.base import Answer, QuestionKind, agreed, register_kind
from elicit.model.names import RELEVANCE_MODEL

if TYPE_CHECKING:
    from elicit.elicitation.gains import FeatureUtility, Scores, Utility
    from elicit.elicitation.utility import ScoringRound
    from elicit.model.spec import ModelData

NAME = "relevance"
#: relevant: the feature affects the outcome (class 1)
RELEVANT = Answer.define("relevant", NAME, 1, "Relevant", "r")
#: irrelevant: it does not (class 0)
IRRELEVANT = Answer.define("irrelevant", NAME, 0, "Irrelevant", "i",
                           aliases=("not_relevant",))


@dataclass(frozen=True, eq=False)
class RelevanceKind(QuestionKind):
    """Questions about one feature's relevance."""

    def closes(self, data: ModelData) -> np.ndarray | None:
        if data.relevance is None or not data.model.relevance:
            return None
        from elicit.model.covariance import IRRELEVANT as CLASS_IRRELEVANT

        return np.asarray(data.relevance) == CLASS_IRRELEVANT

    def model_refusal(self, model: str) -> str | None:
        from elicit.model.variants import get_model  # the model and scipy: when asked for

        return None if get_model(model).relevance else "need a model with relevance classes"

    def enter(self, data: ModelData, rows: Sequence[tuple[int, int]],
              answers: Sequence[Answer]) -> ModelData:
        """``data`` with the classes the answers agree on (where not: as ``data`` has it)."""
        return agreed(data, "relevance", rows, answers,
                      lambda a: int(a.outcome), None)  # type: ignore[arg-type]

    def takes(self, utility: Utility) -> bool:
        from elicit.elicitation.gains import FeatureUtility

        return isinstance(utility, FeatureUtility)

    def score(self, utility: Utility, round: ScoringRound, rows: np.ndarray, refine: int,
              reach: float) -> Scores:
        utility = cast("FeatureUtility", utility)  # as takes() checked
        assert round.relevance is not None
        return utility.score(round.relevance, np.asarray(rows)[:, 0], refine)

    def answer_probability(self, round: ScoringRound, rows: np.ndarray) -> np.ndarray:
        assert round.relevance is not None
        return round.relevance.p_relevant(np.asarray(rows)[:, 0])


RELEVANCE = register_kind(RelevanceKind(
    NAME, 1, (RELEVANT, IRRELEVANT), "relevance", "feature questions", "a feature question",
    "does feature k affect the outcome?", "Does {0} affect {target}?",
    utilities={("fast", "predictive"): "relevance-fast",
               ("exact", "predictive"): "relevance-exact"},
    aliases=("feature",), plural="feature questions",
    comment_example="r customers mention it", pool="all", order=0, model=RELEVANCE_MODEL,
    resets_hessian=True, closes_others=True))
