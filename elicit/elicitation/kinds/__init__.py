"""The kinds of question an elicitation can ask, as registered objects.

=============  =========================================================  ==================
kind           the question                                               answers
=============  =========================================================  ==================
``pairs``      do features i and j affect the outcome in the same way?    similar, dissimilar
               (the paper's; :mod:`~elicit.elicitation.kinds.pairs`)
``relevance``  does feature k affect the outcome? (a model with           relevant, irrelevant
               relevance classes; :mod:`~elicit.elicitation.kinds.relevance`)
``direction``  when feature k is present, does the outcome go up or       raises, lowers
               down? (a model with a direction mean;
               :mod:`~elicit.elicitation.kinds.direction`)
=============  =========================================================  ==================

and "don't know" to any of them. ``questions=`` (``Elicitor``, sweeps, sessions,
``--questions``) names the kinds asked: ``"pairs"`` (:data:`PAPER_QUESTIONS`, the default),
``"pairs,relevance"``, ``"all"``; ``"both"`` stands for pairs and relevance, as older sweeps
and session files wrote it. :mod:`~elicit.elicitation.kinds.base` holds the
:class:`QuestionKind` base class and the registry, :mod:`~elicit.elicitation.kinds.asked`
reads ``questions=``; a new kind is one module that subclasses
it and registers an instance (``docs/extending.md``).
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
#: the kinds that records made before kinds had names can hold, one per arity (session files
#: of format 3 and older, sweep parts that wrote "pair" and "feature"): a row's arity says its
#: kind
BEFORE_KINDS: tuple[str, ...] = (PAIRS.name, RELEVANCE.name)
# what older sweeps and session files called the pair and feature questions together
register_group("both", BEFORE_KINDS)
# registered after pairs and relevance: the registration order is every question table's
from elicit.elicitation.kinds.direction import DIRECTION  # noqa: E402

__all__ = ["BEFORE_KINDS", "DIRECTION", "KINDS", "PAIRS", "PAPER_QUESTIONS", "RELEVANCE",
           "QuestionKind", "get_kind", "groups", "kind_for", "kinds_of", "model_for",
           "parse_questions", "register_group", "register_kind", "spell_questions",
           "unregister_kind"]
