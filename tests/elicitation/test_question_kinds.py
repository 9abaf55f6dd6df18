"""Kinds of question as registered objects: the registry, questions= lists, and a toy kind
registered from outside the package (tests/toykind.py) asked through an Elicitor and a sweep
beside the shipped kinds."""

from __future__ import annotations

import numpy as np
import pytest
import toykind
from conftest import small_arrays
from scipy.special import entr

from elicit.elicitation.answers import Answer, ask, check_expert
from elicit.elicitation.elicitor import Elicitor
from elicit.elicitation.kinds import (
    KINDS,
    PAIRS,
    PAPER_QUESTIONS,
    RELEVANCE,
    get_kind,
    parse_questions,
    register_kind,
    spell_questions,
)
from elicit.elicitation.questions import NO_FEATURE, Query
from elicit.elicitation.settings import RoundSettings
from elicit.elicitation.strategies import STRATEGIES, answer_probabilities
from elicit.errors import ElicitError
from elicit.harness.problem import RunProblem
from elicit.harness.store import SweepStore
from elicit.harness.sweep import SweepConfig, load_part, part_kinds, sweep
from elicit.model.simulate import make_synthetic
from elicit.model.spec import Hyper

pytestmark = pytest.mark.usefixtures("one_blas_thread")
TOY = toykind.NAME


def elicitor(questions, model: str = "relevance", **kw) -> Elicitor:
    a = small_arrays()
    kw.setdefault("engine", "numpy")
    kw.setdefault("refine", 1)
    return Elicitor(a.X, a.y, a.U, Hyper(tau2=0.5, model=model), questions=questions, **kw)


def open_keys(el: Elicitor) -> set[tuple[str, int, int]]:
    """The questions ``el`` may still ask, as ``(kind, i, j)``."""
    index = el.open_questions().indices()
    names = [s.kind.name for s in el.table.segments]
    return {(names[s], int(i), int(j)) for s, (i, j)
            in zip(el.table.segment_of(index), el.table.rows(index))}


def expert() -> toykind.SignExpert:
    """Signs from the small problem's groups: group 0 up, group 1 down, -1 (feature 5) none."""
    groups = small_arrays().groups.copy()
    groups[5] = -1
    return toykind.SignExpert(np.where(groups < 0, 0.0, np.where(groups == 0, 1.0, -1.0)))


# -- the registry and questions= ---------------------------------------------------------------

def test_the_shipped_kinds_and_the_spellings_of_questions():
    assert list(KINDS) == ["pairs", "relevance", "direction"]
    assert PAPER_QUESTIONS == ("pairs",)
    assert get_kind("pair") is PAIRS and get_kind("feature") is RELEVANCE  # older records
    for given, names in (("pairs", ("pairs",)), ("relevance,pairs", ("pairs", "relevance")),
                         (" pairs , relevance ", ("pairs", "relevance")),
                         ("both", ("pairs", "relevance")),
                         ("all", ("pairs", "relevance", "direction")),
                         (["relevance"], ("relevance",)), (RELEVANCE, ("relevance",)),
                         ((PAIRS, "relevance"), ("pairs", "relevance"))):
        assert parse_questions(given) == names
    assert spell_questions("relevance,pairs") == "both" and spell_questions("pairs") == "pairs"


@pytest.mark.parametrize("given, message", [
    ("pairs,colour", r"^unknown question kind 'colour' in questions='pairs,colour'; name kinds "
                     r"from pairs, relevance, direction \(comma-separated\), or all, or "
                     r"both "
                     r"\(= pairs,relevance\)$"),
    ("pairs,both", r"^question kind 'pairs' is named twice in questions='pairs,both'; name "
                   r"each kind once$"),
    ("", r"^questions='' names no kind of question; name kinds from pairs, relevance, direction, "
         r"or all$"),
    (3, r"^unknown question kind 3 in questions=3"),
    # an empty item was skipped without a word: a kind left out, or a stray comma
    ("direction,", r"^unknown question kind '' in questions='direction,'; name kinds from "),
    ("pairs,,relevance", r"^unknown question kind '' in questions='pairs,,relevance'"),
])
def test_questions_that_name_no_registered_kind_once_are_one_line_errors(given, message):
    with pytest.raises(ElicitError, match=message):
        parse_questions(given)


def test_a_registered_kind_joins_all_and_leaves_no_trace(toy):
    assert parse_questions("all") == ("pairs", "relevance", "direction", TOY)
    assert parse_questions("both") == ("pairs", "relevance")       # the old group stays
    assert spell_questions(f"{TOY},pairs") == f"pairs,{TOY}"
    assert Answer.parse("+", TOY) is Answer("increases") and Answer.DECREASES.kind == TOY
    with pytest.raises(ElicitError, match=r"^'increases' answers a sign question \(does more "
                                          r"of feature k mean a higher outcome\?\), not a "
                                          r"feature question"):
        Answer.parse("up", "relevance")
    with pytest.raises(ElicitError, match=rf"^a question kind named '{TOY}' is already "):
        register_kind(toy)
    with pytest.raises(ElicitError, match=r"^'r' already means 'relevant' \(an answer of "
                                          r"relevance\); give 'right' other words$"):
        Answer.define("right", TOY, 1, "Right", "r")
    with pytest.raises(ElicitError, match=r"^register_kind takes a QuestionKind object"):
        register_kind("sign")  # type: ignore[arg-type]


def test_unregistering_a_kind_forgets_its_answers():
    with toykind.registered():
        assert "increases" in [a.value for a in Answer]
    assert TOY not in KINDS and "increases" not in [a.value for a in Answer]
    with pytest.raises(ElicitError, match=r"^invalid answer 'up'"):
        Answer.parse("up")
    with pytest.raises(ElicitError, match=rf"^unknown question kind '{TOY}'"):
        parse_questions(TOY)


@pytest.mark.usefixtures("registries_restored")
def test_a_refused_kind_can_be_registered_once_corrected():
    # the answers of a kind refused (a typo of its pool) stayed defined, and the corrected
    # retry was refused: "'up' already means 'up' (an answer of sign)", with no kind 'sign'
    def cell(pool):
        up = Answer.define("up", "sign", 1, "Up", "+")
        down = Answer.define("down", "sign", 0, "Down", "-")
        return register_kind(toykind.SignKind("sign", 1, (up, down), "sign", "sign questions",
                                              "a sign question", "m", "{0}?", pool=pool))

    with pytest.raises(ElicitError, match=r"^the pool of kind 'sign' is one of sample, all"):
        cell("sampled")
    assert cell("sample") is KINDS["sign"] and Answer.parse("+", "sign") is Answer.UP
    with pytest.raises(ElicitError, match=r"^'up' already means 'up' \(an answer of sign\); "
                                          r"give 'up' other words$"):
        Answer.define("up", "sign", 1, "Up", "w")     # a registered kind's: still taken
    stale = Answer.define("odd", "odder", 1, "Odd", "!")
    Answer.define("odd", "odder", 1, "Odd", "!")           # the same word again: the last
    with pytest.raises(ElicitError, match=r"^kind 'odder' needs its answers, defined with "):
        toykind.SignKind("odder", 1, (stale,), "sign", "l", "q", "m", "t")


@pytest.mark.usefixtures("registries_restored")
def test_a_kind_whose_hooks_take_other_arguments_is_refused_when_registered():
    # registered, then the first round failed: "NoReach.score() takes 5 positional arguments
    # but 6 were given"
    class NoReach(toykind.SignKind):
        def score(self, utility, round, rows, refine):
            return super().score(utility, round, rows, refine, -np.inf)

    up = Answer.define("up", "sign", 1, "Up", "+")
    down = Answer.define("down", "sign", 0, "Down", "-")
    with pytest.raises(ElicitError, match=r"^question kind 'sign': score\(\) must take "
                                          r"\(utility, round, rows, refine, reach\), as "
                                          r"QuestionKind.score does$"):
        register_kind(NoReach("sign", 1, (up, down), "sign", "sign questions", "a sign question",
                              "m", "{0}?"))
    assert "sign" not in KINDS


# -- the toy kind beside the shipped ones, through an Elicitor ----------------------------------

def test_two_kinds_about_one_feature_are_told_apart_by_name(toy):
    el = elicitor(("relevance", TOY))
    p = el.data.p
    assert el.questions == ("relevance", TOY) and len(el.table) == 2 * p
    assert el.noun == "question"
    # a word says its kind; a don't know about one feature needs the kind named
    el.answer(3, None, "increases")
    el.answer(3, None, "relevant")
    with pytest.raises(ElicitError, match=r"^\(4, None\) is a question about one feature, "
                                          rf"which kinds relevance, {TOY} ask; say "
                                          r"which: \(kind, i, j\)$"):
        el.answer(4, None, "dont_know")
    el.answer(4, None, "dont_know", kind=TOY)
    assert [(h.kind, *h) for h in el.history] == [
        (TOY, 3, None, Answer.INCREASES), ("relevance", 3, None, Answer.RELEVANT),
        (TOY, 4, None, Answer.DONT_KNOW)]
    assert el.is_asked(4, None, kind=TOY) and not el.is_asked(4, None, kind="relevance")
    with pytest.raises(ElicitError, match=r"^feature 3 was already answered"):
        el.answer(3, None, "-")
    # the toy's answers leave the model alone; relevance closes the toy's question of a
    # feature called irrelevant (not the relevance question of another expert)
    assert el.relevance[3] == 1
    el.answer(0, None, "irrelevant")
    keys = open_keys(el)
    assert (TOY, 0, NO_FEATURE) not in keys and (TOY, 1, NO_FEATURE) in keys
    # set_answers rebuilds the same state from (kind, i, j, answer) and (i, j, answer)
    again = elicitor(("relevance", TOY))
    again.set_answers([(3, None, "up"), ("relevance", 3, None, "r"),
                       (TOY, 4, None, "?"), (0, None, "irrelevant")])
    assert again.history == el.history and [h.kind for h in again.history] == [
        h.kind for h in el.history]
    assert open_keys(again) == keys
    np.testing.assert_array_equal(again.relevance, el.relevance)


def test_the_toy_is_scored_by_its_registered_utility_and_chosen_beside_the_others(toy):
    el = elicitor(f"pairs,relevance,{TOY}", refine=2)
    ex = expert()
    rng = np.random.default_rng(3)
    kinds = []
    # 7 rounds (they were 12): toy, toy, then four relevance questions, then toy again, its
    # gain checked after answers of both kinds
    for _ in range(7):
        q = el.next_query("sequential", rng)
        kinds.append(q.kind)
        if q.kind == TOY:
            # its gain is its utility's: the entropy of the sign at the current MAP
            p = toykind.p_increases(el.data, el.fit, [q.i])[0]
            assert q.expected_gain == pytest.approx(entr(p) + entr(1 - p), rel=1e-12)
            assert q.exact_gain
        el.answer(q.i, q.j, ask(ex, q), kind=q.kind)
    assert "relevance" in kinds and TOY in kinds[kinds.index("relevance") + 1:], kinds
    # every kind's answer probability, through the kinds' API
    idx = np.array([0, len(el.table) - 1])
    probs = answer_probabilities(el, idx)
    assert np.all((probs > 0) & (probs < 1))
    assert probs[1] == pytest.approx(toykind.p_increases(el.data, el.fit, [el.data.p - 1])[0])


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_every_strategy_asks_the_toy_kind_and_never_twice(toy, strategy):
    el = elicitor((TOY,), model="paper", pool_size=5)
    rng = np.random.default_rng(0)
    asked = set()
    for _ in range(el.data.p):
        q = el.next_query(strategy, rng)
        assert q.kind == TOY and q.j is None and q.i not in asked
        asked.add(q.i)
        el.answer(q.i, None, "dont_know", kind=TOY)
    assert len(el.open_questions()) == 0
    with pytest.raises(ElicitError, match=r"^every candidate question has been asked$"):
        el.next_query(strategy, rng)


def test_a_kind_the_model_cannot_take_and_an_expert_without_its_method_are_refused(toy):
    with pytest.raises(ElicitError, match=rf"^questions='pairs,relevance,direction,{TOY}' asks "
                                          r"feature "
                                          r"questions, which need a model with relevance "
                                          r"classes: use model='relevance-direction' \(the "
                                          r"model is 'paper'\)$"):
        elicitor("all", model="paper")  # the model of them all, not one the others refuse
    with pytest.raises(ElicitError, match=rf"^questions='pairs,{TOY}' asks sign questions, "
                                          r"and the expert \(SignOracle\) has no sign\(k\) "
                                          r"method to answer them"):
        from elicit.elicitation.answers import SignOracle

        check_expert(SignOracle([1.0, -1.0]), f"pairs,{TOY}")
    with pytest.raises(ElicitError, match=r"^the expert \(SignOracle\) cannot answer sign "
                                          r"questions: it has no sign\(k\) method$"):
        ask(SignOracle([1.0, -1.0]), Query(0, None, kind=TOY))


# -- the toy kind in a sweep ---------------------------------------------------------------------

class SignMaker:
    """Synthetic problems whose oracle also answers sign questions."""

    def __call__(self, seed: int, run: int) -> RunProblem:
        sd = make_synthetic(np.random.default_rng([seed, run]), n_train=20, irrelevant=4)
        return RunProblem(sd.X, sd.y, sd.U, sd.X_test, sd.y_test,
                          toykind.SignExpert(sd.beta), Hyper(variant="fixed", tau2=1.0),
                          pool_size=10)


@pytest.mark.usefixtures("unsaved_figures")  # reads the tables
def test_a_sweep_records_the_toy_questions_by_kind(toy, tmp_path):
    cfg = SweepConfig("sign", runs=1, rounds=6, strategies=("random", "sequential"),
                      settings=RoundSettings(engine="numpy", questions=f"pairs,{TOY}",
                                             refine=1))
    assert cfg.settings.model == "paper" and cfg.to_json()["questions"] == f"pairs,{TOY}"
    sweep(SignMaker(), cfg, tmp_path / "o", progress=False)
    store = SweepStore.find(tmp_path / "o")
    beta = SignMaker()(cfg.settings.seed, 0).expert.beta
    kinds = set()
    for strategy in cfg.strategies:
        part = load_part(store, cfg, strategy, 0)
        assert part["questions"] == f"pairs,{TOY}" and part["kinds"] == part_kinds(part)
        for (i, j, a), kind in zip(part["asked"], part["kinds"]):
            assert (kind == TOY) == (j is None)
            if kind == TOY:
                want = "dont_know" if beta[i] == 0 else ("increases" if beta[i] > 0
                                                         else "decreases")
                assert a == want
        kinds |= set(part["kinds"])
    assert kinds == {"pairs", TOY}


def test_an_answer_key_is_one_character_the_front_ends_do_not_use(toy):
    # c: the web page's key for its comment box
    for key in ("u", "k", "q", "n", "h", "c", "up"):
        with pytest.raises(ElicitError, match=r"^the key of answer 'level' is one character "
                                              r"and none of k, u, q, n, h, c \(the front ends' "
                                              r"skip, undo, quit, next, help and comment\)"):
            Answer.define("level", TOY, 1, "Level", key)
    assert "level" not in [a.value for a in Answer]


#: Characters that a dead key types on a common layout: pressed, it waits for a second key and
#: types nothing yet. German ^ ´ `, French ^ ¨, Spanish ` ´ ^ ¨ (~ too on some systems), and
#: US International ' " ` ~ ^. A letter, and ? (Shift and one key), are typed at once on each.
DEAD_KEYS = set("^´`¨~'\"")


def test_every_answer_key_is_typed_at_once_on_common_layouts():
    """The direction kind's raises took ^, a dead key on German, French and Spanish layouts:
    there the page's shortcut did nothing until a second key was pressed."""
    keys = {a.value: a.key for a in Answer}
    for word, key in keys.items():
        assert key not in DEAD_KEYS and key.isascii() and key.isprintable(), (word, key)
    assert len(set(keys.values())) == len(keys), keys


def test_a_kind_without_a_usable_utility_is_one_line(monkeypatch):
    """A kind that names an unregistered utility ended in a bare KeyError; one with no utility
    for the round's mode was told "use target='predictive'", the target in use."""
    from elicit.elicitation.utility import register_utility, unregister_utility

    a = small_arrays()
    ask_it = dict(questions=f"pairs,{toykind.NAME}", engine="numpy")
    with toykind.registered() as kind:
        monkeypatch.delitem(kind.utilities, ("fast", "predictive"))
        with pytest.raises(ElicitError, match=r"^the 'predictive' utility target does not score "
                                              r"sign questions; their kind has no 'fast' "
                                              r"utility \(it has exact/predictive\)$"):
            Elicitor(a.X, a.y, a.U, **ask_it)
        monkeypatch.undo()
        unregister_utility("toy-sign-entropy")
        try:
            with pytest.raises(ElicitError, match=r"^unknown utility 'toy-sign-entropy'; "
                                                  r"choose one of "):
                Elicitor(a.X, a.y, a.U, **ask_it)
        finally:
            register_utility(toykind.SignEntropy("toy-sign-entropy", "predictive"))
