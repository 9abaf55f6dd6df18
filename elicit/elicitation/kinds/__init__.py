"""The kinds of question an elicitation can ask (``pairs``, ``relevance``, ``direction``), as
registered objects; ``questions=`` names them (``"pairs,relevance"``, ``"all"``, ``"both"``).
A new kind is one module that registers a :class:`QuestionKind` (``docs/extending.md``).
"""

from elicit.elicitation.kinds.asked import (
    kind_for,
    kinds_of,
    model_for,
    parse_questions,
    spell_questions,
)
from elicit.elicitation.kinds.base import (
    KINDS,
    QuestionKind,
    get_kind,
    groups,
    register_group,
    register_kind,
    unregister_kind,
)
from elicit.elicitation.kinds.pairs import PAIRS
from elicit.elicitation.kinds.relevance import RELEVANCE

#: the questions of the paper, and the default: pair questions only
PAPER_QUESTIONS: tuple[str, ...] = (PAIRS.name,)
#: the kinds of records made before kinds had names (session format <= 3, sweep parts that
#: wrote "pair" and "feature"): a row's arity says its kind
BEFORE_KINDS: tuple[str, ...] = (PAIRS.name, RELEVANCE.name)
register_group("both", BEFORE_KINDS)
# registered after pairs and relevance: the registration order is every question table's
from elicit.elicitation.kinds.direction import DIRECTION  # noqa: E402

__all__ = ["BEFORE_KINDS", "DIRECTION", "KINDS", "PAIRS", "PAPER_QUESTIONS", "RELEVANCE",
           "QuestionKind", "get_kind", "groups", "kind_for", "kinds_of", "model_for",
           "parse_questions", "register_group", "register_kind", "spell_questions",
           "unregister_kind"]
