"""Sweeps that ask feature questions beside pairs: the settings, the records, the stops."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest
from conftest import figures_unsaved
from helpers import question_rows

from elicit.elicitation.answers import GroupOracle
from elicit.elicitation.elicitor import Elicitor
from elicit.elicitation.questions import NO_FEATURE
from elicit.elicitation.settings import RoundSettings, default_model
from elicit.elicitation.strategies import get_strategy
from elicit.errors import ElicitError
from elicit.harness.problem import RunProblem
from elicit.harness.store import SweepStore
from elicit.harness.sweep import (
    SweepConfig,
    _nothing_left,
    load_part,
    part_kinds,
    questions_frame,
    sweep,
)
from elicit.model.simulate import make_synthetic
from elicit.model.spec import Hyper
from elicit.model.variants import PAPER, RELEVANCE_MODEL

# the sweeps here are read by their tables: figures drawn, not saved (conftest)
pytestmark = pytest.mark.usefixtures("one_blas_thread", "unsaved_figures")


class IrrelevantMaker:
    """Synthetic problems with ``k`` irrelevant features (weight 0, group -1)."""

    def __init__(self, k: int = 6) -> None:
        self.k = k

    def __call__(self, seed: int, run: int) -> RunProblem:
        sd = make_synthetic(np.random.default_rng([seed, run]), n_train=20,
                            irrelevant=self.k)
        return RunProblem(sd.X, sd.y, sd.U, sd.X_test, sd.y_test, GroupOracle(sd.groups),
                          Hyper(variant="fixed", tau2=1.0), pool_size=20)


def test_questions_set_the_default_model_and_a_pair_model_is_refused():
    assert SweepConfig("x", 1, 1).settings.model == PAPER
    assert SweepConfig("x", 1, 1).settings.questions == "pairs"
    for q in ("relevance", "both"):
        assert (SweepConfig("x", 1, 1, settings=RoundSettings(questions=q)).settings.model
                == default_model(q) == RELEVANCE_MODEL)
    with pytest.raises(ElicitError, match=r"^questions='both' asks feature questions, which "
                                          r"need a model with relevance classes: use "
                                          r"model='relevance' \(the model is 'paper'\)$"):
        SweepConfig("x", 1, 1, settings=RoundSettings(questions="both", model=PAPER))
    with pytest.raises(ElicitError, match=r"^unknown question kind 'features' in "
                                          r"questions='features'; name kinds from pairs, "):
        SweepConfig("x", 1, 1, settings=RoundSettings(questions="features"))
    # recorded as older sweeps wrote it, however it was given, so their folders resume
    for q in ("both", "relevance,pairs", ("pairs", "relevance")):
        recorded = SweepConfig("x", 1, 1, settings=RoundSettings(questions=q)).to_json()
        assert recorded["questions"] == "both" and recorded["model"] == RELEVANCE_MODEL
    recorded = SweepConfig("x", 1, 1, settings=RoundSettings(questions="all")).to_json()
    assert recorded["questions"] == "pairs,relevance,direction"
    assert recorded["model"] == "relevance-direction"


def test_an_expert_without_relevance_answers_is_refused_before_any_question(tmp_path):
    def pairs_only(seed: int, run: int) -> RunProblem:
        prob = IrrelevantMaker()(seed, run)
        groups = prob.expert.groups

        class PairExpert:
            def answer(self, i, j):
                return GroupOracle(groups).answer(i, j)

        return dataclasses.replace(prob, expert=PairExpert())

    cfg = SweepConfig("x", 1, 2, strategies=("random",),
                      settings=RoundSettings(engine="numpy", questions="both"))
    with pytest.raises(ElicitError, match="has no relevance\\(k\\) method"):
        sweep(pairs_only, cfg, tmp_path / "o", progress=False)
    assert not list((tmp_path / "o").rglob("run000.json"))


@pytest.fixture(scope="module")
def mixed(tmp_path_factory):
    out = tmp_path_factory.mktemp("mixed") / "sweep"
    # seed 1: random is told "irrelevant" in its 2nd round and asks 5 pairs after it (seed 2
    # took 14 rounds to show 3), sequential in its 5th
    cfg = SweepConfig("mixed", runs=1, rounds=8,
                      settings=RoundSettings(engine="numpy", questions="both", seed=1, refine=2))
    with figures_unsaved():
        sweep(IrrelevantMaker(), cfg, out, progress=False)
    return out, cfg


def test_mixed_records_say_what_was_asked_and_never_a_pair_after_irrelevant(mixed):
    out, cfg = mixed
    prob = IrrelevantMaker()(cfg.settings.seed, 0)
    groups = prob.expert.groups
    kinds_seen = set()
    pairs_after_irrelevant = 0
    for strategy in cfg.strategies:
        part = load_part(SweepStore(out, {}), cfg, strategy, 0)
        kinds = part_kinds(part)
        assert part["kinds"] == kinds and len(kinds) == len(part["asked"]) == cfg.rounds
        assert part["questions"] == "both" and part["model"] == RELEVANCE_MODEL
        assert len(part["zeta"]) == len(part["mse"]) == cfg.rounds + 1
        assert all(np.isfinite(part["zeta"]))
        called_irrelevant: set[int] = set()
        for (i, j, a), kind in zip(part["asked"], kinds):
            assert (kind == "relevance") == (j is None)
            if j is None:
                # the oracle's answer: relevant exactly when the feature has a group
                assert a == ("relevant" if groups[i] >= 0 else "irrelevant")
                if a == "irrelevant":
                    called_irrelevant.add(i)
            else:
                assert not {i, j} & called_irrelevant
                assert a in ("similar", "dissimilar", "dont_know")
                pairs_after_irrelevant += bool(called_irrelevant)
        kinds_seen |= set(kinds)
        # zeta moves with feature answers only: unchanged after a pair or don't know
        z = np.array(part["zeta"])
        for t, (kind, (_, _, a)) in enumerate(zip(kinds, part["asked"]), start=1):
            if kind == "pairs" and a == "dont_know":
                assert z[t] == z[t - 1]
    assert kinds_seen == {"pairs", "relevance"}
    assert pairs_after_irrelevant  # the rule above was put to the test


def test_part_kinds_of_a_pair_only_record_read_from_its_questions():
    part = {"asked": [[0, 3, "similar"], [2, None, "relevant"], [1, 4, "dont_know"]]}
    assert part_kinds(part) == ["pairs", "relevance", "pairs"]


def test_part_kinds_of_an_older_mixed_record_read_by_the_kinds_then_names():
    """Sweeps before kinds had names wrote "pair" and "feature"."""
    part = {"asked": [[0, 3, "similar"], [2, None, "relevant"]], "kinds": ["pair", "feature"]}
    assert part_kinds(part) == ["pairs", "relevance"]


def test_questions_frame_has_each_answer_s_kind_and_tau2_and_reads_older_records(tmp_path):
    """``questions.csv`` is what the report counts (results/ holds no parts): row 0 is the
    start; a record without tau2 (older sweeps) gives NaN, one without kinds its questions'."""
    cfg = SweepConfig("x", 2, 2, strategies=("random",), settings=RoundSettings(engine="numpy"))
    store = SweepStore.open(tmp_path, {"seed": 0})
    store.save(store.part_path("x", "random", 0), {
        "mse": [3.0, 2.0, 1.0], "asked": [[4, None, "relevant"], [0, 3, "similar"]],
        "kinds": ["relevance", "pairs"], "tau2": [1e-6, 0.01, 0.02]})
    store.save(store.part_path("x", "random", 1), {
        "mse": [3.0, 2.0, 1.0], "asked": [[0, 3, "similar"], [2, None, "irrelevant"]]})
    got = questions_frame(store, cfg)
    assert got.columns.tolist() == ["strategy", "run", "n_feedback", "kind", "tau2"]
    assert got[["run", "n_feedback", "kind"]].values.tolist() == [
        [0, 0, ""], [0, 1, "relevance"], [0, 2, "pairs"],
        [1, 0, ""], [1, 1, "pairs"], [1, 2, "relevance"]]
    assert got.tau2.tolist()[:3] == [1e-6, 0.01, 0.02] and got.tau2[3:].isna().all()


def test_nonsequential_run_stops_when_its_ranking_is_used_up(tmp_path):
    """A mixed non-sequential run ranks the first round's pool only; once every question of
    it is asked (or closed by an irrelevant answer) the run stops instead of failing."""
    cfg = SweepConfig("x", 1, 200, strategies=("nonsequential",),
                      settings=RoundSettings(engine="numpy", questions="both", refine=0))
    sweep(IrrelevantMaker(k=10), cfg, tmp_path / "o", progress=False)
    part = json.loads((tmp_path / "o" / "parts" / "x" / "nonsequential" / "run000.json")
                      .read_text())
    # 25 features and a pool of 20 pairs: far fewer than 200 rounds
    assert 0 < len(part["asked"]) <= 25 + 20
    assert len(part["mse"]) == len(part["asked"]) + 1


def _nothing_left_by_rows(el, strategy: str) -> bool:
    """The definition by rows (what the sweep checked before it used masks): no unasked
    question, or, for a ranking strategy after answers, no unasked question of the ranking."""
    unasked = {tuple(r) for r in el.unasked().tolist()}
    if not unasked:
        return True
    if el.questions == ("pairs",) or not el.n_answers or not get_strategy(strategy).needs_ranking:
        return False
    return not {tuple(r) for r in question_rows(el)[el.nonsequential_ranking().index].tolist()
                } & unasked


@pytest.mark.parametrize("questions", ["pairs", "relevance", "both"])
def test_nothing_left_agrees_with_the_definition_by_rows_on_random_states(questions):
    prob = IrrelevantMaker()(0, 0)
    el = Elicitor(prob.X, prob.y, prob.U, dataclasses.replace(prob.hyper, model=RELEVANCE_MODEL),
                  engine="numpy", questions=questions, refine=0, pool_size=8)
    el.nonsequential_ranking()
    rng = np.random.default_rng(5)
    rows = question_rows(el)
    ranked = el.nonsequential_ranking().index
    seen = {True: 0, False: 0}
    for trial in range(60):
        # random answers (irrelevant feature answers close pairs) and random asked sets,
        # biased towards asking every question of the ranking, where the two cases split
        answers = []
        for k in rng.choice(el.data.p, size=rng.integers(0, 4), replace=False):
            if questions != "pairs":
                answers.append((int(k), None, rng.choice(["relevant", "irrelevant"])))
        asked = [tuple(r) for r in rows[rng.random(len(rows)) < rng.random()]]
        if trial % 2:
            asked += [tuple(r) for r in rows[ranked]]
        asked = [(int(i), None if j == NO_FEATURE else int(j)) for i, j in set(asked)]
        el.set_answers(answers, asked=asked + [(k, None) for k, _, _ in answers])
        for strategy in ("random", "nonsequential", "sequential"):
            left = _nothing_left(el, strategy)
            assert left == _nothing_left_by_rows(el, strategy)
            seen[left] += 1
    assert seen[True] and seen[False]
