"""The settings of a question round, in one object (:class:`RoundSettings`), as an Elicitor
takes them, a session stores them and a sweep records them (``config.json``)."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from elicit.data.sources import file_sha256
from elicit.elicitation.kinds import PAPER_QUESTIONS, model_for, parse_questions, spell_questions
from elicit.elicitation.strategies import get_strategy
from elicit.elicitation.utility import UtilityArgs
from elicit.engines import ENGINES
from elicit.errors import ElicitError
from elicit.internal.checks import check_int
from elicit.internal.paths import check_input_file
from elicit.model.variants import PAPER

__all__ = ["RoundSettings", "default_model", "given_settings"]


def default_model(questions: object) -> str:
    """The model of a round that names none: the one the kinds asked need, else the paper's."""
    return model_for(questions) or PAPER


@dataclass(frozen=True)
class RoundSettings:
    """What a question round needs besides the data and the hyperparameters.

    Parameters
    ----------
    model
        The named model; None: the one the questions need, or an Elicitor's ``hyper.model``.
    engine
        ``"auto"``, ``"numpy"``, ``"cmdstan"`` or ``"pystan"``.
    utility, utility_target, refine
        As :class:`~elicit.elicitation.utility.UtilityArgs` takes them.
    stan_file
        A custom Stan program (cmdstan/pystan engines only), recorded by path and hash.
    questions
        The kinds of question asked, spelled (:func:`~elicit.elicitation.kinds.spell_questions`).
    pool_size
        How many of a round's open pairs it scores; None: ``min(#pairs, 10 p, 4000)``. Every
        open question about one feature enters the pool.
    strategy
        The query strategy; None in a sweep, which runs each of its strategies in turn.
    seed
        Seeds the query random streams (a session's round r: ``SeedSequence([seed, r])``).
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
        """The settings checked (one-line ElicitErrors) and resolved, before any data are read."""
        questions = spell_questions(self.questions)
        model = default_model(questions) if self.model is None else self.model
        if not isinstance(self.engine, str) or self.engine not in ENGINES:
            raise ElicitError(f"unknown engine {self.engine!r}; choose one of "
                              f"{', '.join(ENGINES)}")
        stan_file = None if self.stan_file is None else os.fspath(self.stan_file)
        out = dataclasses.replace(self, model=model, questions=questions, stan_file=stan_file)
        out.utility_args().validate()
        if stan_file is not None:
            check_input_file(stan_file, "Stan")
        if self.pool_size is not None:   # not int(): 2.5 would be cut to 2 without a word
            check_int(self.pool_size, f"pool_size must be a positive integer, got "
                                      f"{self.pool_size!r}", 1)
        if self.strategy is not None:
            get_strategy(self.strategy)
        check_int(self.seed, f"seed must be a non-negative integer, got {self.seed!r}", 0)
        return dataclasses.replace(out, refine=int(self.refine), seed=int(self.seed),
                                   pool_size=None if self.pool_size is None
                                   else int(self.pool_size))

    def utility_args(self) -> UtilityArgs:
        return UtilityArgs(self.utility, self.utility_target, self.refine, self.stan_file,
                           self.questions, PAPER if self.model is None else self.model)

    def to_json(self) -> dict[str, Any]:
        """The settings as ``config.json`` records them: the Stan program by path and content
        hash (None for the shipped ones)."""
        out: dict[str, Any] = {}
        for f in dataclasses.fields(self):
            if f.name != "stan_file":
                out[f.name] = getattr(self, f.name)
            elif self.stan_file is None:
                out.update(stan_file=None, stan_file_sha256=None)
            else:
                out.update(stan_file=str(Path(self.stan_file).resolve()),
                           stan_file_sha256=file_sha256(self.stan_file))
        return out

    @classmethod
    def from_json(cls, d: Mapping[str, Any], legacy: Mapping[str, Any] | None = None,
                  ) -> RoundSettings:
        """The settings a record holds; a key it lacks: ``legacy``'s, else the default."""
        legacy = legacy or {}
        kw = {f.name: d.get(f.name, legacy.get(f.name, f.default)) for f in dataclasses.fields(cls)}
        return cls(**kw)


def given_settings(settings: RoundSettings | None, *, engine: object = "auto",
                   stan_file: str | os.PathLike | None = None, utility: str = "fast",
                   refine: int = 10, pool_size: int | None = None, target: str = "predictive",
                   questions: object = PAPER_QUESTIONS, strategy: str | None = None,
                   seed: int = 0) -> RoundSettings:
    """The settings a caller gives an Elicitor or a Session: ``settings`` or the keywords (an
    engine object counts by its registered name), not both; not yet validated."""
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
