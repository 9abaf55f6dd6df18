"""What a user hands the estimator (answers, features by name or column index, numeric
tables), resolved to indices with one-line errors.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import Any

import numpy as np
import pandas as pd

from elicit.elicitation.answers import Answer
from elicit.elicitation.kinds.pairs import PAIRS
from elicit.errors import ElicitError
from elicit.internal.text import listing
from elicit.model.spec import all_pairs
from elicit.model.variants import get_model
from elicit.prior.setup import coupled_candidates

Feedback = Iterable[tuple[Any, Any, Any]]


def check_list(value: Any, what: str, of: str) -> None:
    """Refuse a ``value`` that is not a list of ``of`` (a string, a scalar, an iterator)."""
    if isinstance(value, (str, bytes, Iterator)) or not isinstance(value, Iterable):
        used = " (an iterator, which one fit would use up: pass list(...))" \
            if isinstance(value, Iterator) else ""
        raise ElicitError(f"{what} must be a list of {of}, got {type(value).__name__}{used}")


def resolve_feedback(feedback: Feedback | None, p: int,
                     names: list[str] | None) -> list[tuple[int, int, Answer]]:
    """The answers as (i, j, Answer) with column indices i < j; one-line errors otherwise."""
    if feedback is None:
        return []
    check_list(feedback, "feedback", "(feature_i, feature_j, answer) tuples")
    if isinstance(feedback, pd.DataFrame):
        feedback = feedback.itertuples(index=False, name=None)
    index = {n: k for k, n in enumerate(names)} if names is not None else {}
    out: list[tuple[int, int, Answer]] = []
    for e, entry in enumerate(feedback):
        if isinstance(entry, (str, bytes)) \
                or not isinstance(entry, (Sequence, np.ndarray)) or len(entry) != 3:
            raise ElicitError(f"feedback entry {e} is {entry!r}; each entry must be a "
                              "(feature_i, feature_j, answer) tuple")
        i, j = (feature_index(f, f"feedback entry {e}", p, names, index) for f in entry[:2])
        if i == j:
            raise ElicitError(f"feedback entry {e} pairs feature {entry[0]!r} with itself; an "
                              "answer is about two different features")
        try:
            ans = Answer.parse(entry[2], PAIRS)
        except ElicitError as err:
            raise ElicitError(f"feedback entry {e}: {err}") from None
        # a pair answered twice (two experts) is two observations of it, as in a session
        out.append((min(i, j), max(i, j), ans))
    return out


def resolve_features(features: Any, what: str, p: int, names: list[str] | None) -> list[int]:
    """A list of features (names or column indices) as sorted distinct column indices;
    ``what`` names the list in errors (e.g. ``"coupled"``)."""
    check_list(features, what, "feature names or indices")
    index = {n: k for k, n in enumerate(names)} if names is not None else {}
    return sorted({feature_index(f, f"{what} entry {e}", p, names, index)
                   for e, f in enumerate(features)})


def relevance_classes(model: str, relevant: Any, irrelevant: Any, p: int,
                      names: list[str] | None) -> np.ndarray | None:
    """The relevance model's classes (1 relevant, 0 irrelevant, -1 not judged) from the
    feature lists ``relevant`` and ``irrelevant``; None for the other models."""
    if not get_model(model).relevance:
        return None
    classes = np.full(p, -1, dtype=int)
    given = {}
    for what, value, c in (("relevant", relevant, 1), ("irrelevant", irrelevant, 0)):
        given[what] = [] if value is None else resolve_features(value, what, p, names)
        classes[given[what]] = c
    if both := sorted(set(given["relevant"]) & set(given["irrelevant"])):
        label = [names[k] if names is not None else k for k in both]
        raise ElicitError(f"feature(s) {few(label)} are both relevant and irrelevant; "
                          "give each feature one answer")
    return classes


def candidate_pairs(model: str, coupled: Any, p: int, feedback: list[tuple[int, int, Answer]],
                    names: list[str] | None) -> np.ndarray:
    """The candidate pairs of the model: every pair, or for the known-coupling models the
    pairs within J (:func:`~elicit.prior.setup.coupled_candidates`)."""
    if not get_model(model).known_coupling:
        return all_pairs(p)
    answered = np.array([(i, j) for i, j, a in feedback if a.outcome is not None],
                        dtype=int).reshape(-1, 2)
    if coupled is None:
        return coupled_candidates(answered)
    J = resolve_features(coupled, "coupled", p, names)
    inside = set(J)
    for e, (i, j, a) in enumerate(feedback):
        if a.outcome is not None and not {i, j} <= inside:
            raise ElicitError(f"feedback entry {e} is about a feature outside the "
                              "coupled set: an answer can only be about features the "
                              "expert judges (add them to coupled, or leave coupled "
                              "unset to take the answered features)")
    return coupled_candidates(answered, J)


def resolve_meta_features(mf: Any, X: np.ndarray, names: list[str] | None,
                          ) -> tuple[np.ndarray, list[str] | None]:
    """The meta-features ``mf`` (an array, a DataFrame indexed by feature name, or None)
    as U with rows in X's column order, and the features' names: X's (``names``), else those
    of its index (if any)."""
    p = X.shape[1]
    if mf is None:
        # The paper's generic recipe: each feature is described by its training values.
        return np.array(X.T), names
    fb_names: list[str] | None = None
    if isinstance(mf, pd.DataFrame):
        index = [str(k) for k in mf.index]
        if len(set(index)) != len(index):
            dup = sorted({k for k in index if index.count(k) > 1})
            raise ElicitError(f"meta_features index has duplicate names {few(dup)}; "
                              "give one row per feature")
        if names is not None:
            have, want = set(index), set(names)
            missing = [k for k in names if k not in have]
            extra = [k for k in index if k not in want]
            if missing or extra:
                raise ElicitError(f"meta_features rows do not match X's columns: missing "
                                  f"{few(missing)}, extra {few(extra)}")
            mf = mf.set_axis(index, axis=0).loc[names]
        fb_names = index
    U = as_float_2d(mf, "meta_features")
    if U.shape[0] != p:
        raise ElicitError(f"meta_features has {U.shape[0]} rows but X has n_features = {p}; "
                          "give one row of meta-features per column of X")
    return U, names or fb_names


def feature_index(f: Any, where: str, p: int, names: list[str] | None,
                  index: dict[str, int]) -> int:
    """The column index of feature ``f`` (a name or an index); ``where`` starts the error
    message (e.g. ``"feedback entry 3"``)."""
    if isinstance(f, str):
        if names is None:
            raise ElicitError(f"{where} names feature {f!r} but the features have "
                              "no names: fit a DataFrame X (in a Pipeline, "
                              "set_output(transform='pandas')), give meta_features as a "
                              "DataFrame indexed by name, or use column indices")
        if f not in index:
            raise ElicitError(f"{where} names an unknown feature {f!r}; known "
                              f"features: {few(names)}")
        return index[f]
    if is_index(f):
        if not 0 <= int(f) < p:
            raise ElicitError(f"{where}: feature index {int(f)} is out of range: "
                              f"X has n_features = {p} (indices 0..{p - 1})")
        return int(f)
    raise ElicitError(f"{where}: a feature must be a name or a column index, got {f!r}")


def name_of(f: Any, names: list[str]) -> Any:
    """The name of an in-range column index ``f``; anything else is left for ``fit`` to check."""
    return names[f] if is_index(f) and 0 <= int(f) < len(names) else f


def is_index(f: Any) -> bool:
    """Whether ``f`` is an integer column index (not a bool)."""
    return isinstance(f, (int, np.integer)) and not isinstance(f, (bool, np.bool_))


def as_float_2d(a: Any, name: str) -> np.ndarray:
    """``a`` as a finite 2-D float array (p features x d meta-features)."""
    try:
        arr = np.array(a, dtype=float)
    except (TypeError, ValueError):
        raise ElicitError(f"{name} must be numeric (p rows x d columns)") from None
    if arr.ndim != 2:
        raise ElicitError(f"{name} must be 2-D (p features x d meta-features), got shape "
                          f"{arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise ElicitError(f"{name} contains NaN or infinite values; remove or impute them")
    return arr


def few(names: Sequence[Any]) -> str:
    """At most 8 names for an error message."""
    return f"[{listing(names)}]" if names else "none"


def is_feature_answer(entry: Any) -> bool:
    """Whether ``entry`` is ``(k, None, answer)``: an answer to a feature question."""
    return isinstance(entry, (tuple, list)) and len(entry) == 3 and entry[1] is None
