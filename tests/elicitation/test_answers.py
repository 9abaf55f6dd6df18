"""Answers of every kind of question, the questions as rows and queries, and the experts."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

from elicit.elicitation.answers import (
    Answer,
    Expert,
    GroupOracle,
    SignOracle,
    ask,
    check_expert,
)
from elicit.elicitation.kinds import BEFORE_KINDS, kind_for
from elicit.elicitation.questions import NO_FEATURE, Query, question_key
from elicit.errors import ElicitError
from elicit.paper.lasso_expert import LassoExpert


@pytest.mark.parametrize("raw,kind,expected", [
    ("relevant", "relevance", Answer.RELEVANT), ("r", "relevance", Answer.RELEVANT),
    (" Relevant", None, Answer.RELEVANT), ("irrelevant", "relevance", Answer.IRRELEVANT),
    ("i", "relevance", Answer.IRRELEVANT), ("not relevant", None, Answer.IRRELEVANT),
    ("?", "relevance", Answer.DONT_KNOW), ("don't know", "relevance", Answer.DONT_KNOW),
    (1, "relevance", Answer.RELEVANT), (np.int64(0), "relevance", Answer.IRRELEVANT),
    (True, "relevance", Answer.RELEVANT), (1, "pairs", Answer.SIMILAR),
    (0, None, Answer.DISSIMILAR), ("s", "pairs", Answer.SIMILAR), ("?", "pairs", Answer.DONT_KNOW),
    (Answer.RELEVANT, "relevance", Answer.RELEVANT),
    # the names older records gave the kinds
    ("r", "feature", Answer.RELEVANT), (0, "pair", Answer.DISSIMILAR),
])
def test_answer_parsing_of_both_kinds(raw, kind, expected):
    assert Answer.parse(raw, kind) is expected


@pytest.mark.parametrize("raw,kind,message", [
    ("similar", "relevance", r"^'similar' answers a pair question \(do features i and j affect "
     r"the outcome in the same way\?\), not a feature question \(does feature k affect the "
     r"outcome\?\): use 'relevant', 'irrelevant' or 'dont_know'$"),
    ("d", "relevance", r"^'dissimilar' answers a pair question .*: use 'relevant', "),
    ("r", "pairs", r"^'relevant' answers a feature question \(does feature k affect the "
     r"outcome\?\), not a pair question .*: use 'similar', 'dissimilar' or 'dont_know'$"),
    (Answer.IRRELEVANT, "pairs", r"^'irrelevant' answers a feature question"),
    ("maybe", "relevance", r"^invalid answer 'maybe': use 'relevant', 'irrelevant' or "
     r"'dont_know'$"),
    ("maybe", None, r"^invalid answer 'maybe': use 'similar', 'dissimilar', 'relevant', "
     r"'irrelevant', 'raises', 'lowers' or 'dont_know'$"),
    (2, "relevance", r"^invalid answer 2"),
    # 0 was read as 'lowers' (outcome 0), though a sign 0 is "not known" (weight_sign, the
    # model's s) and -1 was refused
    (0, "direction", r"^invalid answer 0: use 'raises', 'lowers' or 'dont_know'$"),
    (True, "direction", r"^invalid answer True: use 'raises', "),
    ("r", "triple", r"^unknown question kind 'triple'; choose one of pairs, relevance, "
     r"direction; one of your own is known only in the process that registers it"),
])
def test_an_answer_to_the_other_kind_of_question_is_a_one_line_error(raw, kind, message):
    with pytest.raises(ElicitError, match=message):
        Answer.parse(raw, kind)


def test_what_an_answer_means_to_the_model():
    assert {a.value: (a.kind, a.outcome) for a in Answer} == {
        "similar": ("pairs", 1), "dissimilar": ("pairs", 0), "dont_know": (None, None),
        "relevant": ("relevance", 1), "irrelevant": ("relevance", 0),
        "raises": ("direction", 1), "lowers": ("direction", 0)}
    # an answer is its word: stored, compared and read back as the one object
    assert Answer("similar") is Answer.SIMILAR == "similar" and Answer.SIMILAR.name == "SIMILAR"
    assert pickle.loads(pickle.dumps(Answer.RELEVANT)) is Answer.RELEVANT
    with pytest.raises(ElicitError, match=r"^'maybe' is not a defined answer"):
        Answer("maybe")
    with pytest.raises(AttributeError):
        _ = Answer.MAYBE


def test_questions_as_rows_and_queries():
    assert question_key(3, 1) == (1, 3)
    assert question_key(np.int64(4), None) == (4, NO_FEATURE)
    assert question_key(4, NO_FEATURE) == (4, NO_FEATURE)
    assert kind_for(4, None, among=BEFORE_KINDS).name == "relevance"
    assert kind_for(1, 3).name == "pairs" and kind_for(4, None, "raises").name == "direction"
    assert kind_for(4, None, "dont_know", among=BEFORE_KINDS).name == "relevance"
    with pytest.raises(ElicitError, match=r"^\(4, None\) is a question about one feature, "
                                          r"which kinds relevance, direction ask; say which"):
        kind_for(4, None, "dont_know")
    # a pair's answer to a question about one feature: said so, not "say which kind"
    with pytest.raises(ElicitError, match=r"^\(4, None\) is a question about one feature, and "
                                          r"similar answers pair questions, about 2 feature"):
        kind_for(4, None, "similar")
    # the elicitor's questions: a kind named is checked against those asked and the arity; an
    # answer of a kind not asked about one feature does not decide (its parse then refuses it)
    assert kind_for(4, None, "similar", among=BEFORE_KINDS).name == "relevance"
    assert kind_for(1, 3, kind="pairs", among=BEFORE_KINDS).name == "pairs"
    with pytest.raises(ElicitError, match=r"^\(4, None\) is not a question of kind 'pairs', "
                                          r"which is about 2 feature\(s\)$"):
        kind_for(4, NO_FEATURE, kind="pairs")
    with pytest.raises(ElicitError, match=r"^this elicitation asks no direction questions "
                                          r"\(questions='both'\)$"):
        kind_for(4, None, kind="direction", among=BEFORE_KINDS)
    with pytest.raises(ElicitError, match=r"^a question is \(i, j\) for a pair or \(k, None\) "
                                          r"for a feature, with integer feature indices; got "
                                          r"\(1.5, 2\)$"):
        question_key(1.5, 2)
    q = Query(7, None, 0.25, True, kind="relevance")
    assert (q.kind, q.features, q.row, q.j) == ("relevance", (7,), (7, -1), None)
    p = Query.of_row(np.array([2, 5]), np.float64(0.5))
    assert (p.kind, p.features, p.row, p.expected_gain, p.exact_gain) == (
        "pairs", (2, 5), (2, 5), 0.5, False)
    with pytest.raises(ElicitError, match=r"^a question of kind 'pairs' is about 2 feature"):
        Query(3, None, kind="pairs")
    assert Query.of_row((7, NO_FEATURE), 0.25, True, kind="relevance") == q


def test_the_oracles_answer_relevance():
    groups = GroupOracle([0, 1, -1, 0])
    assert [groups.relevance(k) for k in range(4)] == [
        Answer.RELEVANT, Answer.RELEVANT, Answer.IRRELEVANT, Answer.RELEVANT]
    signs = SignOracle([0.5, 0.0, -2.0])
    assert [signs.relevance(k) for k in range(3)] == [
        Answer.RELEVANT, Answer.IRRELEVANT, Answer.RELEVANT]
    lasso = LassoExpert.from_coef([0.0, 0.3, -0.1, 0.0])
    assert [lasso.relevance(k) for k in range(4)] == [
        Answer.IRRELEVANT, Answer.RELEVANT, Answer.RELEVANT, Answer.IRRELEVANT]
    for expert, p in ((groups, 4), (signs, 3), (lasso, 4)):
        with pytest.raises(ElicitError, match=rf"^feature index out of range 0..{p - 1}: {p}$"):
            expert.relevance(p)


class PairsOnly:
    """An expert of the paper: pair questions only."""

    def answer(self, i, j):
        return "similar"


class Mumbler:
    """An expert whose relevance answers are pair answers."""

    def answer(self, i, j):
        return Answer.SIMILAR

    def relevance(self, k):
        return "same"


def test_an_expert_without_relevance_is_refused_up_front_in_one_line():
    expert = PairsOnly()
    assert isinstance(expert, Expert)
    check_expert(expert, "pairs")
    for questions in ("relevance", "both", "pairs,relevance", "all"):
        spelled = {"relevance": "relevance", "all": "pairs,relevance,direction"}.get(
            questions, "both")
        with pytest.raises(ElicitError, match=rf"^questions='{spelled}' asks feature "
                                              r"questions, and the expert \(PairsOnly\) has no "
                                              r"relevance\(k\) method to answer them; ask "
                                              r"other questions or use an expert with "
                                              r"relevance\(k\)$"):
            check_expert(expert, questions)
    check_expert(GroupOracle([0, 1]), "both")
    with pytest.raises(ElicitError, match=r"^unknown question kind 'everything' in "
                                          r"questions='everything'; name kinds from pairs, "
                                          r"relevance, direction \(comma-separated\), or all, "
                                          r"or both \(= pairs,relevance\)$"):
        check_expert(GroupOracle([0, 1]), "everything")


def test_ask_puts_either_kind_of_question_and_checks_the_answer():
    expert = GroupOracle([0, 1, -1, 0])
    assert ask(expert, Query(0, 3)) is Answer.SIMILAR
    assert ask(expert, Query(0, 1)) is Answer.DISSIMILAR
    assert ask(expert, Query(2, None, kind="relevance")) is Answer.IRRELEVANT
    assert ask(PairsOnly(), Query(0, 1)) is Answer.SIMILAR
    with pytest.raises(ElicitError, match=r"^the expert \(PairsOnly\) cannot answer feature "
                                          r"questions: it has no relevance\(k\) method$"):
        ask(PairsOnly(), Query(0, None, kind="relevance"))
    with pytest.raises(ElicitError, match=r"^'similar' answers a pair question"):
        ask(Mumbler(), Query(0, None, kind="relevance"))


@pytest.mark.parametrize("build, message", [
    # taken: weight_sign(2) was an IndexError, and a NaN weight a sign of its own
    (lambda: GroupOracle([0, 1, 1], beta=[1.0, -2.0]), r"^beta has 2 weights for 3 features$"),
    *[(lambda beta=beta: GroupOracle([0, 1, 1], beta=beta),
       r"^beta must be a 1-D array of one finite weight per feature$")
      for beta in ([1.0, np.nan, 2.0], [1.0, np.inf, 2.0])],
    (lambda: SignOracle([1.0, np.nan, -1.0]),
     r"^beta must be a 1-D array of one finite weight per feature$"),
    # an IndexError from numpy
    (lambda: GroupOracle([0, 1, 1]).answer(0.5, 1),
     r"^feature index out of range 0\.\.2: \(0\.5, 1\)$"),
    (lambda: SignOracle([1.0, -1.0]).relevance(1.0),
     r"^feature index out of range 0\.\.1: 1\.0$")])
def test_the_oracles_refuse_weights_and_indices_they_cannot_use_in_one_line(build, message):
    with pytest.raises(ElicitError, match=message):
        build()


def test_group_labels_may_be_text():
    """A UFuncTypeError (str >= int) from inside the constructor."""
    oracle = GroupOracle(["price", "taste", "price", ""])
    assert [oracle.answer(0, 2), oracle.answer(0, 1), oracle.answer(1, 3)] == [
        Answer.SIMILAR, Answer.DISSIMILAR, Answer.DONT_KNOW]
    assert [oracle.relevance(k) for k in range(4)] == [Answer.RELEVANT] * 3 + [Answer.IRRELEVANT]
