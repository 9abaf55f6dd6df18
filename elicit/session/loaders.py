"""Where a session's data comes from (each ``*_inputs`` function returns keyword arguments
for :meth:`Session.create <elicit.session.session.Session.create>`), and the example snippets
shown to the expert."""

from __future__ import annotations

import html
import json
import os
import re
import zipfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from elicit.data.metafeatures import DEFAULT_META_DIM
from elicit.data.tables import TABLE_SUFFIXES, read_table
from elicit.errors import ElicitError
from elicit.internal.checks import check_int
from elicit.internal.paths import check_input_file
from elicit.internal.text import listing
from elicit.model.spec import check_size


def table_inputs(path: Path, target: str, features: Sequence[str] | None = None,
                 meta_features: Path | None = None) -> dict[str, Any]:
    """Inputs from a table: ``target`` is y, ``features`` (default: every other column) X;
    optional meta-features from a table whose first column is the feature name."""
    df = read_table(path, "--from-csv")
    cols = list(df.columns)
    if target not in cols:
        raise ElicitError(f"--target column {target!r} is not in {Path(path).name}; its "
                          f"columns are {listing(cols, 12)}")
    if features is None:
        feats = [c for c in cols if c != target]
    else:
        feats = list(features)
        if twice := next((f for k, f in enumerate(feats) if f in feats[:k]), None):
            raise ElicitError(f"--features names column {twice!r} twice; name each column once")
        if missing := [f for f in feats if f not in cols]:
            raise ElicitError(f"--features names column(s) {listing(missing, 12)} that are not in "
                              f"{Path(path).name}; its columns are {listing(cols, 12)}")
        if target in feats:
            raise ElicitError(f"the target {target!r} is also listed in --features; a column "
                              "cannot be both")
    if len(feats) < 2:  # here, before X is built: a table of the target alone has no X
        raise ElicitError(f"need at least 2 feature columns besides the target, got "
                          f"{len(feats)}")
    if bad := [c for c in [target, *feats] if not pd.api.types.is_numeric_dtype(df[c])
               or pd.api.types.is_bool_dtype(df[c])]:
        raise ElicitError(f"column(s) {listing(bad, 12)} of {Path(path).name} are not numeric; "
                          "encode them as numbers, or choose the feature columns with "
                          "--features")
    # the rows are indexed by their lines (read_table), so messages name a value's place
    U = None if meta_features is None else read_table(meta_features, "--meta-features", 0)
    return {"X": df[feats], "y": df[target], "meta_features": U, "standardize": True,
            "meta_source": None if meta_features is None else Path(meta_features).name,
            "description": f"table {Path(path).name}: {df.shape[0]} rows, target {target!r}, "
                           f"{len(feats)} features"}


def npz_inputs(path: Path) -> dict:
    """Inputs from a user ``.npz`` file with arrays ``X``, ``y``, ``U`` (or ``meta_features``)
    and optionally ``feature_names``."""
    path = check_input_file(path, "--from-npz")
    if not zipfile.is_zipfile(path):
        hint = (" for a table use --from-csv FILE --target COLUMN"
                if path.suffix.lower() in TABLE_SUFFIXES else "")
        raise ElicitError(f"{path} is not a numpy .npz file (made by numpy.savez);{hint}"
                          .rstrip(";"))
    try:
        npz = np.load(path, allow_pickle=False)
    except (OSError, ValueError) as e:
        raise ElicitError(f"cannot read {path} as a numpy .npz file: {e}") from None
    with npz:
        keys = set(npz.files)
        ukey = "U" if "U" in keys else "meta_features" if "meta_features" in keys else None
        missing = [k for k in ("X", "y") if k not in keys]
        known = {"X", "y", ukey, "feature_names", "X_test", "y_test", "groups", "beta"}
        if missing or (other := sorted(keys - known)):  # a problem file's test set, expert too
            have = f"no array(s) {', '.join(missing)}" if missing else \
                f"array(s) {', '.join(other)} that elicit does not read"
            raise ElicitError(f"{path} has {have}; it must hold X (n x p), y (n) and optionally "
                              "U (p x d, or named meta_features) and feature_names; found "
                              f"{', '.join(sorted(keys)) or 'nothing'}")
        try:
            names = [str(n) for n in npz["feature_names"]] if "feature_names" in keys else None
            X, y = npz["X"], npz["y"]
            U = npz[ukey] if ukey else None
        except ValueError as e:
            raise ElicitError(f"cannot read arrays from {path}: {e} (object arrays are not "
                              "supported; save feature_names as a string array)") from None
    return {"X": X, "y": y, "meta_features": U, "feature_names": names,
            "description": f"arrays from {path.name}", "target_description": "the outcome y"}


def texts_from_json(path: Path) -> Any:
    """Snippets from a JSON file (feature name -> list of snippets), checked later by
    :func:`elicit.session.inputs.check_texts`."""
    path = check_input_file(path, "--texts")
    try:
        return json.loads(path.read_text(encoding="utf-8-sig"))  # a byte-order mark is fine
    except UnicodeDecodeError:
        raise ElicitError(f"--texts file {path} is not UTF-8 text: save it as UTF-8") from None
    except ValueError as e:
        raise ElicitError(f"--texts file {path} is not valid JSON: {e}") from None


def dataset_inputs(name: str, *, run: int = 0, seed: int = 0, data_dir: str | None = None,
                   meta_features: str | os.PathLike = "counts",
                   meta_dim: int = DEFAULT_META_DIM) -> dict:
    """Keyword arguments for :meth:`Session.create <elicit.session.session.Session.create>`
    on the paper's Amazon or Yelp data: run ``run`` of seed ``seed``, the same run as a
    real-data sweep's (``elicit realdata --seed``), snippets from the shipped raw-text reviews
    when present. ``meta_features`` and ``meta_dim``: as :func:`elicit.data.prepare_run`'s
    (``"counts"``, ``"ppmi"``, ``"lsa"`` or a CSV/Parquet file indexed by keyword)."""
    from elicit.data import RAW_FILES, read_records, resolve_data_dir
    from elicit.data.sources import paper_source

    src = paper_source(name, data_dir)
    try:
        raw = resolve_data_dir(data_dir, required=[RAW_FILES[name]]) / RAW_FILES[name]
    except ElicitError:
        reviews, raw_note = None, "no example snippets (raw-text reviews not found)"
    else:
        reviews = [str(r.get("text") or "") for _, r in read_records(raw)]
        raw_note = f"example snippets from {raw.name}"
    return _run_inputs(src, run, seed, reviews, "the review's star rating",
                       f"{name}: paper bag-of-words matrix", raw_note, meta_features, meta_dim)


def corpus_inputs(path: str | Path, *, run: int = 0, seed: int = 0, text_field: str = "text",
                  rating_field: str = "rating", min_df: int | None = None,
                  data_dir: str | None = None, meta_features: str | os.PathLike = "counts",
                  meta_dim: int = DEFAULT_META_DIM) -> dict:
    """:func:`dataset_inputs` on any review corpus (``elicit realdata --corpus FILE --seed``):
    keywords by the paper's rule (``min_df``; the stop list checked in ``data_dir``),
    snippets from the corpus itself."""
    from elicit.data.sources import corpus_source

    # a fixed label: a session's outputs are not named by it, so any corpus file name works
    src = corpus_source(path, text_field, rating_field, min_df, name="corpus",
                        data_dir=data_dir)
    return _run_inputs(src, run, seed, src.load().texts, "the review's rating",
                       f"{Path(path).name}: reviews ({text_field!r} text, {rating_field!r} "
                       "rating)", f"example snippets from {Path(path).name}",
                       meta_features, meta_dim)


def _run_inputs(src, run: int, seed: int, reviews: Sequence[str] | None, target: str, what: str,
                snippet_note: str, meta_features: str | os.PathLike, meta_dim: int) -> dict:
    for value, label in ((run, "run"), (seed, "seed")):
        check_int(value, f"{label} must be a non-negative integer, got {value!r}", 0)
    src.check_keywords(check_size, meta_features, meta_dim)
    rd = src.run(int(seed), int(run), meta_features=meta_features, meta_dim=meta_dim)
    src.check_keywords(check_size, meta_features, meta_dim, rd)  # the model's check, its advice
    texts = None if reviews is None else keyword_snippets(rd.feature_names, reviews)
    return {
        "X": rd.X_train, "y": rd.y_train, "meta_features": rd.U,
        "feature_names": rd.feature_names, "texts": texts, "y_offset": rd.y_mean,
        "target_description": target, "meta_source": _meta_source(rd),
        "description": (f"{what}, seed {seed}, run {run}, the run of a sweep with --seed "
                        f"{seed} ({rd.X_train.shape[0]} training reviews, {rd.p} keywords); "
                        f"{snippet_note}"),
    }


def _meta_source(rd) -> str:
    """How the session summary names the run's meta-features."""
    if rd.meta_features == "counts":
        return (f"the raw keyword counts of the {rd.X_train.shape[0]} training reviews (the "
                "paper's choice)")
    if rd.meta_features in ("ppmi", "lsa"):
        what = "a PPMI" if rd.meta_features == "ppmi" else "an LSA (tf-idf SVD)"
        return (f"{what} embedding of the keywords in the {len(rd.expert_idx)} reviews not "
                "used for the model (their text only, no ratings)")
    return f"the file {Path(rd.meta_features).name}"


def keyword_pattern(keyword: str) -> re.Pattern[str] | None:
    """The regular expression of a keyword in lower-cased text: its ``_``-joined tokens
    (``a_lot``) as consecutive words, ``<num>`` matching any number. None for no tokens."""
    toks = [t for t in keyword.lower().split("_") if t]
    if not toks:
        return None
    # The paper's vocabulary writes numbers as "<num>" (as in "<num>_years").
    parts = [r"\d+(?:[.,]\d+)?" if t == "<num>" else re.escape(t) for t in toks]
    return re.compile(r"(?<![^\W_])" + r"[\W_]+".join(parts) + r"(?![^\W_])")


def highlight(keyword: str, text: str) -> list[tuple[str, bool]]:
    """``text`` cut into ``(piece, is_keyword)`` pieces, in order, so a front end can mark
    the keyword (matched case-insensitively, as :func:`keyword_snippets` finds it)."""
    pattern = keyword_pattern(keyword)
    if pattern is None:
        return [(text, False)]
    out: list[tuple[str, bool]] = []
    at = 0
    # Lower-casing can change a string's length (e.g. 'İ'); match on the text itself then.
    low = text.lower()
    hay = low if len(low) == len(text) else text
    for m in pattern.finditer(hay):
        out += [(text[at:m.start()], False), (text[m.start():m.end()], True)]
        at = m.end()
    return [piece for piece in [*out, (text[at:], False)] if piece[0]]


def keyword_snippets(keywords: Sequence[str], texts: Sequence[str]) -> list[list[str]]:
    """Up to 3 snippets, from different texts in their order, showing where each keyword
    (:func:`keyword_pattern`) occurs in ``texts``, with 70 characters of context on each side."""
    # entities decoded, as the keywords were counted: "fish &amp; chips" holds fish_chips
    texts = [html.unescape(t) for t in texts]
    # which texts hold each word: a keyword's regex runs only on the texts that can match; a
    # text that lower-casing lengthens ('İ') is searched as it is, so a match's place is its own
    lowered = [low if len(low := t.lower()) == len(t) else t for t in texts]
    where: dict[str, list[int]] = {}
    for k, t in enumerate(lowered):
        for w in set(re.findall(r"[^\W_]+(?:'[^\W_]+)*", t)):
            where.setdefault(w, []).append(k)
    out: list[list[str]] = []
    for kw in keywords:
        pattern = keyword_pattern(kw)
        if pattern is None:
            out.append([])
            continue
        anchor = next((t for t in kw.lower().split("_") if t and t != "<num>"), None)
        cands = where.get(anchor, []) if anchor else range(len(lowered))
        found: list[str] = []
        for k in cands:
            m = pattern.search(lowered[k])
            if m is None:
                continue
            t = texts[k]
            a, b = max(0, m.start() - 70), min(len(t), m.end() + 70)
            snippet = " ".join(t[a:b].split())
            found.append(("…" if a > 0 else "") + snippet + ("…" if b < len(t) else ""))
            if len(found) == 3:
                break
        out.append(found)
    return out
