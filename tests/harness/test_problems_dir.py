"""``elicit synthetic --problems DIR``: the sweep on a researcher's own simulated problems."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from helpers import assert_png, lockable_elsewhere

from elicit import GroupOracle, SignOracle
from elicit.cli.main import main
from elicit.elicitation.settings import RoundSettings
from elicit.errors import ElicitError
from elicit.harness import ProblemsDir, RunProblem, SweepConfig
from elicit.harness.sweep import sweep
from elicit.model.simulate import make_synthetic
from elicit.model.spec import Hyper


def _write(folder, n: int = 3):
    folder.mkdir()
    problems = []
    for r in range(n):
        sd = make_synthetic(np.random.default_rng(100 + r), n_train=15, n_test=200)
        label = {"groups": sd.groups} if r % 2 == 0 else {"beta": sd.beta}
        np.savez(folder / f"p{r:02d}.npz", X=sd.X, y=sd.y, U=sd.U, X_test=sd.X_test,
                 y_test=sd.y_test, **label)
        problems.append((sd, label))
    return problems


class _InTest:
    """The same problems built in the test, for the reference sweep."""

    def __init__(self, problems):
        self.problems = problems

    def __call__(self, seed, run):
        sd, label = self.problems[run]
        expert = GroupOracle(label["groups"]) if "groups" in label else SignOracle(label["beta"])
        return RunProblem(sd.X, sd.y, sd.U, sd.X_test, sd.y_test, expert,
                          Hyper(variant="learned"))


@pytest.mark.slow
def test_the_sweep_on_a_folder_of_problems_is_the_sweep_on_those_problems(tmp_path):
    problems = _write(tmp_path / "mine")
    out = tmp_path / "out"
    assert main(["synthetic", "--problems", str(tmp_path / "mine"), "--rounds", "3",
                 "--engine", "numpy", "--out", str(out), "--quiet"]) == 0
    got = pd.read_csv(out / "mse.csv")
    assert set(got.dataset) == {"mine"} and sorted(got.run.unique()) == [0, 1, 2]
    assert_png(out / "fig4_mse.png")
    assert not (out / "fig3_K.png").exists()
    ref = sweep(_InTest(problems), SweepConfig("mine", 3, 3,
                                               settings=RoundSettings(engine="numpy")),
                tmp_path / "ref", progress=False)
    pd.testing.assert_frame_equal(got, ref)
    # the reference line: predicting each run's training mean
    mean = got[got.strategy == "mean"].set_index("run").mse
    for r, (sd, _) in enumerate(problems):
        assert mean[r] == pytest.approx(np.mean((sd.y_test - sd.y.mean()) ** 2), rel=1e-12)


@pytest.mark.usefixtures("unsaved_figures")  # the first test checks the figure
def test_other_problems_in_the_same_folder_are_refused(tmp_path, capsys):
    """The results of one set of problems are not resumed with another one's."""
    _write(tmp_path / "mine")
    args = ["synthetic", "--problems", str(tmp_path / "mine"), "--rounds", "1",
            "--strategies", "random", "--engine", "numpy", "--out", str(tmp_path / "out"),
            "--quiet"]
    assert main(args) == 0
    assert main(args) == 0                                    # the same problems resume
    capsys.readouterr()
    sd = make_synthetic(np.random.default_rng(7), n_train=15, n_test=200)
    np.savez(tmp_path / "mine" / "p01.npz", X=sd.X, y=sd.y, U=sd.U, X_test=sd.X_test,
             y_test=sd.y_test, groups=sd.groups)
    assert main(args) == 2
    err = capsys.readouterr().err
    assert "holds results of other settings (problems_sha256:" in err and err.count("\n") == 1


def test_the_sign_oracle_answers_by_the_signs_of_beta():
    o = SignOracle([1.5, -2.0, 0.3, 0.0])
    assert o.answer(0, 2).value == "similar" and o.answer(0, 1).value == "dissimilar"
    assert o.answer(0, 3).value == "dont_know"


def test_problem_folders_are_checked_with_one_line_errors(tmp_path, capsys):
    with pytest.raises(ElicitError, match="no .npz files"):
        ProblemsDir(tmp_path)
    _write(tmp_path / "two", n=2)
    assert main(["synthetic", "--problems", str(tmp_path / "two"), "--runs", "5",
                 "--out", str(tmp_path / "o")]) == 2
    assert "holds 2 problems, fewer than --runs 5" in capsys.readouterr().err
    bad = tmp_path / "bad"
    bad.mkdir()
    np.savez(bad / "a.npz", X=np.zeros((3, 4)), y=np.zeros(3))
    with pytest.raises(ElicitError, match=r"a.npz lacks U, X_test, y_test, groups or beta"):
        ProblemsDir(bad)(0, 0)
    np.savez(bad / "a.npz", X=np.zeros((3, 4)), y=np.zeros(3), U=np.zeros((4, 2)),
             X_test=np.zeros((2, 4)), y_test=np.zeros(2), groups=np.zeros(5))
    with pytest.raises(ElicitError, match="groups has 5 entries but X has 4 features"):
        ProblemsDir(bad)(0, 0)


def test_test_arrays_of_a_problem_file_are_checked(tmp_path):
    """A NaN in y_test gave exit 0 and an mse.csv of NaN curves; an X_test one column short a
    numpy traceback."""
    sd = make_synthetic(np.random.default_rng(0), n_train=15, n_test=20)
    folder = tmp_path / "p"
    folder.mkdir()
    bad_y = sd.y_test.copy()
    bad_y[3] = np.nan
    cases = {"y_test holds NaN or infinite values": dict(y_test=bad_y),
             r"X_test is \(20, 24\) and y_test \(20,\)": dict(X_test=sd.X_test[:, :24]),
             r"X_test is \(20, 25\) and y_test \(19,\)": dict(y_test=sd.y_test[:19])}
    for message, change in cases.items():
        arrays = dict(X=sd.X, y=sd.y, U=sd.U, X_test=sd.X_test, y_test=sd.y_test,
                      groups=sd.groups)
        np.savez(folder / "a.npz", **{**arrays, **change})
        with pytest.raises(ElicitError, match=f"a.npz: {message}"):
            ProblemsDir(folder)(0, 0)


@pytest.mark.usefixtures("unsaved_figures")  # the first test checks the figure
def test_a_failed_sweep_does_not_block_the_corrected_rerun(tmp_path, capsys):
    """A problem file without groups left config.json behind, and the rerun after the fix was
    refused as 'holds results of other settings' although the folder held no result."""
    sd = make_synthetic(np.random.default_rng(0), n_train=15, n_test=20)
    folder = tmp_path / "p"
    folder.mkdir()
    arrays = dict(X=sd.X, y=sd.y, U=sd.U, X_test=sd.X_test, y_test=sd.y_test)
    np.savez(folder / "a.npz", **arrays)
    argv = ["synthetic", "--problems", str(folder), "--rounds", "1", "--out",
            str(tmp_path / "o"), "--quiet", "--strategies", "random"]
    assert main(argv) == 2
    assert "lacks groups or beta" in capsys.readouterr().err
    np.savez(folder / "a.npz", **arrays, groups=sd.groups)
    assert main(argv) == 0, capsys.readouterr().err


@pytest.mark.usefixtures("unsaved_figures")  # the first test checks the figure
def test_the_rerun_a_failed_engine_start_suggests_is_taken(tmp_path, capsys, monkeypatch):
    """--engine cmdstan without CmdStan said "choose --engine numpy"; doing so into the same
    --out was refused: the folder held only the failed start's config.json, no result. And
    --check-engine on the numpy engine compared every fit with itself, without a word."""
    monkeypatch.setenv("CMDSTAN", str(tmp_path / "no-cmdstan"))
    argv = ["synthetic", "--runs", "1", "--rounds", "1", "--strategies", "random", "--quiet",
            "--out", str(tmp_path / "o")]
    assert main([*argv, "--engine", "cmdstan"]) == 2
    assert "no-cmdstan" in capsys.readouterr().err
    assert main([*argv, "--engine", "numpy"]) == 0, capsys.readouterr().err
    assert main([*argv, "--engine", "numpy", "--seed", "3"]) == 2   # now it holds a result
    assert "holds results of other settings (seed: 0 there, 3 now)" in capsys.readouterr().err
    for engine in ("numpy", "auto"):
        assert main([*argv, "--engine", engine, "--check-engine"]) == 2
        # it ended "not a custom --stan-file", where none was given
        assert ("--check-engine compares the fits of --engine cmdstan or pystan with the "
                "numpy engine's (the shipped Stan programs only): give one of those engines, "
                "and no custom --stan-file" in capsys.readouterr().err)


def test_a_strategy_named_twice_is_refused(capsys):
    """--strategies random,random wrote every curve twice: 2 runs counted as 4."""
    with pytest.raises(ElicitError, match="^strategy 'random' is named twice"):
        SweepConfig("x", 1, 1, strategies=("random", "sequential", "random"))
    assert main(["synthetic", "--strategies", "random,random", "--out", "o"]) == 2
    assert "strategy 'random' is named twice" in capsys.readouterr().err


def test_n_train_is_refused_beside_a_folder_of_problems(tmp_path, capsys):
    """--n-train with --problems was ignored without a word (--irrelevant is refused)."""
    _write(tmp_path / "p", n=1)
    assert main(["synthetic", "--problems", str(tmp_path / "p"), "--n-train", "15",
                 "--out", str(tmp_path / "o")]) == 2
    assert "--n-train sets up the built-in generator" in capsys.readouterr().err


@pytest.mark.usefixtures("unsaved_figures")  # the first test checks the figure
def test_settings_with_a_tuple_resume(tmp_path):
    """config.json stores a tuple as a list, and the identical rerun was refused ('sizes: [20,
    30] there, (20, 30) now')."""

    class Sized(_InTest):
        def settings(self):
            return {"sizes": (20, 30)}

    sd = make_synthetic(np.random.default_rng(0), n_train=15, n_test=20)
    cfg = SweepConfig("mine", runs=1, rounds=1, strategies=("random",),
                      settings=RoundSettings(engine="numpy", seed=0))
    maker = Sized([(sd, {"groups": sd.groups})])
    first = sweep(maker, cfg, tmp_path / "o", progress=False)
    again = sweep(maker, cfg, tmp_path / "o", progress=False)
    pd.testing.assert_frame_equal(first, again)


@pytest.mark.usefixtures("unsaved_figures")  # the first test checks the figure
def test_a_second_call_into_a_folder_another_process_writes_into_is_refused(tmp_path):
    """Two sweeps into one --out at once: the second rewrote config.json before the first had
    a part, and the folder ended with parts of both (rounds 4 beside 8) under one config.
    The other process is a fork of this one (its own open of the folder and its own lock, as
    a new interpreter's; not a second of imports to start one)."""
    import multiprocessing

    from elicit.harness.store import SweepStore

    fork = multiprocessing.get_context("fork")
    held, release = fork.Event(), fork.Event()

    def hold(folder):
        SweepStore.open(folder, {"rounds": 8})
        held.set()
        release.wait(120)

    holder = fork.Process(target=hold, args=(tmp_path / "o",))
    holder.start()
    try:
        assert held.wait(120)
        with pytest.raises(ElicitError, match=r"another call is writing into .*o; wait for it"):
            SweepStore.open(tmp_path / "o", {"rounds": 4})
    finally:
        release.set()
        holder.join(120)
    assert holder.exitcode == 0
    SweepStore.open(tmp_path / "o", {"rounds": 4})   # free once it has ended
    SweepStore.open(tmp_path / "o", {"rounds": 4})   # and this process may open it again
    # a finished sweep lets go of its folder, though its process lives on (a notebook)
    assert main(["synthetic", "--runs", "1", "--rounds", "0", "--strategies", "random",
                 "--quiet", "--out", str(tmp_path / "done")]) == 0
    assert lockable_elsewhere(tmp_path / "done")


@pytest.mark.usefixtures("unsaved_figures")  # the first test checks the figure
def test_a_sweep_that_fails_lets_go_of_its_folder(tmp_path):
    """A sweep that raised kept its folder locked until its process ended: in a notebook,
    every other call into that folder was refused as "another call is writing into" it."""
    class Broken(_InTest):
        def __call__(self, seed, run):
            raise ElicitError("this problem cannot be built")

    sd = make_synthetic(np.random.default_rng(0), n_train=15, n_test=20)
    cfg = SweepConfig("mine", runs=1, rounds=1, strategies=("random",),
                      settings=RoundSettings(engine="numpy", seed=0))
    with pytest.raises(ElicitError, match="cannot be built"):
        sweep(Broken([(sd, {"groups": sd.groups})]), cfg, tmp_path / "o", progress=False)
    assert lockable_elsewhere(tmp_path / "o")
