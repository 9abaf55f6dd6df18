"""The data directory, the paper's file names, record readers (JSON Lines and CSV, optionally
gzipped, with line numbers for the errors), stop words and vocabularies.
"""

from __future__ import annotations

import contextlib
import csv
import gzip
import io
import json
import os
import reprlib
import zlib
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Literal

import numpy as np

from elicit.errors import ElicitError

DATA_ENV = "ELICIT_DATA"

#: The SMART English stop list (Salton 1971); the data directory may hold a copy.
STOPWORDS_FILE = "smart_stopwords_english.txt"

#: The shipped SMART stop list, from the GitHub repository igorbrigadir/stopwords, file
#: en/smart.txt at commit ab85d86c3fac0360020a921b91ccf9d697b54757 (the list's original
#: distribution was ftp.cs.cornell.edu/pub/smart/english.stop); see elicit/data/README.md.
SHIPPED_STOPWORDS = Path(__file__).resolve().with_name(STOPWORDS_FILE)

#: The paper's exact matrices: name -> (records file, vocabulary file, vocabulary key).
#: Yelp's 828-keyword ``keywords_min50`` is the records' column order; min_df applies on top.
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
    "JSON Lines; `elicit data fetch --data-dir DIR` downloads and converts them (docs/data.md "
    "gives every file and its provenance). Point elicit at the directory with --data-dir or "
    f"the {DATA_ENV} environment variable."
)

DatasetName = Literal["amazon", "yelp"]


def default_data_dirs() -> list[Path]:
    """The fallback directories, in order: ``<repo>/data`` and ``<repo>/../shared/data``."""
    root = Path(__file__).resolve().parents[2]
    if not (root / "pyproject.toml").is_file():  # an installed copy: root is site-packages
        return []
    return [root / "data", root.parent / "shared" / "data"]


def resolve_data_dir(option: str | os.PathLike | None = None,
                     required: Sequence[str] = ()) -> Path:
    """The data directory that holds the files ``required``: ``option`` (the CLI's
    ``--data-dir``), else ``$ELICIT_DATA``, else the first of :func:`default_data_dirs` that
    holds them. An explicit choice is final: if it lacks a file, an :class:`ElicitError`
    rather than other data (the message names the missing files and where the data comes
    from)."""
    required = list(required)
    if option is not None and str(option) != "":
        return _check_dir(Path(option).expanduser(), required, "--data-dir / data_dir option")
    if env := os.environ.get(DATA_ENV):
        return _check_dir(Path(env).expanduser(), required, f"environment variable {DATA_ENV}")
    searched = default_data_dirs()
    for d in searched:
        if d.is_dir() and all((d / f).is_file() for f in required):
            return d
    what = (f"the file(s) {', '.join(required)}" if required else "a data directory")
    raise ElicitError(
        f"could not find {what}; searched (in order): " + ", ".join([
            "option --data-dir (not given)", f"${DATA_ENV} (not set)", *map(str, searched)])
        + ". " + DATA_SOURCE_HINT)


def _check_dir(d: Path, required: list[str], source: str) -> Path:
    if not d.is_dir():
        raise ElicitError(f"data directory {d} (from {source}) does not exist or is not a "
                          f"directory. " + DATA_SOURCE_HINT)
    if missing := [f for f in required if not (d / f).is_file()]:
        raise ElicitError(f"data directory {d} (from {source}) has no file "
                          f"{', '.join(missing)}; searched only {d} because it was given "
                          "explicitly. " + DATA_SOURCE_HINT)
    return d


def data_file(filename: str, data_dir: str | os.PathLike | None = None) -> Path:
    """The path of ``filename`` in the resolved data directory (see :func:`resolve_data_dir`)."""
    return resolve_data_dir(data_dir, required=[filename]) / filename


@contextlib.contextmanager
def _open_text(path: Path) -> Iterator[io.TextIOWrapper]:
    """A text file opened once, gunzipped when it starts with the gzip magic (peeked at)."""
    if not path.is_file():
        raise ElicitError(f"file not found: {path}")
    with open(path, "rb") as fh:
        gz = fh.peek(2)[:2] == b"\x1f\x8b"
        if not gz and path.suffix == ".gz":
            raise ElicitError(f"{path} ends in .gz but is not a gzip file; re-compress it or "
                              "drop the .gz suffix")
        # -sig: spreadsheets' "CSV UTF-8" starts with a BOM
        with io.TextIOWrapper(gzip.GzipFile(fileobj=fh) if gz else fh, "utf-8-sig") as text:
            yield text


# Errors raised by a corrupt or truncated gzip stream or by undecodable bytes.
_READ_ERRORS = (OSError, EOFError, zlib.error, UnicodeDecodeError)


def read_jsonl(path: str | os.PathLike) -> Iterator[tuple[int, dict]]:
    """Yield ``(line_number, object)`` for each non-blank line of a (gzipped) JSONL file; an
    :class:`ElicitError` naming the line on invalid JSON or a line that is not an object."""
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
                    raise ElicitError(f"{path}, line {lineno}: invalid JSON ({e.msg}); a corpus "
                                      "holds one JSON object per line (JSON Lines)") from None
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
            names = reader.fieldnames
            if (dup := next((f for f in names if names.count(f) > 1), None)) is not None:
                raise ElicitError(f"{path} names the column {dup!r} twice; give each column "
                                  "its own name")
            for row in reader:
                # line_num counts physical lines, so it stays right for multi-line texts.
                lineno = reader.line_num
                cells = len(names) + len(row.get(None, ())) - list(row.values()).count(None)
                if cells != len(names):  # DictReader: surplus cells under None, missing ones None
                    raise ElicitError(f"{path}, line {lineno}: {cells} cells but the header "
                                      f"names {len(names)} columns; quote a text that holds "
                                      "a comma")
                yield lineno, row
    except csv.Error as e:
        raise ElicitError(f"{path}, line {lineno}: malformed CSV ({e})") from None
    except _READ_ERRORS as e:
        raise ElicitError(f"cannot read {path} (after line {lineno}): {e}; is it a valid "
                          "(gzipped) UTF-8 CSV file?") from None


def read_records(path: str | os.PathLike) -> Iterator[tuple[int, dict]]:
    """Read JSONL or CSV (either optionally ``.gz``), chosen by the file name."""
    path = Path(path)
    kind = Path(path.name.lower().removesuffix(".gz")).suffix
    if kind == ".csv":
        return read_csv_records(path)
    if kind in (".jsonl", ".json", ".ndjson"):
        return read_jsonl(path)
    raise ElicitError(f"{path}: unknown file type; use .jsonl or .csv (optionally .gz)")


def parse_rating(value: object, where: str) -> int:
    """An integer rating from JSON (int, or a float with an integer value) or CSV (string);
    booleans, fractions, non-numeric strings and values beyond int64 are refused."""
    if -2**63 <= (r := _rating(value, where)) < 2**63:
        return r
    raise ElicitError(f"{where}: rating {value!r} is out of range (ratings are numbers of stars, "
                      "such as 1-5)")


def _rating(value: object, where: str) -> int:
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        return int(value)
    v = value
    if isinstance(value, str):
        with contextlib.suppress(ValueError):
            return int(value)
        with contextlib.suppress(ValueError):
            v = float(value)
    if isinstance(v, float) and np.isfinite(v) and v == int(v):
        return int(v)
    known = value is None or isinstance(value, (bool, float, str))
    raise ElicitError(f"{where}: rating must be an integer, got "
                      f"{'' if known else type(value).__name__ + ' '}{reprlib.repr(value)}")


def load_stopwords(path: str | os.PathLike | None = None,
                   data_dir: str | os.PathLike | None = None) -> frozenset[str]:
    """The stop list of the file ``path`` (one word per line, lower-cased; blank lines
    ignored), by default the SMART list shipped with elicit, of which a copy in the data
    directory ``data_dir`` must list the same words in the same order (else an
    :class:`ElicitError`: the two would silently give different features)."""
    if path is not None:
        return frozenset(_read_word_list(Path(path)))
    if not SHIPPED_STOPWORDS.is_file():
        raise ElicitError(f"the stop list shipped with elicit is missing ({SHIPPED_STOPWORDS}); "
                          "reinstall elicit with its package data")
    shipped = _read_word_list(SHIPPED_STOPWORDS)
    if (data_dir is not None and str(data_dir) != "") or os.environ.get(DATA_ENV):
        local: Path | None = resolve_data_dir(data_dir) / STOPWORDS_FILE
    else:
        local = next((d / STOPWORDS_FILE for d in default_data_dirs()
                      if (d / STOPWORDS_FILE).is_file()), None)
    if local is not None and local.is_file() and _read_word_list(local) != shipped:
        raise ElicitError(
            f"the stop list {local} differs from the SMART list shipped with elicit "
            f"({SHIPPED_STOPWORDS}); delete it from the data directory (the shipped copy is used "
            "then) or pass the file explicitly as the stop list")
    return frozenset(shipped)


def _read_word_list(p: Path) -> list[str]:
    try:
        with _open_text(p) as fh:
            words = [w.strip().lower() for w in fh if w.strip()]
    except _READ_ERRORS as e:
        raise ElicitError(f"cannot read stop-word file {p}: {e}") from None
    if not words:
        raise ElicitError(f"stop-word file {p} is empty")
    return words


def load_vocabulary(path: str | os.PathLike, key: str | None = None) -> list[str]:
    """A vocabulary JSON: a list of keywords, or an object whose list ``key`` is taken
    (without ``key`` it must hold exactly one list, as Amazon's does; Yelp's holds two)."""
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
