"""Reading a user's tables (CSV or Parquet) and meta-features matched by feature name, for
``elicit session new --from-csv`` and ``--meta-features FILE``, with one-line errors."""

from __future__ import annotations

import io
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from elicit.errors import ElicitError
from elicit.internal.paths import check_input_file
from elicit.internal.text import listing

TABLE_SUFFIXES = (".csv", ".tsv", ".txt", ".parquet", ".pq")
#: What to do with a workbook, a compressed table or a spreadsheet's non-UTF-8 CSV.
SAVE_AS_CSV = "save the table as CSV in UTF-8 (from a spreadsheet: Save As 'CSV UTF-8')"


def read_table(path: Path, what: str, index_col: int | None = None) -> pd.DataFrame:
    """A CSV or Parquet file (:data:`TABLE_SUFFIXES`) as a DataFrame; ``what`` names the option.
    Indexed by the column ``index_col`` as text, else, so that messages place a value, by its
    ``line`` (2, 3, ...) in a text table of one line per row, or by ``data row`` (1, 2, ...)."""
    path = check_input_file(path, what)
    suffix = path.suffix.lower()
    if suffix not in TABLE_SUFFIXES:
        raise ElicitError(f"{what} file {path.name!r} is neither CSV nor Parquet: {SAVE_AS_CSV} "
                          f"or Parquet, its name ending in one of {', '.join(TABLE_SUFFIXES)}")
    lines = 0
    try:
        if suffix in (".parquet", ".pq"):
            df = pd.read_parquet(path)
            if index_col is not None:  # the names as text, as a CSV's
                df = df.set_index(df.columns[index_col]).rename(index=str)
        else:
            sep = "\t" if suffix == ".tsv" else ","
            raw = path.read_bytes()  # read once: the checks, the table and its lines parse it
            _check_header(path, raw, what, sep, index_col)
            df = pd.read_csv(io.BytesIO(raw), sep=sep, index_col=index_col)
            if index_col is not None:  # names as written: not "01" -> 1.0, "NA" -> NaN
                df.index = pd.read_csv(io.BytesIO(raw), sep=sep, usecols=[index_col], dtype=str,
                                       keep_default_na=False).iloc[:, 0].to_numpy()
            lines = len(io.BytesIO(raw).readlines())  # a last line without a newline too
    except ImportError:
        raise ElicitError(f"reading the Parquet file {path.name} needs the pyarrow package: "
                          "install it (pip install pyarrow) or save the table as CSV") from None
    except ElicitError:
        raise
    except UnicodeDecodeError:  # Excel's "CSV" on Windows is cp1252: 'ß' is the byte 0xdf
        raise ElicitError(f"{what} file {path.name} is not UTF-8 text (compressed, a workbook, "
                          f"or another encoding?): {SAVE_AS_CSV}") from None
    except (pd.errors.ParserError, pd.errors.EmptyDataError, ValueError, OSError) as e:
        detail = " ".join(str(e).split())
        raise ElicitError(f"cannot read {what} file {path.name} as a table: {detail}") from None
    if df.shape[0] == 0 or df.shape[1] == 0:
        names = "" if index_col is None else " besides the names"
        raise ElicitError(f"{what} file {path.name} has no data: {df.shape[0]} row(s) and "
                          f"{df.shape[1] or 'no'} column(s){names}")
    df.columns = [str(c) for c in df.columns]
    if index_col is None:
        df.index = (pd.RangeIndex(2, len(df) + 2, name="line") if lines == len(df) + 1
                    else pd.RangeIndex(1, len(df) + 1, name="data row"))
    return df


def _check_header(path: Path, raw: bytes, what: str, sep: str, index_col: int | None) -> None:
    """Refuse an empty or repeated column name (pandas would rename it), another separator, or
    a first data line longer than the header (pandas would shift the columns)."""
    header = [str(c) for c in pd.read_csv(io.BytesIO(raw), sep=sep, header=None, nrows=1,
                                          dtype=str, keep_default_na=False).iloc[0].tolist()]
    if other := [c for c in ",;\t" if c != sep and len(header) == 1 and c in header[0]]:
        way = "tabs" if sep == "\t" else "commas (or name it .tsv if separated by tabs)"
        raise ElicitError(f"{what} file {path.name} has one column, its columns separated by "
                          f"{other[0]!r} rather than {sep!r}; save it separated by {way}")
    try:
        pd.read_csv(io.BytesIO(raw), sep=sep, header=None, nrows=2)
    except pd.errors.ParserError as e:
        if "Expected" not in str(e):  # not "Expected 4 fields in line 2, saw 5"
            raise
        raise ElicitError(f"{what} file {path.name} has more fields on its first data line than "
                          f"names in its header line (a {sep!r} at the end of each line?); name "
                          "every column in the header line or remove the extra fields") from None
    first: dict[str, int] = {}
    for k, name in enumerate(header):
        if not name.strip() and k != index_col:
            # a table saved by pandas with its row index has an unnamed first column
            hint = " (a table saved with its row index? save it with index=False)" if k == 0 else ""
            raise ElicitError(f"{what} file {path.name} has a column without a name (column "
                              f"{k + 1}){hint}; give every column a name in the header line")
        if name in first:
            raise ElicitError(f"{what} file {path.name} names column {name!r} twice (columns "
                              f"{first[name] + 1} and {k + 1}); give every column its own name")
        first.setdefault(name, k)


def align_meta(U, names: Sequence[str] | None):
    """Meta-features in the features' order: a DataFrame indexed by feature name is matched
    by name; anything else is taken in row order."""
    if not isinstance(U, pd.DataFrame):
        return U
    if bad := [str(c) for c in U.columns if not pd.api.types.is_numeric_dtype(U[c])]:
        raise ElicitError(f"meta-features must be numeric; column(s) {listing(bad)} are not")
    labels = [str(k) for k in U.index]
    if isinstance(U.index, pd.RangeIndex) and list(U.index) == list(range(len(U))):
        return U.to_numpy(dtype=float, na_value=np.nan)
    if names is None:
        raise ElicitError("the meta-features are indexed by name, but the features have no "
                          "names; give X as a DataFrame or pass feature_names")
    if dup := sorted({k for k in labels if labels.count(k) > 1}):
        raise ElicitError(f"the meta-features name feature(s) {listing(dup)} more than once")
    parts = [f"{what} {listing(found)}" for what, found in (
        ("no row for feature(s)", [n for n in names if n not in set(labels)]),
        ("row(s) for unknown feature(s)", [k for k in labels if k not in set(names)])) if found]
    if parts:
        raise ElicitError("the meta-features do not match the features by name: "
                          + "; ".join(parts) + " (the first column must be the feature name)")
    return U.set_axis(labels).loc[list(names)].to_numpy(dtype=float, na_value=np.nan)
