"""One run of a simulated-expert experiment (a picklable *maker* ``make_problem(seed, run)``
gives each run's :class:`RunProblem` to the worker processes), and its random streams.

Run ``r`` of seed ``s`` draws its data from ``SeedSequence([s, r])``; every other random
choice of a run has its own stream (:func:`strategy_stream`, :func:`run_stream`), so no
result depends on what else ran before it in the same process. The values are part of every
stored result: they never change.
"""

from __future__ import annotations

import hashlib
import os
import types
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

import numpy as np

from elicit.data.sources import file_sha256
from elicit.elicitation.answers import Expert, GroupOracle, SignOracle
from elicit.elicitation.elicitor import Elicitor
from elicit.errors import ElicitError
from elicit.internal.cache import freeze_fields
from elicit.model.posterior import mean_squared_error
from elicit.model.spec import Hyper

# Tags of the per-run streams SeedSequence([seed, run, tag]). They stay >= 1000 to keep clear
# of the strategies' SeedSequence([seed, run, stream_id, 7]).
#: Table 1 sample loops: ``STREAM_SAMPLES + k`` for method k of its sample methods.
STREAM_SAMPLES = 1000
#: The fold split of the tau2 cross-validation.
STREAM_TAU2_CV = 2000
#: The CV folds of the regression baselines.
STREAM_BASELINES = 3000
#: The candidate pools of ``elicit bench`` on a real problem.
STREAM_BENCH = 4000


@dataclass(frozen=True)
class Tau2Again:
    """tau2 chosen again after ``at`` answers: ``choose(classes, gamma)``, from the relevance
    classes answered so far and the current MAP's gamma (a sweep's CV; picklable)."""

    at: tuple[int, ...]
    choose: Callable[[np.ndarray, np.ndarray], float]

    def after(self, el: Elicitor, answers: int) -> None:
        """Choose tau2 again for ``el`` if ``answers`` is one of :attr:`at` (and refit)."""
        if answers in self.at and el.relevance is not None:
            if (tau2 := self.choose(el.relevance, el.fit.gamma)) != el.hyper.tau2:
                el.set_tau2(tau2)


@dataclass
class RunProblem:
    """One run's data, meta-features and simulated expert. ``y_offset`` is added to the
    predictions (real data: the training mean, as ``y`` is centred); ``candidates`` are the
    pairs that may be asked (default all), ``pool_size`` the sequential strategy's pool."""

    X: np.ndarray
    y: np.ndarray
    U: np.ndarray
    X_test: np.ndarray
    y_test: np.ndarray
    expert: Expert
    hyper: Hyper
    y_offset: float = 0.0
    candidates: np.ndarray | None = None
    pool_size: int | None = None
    extra: dict = field(default_factory=dict)
    tau2_again: Tau2Again | None = None

    def __post_init__(self) -> None:
        freeze_fields(self, "X", "y", "U", "X_test", "y_test")
        # X, y and U are the Elicitor's to check; the test arrays only score its predictions
        where, p = f"{self.extra['file']}: " if "file" in self.extra else "", np.shape(self.X)[-1]
        Xt, yt = np.shape(self.X_test), np.shape(self.y_test)
        if len(Xt) != 2 or Xt[1] != p or yt != Xt[:1]:
            raise ElicitError(f"{where}X_test is {Xt} and y_test {yt}; they need m x {p} (X has "
                              f"{p} features) and m")
        if bad := [k for k in ("X_test", "y_test") if not np.isfinite(getattr(self, k)).all()]:
            raise ElicitError(f"{where}{bad[0]} holds NaN or infinite values; a test MSE needs "
                              "finite ones")

    def mse(self, elicitor: Elicitor) -> float:
        """Test MSE of the elicitor's current posterior predictive mean."""
        return elicitor.posterior().mse(self.X_test, self.y_test, self.y_offset)

    def mean_mse(self) -> float:
        """Test MSE of predicting the training mean."""
        return mean_squared_error(float(np.mean(self.y)) + self.y_offset, self.y_test)


class ProblemMaker(Protocol):
    """``make_problem(seed, run) -> RunProblem``; picklable (worker processes call it)."""

    def __call__(self, seed: int, run: int) -> RunProblem: ...


def maker_settings(make_problem: ProblemMaker) -> dict:
    """What a sweep's ``config.json`` records about its maker: its ``settings()`` if it has
    one, else its class."""
    if callable(settings := getattr(make_problem, "settings", None)):
        return dict(settings())
    obj = make_problem if isinstance(make_problem, types.FunctionType) else type(make_problem)
    return {"maker": f"{obj.__module__}.{obj.__qualname__}"}


def run_stream(seed: int, run: int, tag: int) -> np.random.SeedSequence:
    """The random stream ``tag`` of run ``run`` (see the module docstring)."""
    return np.random.SeedSequence([int(seed), int(run), int(tag)])


def strategy_stream(seed: int, run: int, stream_id: int) -> np.random.SeedSequence:
    """The random stream of the query strategy with ``stream_id`` in run ``run``."""
    return np.random.SeedSequence([seed, run, stream_id, 7])


#: Arrays every problem file of ``elicit synthetic --problems DIR`` holds.
PROBLEM_ARRAYS = ("X", "y", "U", "X_test", "y_test")


class ProblemsDir:
    """A picklable ``make_problem(seed, run)`` over a user's simulated problems
    (``docs/simulations.md``): ``folder`` holds one ``.npz`` per run, in file-name order, with
    :data:`PROBLEM_ARRAYS` and ``groups`` (:class:`~elicit.elicitation.answers.GroupOracle`)
    or ``beta`` (:class:`~elicit.elicitation.answers.SignOracle`). The model is the synthetic
    experiment's (learned tau2); ``seed`` only seeds the query streams."""

    def __init__(self, folder: str | os.PathLike) -> None:
        self.folder = os.fspath(folder)
        self.files = sorted(str(f) for f in Path(self.folder).glob("*.npz"))
        if not Path(self.folder).is_dir():
            raise ElicitError(f"--problems {self.folder}: no such folder")
        if not self.files:
            raise ElicitError(f"--problems {self.folder}: no .npz files; give one per run with "
                              f"{', '.join(PROBLEM_ARRAYS)} and groups or beta")

    def __len__(self) -> int:
        return len(self.files)

    @property
    def name(self) -> str:
        """The folder's name: the ``dataset`` of the sweep's outputs."""
        return Path(self.folder).resolve().name or "problems"

    def settings(self) -> dict:
        """The folder and one SHA-256 of its files' names and contents, in run order
        (:func:`maker_settings`; other problems in the folder are other runs)."""
        h = hashlib.sha256()
        for f in self.files:
            h.update(f"{Path(f).name}\0{file_sha256(f)}\0".encode())
        return {"problems": str(Path(self.folder).resolve()), "problems_sha256": h.hexdigest()}

    def __call__(self, seed: int, run: int) -> RunProblem:
        if not 0 <= run < len(self.files):
            raise ElicitError(f"--problems {self.folder} holds {len(self.files)} problems; "
                              f"run {run} has none (use --runs {len(self.files)} or fewer)")
        path = self.files[run]
        try:
            with np.load(path, allow_pickle=False) as z:
                arrays = {k: np.asarray(z[k]) for k in z.files}
        except (OSError, ValueError) as exc:
            raise ElicitError(f"{path}: not a numpy .npz file ({exc})") from None
        key = "groups" if "groups" in arrays else "beta"
        need = [k for k in PROBLEM_ARRAYS if k not in arrays]
        need += [] if key in arrays else ["groups or beta"]
        if need:
            raise ElicitError(f"{path} lacks {', '.join(need)} (it has "
                              f"{', '.join(sorted(arrays)) or 'nothing'})")
        labels = arrays[key]
        p = np.shape(arrays["X"])[1] if np.ndim(arrays["X"]) == 2 else -1
        if np.size(labels) != p:
            raise ElicitError(f"{path}: {key} has {np.size(labels)} entries but X has {p} features")
        expert: Expert = (GroupOracle(labels, arrays.get("beta")) if key == "groups"
                          else SignOracle(labels))
        return RunProblem(arrays["X"], arrays["y"], arrays["U"], arrays["X_test"],
                          arrays["y_test"], expert, Hyper(variant="learned"),
                          extra={"file": Path(path).name})
