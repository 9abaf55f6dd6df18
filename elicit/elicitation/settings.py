"""The settings of a question round, in one object: :class:`RoundSettings`.

What a round of questions needs besides the data and the model's hyperparameters: the model,
the engine, the utility (mode, target, how many candidates are refined, a custom Stan
program), the kinds of question asked, the pool of sampled questions a round scores, the
query strategy and the seed of the query streams. The
:class:`~elicit.elicitation.elicitor.Elicitor` takes it (``settings=``), a
:class:`~elicit.session.session.Session` stores it in its file, and every sweep's
configuration holds it (:class:`~elicit.harness.sweep.SweepConfig`) and records it whole in
``config.json`` (:meth:`RoundSettings.to_json`, read back by :meth:`RoundSettings.from_json`).

:meth:`RoundSettings.validate` is the one place these settings are checked (the utility's
part through :meth:`~elicit.elicitation.utility.UtilityArgs.validate`), before any data are
read or any Stan program is built.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from elicit.data.sources import file_sha256
from elicit.elicitation.kinds import PAPER_QUESTIONS, model_for, parse_questions, spell_questions
from elicit.elicitation.strategies import get_strategy
from elicit.elicitation.utility import QuestionUtility, UtilityArgs
from elicit.engines import ENGINES
from elicit.errors import ElicitError
from elicit.model.variants import PAPER

__all__ = ["RoundSettings", "default_model", "given_settings"]


def default_model(questions: object) -> str:
    """The model of a round that names none: the one the kinds asked need
    (:attr:`~elicit.elicitation.kinds.QuestionKind.model`: the relevance model for feature
    questions), else the paper's."""
    return model_for(questions) or PAPER


@dataclass(frozen=True)
class RoundSettings:
    """What a question round needs besides the data and the hyperparameters.

    Parameters
    ----------
    model
        The named model (:mod:`elicit.model.variants`); None: the one the questions need
        (:func:`default_model`), or for an :class:`~elicit.elicitation.elicitor.Elicitor`
        given a ``hyper``, that one's.
    engine
        ``"auto"``, ``"numpy"``, ``"cmdstan"`` or ``"pystan"`` (:mod:`elicit.engines`).
    utility
        ``"fast"`` (screen + exact refinement of the best ``refine``) or ``"exact"``, or the
        name of a registered utility (:mod:`elicit.elicitation.utility`).
    utility_target
        What a question's gain is about: ``"predictive"`` (the paper's) or ``"params"``.
    refine
        How many candidates the fast mode re-scores exactly.
    stan_file
        A custom Stan program (cmdstan/pystan engines only); recorded by path and content
        hash (:meth:`stan_settings`).
    questions
        The kinds of question asked (:func:`~elicit.elicitation.kinds.parse_questions`),
        kept as :func:`~elicit.elicitation.kinds.spell_questions` writes them (``"pairs"``,
        ``"both"``, ...).
    pool_size
        How many of a round's sampled questions (pairs) the round scores; None: the
        Elicitor's default (in a sweep: the problem's own).
    strategy
        The query strategy (:func:`~elicit.elicitation.strategies.get_strategy`); None in a
        sweep, which runs each of its strategies in turn.
    seed
        Seeds the query random streams (a session's round r draws from
        ``SeedSequence([seed, r])``, a sweep's run r and strategy from
        :func:`~elicit.harness.problem.strategy_stream`).
    """

    model: str | None = None
    engine: str = "auto"
    utility: str = "fast"
    utility_target: str = "predictive"
    refine: int = 10
    stan_file: str | None = None
    questions: str = spell_questions(PAPER_QUESTIONS)
    pool_size: int | None = None
    strategy: str | None = None
    seed: int = 0

    def validate(self) -> RoundSettings:
        """Check the settings; return them resolved: the questions spelled as recorded, the
        model named (:func:`default_model` for None), ``refine`` and ``seed`` as ints and the
        Stan program as a path string.

        Raises
        ------
        ElicitError
            One line for an unknown engine, model, kind of question, utility or strategy, a
            model or utility the kinds asked cannot take, a negative ``refine``, a pool size
            below 1 or a negative seed.
        """
        questions = spell_questions(self.questions)
        model = default_model(questions) if self.model is None else self.model
        if not isinstance(self.engine, str) or self.engine not in ENGINES:
            raise ElicitError(f"unknown engine {self.engine!r}; choose one of "
                              f"{', '.join(ENGINES)}")
        stan_file = None if self.stan_file is None else os.fspath(self.stan_file)
        out = dataclasses.replace(self, model=model, questions=questions, stan_file=stan_file)
        out.utility_args().validate()
        if self.pool_size is not None and not self.pool_size >= 1:
            raise ElicitError(f"pool_size must be positive, got {self.pool_size}")
        if self.strategy is not None:
            get_strategy(self.strategy)
        seed = self.seed
        if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
            raise ElicitError(f"seed must be a non-negative integer, got {seed!r}")
        return dataclasses.replace(out, refine=int(self.refine), seed=int(seed),
                                   pool_size=None if self.pool_size is None
                                   else int(self.pool_size))

    def utility_args(self) -> UtilityArgs:
        """The utility's part of the settings (checked by its own ``validate``)."""
        return UtilityArgs(self.utility, self.utility_target, self.refine, self.stan_file,
                           self.questions, PAPER if self.model is None else self.model)

    def question_utility(self) -> QuestionUtility:
        """The utility that scores the questions (:meth:`UtilityArgs.validate`)."""
        return self.utility_args().validate()

    def stan_settings(self) -> dict[str, str | None]:
        """The Stan program, by path and content hash (None for the shipped ones)."""
        if self.stan_file is None:
            return {"stan_file": None, "stan_file_sha256": None}
        return {"stan_file": str(Path(self.stan_file).resolve()),
                "stan_file_sha256": file_sha256(self.stan_file)}

    def to_json(self) -> dict[str, Any]:
        """The settings as ``config.json`` records them: every field under its own name
        (the Stan program by path and hash), so that folders written before this object
        existed, which recorded the same keys, compare key by key."""
        out: dict[str, Any] = {}
        for f in dataclasses.fields(self):
            if f.name == "stan_file":
                out.update(self.stan_settings())
            else:
                out[f.name] = getattr(self, f.name)
        return out

    @classmethod
    def from_json(cls, d: Mapping[str, Any], legacy: Mapping[str, Any] | None = None,
                  ) -> RoundSettings:
        """The settings a record holds (:meth:`to_json`'s keys; other keys are ignored).

        A key the record lacks takes its value from ``legacy`` (what the records written
        before the setting existed did), else the field's default.
        """
        legacy = legacy or {}
        kw = {f.name: d.get(f.name, legacy.get(f.name, f.default))
              for f in dataclasses.fields(cls)}
        return cls(**kw)


def given_settings(settings: RoundSettings | None, *, engine: object = "auto",
                   stan_file: str | os.PathLike | None = None, utility: str = "fast",
                   refine: int = 10, pool_size: int | None = None, target: str = "predictive",
                   questions: object = PAPER_QUESTIONS, strategy: str | None = None,
                   seed: int = 0) -> RoundSettings:
    """The settings a caller gives an :class:`~elicit.elicitation.elicitor.Elicitor` or a
    :class:`~elicit.session.session.Session`: either ``settings`` or the keywords (an engine
    object counts by its registered name, else as ``"auto"``), not both; not yet validated.
    The keywords' defaults are :class:`RoundSettings`'s: a keyword at its default is not
    "given".

    Raises
    ------
    ElicitError
        Both ``settings`` and keywords other than their defaults.
    """
    name = engine if isinstance(engine, str) else getattr(engine, "name", "auto")
    given = RoundSettings(
        engine=name if name in ENGINES or isinstance(engine, str) else "auto",
        utility=utility, utility_target=target, refine=refine,
        stan_file=None if stan_file is None else os.fspath(stan_file),
        questions=questions, pool_size=pool_size,  # type: ignore[arg-type]
        strategy=strategy, seed=seed)
    if settings is None:
        return given
    defaults = RoundSettings()
    if (isinstance(engine, str) and engine != defaults.engine) or any(
            getattr(given, f) != getattr(defaults, f)
            for f in ("stan_file", "utility", "utility_target", "refine", "pool_size",
                      "strategy", "seed")) \
            or parse_questions(questions) != parse_questions(defaults.questions):
        raise ElicitError("give the round's settings either as settings= or as keywords "
                          "(engine=, utility=, ...), not both")
    return settings
