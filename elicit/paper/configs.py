"""One typed configuration per experiment of the paper: :class:`SyntheticConfig` and
:class:`RealDataConfig`, frozen and checked once when made (before any data are read); their
fields are declared as :mod:`elicit.harness.config` describes."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import KW_ONLY, MISSING, dataclass, replace
from pathlib import Path
from typing import Any, ClassVar, Literal

from elicit.data.metafeatures import DEFAULT_META_DIM, EMBEDDINGS, check_meta_dim, is_builtin
from elicit.data.sources import (
    DataSource,
    file_sha256,
    paper_source,
    source_from_config,
)
from elicit.data.splits import check_standardize
from elicit.elicitation.kinds import PAPER_QUESTIONS, parse_questions, spell_questions
from elicit.elicitation.settings import RoundSettings, default_model
from elicit.elicitation.strategies import STRATEGIES
from elicit.errors import ElicitError
from elicit.harness.config import Recorded, RoundKeywords, option, round_settings, setting
from elicit.harness.problem import ProblemsDir
from elicit.harness.sweep import SweepConfig
from elicit.internal.checks import check_int
from elicit.model.simulate import N_FEATURES
from elicit.model.variants import PAPER, get_model
from elicit.paper.lasso_expert import RULES
from elicit.prior.tau2 import TAU2_AGAIN, check_tau2

#: The paper's fixed prior scale on real data (found there by cross-validation).
PAPER_TAU2 = 0.01
#: The paper's random pool of candidate pairs per sequential round.
POOL_SIZE = 400
#: Rounds after which the synthetic experiment's kernel is shown (Fig. 3).
FIG3_ROUNDS: tuple[int, ...] = (0, 10, 30, 100)

PAPER_SETTINGS: dict[str, float | str] = {"standardize": "train", "tau2": PAPER_TAU2}
#: ``--recommended``: the best label-free configuration of ``docs/beyond-the-paper.md``.
RECOMMENDED: dict[str, object] = {"meta_features": "ppmi", "meta_dim": 10,
                                  "model": "known-coupling", "utility_target": "predictive"}
#: keywords the LASSO expert's rule "target" keeps (``--expert-nonzero``)
EXPERT_NONZERO = 40
#: With the paper's counts the start predicts worse than ridge regression (docs/realdata.md).
DEFAULT_META_FEATURES = "ppmi"
#: ``--paper``'s meta-features: the paper's transposed training counts.
PAPER_META_FEATURES = "counts"
#: the options of RECOMMENDED when not given (meta-features None: resolve_meta_features)
_OPTION_DEFAULTS: dict[str, object] = {"meta_features": None, "meta_dim": None,
                                       "model": None, "utility_target": "predictive"}


#: Where a sweep's pair questions come from: ``"paper"``, the expert's answerable pairs (it
#: leaks the expert's relevance knowledge: with feature questions, the *best case*);
#: ``"open"``, the pairs among the features not called irrelevant.
POOLS: tuple[str, ...] = ("paper", "open")
POOL_LABELS: dict[str, str] = {"paper": "best case: the expert's answerable pairs",
                               "open": "pairs among the features not called irrelevant"}


def default_pool(questions: object) -> str:
    """``"paper"`` with the paper's questions (pairs only), ``"open"`` with others."""
    return "paper" if parse_questions(questions) == PAPER_QUESTIONS else "open"


def check_pool(pool: str | None, questions: object) -> str:
    """``pool``, or :func:`default_pool` for None; a one-line error for another value."""
    if pool is None:
        return default_pool(questions)
    if isinstance(pool, str) and pool in POOLS:
        return pool
    raise ElicitError(f"pool must be one of {', '.join(POOLS)}, got {pool!r}")


def _positive_int(value: object, what: str) -> None:
    # Python ints only (not check_int's NumPy ones): the value is stored as given and written
    # to config.json, which cannot hold a NumPy integer
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ElicitError(f"{what} must be a positive integer, got {value!r}")


@dataclass(frozen=True)
class SyntheticConfig(Recorded, RoundKeywords):
    """The settings of the synthetic experiment (``elicit synthetic``; Figs. 3 and 4).

    Parameters
    ----------
    runs, rounds, strategies, jobs
        Runs ``0..runs-1`` (default 50, or one per problem file), each with ``rounds``
        questions per strategy, in ``jobs`` worker processes.
    settings
        The rounds' :class:`~elicit.elicitation.settings.RoundSettings`; the keywords
        ``seed``, ``engine``, ``model``, ``questions``, ... replace their entries.
    n_train
        Training samples per run (paper: 20; the authors' code: 15).
    threshold_mean
        Prior mean of the threshold xi: ``"auto"``, a number, or None for the default.
    cluster, check_engine
        A Dask cluster (:mod:`elicit.harness.cluster`); check every fit against numpy.
    problems
        A folder of one ``.npz`` per run (:class:`~elicit.harness.problem.ProblemsDir`).
    pool
        Where the pair questions come from (:data:`POOLS`; default :func:`default_pool`).
    irrelevant
        How many of the generator's features get the true weight 0 (0: the paper's data).
    """

    RECORD_HEAD: ClassVar[dict[str, object]] = {"experiment": "synthetic"}
    RECORD_ORDER = ("experiment", "seed", "rounds", "n_train", "problems", "problems_sha256",
                    "engine", "utility", "refine", "stan_file", "stan_file_sha256",
                    "threshold_mean", "model", "utility_target", "questions")

    _: KW_ONLY
    rounds: int = setting(100)
    n_train: int = setting(20, record=lambda c: {
        "n_train": None if c.problems is not None else c.n_train})
    problems: str | None = setting(None, record=lambda c: (
        ProblemsDir(c.problems).settings() if c.problems is not None
        else {"problems": None, "problems_sha256": None}))
    threshold_mean: float | Literal["auto"] | None = setting(None)
    pool: str = setting(None)       # None: by the questions (default_pool)
    irrelevant: int = setting(0)
    runs: int | None = option(None)
    strategies: tuple[str, ...] = option(STRATEGIES)
    jobs: int = option(1)
    cluster: str | None = option(None)
    check_engine: bool | str = option(False)

    def check(self) -> None:
        """Check the options and resolve ``runs``, ``pool`` and the settings."""
        object.__setattr__(self, "pool", check_pool(self.pool, self.settings.questions))
        n_irr = self.irrelevant
        if isinstance(n_irr, bool) or not isinstance(n_irr, int) \
                or not 0 <= n_irr <= N_FEATURES - 2:
            raise ElicitError(f"irrelevant must be an integer from 0 to {N_FEATURES - 2} (the "
                              f"generator has {N_FEATURES} features), got {n_irr!r}")
        if n_irr and self.problems is not None:
            raise ElicitError("--irrelevant sets up the built-in generator; a --problems "
                              "folder marks irrelevant features by a negative group or a "
                              "zero beta instead")
        if self.n_train != 20 and self.problems is not None:
            raise ElicitError("--n-train sets up the built-in generator; the training rows of "
                              "a --problems folder are its files' X and y")
        runs = self.runs
        if self.problems is not None:
            object.__setattr__(self, "problems", os.fspath(self.problems))
            n = len(ProblemsDir(self.problems))
            if runs is not None and runs > n:
                raise ElicitError(f"--problems {self.problems} holds {n} problems, fewer than "
                                  f"--runs {runs}; give --runs {n} or more files")
            runs = n if runs is None else runs
        object.__setattr__(self, "runs", 50 if runs is None else runs)
        _positive_int(self.n_train, "n_train")
        super().check()
        self.sweep_config()  # checks the sweep's settings

    @property
    def name(self) -> str:
        """The data set's label: ``synthetic``, or the problem folder's name."""
        return "synthetic" if self.problems is None else ProblemsDir(self.problems).name

    def sweep_config(self) -> SweepConfig:
        """The settings of the experiment's sweep (gamma stored at :data:`FIG3_ROUNDS`)."""
        assert self.runs is not None  # set in __post_init__
        return SweepConfig(self.name, self.runs, self.rounds, tuple(self.strategies),
                           self.settings, self.jobs, cluster=self.cluster,
                           check_engine=self.check_engine,
                           snapshots=tuple(t for t in FIG3_ROUNDS if t <= self.rounds),
                           threshold_mean=self.threshold_mean)

    @classmethod
    def from_json(cls, d: dict, **options: Any) -> SyntheticConfig:
        """The configuration a ``config.json`` records, with ``options`` (``runs``, ...)."""
        recorded = cls.recorded(d)
        if recorded["n_train"] is None:  # problems from files: n_train is not used
            del recorded["n_train"]
        return cls(**{**recorded, **options})


def resolve_recommended(recommended: bool, paper: bool, **given: object) -> dict[str, object]:
    """The meta-features, model and utility target of a sweep: ``given``, or with
    ``recommended`` the :data:`RECOMMENDED` ones (another explicit value is an error; one
    equal to the option's default counts as not given)."""
    if not recommended:
        return given
    if paper:
        raise ElicitError("--recommended and --paper are two different configurations; "
                          "give one of them")
    for key, value in given.items():
        if value != _OPTION_DEFAULTS[key] and value != RECOMMENDED[key]:
            opt = "--" + key.replace("_", "-")
            raise ElicitError(f"--recommended sets {opt} {RECOMMENDED[key]}; drop {opt} "
                              f"{value} or --recommended")
    return dict(RECOMMENDED)


def resolve_meta_features(paper: bool, meta_features: str | os.PathLike | None,
                          meta_dim: int | None) -> tuple[str | os.PathLike, int]:
    """The meta-features and their dimensions: as given, or (None) :data:`DEFAULT_META_FEATURES`
    or with ``paper`` the paper's counts; dimensions alone without an embedding are an error."""
    kind = meta_features
    if kind is None:
        kind = PAPER_META_FEATURES if paper else DEFAULT_META_FEATURES
        if meta_dim is not None and kind not in EMBEDDINGS:
            raise ElicitError(f"--meta-dim goes with --meta-features ppmi or lsa only (the "
                              f"dimensions of the embedding), not with {kind!r}")
    return kind, DEFAULT_META_DIM if meta_dim is None else meta_dim


def resolve_settings(paper: bool = False, standardize: str | None = None,
                     tau2: float | str | None = None) -> tuple[str, float | str]:
    """The standardisation and tau^2 of a sweep: explicit values, else the defaults
    (``"model"``, ``"cv"``) or with ``paper`` the paper's (another explicit value is then an
    error)."""
    tau2 = None if tau2 is None else check_tau2(tau2)
    if paper:
        for key, value in (("standardize", standardize), ("tau2", tau2)):
            if value is not None and value != PAPER_SETTINGS[key]:
                raise ElicitError(f"--paper sets --{key} {PAPER_SETTINGS[key]}; drop "
                                  f"--{key} {value} or --paper")
        return str(PAPER_SETTINGS["standardize"]), PAPER_SETTINGS["tau2"]
    return check_standardize(standardize or "model"), "cv" if tau2 is None else tau2


def meta_config(meta_features: str | os.PathLike, meta_dim: int) -> dict:
    """What ``config.json`` records about the meta-features: ``meta_dim`` only for an
    embedding; a file by its content hash, its path beside it."""
    if is_builtin(meta_features):
        kind = str(meta_features)
        return {"meta_features": kind,
                "meta_dim": check_meta_dim(meta_dim) if kind in EMBEDDINGS else None}
    path = Path(meta_features)
    if not path.is_file():
        raise ElicitError(f"--meta-features {str(meta_features)!r} is neither one of counts, "
                          "ppmi, lsa nor an existing file")
    return {"meta_features": "file", "meta_features_file": str(path.resolve()),
            "meta_features_sha256": file_sha256(path), "meta_dim": None}


@dataclass(frozen=True)
class RealDataConfig(Recorded, RoundKeywords):
    """The settings of the real-data experiment on one data set (``elicit realdata``).

    Made, the presets are resolved: ``standardize``, ``tau2``, ``meta_features``,
    ``meta_dim`` and ``settings`` hold the values the sweep uses, and ``source`` is a
    :class:`~elicit.data.sources.DataSource`. Parameters shared with :class:`SyntheticConfig`
    are as there.

    Parameters
    ----------
    source, data_dir
        ``"amazon"``, ``"yelp"`` (the paper's matrices, from ``data_dir``), a
        :class:`~elicit.data.sources.DataSource`, or a function that makes one.
    tau2
        A fixed prior scale tau^2, or ``"cv"`` (default): chosen per run by 5-fold CV.
    tau2_again
        After how many answers tau2 is chosen again by that CV with the relevance classes
        answered so far (docs/realdata.md); None: 10, 20, 40, 80 where tau2 is "cv" and the
        model has relevance classes, else never.
    standardize
        ``"model"`` (default): with all 1000 model reviews' statistics; ``"train"``: with the
        100 training reviews'.
    paper
        The paper-literal configuration: ``standardize="train"``, ``tau2=0.01``, the paper's
        counts as meta-features (unless others are given), the paper's model.
    recommended
        The :data:`RECOMMENDED` meta-features, model and utility target; not with ``paper``.
    expert_rule, expert_nonzero
        How the LASSO expert picks its penalty (:mod:`elicit.paper.lasso_expert`).
    memo
        A folder of results that sweeps of the same runs share
        (:func:`elicit.paper.runinfo.memoised_pieces`).
    meta_features, meta_dim
        ``"ppmi"`` (default) or ``"lsa"`` (a ``meta_dim``-dimensional keyword embedding),
        ``"counts"`` (the paper's) or a file (:mod:`elicit.data.metafeatures`).
    """

    RECORD_ORDER = ("dataset", "data_dir", "corpus", "corpus_sha256", "text_field",
                    "rating_field", "min_df", "seed", "rounds", "standardize", "tau2",
                    "pool_size", "expert_rule", "expert_nonzero", "engine", "utility", "refine",
                    "model", "utility_target", "questions", "stan_file", "stan_file_sha256",
                    "strategy")

    source: str | DataSource | Callable[[], DataSource] = setting(
        MISSING, record=lambda c: c.data.config())
    _: KW_ONLY
    # the paper's pool of candidate pairs, also for the sweeps before it was recorded
    settings: RoundSettings = round_settings(RoundSettings(pool_size=POOL_SIZE),
                                             legacy={"pool_size": POOL_SIZE})
    rounds: int = setting(100)
    # Sweeps written before the standardisation was recorded used the training statistics.
    standardize: str | None = setting(None, legacy="train")
    tau2: float | str | None = setting(None)
    tau2_again: tuple[int, ...] | None = setting(
        None, record=lambda c: {"tau2_again": list(c.tau2_again or ())})
    expert_rule: str = setting("target")
    expert_nonzero: int = setting(EXPERT_NONZERO)
    pool: str = setting(None)       # None: by the questions (default_pool)
    meta_features: str | os.PathLike | None = setting(
        None, record=lambda c: meta_config(c.meta_features, c.meta_dim))
    meta_dim: int | None = setting(None, record=lambda c: {})  # with meta_features
    runs: int = option(50)
    strategies: tuple[str, ...] = option(STRATEGIES)
    jobs: int = option(1)
    data_dir: str | os.PathLike | None = option(None)  # recorded by the source
    paper: bool = option(False)                        # recorded as the values it sets
    recommended: bool = option(False)
    cluster: str | None = option(None)
    check_engine: bool | str = option(False)
    memo: str | os.PathLike | None = option(None)

    def check(self) -> None:
        """Check the options, resolve the presets, then make the source."""
        def put(**values: object) -> None:
            for key, value in values.items():
                object.__setattr__(self, key, value)

        # The questions first: they decide the default model and pool.
        st = self.settings
        questions = spell_questions(st.questions)
        put(pool=check_pool(self.pool, questions))
        if parse_questions(questions) != PAPER_QUESTIONS and (self.paper or self.recommended):
            preset = "--paper" if self.paper else "--recommended"
            raise ElicitError(f"{preset} asks pair questions only; drop {preset} or "
                              f"--questions {questions}")
        chosen = resolve_recommended(self.recommended, self.paper,
                                     meta_features=self.meta_features, meta_dim=self.meta_dim,
                                     model=st.model, utility_target=st.utility_target)
        model = str(chosen.pop("model") or default_model(questions))
        target = str(chosen.pop("utility_target"))
        put(settings=replace(st, model=model, utility_target=target), **chosen)
        mf, dim = resolve_meta_features(self.paper, self.meta_features, self.meta_dim)
        put(meta_features=os.fspath(mf), meta_dim=dim)
        std, tau2 = resolve_settings(self.paper, self.standardize, self.tau2)
        put(standardize=std, tau2=tau2)
        again = self.tau2_again
        if again is None:
            again = TAU2_AGAIN if tau2 == "cv" and get_model(model).relevance else ()
        elif again and (tau2 != "cv" or not get_model(model).relevance):
            raise ElicitError("tau2_again needs tau2 'cv' and a model with relevance classes "
                              f"(--questions with relevance); this sweep has tau2 {tau2!r}, "
                              f"model {model!r}")
        listed = again if isinstance(again, (tuple, list)) else [again]
        put(tau2_again=tuple(sorted({check_int(t, "tau2_again must hold positive answer counts, "
                                                  f"got {again!r}", 1) for t in listed})))
        if self.paper and model != PAPER:
            raise ElicitError(f"--paper runs the paper's model; drop --model {model} or --paper")
        _positive_int(self.settings.pool_size, "pool_size")
        _positive_int(self.expert_nonzero, "expert_nonzero")
        if self.expert_rule not in RULES:
            raise ElicitError(f"unknown LASSO expert rule {self.expert_rule!r}: use one of "
                              f"{', '.join(RULES)}")
        if self.expert_rule != "target" and self.expert_nonzero != EXPERT_NONZERO:
            raise ElicitError(f"--expert-nonzero goes with --expert-rule target; drop it with "
                              f"--expert-rule {self.expert_rule}")
        if self.pool == "open" and parse_questions(questions) == PAPER_QUESTIONS:
            raise ElicitError("--pool open asks pairs among the keywords not called irrelevant: "
                              "it needs feature questions (--questions both); with pair "
                              "questions only, use --pool paper")
        meta_config(mf, dim)  # checks a file, or an embedding's dimensions
        super().check()
        self.sweep_config("")  # checks the sweep's settings
        # The data, last: a wrong option is reported before any data are read.
        src = self.source
        if isinstance(src, str):
            src = paper_source(src, self.data_dir)
        elif not isinstance(src, DataSource):
            src = src()
        put(source=src)

    @property
    def data(self) -> DataSource:
        """The reviews (``source``, resolved when the configuration was made)."""
        assert isinstance(self.source, DataSource)
        return self.source

    @property
    def name(self) -> str:
        """The data set's label in every output (``amazon``, a corpus name)."""
        return self.data.name

    @property
    def fixed_tau2(self) -> float | None:
        """The fixed tau^2 of every run, or None when each run's is chosen by CV."""
        return None if self.tau2 == "cv" else float(self.tau2)  # type: ignore[arg-type]

    def sweep_config(self, name: str | None = None) -> SweepConfig:
        """The settings of the experiment's sweep of query strategies (``name``: the data's)."""
        return SweepConfig(self.name if name is None else name, self.runs, self.rounds,
                           tuple(self.strategies), self.settings, self.jobs,
                           cluster=self.cluster, check_engine=self.check_engine)

    def run_data(self, run: int):  # -> elicit.data.RunData
        """Run ``run``'s split, standardisation and meta-features."""
        assert self.meta_features is not None and self.meta_dim is not None  # resolved
        return self.data.run(self.settings.seed, run, standardize=str(self.standardize),
                             meta_features=self.meta_features, meta_dim=self.meta_dim)

    @classmethod
    def from_json(cls, d: dict, data_dir: str | os.PathLike | None = None,
                  **options: Any) -> RealDataConfig:
        """The configuration a sweep's ``config.json`` records; ``data_dir`` overrides a paper
        sweep's data directory (a corpus or meta-features file must be unchanged), ``options``
        give the settings it does not record (``runs``, ``jobs``, ...)."""
        recorded = cls.recorded(d)
        recorded["source"] = source_from_config(d, data_dir)
        recorded["meta_dim"] = recorded["meta_dim"] or DEFAULT_META_DIM  # None: no embedding
        if recorded["meta_features"] == "file":
            path = d["meta_features_file"]
            if not Path(path).is_file() or file_sha256(path) != d.get("meta_features_sha256"):
                raise ElicitError(f"the sweep's meta-features file {path} is gone or changed "
                                  "since the sweep ran; put it back")
            recorded["meta_features"] = path
        return cls(**{**recorded, **options})
