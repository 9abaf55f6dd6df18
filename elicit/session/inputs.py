"""The inputs of a new session: :func:`prepare` aligns, checks and summarises what
:meth:`Session.create <elicit.session.session.Session.create>` is given (``docs/session.md``,
Your own data); the other functions check single arguments."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from elicit.data.metafeatures import TABLE_SQ_DISTANCE, table_meta_features
from elicit.data.tables import align_meta
from elicit.elicitation.strategies import get_strategy
from elicit.errors import ElicitError
from elicit.internal.checks import check_int
from elicit.internal.text import has_control, listing
from elicit.model.spec import Hyper, validate_regression

#: The longest comment an answer may carry, in characters.
MAX_COMMENT = 10_000
#: The fewest rows from which the default meta-features (the columns' correlations) are made.
MIN_ROWS_FOR_DEFAULT_META = 3


@dataclass
class Prepared:
    """A new session's inputs as the session stores them (see :func:`prepare`)."""

    X: np.ndarray
    y: np.ndarray
    U: np.ndarray
    names: list[str]
    hyper: Hyper
    texts: dict[int, list[str]]
    y_centre: float
    x_centre: list[float] | None
    x_scale: list[float] | None
    excluded: dict[str, str]
    target_description: str
    summary: list[str] = field(default_factory=list)


def prepare(X, y, meta_features, feature_names: Sequence[str] | None, texts,
            hyper: Hyper | None, strategy: str, seed: int, y_offset: float,
            standardize: bool = False, target_description: str | None = None,
            meta_source: str | None = None) -> Prepared:
    """Align, check and summarise the inputs of ``Session.create`` (``docs/session.md``)."""
    if feature_names is None and isinstance(X, pd.DataFrame):
        feature_names = [str(c) for c in X.columns]
    y = _align_y(X, y)
    Xa = _as_matrix(X)
    if meta_features is None:
        try:
            Xd = np.asarray(Xa, dtype=float)
        except (TypeError, ValueError):
            Xd = None
        # The columns' correlation structure, on the kernel's scale (docs/metafeatures.md);
        # a placeholder when X is unusable: validate_regression reports the problem with X.
        U = (table_meta_features(Xd) if Xd is not None and Xd.ndim == 2 and Xd.size
             and np.all(np.isfinite(Xd)) else np.zeros((0, 1)))
    else:
        U = align_meta(meta_features, feature_names)
    meta_names = ([str(c) for c in meta_features.columns]
                  if isinstance(meta_features, pd.DataFrame) else None)
    Xf, yf, Uf = validate_regression(
        Xa, y, U, meta_names=meta_names,
        feature_names=None if feature_names is None else [str(n) for n in feature_names],
        # messages name a row ``row 4``, or ``line 5`` for an index named line
        row_names=([f"{X.index.name or 'row'} {k}" for k in X.index]
                   if isinstance(X, pd.DataFrame) else None))
    names = check_feature_names(feature_names, Xf.shape[1])
    if Xf.shape[1] < 2:  # first: more rows would not help
        raise ElicitError(f"need at least 2 features (columns of X), got {Xf.shape[1]}")
    if meta_features is None and Xf.shape[0] < MIN_ROWS_FOR_DEFAULT_META:
        # with two rows every pair of columns is perfectly correlated (r = +1 or -1)
        raise ElicitError(f"the data has only {Xf.shape[0]} row(s): the default meta-features "
                          "describe each feature by how its column correlates with the "
                          f"others, which needs at least {MIN_ROWS_FOR_DEFAULT_META} rows; add "
                          "rows, or give meta-features (CLI: --meta-features FILE)")
    if np.all(yf == yf[0]):  # the answers would move a prior no prediction depends on
        raise ElicitError(f"y is {yf[0]:.6g} in every row: no answer could change a "
                          "prediction; give an outcome that varies")
    hyper = hyper or Hyper()
    if not isinstance(hyper, Hyper):
        raise ElicitError(f"hyper must be an elicit.model.Hyper, got {type(hyper).__name__}")
    get_strategy(strategy)  # a registered strategy
    check_int(seed, f"seed must be a non-negative integer, got {seed!r}", 0)
    if not np.isfinite(y_offset):
        raise ElicitError(f"y_offset must be a finite number, got {y_offset!r}")
    if target_description is None:
        name = getattr(y, "name", None)
        target_description = f"the outcome {str(name)!r}" if name else "the outcome"
    if not isinstance(target_description, str):
        raise ElicitError("target description must be text, got "
                          f"{type(target_description).__name__}")
    target_description = " ".join(target_description.split())  # one line, as shown
    if not 1 <= len(target_description) <= 200:
        raise ElicitError(f"target description must be 1 to 200 characters long, got "
                          f"{len(target_description)}")
    y_centre = float(np.mean(yf))
    excluded = excluded_features(Xf, names)
    x_centre = x_scale = None
    summary = [f"outcome: {target_description}; y is centred internally and its mean "
               f"{y_centre + y_offset:.6g} is added back in every prediction"]
    if meta_features is None:
        summary.append(f"meta-features: none given, so each feature is described by how it "
                       f"correlates with the others: its coordinates on the first "
                       f"{Uf.shape[1]} principal directions of the standardised training "
                       f"matrix, scaled so that a typical pair starts at K = "
                       f"{np.exp(-TABLE_SQ_DISTANCE / 2):.2f} (docs/metafeatures.md)")
    else:
        summary.append(f"meta-features: {Uf.shape[1]} per feature"
                       + (f", from {meta_source}" if meta_source else ""))
    if standardize:
        mu, sd = Xf.mean(axis=0), Xf.std(axis=0)
        x_centre, x_scale = mu.tolist(), np.where(sd > 0, sd, 1.0).tolist()
        summary.append("X is standardised internally (each column centred and scaled to unit "
                       "variance); predictions take data in the original units")
    constant = [n for n, why in excluded.items() if why == "constant column"]
    dups = [f"{n!r} = {why.removeprefix('same values as ')}" for n, why in excluded.items()
            if why != "constant column"]
    if constant:
        summary.append(f"left out of the questions, kept in the model: {len(constant)} "
                       f"constant column(s): {listing(constant)}")
    if dups:
        summary.append(f"left out of the questions, kept in the model: {len(dups)} "
                       f"column(s) equal to an earlier one: {', '.join(dups[:8])}"
                       + (f" and {len(dups) - 8} more" if len(dups) > 8 else ""))
    return Prepared(Xf, yf, Uf, names, hyper, check_texts(texts, names), y_centre, x_centre,
                    x_scale, excluded, target_description, summary)


def _as_matrix(X) -> np.ndarray:
    if isinstance(X, pd.DataFrame):
        # by dtype: X[c] of a name given twice is a DataFrame (check_feature_names refuses it)
        if bad := [str(c) for c, t in X.dtypes.items() if not pd.api.types.is_numeric_dtype(t)
                   or pd.api.types.is_bool_dtype(t) or pd.api.types.is_complex_dtype(t)]:
            raise ElicitError(f"X must be numeric (real); column(s) {listing(bad)} are not")
        return X.to_numpy(dtype=float, na_value=np.nan)
    return X


def _align_y(X, y):
    """``y`` in the row order of a DataFrame ``X``, matched by index label (or refused)."""
    if not (isinstance(X, pd.DataFrame) and isinstance(y, pd.Series)):
        return y
    if y.index.equals(X.index):
        return y
    if len(y) == len(X) and set(y.index) == set(X.index) and y.index.is_unique:
        return y.reindex(X.index)
    if not y.index.is_unique:
        dup = list(y.index[y.index.duplicated()].unique())
        raise ElicitError(f"y's index names row(s) {listing(dup)} more than once; give y one "
                          "entry per row of X")
    labels = set(y.index)
    missing = [k for k in X.index if k not in labels]
    what = (f"no y for row(s) {listing(missing)}" if missing else
            f"y has {len(y)} entries for {len(X)} rows")
    raise ElicitError(f"y's index does not match X's rows: {what}; give y with X's row labels "
                      "(or y.to_numpy() to match by position)")


def excluded_features(X: np.ndarray, names: list[str]) -> dict[str, str]:
    """Features left out of the questions: ``{name: reason}`` for constant columns and for
    columns identical to an earlier column."""
    out: dict[str, str] = {}
    first: dict[bytes, int] = {}
    for k in range(X.shape[1]):
        col = np.ascontiguousarray(X[:, k])
        if np.all(col == col[0]):
            out[names[k]] = "constant column"
            continue
        key = col.tobytes()
        if key in first:
            out[names[k]] = f"same values as {names[first[key]]!r}"
        else:
            first[key] = k
    return out


def check_feature_names(names: Sequence[str] | None, p: int) -> list[str]:
    """One unique, non-empty name per feature; ``x0, x1, ...`` when ``names`` is None."""
    if names is None:
        return [f"x{k}" for k in range(p)]
    if isinstance(names, str):
        raise ElicitError("feature_names must be a list of strings, not one string")
    names = list(names)
    if len(names) != p:
        raise ElicitError(f"got {len(names)} feature names for {p} features (columns of X); "
                          "give exactly one name per feature")
    seen: dict[str, int] = {}
    for k, n in enumerate(names):
        if not isinstance(n, str):
            raise ElicitError(f"feature name {k} must be a string, got {type(n).__name__} {n!r}")
        if not n.strip():
            raise ElicitError(f"feature name {k} is empty; every feature needs a visible name")
        if has_control(n):
            # It would be shown to experts in terminals, where such characters act.
            raise ElicitError(f"feature name {k} ({n!r}) contains control characters; "
                              "rename it with visible characters only")
        if (key := n.strip()) in seen:  # 'a' and 'a ' read alike to the expert
            raise ElicitError(f"duplicate feature name {n!r} (features {seen[key]} and {k}); "
                              "feature names must be unique, also without their spaces")
        seen[key] = k
    return names


def check_texts(texts: Mapping[Any, Any] | Sequence[Any] | None,
                names: list[str]) -> dict[int, list[str]]:
    """Normalise optional snippets (a dict feature name or index -> snippets, or one list
    per feature; a string is one snippet) to ``{feature index: [snippet, ...]}``."""
    if texts is None:
        return {}
    out: dict[int, list[str]] = {}
    if isinstance(texts, Mapping):
        index = {n: k for k, n in enumerate(names)}
        for key, snippets in texts.items():
            k = index.get(key, -1) if isinstance(key, str) else key
            if not isinstance(k, (int, np.integer)) or not 0 <= k < len(names):
                raise ElicitError(f"texts names an unknown feature {key!r}; keys must be feature "
                                  f"names or indices 0..{len(names) - 1}")
            out[int(k)] = _snippet_list(snippets, names[int(k)])
    else:
        texts = list(texts)
        if len(texts) != len(names):
            raise ElicitError(f"texts has {len(texts)} entries for {len(names)} features; give "
                              "one list of snippets per feature or a dict name -> snippets")
        for k, snippets in enumerate(texts):
            if snippets:
                out[k] = _snippet_list(snippets, names[k])
    return {k: v for k, v in out.items() if v}


def _snippet_list(snippets, name: str) -> list[str]:
    snippets = [snippets] if isinstance(snippets, str) else list(snippets)
    if not all(isinstance(s, str) for s in snippets):
        raise ElicitError(f"text snippets of feature {name!r} must be strings")
    return snippets


def check_comment(comment: str | None) -> str | None:
    """An answer's comment, stripped (None when empty); refuses non-text and overlong ones."""
    if comment is None:
        return None
    if not isinstance(comment, str):
        raise ElicitError(f"comment must be text, got {type(comment).__name__}")
    comment = comment.strip() or None
    if comment is not None and len(comment) > MAX_COMMENT:
        raise ElicitError(f"comment is {len(comment)} characters long; the limit is "
                          f"{MAX_COMMENT}")
    return comment
