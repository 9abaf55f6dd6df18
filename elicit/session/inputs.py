"""The inputs of a session: where they come from and what makes them valid.

:func:`dataset_inputs` (the paper's Amazon and Yelp data) and :func:`npz_inputs` (a user's
``.npz`` file) return keyword arguments for :meth:`Session.create
<elicit.session.session.Session.create>`; :func:`keyword_snippets` finds the example snippets
shown to the expert next to each keyword, and :func:`texts_from_json` reads snippets the user
wrote. :func:`check_inputs` holds the checks ``Session.create`` applies to its arguments,
:func:`check_comment` the check of an answer's comment.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from elicit.elicitation.strategies import STRATEGIES
from elicit.errors import ElicitError
from elicit.model.spec import Hyper, validate_regression

#: The longest comment an answer may carry, in characters.
MAX_COMMENT = 10_000

# --------------------------------------------------------------------------------------------
# Loading
# --------------------------------------------------------------------------------------------

def keyword_snippets(keywords: Sequence[str], texts: Sequence[str], per_keyword: int = 3,
                     width: int = 70) -> list[list[str]]:
    """Up to ``per_keyword`` short snippets showing where each keyword occurs in ``texts``.

    A keyword's ``_``-joined tokens (``a_lot``) must occur as consecutive words. Snippets come
    from different texts, in the texts' order (deterministic), with ``width`` characters of
    context on each side.
    """
    # Index which texts contain each lower-cased word once, so each keyword's regex runs only
    # on the few texts that can match instead of on the whole corpus.
    lowered = [t.lower() for t in texts]
    where: dict[str, list[int]] = {}
    for k, t in enumerate(lowered):
        for w in set(re.findall(r"[^\W_]+(?:'[^\W_]+)*", t)):
            where.setdefault(w, []).append(k)
    out: list[list[str]] = []
    for kw in keywords:
        toks = [t for t in kw.lower().split("_") if t]
        if not toks:
            out.append([])
            continue
        # The paper's vocabulary writes numbers as "<num>" (as in "<num>_years").
        parts = [r"\d+(?:[.,]\d+)?" if t == "<num>" else re.escape(t) for t in toks]
        pattern = re.compile(r"(?<![^\W_])" + r"[\W_]+".join(parts) + r"(?![^\W_])")
        anchor = next((t for t in toks if t != "<num>"), None)
        cands = where.get(anchor, []) if anchor else range(len(lowered))
        found: list[str] = []
        for k in cands:
            m = pattern.search(lowered[k])
            if m is None:
                continue
            t = texts[k]
            a, b = max(0, m.start() - width), min(len(t), m.end() + width)
            snippet = " ".join(t[a:b].split())
            found.append(("…" if a > 0 else "") + snippet + ("…" if b < len(t) else ""))
            if len(found) == per_keyword:
                break
        out.append(found)
    return out


def dataset_inputs(name: str, run_seed: int, data_dir: str | None = None) -> dict:
    """The inputs of a session on the paper's Amazon or Yelp data, one run's split.

    Uses :func:`elicit.data.load_dataset` (the paper's bag-of-words matrix and feature rule)
    and :func:`elicit.data.prepare_run` (100 training reviews, standardised X, centred y,
    meta-features = raw training counts). The example snippets come from the shipped raw-text
    reviews of the same corpus when they are present: these are not the same reviews as the
    paper's matrix (which has no text), but they show how each keyword is used.

    Returns
    -------
    dict
        Keyword arguments for :meth:`Session.create` (X, y, meta_features, feature_names,
        texts, y_offset, description).
    """
    from elicit.data import (
        RAW_FILES,
        load_dataset,
        prepare_run,
        read_records,
        resolve_data_dir,
    )

    ds = load_dataset(name, data_dir)
    run = prepare_run(ds, run_seed)
    texts = None
    raw_note = "no example snippets (raw-text reviews not found)"
    try:
        raw = resolve_data_dir(data_dir, required=[RAW_FILES[name]]) / RAW_FILES[name]
    except ElicitError:
        raw = None
    if raw is not None:
        reviews = [str(r.get("text") or "") for _, r in read_records(raw)]
        texts = keyword_snippets(run.feature_names, reviews)
        raw_note = f"example snippets from {raw.name}"
    return {
        "X": run.X_train, "y": run.y_train, "meta_features": run.U,
        "feature_names": run.feature_names, "texts": texts, "y_offset": run.y_mean,
        "description": (f"{name}: paper bag-of-words matrix, run seed {run_seed} "
                        f"({run.X_train.shape[0]} training reviews, {run.p} keywords); "
                        f"{raw_note}"),
    }


def npz_inputs(path: Path) -> dict:
    """Inputs from a user ``.npz`` file with arrays ``X``, ``y``, ``U`` (or ``meta_features``)
    and optionally ``feature_names``."""
    if not path.is_file():
        raise ElicitError(f"--from-npz file {path} does not exist")
    try:
        npz = np.load(path, allow_pickle=False)
    except (OSError, ValueError) as e:
        raise ElicitError(f"cannot read {path} as a numpy .npz file: {e}") from None
    with npz:
        keys = set(npz.files)
        ukey = "U" if "U" in keys else "meta_features" if "meta_features" in keys else None
        missing = [k for k in ("X", "y") if k not in keys] + ([] if ukey else ["U"])
        if missing:
            raise ElicitError(f"{path} has no array(s) {', '.join(missing)}; it must hold X "
                              "(n x p), y (n) and U (p x d, or named meta_features); found "
                              f"{', '.join(sorted(keys)) or 'nothing'}")
        try:
            names = [str(n) for n in npz["feature_names"]] if "feature_names" in keys else None
            X, y, U = npz["X"], npz["y"], npz[ukey]
        except ValueError as e:
            raise ElicitError(f"cannot read arrays from {path}: {e} (object arrays are not "
                              "supported; save feature_names as a string array)") from None
    return {"X": X, "y": y, "meta_features": U, "feature_names": names,
            "description": f"arrays from {path.name}"}


def texts_from_json(path: Path) -> Any:
    """Snippets from a JSON file (feature name -> list of snippets), checked later by
    :func:`check_texts`."""
    if not path.is_file():
        raise ElicitError(f"--texts file {path} does not exist")
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError) as e:
        raise ElicitError(f"--texts file {path} is not valid JSON: {e}") from None


# --------------------------------------------------------------------------------------------
# Checking
# --------------------------------------------------------------------------------------------

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
    for k, n in enumerate(names):
        if not isinstance(n, str):
            raise ElicitError(f"feature name {k} must be a string, got {type(n).__name__} {n!r}")
        if not n.strip():
            raise ElicitError(f"feature name {k} is empty; every feature needs a visible name")
    seen: dict[str, int] = {}
    for k, n in enumerate(names):
        if n in seen:
            raise ElicitError(f"duplicate feature name {n!r} (features {seen[n]} and {k}); "
                              "feature names must be unique")
        seen[n] = k
    return names


def check_texts(texts: Mapping[Any, Any] | Sequence[Any] | None,
                names: list[str]) -> dict[int, list[str]]:
    """Normalise optional snippets to ``{feature index: [snippet, ...]}``.

    ``texts`` is a dict (feature name or index -> snippets) or one list of snippets per
    feature; a single string counts as one snippet.
    """
    if texts is None:
        return {}
    out: dict[int, list[str]] = {}
    if isinstance(texts, Mapping):
        index = {n: k for k, n in enumerate(names)}
        for key, snippets in texts.items():
            if isinstance(key, str):
                if key not in index:
                    raise ElicitError(f"texts names an unknown feature {key!r}; keys must be "
                                      "feature names (or indices)")
                k = index[key]
            elif isinstance(key, (int, np.integer)) and 0 <= int(key) < len(names):
                k = int(key)
            else:
                raise ElicitError(f"texts key {key!r} is not a feature name or index")
            out[k] = _snippet_list(snippets, names[k])
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
    if isinstance(snippets, str):
        snippets = [snippets]
    snippets = list(snippets)
    for s in snippets:
        if not isinstance(s, str):
            raise ElicitError(f"text snippets of feature {name!r} must be strings")
    return snippets


def check_inputs(X, y, meta_features, feature_names: Sequence[str] | None, texts,
                 hyper: Hyper | None, strategy: str, seed: int, y_offset: float):
    """The checks of :meth:`Session.create <elicit.session.session.Session.create>`.

    Returns ``(X, y, U, feature_names, hyper, texts)`` as the session stores them: float
    arrays, one name per feature (a DataFrame ``X`` supplies them), the default
    hyperparameters for None, and snippets as ``{feature index: [snippet, ...]}``.
    """
    if feature_names is None and isinstance(X, pd.DataFrame):
        feature_names = [str(c) for c in X.columns]
    X, y, U = validate_regression(X, y, meta_features)
    names = check_feature_names(feature_names, X.shape[1])
    if X.shape[1] < 2:
        raise ElicitError(f"need at least 2 features to ask about pairs, got {X.shape[1]}")
    hyper = hyper or Hyper()
    check_settings(hyper, strategy, seed, y_offset)
    return X, y, U, names, hyper, check_texts(texts, names)


def check_settings(hyper: Hyper, strategy: str, seed: int, y_offset: float) -> None:
    """Refuse settings of a new session that are not a :class:`Hyper`, a known strategy, a
    non-negative integer seed and a finite ``y_offset``."""
    if not isinstance(hyper, Hyper):
        raise ElicitError(f"hyper must be an elicit.model.Hyper, got {type(hyper).__name__}")
    if strategy not in STRATEGIES:
        raise ElicitError(f"unknown strategy {strategy!r}; choose one of "
                          f"{', '.join(STRATEGIES)}")
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ElicitError(f"seed must be a non-negative integer, got {seed!r}")
    if not np.isfinite(y_offset):
        raise ElicitError(f"y_offset must be a finite number, got {y_offset!r}")


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


def feature_index(names: list[str], feature: int | str) -> int:
    """The index of a feature given by name or index."""
    if isinstance(feature, str):
        try:
            return names.index(feature)
        except ValueError:
            raise ElicitError(f"unknown feature name {feature!r}") from None
    if isinstance(feature, (int, np.integer)) and 0 <= int(feature) < len(names):
        return int(feature)
    raise ElicitError(f"feature index {feature!r} out of range 0..{len(names) - 1}")
