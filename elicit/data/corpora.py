"""Bag-of-words corpora: :class:`BowDataset`, the paper's feature rule (keywords not all stop
words, in at least ``min_df`` reviews) and the loaders of the paper's matrices and of raw text.
"""

from __future__ import annotations

import html
import os
import unicodedata
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from elicit.data.files import (
    PAPER_FILES,
    RAW_FILES,
    DatasetName,
    data_file,
    load_stopwords,
    load_vocabulary,
    parse_rating,
    read_jsonl,
    read_records,
    resolve_data_dir,
)
from elicit.errors import ElicitError
from elicit.internal.checks import check_int
from elicit.internal.paths import check_input_file


@dataclass
class BowDataset:
    """A bag-of-words data set: ``(n, V)`` dense ``int64`` keyword ``counts`` (dense is fine
    at these sizes: 5149 x 824 is 34 MB), ``(n,)`` ``int64`` star ``ratings``, the ``V``
    keywords of the columns (bigrams joined with ``_``: ``a_lot``), a short label and, when
    it was counted from them, the ``n`` reviews' ``texts`` (a session's snippets)."""

    counts: np.ndarray
    ratings: np.ndarray
    vocabulary: list[str]
    name: str = "dataset"
    source: str = field(default="", repr=False)
    texts: list[str] | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        self.counts = np.asarray(self.counts, dtype=np.int64)
        self.ratings = np.asarray(self.ratings, dtype=np.int64).reshape(-1)
        self.vocabulary = list(self.vocabulary)
        if self.counts.ndim != 2:
            raise ElicitError(f"counts must be 2-D, got shape {self.counts.shape}")
        n, v = self.counts.shape
        if len(self.ratings) != n:
            raise ElicitError(f"{n} count rows but {len(self.ratings)} ratings")
        if len(self.vocabulary) != v:
            raise ElicitError(f"{v} count columns but {len(self.vocabulary)} keywords")
        if np.any(self.counts < 0):
            raise ElicitError("counts must be non-negative")

    @property
    def n(self) -> int:
        return self.counts.shape[0]

    @property
    def p(self) -> int:
        return self.counts.shape[1]

    def min_df_keeping(self, most: int) -> str:
        """How to keep at most ``most`` of the keywords: the least ``min_df`` that does."""
        df = np.sort(np.count_nonzero(self.counts, axis=0))[::-1]  # reviews per keyword
        k = int(df[most]) + 1 if most < len(df) else 1
        return f"min_df={k} or higher (keeps {np.count_nonzero(df >= k):,} keywords)"


def _not_stop(vocabulary: Sequence[str], stopwords: Iterable[str]) -> np.ndarray:
    """Whether each keyword has a ``_``-token that is not a stop word (Yelp's ``""`` has none)."""
    sw = frozenset(stopwords)
    return np.array([any(t.lower() not in sw for t in w.split("_") if t) for w in vocabulary],
                    dtype=bool)


def check_min_df(min_df: object) -> int:
    """``min_df`` as an int, or a one-line ElicitError."""
    return check_int(min_df, f"min_df must be a positive integer number of reviews, got "
                     f"{min_df!r}", 1)


def select_features(counts: np.ndarray, vocabulary: Sequence[str], stopwords: Iterable[str],
                    min_df: int) -> np.ndarray:
    """Indices of the keywords the paper's rule keeps: not all tokens stop words, and in at
    least ``min_df`` reviews; an :class:`ElicitError` if nothing is left."""
    check_min_df(min_df)
    counts = np.asarray(counts)
    df = np.count_nonzero(counts > 0, axis=0)
    not_stop = _not_stop(vocabulary, stopwords)
    keep = np.flatnonzero(not_stop & (df >= min_df))
    if keep.size < 2:
        raise _too_few_keywords(df, not_stop, min_df, counts.shape[0])
    return keep


def _too_few_keywords(df: np.ndarray, not_stop: np.ndarray, min_df: int, n: int) -> ElicitError:
    """The error of a ``min_df`` leaving fewer than the 2 keywords a question compares, naming
    the largest that keeps 2: the second-highest ``df`` of a keyword not all stop words."""
    left = int(np.count_nonzero(not_stop & (df >= min_df)))
    top = np.sort(df[not_stop])[::-1]
    fix = (f"use min_df={top[1]} or lower (the largest that keeps 2)" if top.size > 1
           and top[1] > 0 else "no min_df keeps 2: check the texts and the stop list")
    return ElicitError(
        f"{'the vocabulary is empty' if left == 0 else 'only 1 keyword is left'} after "
        f"filtering: of {len(df)} n-grams, {top.size} are not all stop words and "
        f"{'none' if left == 0 else 'only 1'} of those occurs in >= {min_df} of {n} texts; a "
        f"question compares 2 keywords: {fix}")


def load_bow(records_path: str | os.PathLike, vocabulary_path: str | os.PathLike,
             vocabulary_key: str | None = None, name: str | None = None) -> BowDataset:
    """Load a bag-of-words JSONL file (fields ``rating`` and ``bow``) and its vocabulary,
    unfiltered; an :class:`ElicitError` naming the file and line on a bad record."""
    records_path = Path(records_path)
    vocab = load_vocabulary(vocabulary_path, vocabulary_key)
    col = {w: i for i, w in enumerate(vocab)}
    rows: list[np.ndarray] = []
    ratings: list[int] = []
    for lineno, rec in read_jsonl(records_path):
        where = f"{records_path}, line {lineno}"
        for fld in ("rating", "bow"):
            if fld not in rec:
                raise ElicitError(f"{where}: missing field {fld!r}")
        ratings.append(parse_rating(rec["rating"], where))
        bow = rec["bow"]
        if not isinstance(bow, dict):
            raise ElicitError(f"{where}: field 'bow' must be an object keyword -> count")
        row = np.zeros(len(vocab), dtype=np.int64)
        for kw, c in bow.items():
            j = col.get(kw)
            if j is None:
                raise ElicitError(f"{where}: keyword {kw!r} is not in the vocabulary "
                                  f"{vocabulary_path}" + (f" [{vocabulary_key}]"
                                                          if vocabulary_key else ""))
            # inline, not check_int: this loop runs once per count, so no message is built
            if isinstance(c, bool) or not isinstance(c, int) or c < 0:
                raise ElicitError(f"{where}: count of {kw!r} must be a non-negative integer, "
                                  f"got {c!r}")
            row[j] = c
        rows.append(row)
    if not rows:
        raise ElicitError(f"{records_path} holds no records")
    return BowDataset(np.vstack(rows), np.array(ratings), vocab,
                      name or records_path.name.split(".")[0], str(records_path))


def load_paper_bow(name: DatasetName | str,
                   data_dir: str | os.PathLike | None = None) -> BowDataset:
    """The paper's exact matrix, unfiltered: Amazon 5149 x 824, Yelp 4086 x 828."""
    if name not in PAPER_FILES:
        raise ElicitError(f"unknown data set {name!r}: use one of {sorted(PAPER_FILES)}")
    rec, voc, key = PAPER_FILES[name]
    d = resolve_data_dir(data_dir, required=[rec, voc])
    return load_bow(d / rec, d / voc, key, name=name)


def load_dataset(name: DatasetName | str, data_dir: str | os.PathLike | None = None,
                 min_df: int = 100) -> BowDataset:
    """The paper's matrix ``"amazon"`` or ``"yelp"`` with the paper's feature rule
    (:func:`select_features`, the SMART stop list): with ``min_df=100``, 337 Amazon and 258
    Yelp keywords (the paper reports 340 and 241; ``docs/data.md``)."""
    ds = load_paper_bow(name, data_dir)
    keep = select_features(ds.counts, ds.vocabulary, load_stopwords(data_dir=data_dir), min_df)
    return BowDataset(ds.counts[:, keep], ds.ratings.copy(), [ds.vocabulary[i] for i in keep],
                      ds.name, ds.source)


#: Tokens: runs of letters/digits with internal apostrophes (``can't``); unlike scikit-learn's
#: default, one-letter words are kept (as in the paper's vocabulary), and never ``_``.
TOKEN_PATTERN = r"[^\W_]+(?:'[^\W_]+)*"


def vectorize_texts(texts: Sequence[str], ratings: Sequence[int], stopwords: Iterable[str],
                    min_df: int, ngram_range: tuple[int, int] = (1, 2),
                    name: str = "texts", max_features: int | None = None) -> BowDataset:
    """Count the n-grams (``ngram_range``) of raw texts and apply the paper's feature rule;
    ``max_features`` keeps the n-grams of highest document frequency (stable ties); the
    tokens and stop words as ``docs/data.md`` says."""
    from sklearn.feature_extraction.text import CountVectorizer

    texts = list(texts)
    ratings_arr = np.array([parse_rating(r, f"rating {k}") for k, r in enumerate(ratings)],
                           dtype=np.int64)
    if len(texts) != len(ratings_arr):
        raise ElicitError(f"{len(texts)} texts but {len(ratings_arr)} ratings")
    if not texts:
        raise ElicitError("no texts to vectorise")
    check_min_df(min_df)
    if max_features is not None:
        check_int(max_features, f"max_features must be a positive integer or None, got "
                                f"{max_features!r}", 1)
    if isinstance(stopwords, str):
        raise ElicitError(f"stopwords must be a collection of words such as [{stopwords!r}], "
                          f"not the string {stopwords!r}")
    stopwords = frozenset(stopwords)  # read twice where min_df leaves too few keywords
    for k, t in enumerate(texts):
        if not isinstance(t, str):
            raise ElicitError(f"text {k} must be a string, got {type(t).__name__}")
    # Decode HTML entities ("&amp;" was the word amp), compose accents (a decomposed "naïve" was
    # split at its mark), lower-case, and make "don’t" and "donʼt" the stop word "don't".
    quotes = str.maketrans("\u2019\u2018\u02bc", "'''")

    def prep(t: str) -> str:
        return unicodedata.normalize("NFC", html.unescape(t)).lower().translate(quotes)

    def count(least: int):  # the n-grams in >= least texts: counts, names, df, not all stop
        vec = CountVectorizer(lowercase=False, preprocessor=prep,
                              token_pattern=TOKEN_PATTERN, ngram_range=tuple(ngram_range),
                              min_df=least, dtype=np.int64)
        X = vec.fit_transform(texts).tocsc()
        vocab = [w.replace(" ", "_") for w in vec.get_feature_names_out()]
        return X, vocab, np.diff(X.indptr), _not_stop(vocab, stopwords)

    try:
        X, vocab, df, not_stop = count(int(min_df))
        # select_features' rule on the sparse matrix (the unfiltered vocabulary is large)
        keep = np.flatnonzero(not_stop & (df >= min_df))
    except ValueError:  # sklearn: "After pruning, no terms remain", min_df above len(texts)
        keep = np.zeros(0, dtype=int)
    if keep.size < 2:
        try:  # the hint needs every n-gram's document frequency: counted on this path only
            _, _, df, not_stop = count(1)
        except ValueError:
            raise ElicitError(f"none of the {len(texts)} texts holds a word; check the "
                              "texts") from None
        raise _too_few_keywords(df, not_stop, min_df, len(texts))
    if max_features is not None and keep.size > max_features:
        order = np.argsort(-df[keep], kind="stable")[:max_features]
        keep = np.sort(keep[order])
    counts = X[:, keep].toarray()
    return BowDataset(counts, ratings_arr, [vocab[i] for i in keep], name, texts=texts)


#: The paper's document-frequency threshold relative to its corpus size (100 of 5149 reviews).
PAPER_MIN_DF_FRACTION = 100 / 5149


def default_min_df(n_reviews: int) -> int:
    """``ceil(n_reviews * 100 / 5149)`` (at least 2): the paper's threshold, proportionally."""
    return max(2, int(np.ceil(n_reviews * PAPER_MIN_DF_FRACTION - 1e-9)))


def load_raw_reviews(path_or_name: str | os.PathLike, data_dir: str | os.PathLike | None = None,
                     min_df: int | None = None,
                     stopwords: Iterable[str] | None = None) -> BowDataset:
    """:func:`load_corpus` of ``"amazon"`` / ``"yelp"`` (the shipped substitutes, looked up
    in ``data_dir``) or of a review file, without the size check (``docs/data.md``)."""
    key = str(path_or_name)
    if key in RAW_FILES:
        path = data_file(RAW_FILES[key], data_dir)
        label = key
    else:
        path = Path(path_or_name)
        if not path.exists():
            raise ElicitError(f"review file {path} not found (or use one of {sorted(RAW_FILES)} "
                              "for the shipped raw-text reviews)")
        label = None
    return load_corpus(path, min_df=min_df, stopwords=stopwords, n_model=None, name=label,
                       data_dir=data_dir)


def read_reviews(path: str | os.PathLike, text_field: str = "text",
                 rating_field: str = "rating") -> tuple[list[str], list[int]]:
    """The texts and integer ratings of a JSONL or CSV review file (optionally gzipped); an
    :class:`ElicitError` naming the line on a missing field or a bad value."""
    path = check_input_file(path, "review")
    for fld, what in ((text_field, "text_field"), (rating_field, "rating_field")):
        if not isinstance(fld, str) or not fld:
            raise ElicitError(f"{what} must be a non-empty field name, got {fld!r}")
    texts: list[str] = []
    ratings: list[int] = []
    for lineno, rec in read_records(path):
        where = f"{path}, line {lineno}"
        for fld in (text_field, rating_field):
            if fld not in rec:
                raise ElicitError(f"{where}: no field {fld!r}; the fields are "
                                  f"{', '.join(repr(k) for k in rec)}")
            if rec[fld] is None:
                raise ElicitError(f"{where}: field {fld!r} is empty (null)")
        if not isinstance(rec[text_field], str):
            raise ElicitError(f"{where}: field {text_field!r} must be a string, got "
                              f"{type(rec[text_field]).__name__}")
        texts.append(rec[text_field])
        ratings.append(parse_rating(rec[rating_field], f"{where}, field {rating_field!r}"))
    if not texts:
        raise ElicitError(f"{path} holds no reviews")
    return texts, ratings


def load_corpus(path: str | os.PathLike, text_field: str = "text", rating_field: str = "rating",
                min_df: int | None = None, stopwords: Iterable[str] | None = None,
                ngram_range: tuple[int, int] = (1, 2), max_features: int | None = None,
                n_model: int | None = 1000, name: str | None = None,
                data_dir: str | os.PathLike | None = None,
                check: Callable[[list[str], list[int]], None] | None = None) -> BowDataset:
    """Any review corpus (JSON Lines or CSV, optionally gzipped) as a :class:`BowDataset`,
    with the paper's keyword rule; the options and errors are in ``docs/data.md``.
    ``check(texts, ratings)`` may refuse the reviews as read, before the keywords are counted."""
    if n_model is not None:
        check_int(n_model, f"n_model must be a positive integer or None, got {n_model!r}", 1)
    path = Path(path)
    texts, ratings = read_reviews(path, text_field, rating_field)
    if check is not None:
        check(texts, ratings)
    if n_model is not None and len(texts) < n_model:
        raise ElicitError(
            f"{path} has {len(texts)} reviews but a run needs n_model = {n_model} model "
            "reviews (training + test; the rest go to the expert); use a larger corpus or "
            "a smaller n_model")
    sw = stopwords if stopwords is not None else load_stopwords(data_dir=data_dir)
    if min_df is None:
        min_df = default_min_df(len(texts))
    ds = vectorize_texts(texts, ratings, sw, min_df, ngram_range,
                         name=name or path.name.split(".")[0], max_features=max_features)
    ds.source = str(path)
    return ds
