"""Data: find the data directory, load review corpora, build the features, split a run.

Two kinds of input are supported (see ``docs/data.md``):

* the paper's exact bag-of-words matrices (``*_paper_bow_*.jsonl.gz`` + a vocabulary JSON):
  one JSON object per review with an integer ``rating`` and a ``bow`` dict keyword -> count;
* raw-text reviews (the shipped substitutes, or any user JSONL/CSV file, optionally gzipped)
  with ``text`` and ``rating`` fields; they are turned into counts with scikit-learn's
  :class:`~sklearn.feature_extraction.text.CountVectorizer`.

Both end up as a :class:`BowDataset`. The feature rule (:func:`select_features`) is the paper's:
drop keywords whose tokens are all SMART stop words and keep keywords that occur in at least
``min_df`` reviews. :func:`prepare_run` then makes one experimental run: the 100/900 train/test
split of 1000 random reviews, the remaining reviews as the expert set, standardisation with
training statistics and the meta-features ``U`` (the transposed raw training counts).
"""

from __future__ import annotations

import csv
import gzip
import io
import json
import os
import zlib
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import numpy as np

from elicit.errors import ElicitError

#: Environment variable that points at the data directory.
DATA_ENV = "ELICIT_DATA"

#: The SMART English stop list (Salton 1971), as shipped in the data directory.
STOPWORDS_FILE = "smart_stopwords_english.txt"

#: The paper's exact matrices: name -> (records file, vocabulary file, vocabulary key).
#: For Yelp the 828-keyword ``keywords_min50`` vocabulary is the base: it is the column order
#: of the records' counts, and the min_df rule is applied on top of it.
PAPER_FILES: dict[str, tuple[str, str, str]] = {
    "amazon": ("amazon_kitchen_paper_bow_5149.jsonl.gz",
               "amazon_kitchen_paper_bow_5149_vocabulary.json", "keywords"),
    "yelp": ("yelp_paper_bow_4086.jsonl.gz", "yelp_paper_bow_4086_vocabulary.json",
             "keywords_min50"),
}

#: Raw-text substitutes shipped with the data (not the paper's review sets).
RAW_FILES: dict[str, str] = {
    "amazon": "amazon_kitchen_reviews.jsonl.gz",
    "yelp": "yelp_open_dataset_sample_reviews.jsonl.gz",
}

#: Where the data comes from; appended to every "file not found" message.
DATA_SOURCE_HINT = (
    "The paper's Amazon (5149 x 824) and Yelp (4086 x 828) bag-of-words matrices come from the "
    "GitHub repository HIIT/knowledge-elicitation-for-linear-regression (DATA_amazon/"
    "amazon_data.mat, DATA_yelp/yelp_academic_data_clean_from2006_50app.mat), converted to "
    "JSON Lines; see README.md of the shared data directory (shared/data/README.md) for all "
    "files and their provenance. Point elicit at the directory with --data-dir or the "
    f"{DATA_ENV} environment variable."
)

DatasetName = Literal["amazon", "yelp"]


# --------------------------------------------------------------------------------------------
# Data directory
# --------------------------------------------------------------------------------------------

def _repo_root() -> Path:
    """The repository: the parent of the ``elicit`` package directory."""
    return Path(__file__).resolve().parent.parent


def default_data_dirs() -> list[Path]:
    """The fallback directories, in order: ``<repo>/data`` and ``<repo>/../shared/data``."""
    root = _repo_root()
    return [root / "data", root.parent / "shared" / "data"]


def resolve_data_dir(option: str | os.PathLike | None = None,
                     required: Sequence[str] = ()) -> Path:
    """Find the data directory.

    The order is: ``option`` (the CLI's ``--data-dir``), the environment variable
    ``ELICIT_DATA``, ``<repo>/data/`` if it exists, ``<repo>/../shared/data``. An explicit
    choice (option or environment variable) is final: if it lacks a file we fail instead of
    silently reading other data. Among the two defaults the first existing directory that holds
    all ``required`` files wins.

    Parameters
    ----------
    option
        An explicit directory, or None.
    required
        File names that must exist in the directory.

    Returns
    -------
    Path
        The directory.

    Raises
    ------
    ElicitError
        If no directory qualifies; the message names the missing file(s), the directories
        searched and where the data comes from.
    """
    required = list(required)
    if option is not None and str(option) != "":
        return _check_dir(Path(option).expanduser(), required, "--data-dir / data_dir option")
    env = os.environ.get(DATA_ENV)
    if env:
        return _check_dir(Path(env).expanduser(), required, f"environment variable {DATA_ENV}")
    searched = default_data_dirs()
    for d in searched:
        if d.is_dir() and all((d / f).is_file() for f in required):
            return d
    what = (f"the file(s) {', '.join(required)}" if required else "a data directory")
    raise ElicitError(
        f"could not find {what}; searched (in order): option --data-dir (not given), "
        f"${DATA_ENV} (not set), " + ", ".join(str(d) for d in searched) + ". "
        + DATA_SOURCE_HINT)


def _check_dir(d: Path, required: list[str], source: str) -> Path:
    if not d.is_dir():
        raise ElicitError(f"data directory {d} (from {source}) does not exist or is not a "
                          f"directory. " + DATA_SOURCE_HINT)
    missing = [f for f in required if not (d / f).is_file()]
    if missing:
        raise ElicitError(f"data directory {d} (from {source}) has no file "
                          f"{', '.join(missing)}; searched only {d} because it was given "
                          "explicitly. " + DATA_SOURCE_HINT)
    return d


def data_file(filename: str, data_dir: str | os.PathLike | None = None) -> Path:
    """The path of ``filename`` in the resolved data directory (see :func:`resolve_data_dir`)."""
    return resolve_data_dir(data_dir, required=[filename]) / filename


# --------------------------------------------------------------------------------------------
# Low-level readers
# --------------------------------------------------------------------------------------------

def _open_text(path: Path) -> io.TextIOBase:
    """Open a text file, transparently gunzipping it when it starts with the gzip magic."""
    if not path.is_file():
        raise ElicitError(f"file not found: {path}")
    with open(path, "rb") as fh:
        magic = fh.read(2)
    if magic == b"\x1f\x8b":
        return io.TextIOWrapper(gzip.open(path, "rb"), encoding="utf-8")
    if path.suffix == ".gz":
        raise ElicitError(f"{path} ends in .gz but is not a gzip file; re-compress it or "
                          "drop the .gz suffix")
    return open(path, encoding="utf-8")


# Errors raised by a corrupt or truncated gzip stream or by undecodable bytes.
_READ_ERRORS = (OSError, EOFError, zlib.error, UnicodeDecodeError)


def read_jsonl(path: str | os.PathLike) -> Iterator[tuple[int, dict]]:
    """Yield ``(line_number, object)`` for each non-blank line of a (gzipped) JSONL file.

    Raises
    ------
    ElicitError
        On an unreadable gzip stream, invalid JSON (with the line number) or a line that is
        not a JSON object.
    """
    path = Path(path)
    lineno = 0
    try:
        with _open_text(path) as fh:
            for lineno, line in enumerate(fh, start=1):
                if not line.strip():
                    continue
                try:
                    obj = json.loads(line)
                except json.JSONDecodeError as e:
                    raise ElicitError(f"{path}, line {lineno}: invalid JSON ({e.msg})") from None
                if not isinstance(obj, dict):
                    raise ElicitError(f"{path}, line {lineno}: expected a JSON object per line, "
                                      f"got {type(obj).__name__}")
                yield lineno, obj
    except _READ_ERRORS as e:
        raise ElicitError(f"cannot read {path} (after line {lineno}): {e}; is it a valid "
                          "(gzipped) UTF-8 JSON Lines file?") from None


def read_csv_records(path: str | os.PathLike) -> Iterator[tuple[int, dict]]:
    """Yield ``(line_number, row)`` for each row of a (gzipped) CSV file with a header."""
    path = Path(path)
    lineno = 1
    try:
        with _open_text(path) as fh:
            reader = csv.DictReader(fh)
            if not reader.fieldnames:
                raise ElicitError(f"{path}: the CSV file is empty or has no header line")
            for row in reader:
                # line_num counts physical lines, so it stays right for multi-line texts.
                lineno = reader.line_num
                yield lineno, row
    except csv.Error as e:
        raise ElicitError(f"{path}, line {lineno}: malformed CSV ({e})") from None
    except _READ_ERRORS as e:
        raise ElicitError(f"cannot read {path} (after line {lineno}): {e}; is it a valid "
                          "(gzipped) UTF-8 CSV file?") from None


def read_records(path: str | os.PathLike) -> Iterator[tuple[int, dict]]:
    """Read JSONL or CSV (either optionally ``.gz``), chosen by the file name."""
    path = Path(path)
    suffixes = [s.lower() for s in path.suffixes]
    if suffixes and suffixes[-1] == ".gz":
        suffixes = suffixes[:-1]
    kind = suffixes[-1] if suffixes else ""
    if kind == ".csv":
        return read_csv_records(path)
    if kind in (".jsonl", ".json", ".ndjson"):
        return read_jsonl(path)
    raise ElicitError(f"{path}: unknown file type; use .jsonl or .csv (optionally .gz)")


def parse_rating(value: object, where: str) -> int:
    """An integer rating from JSON (int, or a float with an integer value) or CSV (string).

    Booleans, fractional numbers and non-numeric strings are rejected: the target of the
    paper's regression is an integer star rating.
    """
    if isinstance(value, bool) or value is None:
        raise ElicitError(f"{where}: rating must be an integer, got {value!r}")
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, float):
        if np.isfinite(value) and value == int(value):
            return int(value)
        raise ElicitError(f"{where}: rating must be an integer, got {value!r}")
    if isinstance(value, str):
        s = value.strip()
        try:
            return int(s)
        except ValueError:
            pass
        try:
            v = float(s)
        except ValueError:
            v = float("nan")
        if np.isfinite(v) and v == int(v):
            return int(v)
        raise ElicitError(f"{where}: rating must be an integer, got {value!r}")
    raise ElicitError(f"{where}: rating must be an integer, got {type(value).__name__} {value!r}")


def load_stopwords(path: str | os.PathLike | None = None,
                   data_dir: str | os.PathLike | None = None) -> frozenset[str]:
    """The stop list: one word per line, lower-cased; blank lines ignored.

    By default the SMART list ``smart_stopwords_english.txt`` of the data directory (571 lines,
    570 distinct words: ``would`` is listed twice).
    """
    p = Path(path) if path is not None else data_file(STOPWORDS_FILE, data_dir)
    try:
        with _open_text(p) as fh:
            words = frozenset(w.strip().lower() for w in fh if w.strip())
    except _READ_ERRORS as e:
        raise ElicitError(f"cannot read stop-word file {p}: {e}") from None
    if not words:
        raise ElicitError(f"stop-word file {p} is empty")
    return words


def load_vocabulary(path: str | os.PathLike, key: str | None = None) -> list[str]:
    """A vocabulary JSON: either a list of keywords or an object holding such a list.

    The paper files are objects: Amazon ``{"source", "keywords"}``, Yelp ``{"source",
    "keywords_min50", "keywords_min100"}``. ``key`` picks the list; without it the object must
    have exactly one list-valued entry.
    """
    p = Path(path)
    try:
        with _open_text(p) as fh:
            obj = json.load(fh)
    except json.JSONDecodeError as e:
        raise ElicitError(f"vocabulary file {p} is not valid JSON: {e}") from None
    except _READ_ERRORS as e:
        raise ElicitError(f"cannot read vocabulary file {p}: {e}") from None
    if isinstance(obj, dict):
        lists = [k for k, v in obj.items() if isinstance(v, list)]
        if key is None:
            if len(lists) != 1:
                raise ElicitError(f"vocabulary file {p} holds the lists {lists}; say which "
                                  "one to use (key=...)")
            key = lists[0]
        if key not in obj or not isinstance(obj[key], list):
            raise ElicitError(f"vocabulary file {p} has no keyword list {key!r} "
                              f"(lists present: {lists})")
        vocab = obj[key]
    elif isinstance(obj, list):
        vocab = obj
    else:
        raise ElicitError(f"vocabulary file {p} must hold a JSON list or object")
    if not all(isinstance(w, str) for w in vocab):
        raise ElicitError(f"vocabulary file {p}: every keyword must be a string")
    if len(set(vocab)) != len(vocab):
        dup = sorted({w for w in vocab if vocab.count(w) > 1})
        raise ElicitError(f"vocabulary file {p}: duplicate keywords {dup[:5]}")
    if not vocab:
        raise ElicitError(f"vocabulary file {p}: the keyword list is empty")
    return list(vocab)


# --------------------------------------------------------------------------------------------
# Datasets
# --------------------------------------------------------------------------------------------

@dataclass
class BowDataset:
    """A bag-of-words data set.

    Attributes
    ----------
    counts
        ``(n, V)`` dense ``int64`` array of keyword counts (dense is fine at these sizes:
        5149 x 824 is 34 MB before filtering).
    ratings
        ``(n,)`` ``int64`` star ratings, the regression target.
    vocabulary
        The ``V`` keywords, in column order; bigrams are joined with ``_`` (``a_lot``).
    name
        A short label (``"amazon"``, ``"yelp"``, a file name).
    """

    counts: np.ndarray
    ratings: np.ndarray
    vocabulary: list[str]
    name: str = "dataset"
    source: str = field(default="", repr=False)

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

    def doc_freq(self) -> np.ndarray:
        """Number of reviews in which each keyword occurs (count > 0)."""
        return np.count_nonzero(self.counts > 0, axis=0)

    def subset_features(self, keep: np.ndarray) -> BowDataset:
        """A copy restricted to the columns ``keep`` (indices or boolean mask)."""
        idx = np.flatnonzero(keep) if np.asarray(keep).dtype == bool else np.asarray(keep)
        return BowDataset(self.counts[:, idx], self.ratings.copy(),
                          [self.vocabulary[i] for i in idx], self.name, self.source)


#: The name the brief also uses for raw-text data sets; it is the same class.
TextDataset = BowDataset


def keyword_tokens(keyword: str) -> list[str]:
    """The tokens of a keyword: split on ``_``, empty parts dropped (``""`` has none)."""
    return [t for t in keyword.split("_") if t]


def is_stopword_keyword(keyword: str, stopwords: Iterable[str]) -> bool:
    """True if every token of ``keyword`` is a stop word, or it has no token at all.

    A keyword with no tokens (Yelp's ``""`` column, which counts tokens that the source's
    a-z cleaning emptied) carries no word, so it is dropped like a stop word.
    """
    sw = stopwords if isinstance(stopwords, (set, frozenset)) else set(stopwords)
    toks = keyword_tokens(keyword)
    return all(t.lower() in sw for t in toks)   # all([]) is True: no tokens -> dropped


def select_features(counts: np.ndarray, vocabulary: Sequence[str], stopwords: Iterable[str],
                    min_df: int) -> np.ndarray:
    """Indices of the keywords the paper's rule keeps.

    A keyword is kept if (a) not all of its ``_``-separated tokens are stop words and (b) it
    occurs (count > 0) in at least ``min_df`` reviews.

    Raises
    ------
    ElicitError
        If ``min_df`` is not a positive integer or nothing is left.
    """
    if isinstance(min_df, bool) or not isinstance(min_df, (int, np.integer)) or min_df < 1:
        raise ElicitError(f"min_df must be a positive integer number of reviews, got {min_df!r}")
    counts = np.asarray(counts)
    sw = frozenset(stopwords)
    df = np.count_nonzero(counts > 0, axis=0)
    not_stop = np.array([not is_stopword_keyword(w, sw) for w in vocabulary], dtype=bool)
    keep = np.flatnonzero(not_stop & (df >= min_df))
    if keep.size == 0:
        raise ElicitError(
            f"the vocabulary is empty after filtering: of {len(vocabulary)} keywords, "
            f"{int(not_stop.sum())} are not all-stop-word and {int((df >= min_df).sum())} occur "
            f"in >= {min_df} of {counts.shape[0]} reviews, and none is both; lower min_df")
    return keep


def load_bow(records_path: str | os.PathLike, vocabulary_path: str | os.PathLike,
             vocabulary_key: str | None = None, name: str | None = None) -> BowDataset:
    """Load a bag-of-words JSONL file (fields ``rating`` and ``bow``) and its vocabulary.

    No feature filtering is done here (see :func:`select_features`).

    Raises
    ------
    ElicitError
        On a missing ``rating``/``bow`` field, a non-integer rating, a ``bow`` that is not an
        object of non-negative integer counts, or a keyword not in the vocabulary; the message
        names the file, the line and the field or keyword.
    """
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
            if isinstance(c, bool) or not isinstance(c, int) or c < 0:
                raise ElicitError(f"{where}: count of {kw!r} must be a non-negative integer, "
                                  f"got {c!r}")
            row[j] = c
        rows.append(row)
    if not rows:
        raise ElicitError(f"{records_path} holds no records")
    return BowDataset(np.vstack(rows), np.array(ratings), vocab,
                      name or records_path.name.split(".")[0], str(records_path))


def load_paper_bow(name: DatasetName, data_dir: str | os.PathLike | None = None) -> BowDataset:
    """The paper's exact matrix, unfiltered: Amazon 5149 x 824, Yelp 4086 x 828."""
    if name not in PAPER_FILES:
        raise ElicitError(f"unknown data set {name!r}: use one of {sorted(PAPER_FILES)}")
    rec, voc, key = PAPER_FILES[name]
    d = resolve_data_dir(data_dir, required=[rec, voc])
    return load_bow(d / rec, d / voc, key, name=name)


def load_dataset(name: DatasetName, data_dir: str | os.PathLike | None = None,
                 min_df: int = 100, stopwords: Iterable[str] | None = None) -> BowDataset:
    """The paper's matrix with the paper's feature rule applied.

    Drops every keyword whose ``_``-tokens are all SMART stop words (and Yelp's empty keyword
    ``""``), then keeps the keywords that occur in at least ``min_df`` reviews. With the
    default ``min_df=100`` this leaves 337 Amazon and 258 Yelp keywords (the paper reports 340
    and 241; see ``docs/data.md``).

    Parameters
    ----------
    name
        ``"amazon"`` or ``"yelp"``.
    data_dir
        Explicit data directory (else see :func:`resolve_data_dir`).
    min_df
        Minimum number of reviews a keyword must occur in.
    stopwords
        Stop words; default the SMART list of the data directory.
    """
    ds = load_paper_bow(name, data_dir)
    sw = frozenset(stopwords) if stopwords is not None else load_stopwords(data_dir=data_dir)
    keep = select_features(ds.counts, ds.vocabulary, sw, min_df)
    return ds.subset_features(keep)


# --------------------------------------------------------------------------------------------
# Raw text
# --------------------------------------------------------------------------------------------

#: Tokens: runs of letters/digits with internal apostrophes (``can't``, ``i'm``). Unlike
#: scikit-learn's default pattern this keeps one-letter words (``i``, ``a``) as the paper's
#: vocabulary does, and it never produces ``_``, which we use to join bigrams.
TOKEN_PATTERN = r"[^\W_]+(?:'[^\W_]+)*"


def _preprocess(text: str) -> str:
    # Lower-case and normalise typographic apostrophes so "don’t" matches the stop word "don't".
    return text.lower().replace("\u2019", "'").replace("\u2018", "'")


def vectorize_texts(texts: Sequence[str], ratings: Sequence[int], stopwords: Iterable[str],
                    min_df: int, ngram_range: tuple[int, int] = (1, 2),
                    name: str = "texts", max_features: int | None = None) -> BowDataset:
    """Count unigrams and bigrams of raw texts and apply the paper's feature rule.

    Stop words are *not* removed before forming n-grams (``CountVectorizer(stop_words=...)``
    would turn "not good" into "good"); instead, as in the paper's matrices, an n-gram is
    dropped afterwards only when all of its tokens are stop words. Bigrams are named with
    ``_`` (``a_lot``) like the paper's vocabulary.

    Parameters
    ----------
    texts, ratings
        The reviews and their integer ratings.
    stopwords
        The stop list (e.g. :func:`load_stopwords`).
    min_df
        Keep n-grams that occur in at least this many texts. The paper's 100 suits ~5000
        reviews; for a few thousand use 20-40.
    ngram_range
        Passed to ``CountVectorizer``.
    max_features
        If given, keep only this many surviving n-grams with the highest document frequency
        (ties broken by vocabulary order), to bound the number of features p.
    """
    from sklearn.feature_extraction.text import CountVectorizer

    texts = list(texts)
    ratings_arr = np.array([parse_rating(r, f"rating {k}") for k, r in enumerate(ratings)],
                           dtype=np.int64)
    if len(texts) != len(ratings_arr):
        raise ElicitError(f"{len(texts)} texts but {len(ratings_arr)} ratings")
    if not texts:
        raise ElicitError("no texts to vectorise")
    if isinstance(min_df, bool) or not isinstance(min_df, (int, np.integer)) or min_df < 1:
        raise ElicitError(f"min_df must be a positive integer number of reviews, got {min_df!r}")
    for k, t in enumerate(texts):
        if not isinstance(t, str):
            raise ElicitError(f"text {k} must be a string, got {type(t).__name__}")
    vec = CountVectorizer(lowercase=False, preprocessor=_preprocess,
                          token_pattern=TOKEN_PATTERN, ngram_range=tuple(ngram_range),
                          min_df=int(min_df), dtype=np.int64)
    try:
        X = vec.fit_transform(texts)
    except ValueError as e:
        # sklearn: "empty vocabulary" or "After pruning, no terms remain".
        raise ElicitError(f"the vocabulary is empty after filtering ({e}); lower min_df "
                          f"(now {min_df}) or check the texts") from None
    vocab = [w.replace(" ", "_") for w in vec.get_feature_names_out()]
    sw = frozenset(stopwords)
    # CountVectorizer has applied min_df already; re-checking it is cheap and keeps this rule
    # identical to select_features, applied here on the sparse matrix to avoid densifying
    # the (large) unfiltered vocabulary.
    X = X.tocsc()
    df = np.diff(X.indptr)
    not_stop = np.array([not is_stopword_keyword(w, sw) for w in vocab], dtype=bool)
    keep = np.flatnonzero(not_stop & (df >= min_df))
    if keep.size == 0:
        raise ElicitError(f"the vocabulary is empty after filtering: no n-gram that is not all "
                          f"stop words occurs in >= {min_df} of {len(texts)} texts; lower min_df")
    if max_features is not None and keep.size > max_features:
        order = np.argsort(-df[keep], kind="stable")[:max_features]
        keep = np.sort(keep[order])
    counts = X[:, keep].toarray()
    return BowDataset(counts, ratings_arr, [vocab[i] for i in keep], name)


#: The paper's document-frequency threshold relative to its corpus size (100 of 5149 Amazon
#: reviews); :func:`load_raw_reviews` scales min_df to the corpus with it by default.
PAPER_MIN_DF_FRACTION = 100 / 5149


def default_min_df(n_reviews: int) -> int:
    """``ceil(n_reviews * 100 / 5149)`` (at least 2): the paper's threshold, proportionally."""
    return max(2, int(np.ceil(n_reviews * PAPER_MIN_DF_FRACTION - 1e-9)))


def load_raw_reviews(path_or_name: str | os.PathLike, data_dir: str | os.PathLike | None = None,
                     min_df: int | None = None, ngram_range: tuple[int, int] = (1, 2),
                     stopwords: Iterable[str] | None = None,
                     max_features: int | None = None) -> BowDataset:
    """Load raw-text reviews and vectorise them (:func:`vectorize_texts`).

    Parameters
    ----------
    path_or_name
        ``"amazon"`` / ``"yelp"`` for the shipped raw-text substitutes, or the path of a
        JSONL or CSV file (optionally gzipped) with ``text`` and ``rating`` fields.
    data_dir
        Where the shipped files and the stop list are looked up.
    min_df
        Minimum document frequency. The default (None) scales the paper's 100-of-5149 to the
        corpus (:func:`default_min_df`): 39 for the 2000 Amazon reviews, 71 for the 3610 Yelp
        reviews. A fixed 100 is too high for such small corpora.
    stopwords
        Stop words; default the SMART list of the data directory.
    """
    key = str(path_or_name)
    if key in RAW_FILES:
        path = data_file(RAW_FILES[key], data_dir)
        label = key
    else:
        path = Path(path_or_name)
        if not path.is_file():
            raise ElicitError(f"review file {path} not found (or use one of {sorted(RAW_FILES)} "
                              "for the shipped raw-text reviews)")
        label = path.name.split(".")[0]
    texts: list[str] = []
    ratings: list[int] = []
    for lineno, rec in read_records(path):
        where = f"{path}, line {lineno}"
        for fld in ("text", "rating"):
            if fld not in rec or rec[fld] is None:
                raise ElicitError(f"{where}: missing field {fld!r}")
        if not isinstance(rec["text"], str):
            raise ElicitError(f"{where}: field 'text' must be a string")
        texts.append(rec["text"])
        ratings.append(parse_rating(rec["rating"], where))
    if not texts:
        raise ElicitError(f"{path} holds no reviews")
    sw = frozenset(stopwords) if stopwords is not None else load_stopwords(data_dir=data_dir)
    if min_df is None:
        min_df = default_min_df(len(texts))
    ds = vectorize_texts(texts, ratings, sw, min_df, ngram_range, name=label,
                         max_features=max_features)
    ds.source = str(path)
    return ds


# --------------------------------------------------------------------------------------------
# Runs
# --------------------------------------------------------------------------------------------

def split_indices(n_total: int, rng: np.random.Generator, n_model: int = 1000,
                  n_train: int = 100) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The paper's split: ``n_model`` random reviews for the model, the rest for the expert.

    Of the ``n_model`` reviews, ``n_train`` are for training and the others for testing.

    Returns
    -------
    train, test, expert
        Disjoint sorted index arrays of sizes ``n_train``, ``n_model - n_train`` and
        ``n_total - n_model`` that together cover ``0..n_total-1``.
    """
    for nm, v in (("n_total", n_total), ("n_model", n_model), ("n_train", n_train)):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
            raise ElicitError(f"{nm} must be an integer, got {v!r}")
    if n_train < 1:
        raise ElicitError(f"n_train must be at least 1, got {n_train}")
    if n_model <= n_train:
        raise ElicitError(f"n_model ({n_model}) must exceed n_train ({n_train}) to leave "
                          "test reviews")
    if n_total < n_model:
        raise ElicitError(f"the data set has {n_total} reviews but the run needs n_model = "
                          f"{n_model} (train + test); lower n_model or use a larger data set")
    perm = rng.permutation(n_total)
    train = np.sort(perm[:n_train])
    test = np.sort(perm[n_train:n_model])
    expert = np.sort(perm[n_model:])
    return train, test, expert


def standardise(X: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Zero mean, unit (population, ddof=0) variance per column.

    A column that is constant (typically a keyword absent from every training review) gets
    scale 1 instead of 0, so it becomes all zeros rather than NaN.

    Returns
    -------
    Z, mean, scale
        ``Z = (X - mean) / scale``.
    """
    X = np.asarray(X, dtype=float)
    mean = X.mean(axis=0)
    scale = X.std(axis=0)
    scale[scale == 0] = 1.0
    return (X - mean) / scale, mean, scale


@dataclass
class RunData:
    """Everything one experimental run needs.

    Attributes
    ----------
    X_train, X_test
        Standardised with the *training* mean and scale (``x_mean``, ``x_scale``).
    y_train
        Training ratings minus their mean ``y_mean`` (the model has no intercept).
    y_test
        Test ratings on the original scale (predict ``X_test @ beta + y_mean``).
    U
        Meta-features: the transpose of the raw (unnormalised) training counts, ``p x n_train``.
    X_expert, y_expert
        The expert set (reviews outside the model's 1000): ``X_expert`` standardised with its
        own statistics, ``y_expert`` the ratings on the original scale. Only the simulated
        (LASSO) expert sees them.
    feature_names
        The p keywords.
    train_idx, test_idx, expert_idx
        Row indices into the data set.
    """

    X_train: np.ndarray
    y_train: np.ndarray
    X_test: np.ndarray
    y_test: np.ndarray
    y_mean: float
    U: np.ndarray
    X_expert: np.ndarray
    y_expert: np.ndarray
    feature_names: list[str]
    x_mean: np.ndarray
    x_scale: np.ndarray
    train_idx: np.ndarray
    test_idx: np.ndarray
    expert_idx: np.ndarray
    seed: int | None = None
    name: str = ""

    @property
    def p(self) -> int:
        return self.X_train.shape[1]


def prepare_run(dataset: BowDataset, seed: int | None, n_model: int = 1000,
                n_train: int = 100) -> RunData:
    """Split and standardise one run; deterministic given ``seed``.

    The split uses ``np.random.default_rng(seed)`` (:func:`split_indices`).
    """
    rng = np.random.default_rng(seed)
    train, test, expert = split_indices(dataset.n, rng, n_model, n_train)
    counts = dataset.counts.astype(float)
    y = dataset.ratings.astype(float)

    X_train, mu, scale = standardise(counts[train])
    X_test = (counts[test] - mu) / scale
    y_mean = float(y[train].mean())
    if expert.size:
        X_expert, _, _ = standardise(counts[expert])
    else:
        X_expert = np.zeros((0, dataset.p))
    return RunData(
        X_train=X_train, y_train=y[train] - y_mean, X_test=X_test, y_test=y[test],
        y_mean=y_mean, U=counts[train].T.copy(), X_expert=X_expert, y_expert=y[expert],
        feature_names=list(dataset.vocabulary), x_mean=mu, x_scale=scale,
        train_idx=train, test_idx=test, expert_idx=expert, seed=seed, name=dataset.name)
