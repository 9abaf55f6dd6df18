"""Download the data files into the data directory (``elicit data fetch``; ``docs/data.md``
says where each comes from and how it is converted and checked): :data:`MANIFEST` lists every
file with its public sources and its SHA-256 sum.
"""

from __future__ import annotations

import gzip
import hashlib
import html
import io
import json
import os
import re
import sys
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from functools import partial
from pathlib import Path

import numpy as np

from elicit.data.files import DATA_ENV, PAPER_FILES, RAW_FILES, STOPWORDS_FILE, default_data_dirs
from elicit.errors import ElicitError
from elicit.internal.io import write_bytes_atomic

GITHUB_RAW = "https://raw.githubusercontent.com"
#: Environment variable: base URL of a mirror of a data directory (finished files).
MIRROR_ENV = "ELICIT_DATA_MIRROR"
#: Environment variable: base URL that replaces :data:`GITHUB_RAW` for the original sources.
UPSTREAM_ENV = "ELICIT_DATA_UPSTREAM"
#: Seconds to wait for a server.
TIMEOUT = 60.0


@dataclass(frozen=True)
class Source:
    """One public source file: a path in a GitHub repository at a pinned commit."""

    repo: str
    commit: str
    path: str

    def url(self, base: str = GITHUB_RAW) -> str:
        """The download URL under ``base`` (``<base>/<owner>/<repo>/<commit>/<path>``)."""
        return f"{base.rstrip('/')}/{self.repo}/{self.commit}/{urllib.parse.quote(self.path)}"


@dataclass(frozen=True)
class DataFile:
    """One file of the data directory: the SHA-256 of the file and (gzip files) of its
    content, its public sources and their converter to its content (None: ``sources[0]``)."""

    name: str
    sha256: str
    content_sha256: str | None
    sources: tuple[Source, ...]
    convert: Callable[[list[bytes]], bytes] | None

    @property
    def gzipped(self) -> bool:
        return self.name.endswith(".gz")


@dataclass(frozen=True)
class FetchResult:
    """What :func:`fetch` did with one file: ``status`` ``"present"`` (verified, skipped),
    ``"downloaded"`` (taken as it is) or ``"converted"`` (made from the original sources)."""

    name: str
    path: Path
    status: str
    urls: tuple[str, ...] = ()


_HIIT = "HIIT/knowledge-elicitation-for-linear-regression"
_AMAZON_MAT = Source(_HIIT, "d305913cc2fda8272017aea1f8b75689f97a78f6",
                     "DATA_amazon/amazon_data.mat")
_YELP_MAT50, _YELP_MAT100 = (Source(_HIIT, "e780fb4f1a5db9b258557119c456fac373ba86f3",
                                     f"DATA_yelp/yelp_academic_data_clean_from2006_{k}app.mat")
                              for k in (50, 100))
_BLITZER_POS, _BLITZER_NEG = (Source("bzantium/bert-AAD",
                                     "cbe2e0cac6564dfbc6234882a73ca78020ac0d22",
                                     f"data/kitchen/{s}.review") for s in ("positive", "negative"))
_YELP_JSON = Source("tilmanbeck/dcwe", "ac547249310ebea228f08b27987c3f67c294c696",
                    "data/yelp_academic_dataset_review.json")
_SMART = Source("igorbrigadir/stopwords", "ab85d86c3fac0360020a921b91ccf9d697b54757",
                "en/smart.txt")


def _jsonl(records: Iterable[dict]) -> bytes:
    # The format of the distributed files: json.dumps defaults, UTF-8, one object per line.
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records).encode("utf-8")


def _vocabulary_json(obj: dict) -> bytes:
    return json.dumps(obj, indent=0, ensure_ascii=False).encode("utf-8")


def _load_mat(data: bytes, what: str) -> dict:
    """The variables of a MATLAB file (v5/v7; v7.3 is HDF5 and cannot be read by scipy)."""
    from scipy.io import loadmat

    if data.startswith(b"version https://git-lfs"):
        raise ElicitError(f"{what} arrived as a Git LFS pointer, not the MATLAB file")
    try:
        return loadmat(io.BytesIO(data))
    except NotImplementedError:
        raise ElicitError(f"{what} is a MATLAB v7.3 (HDF5) file, which scipy cannot read; "
                          "copy the converted files by hand into the data directory") from None
    except (ValueError, TypeError, OSError) as e:
        raise ElicitError(f"{what} is not a readable MATLAB file ({e})") from None


def _mat_var(mat: dict, name: str, what: str):
    if name not in mat:
        found = sorted(k for k in mat if not k.startswith("__"))
        raise ElicitError(f"{what} has no variable {name!r} (variables: {found})")
    return mat[name]


def _cellstr(cell, what: str) -> list[str]:
    """A MATLAB cell array of strings (1 x V or V x 1) as a list; ``''`` becomes ``""``."""
    out = []
    for el in np.asarray(cell, dtype=object).ravel():
        if isinstance(el, str):
            out.append(el)
            continue
        el = np.asarray(el)
        if el.size and el.dtype.kind != "U":
            raise ElicitError(f"{what}: keywords must be a cell array of strings")
        out.append("".join(str(c) for c in el.ravel()))
    return out


def _paper_matrix(data: bytes, what: str) -> tuple[np.ndarray, np.ndarray, list[str]]:
    mat = _load_mat(data, what)
    X = _mat_var(mat, "X_all", what)    # dense or sparse
    X = np.asarray(X.toarray() if hasattr(X, "toarray") else X, dtype=float)
    if X.ndim != 2 or not np.all(np.isfinite(X)) or np.any(X != np.round(X)) or np.any(X < 0):
        raise ElicitError(f"{what}: the counts must be a matrix of non-negative integers")
    y = np.asarray(_mat_var(mat, "Y_all", what), dtype=float).ravel()
    keywords = _cellstr(_mat_var(mat, "keywords", what), what)
    if X.shape != (len(y), len(keywords)) or np.any(y != np.round(y)):
        raise ElicitError(f"{what}: X_all {X.shape}, Y_all ({len(y)}) and keywords "
                          f"({len(keywords)}) do not fit together")
    return X.astype(np.int64), y.astype(np.int64), keywords


def _paper_bow(src: list[bytes], what: str, extra: dict | None = None) -> bytes:
    # One record per row: the row index, the rating, extra, then the nonzero counts in order.
    X, y, kw = _paper_matrix(src[0], what)
    return _jsonl({"id": i, "rating": int(y[i]), **(extra or {}),
                   "bow": {kw[j]: int(X[i, j]) for j in np.flatnonzero(X[i])}}
                  for i in range(X.shape[0]))


def _convert_amazon_vocab(src: list[bytes]) -> bytes:
    return _vocabulary_json({"source": f"{_HIIT} {_AMAZON_MAT.path} (variable keywords, "
                                       "column order of X_all)",
                             "keywords": _paper_matrix(src[0], _AMAZON_MAT.path)[2]})


def _convert_yelp_vocab(src: list[bytes]) -> bytes:
    _, _, kw50 = _paper_matrix(src[0], _YELP_MAT50.path)
    kw100 = _cellstr(_mat_var(_load_mat(src[1], _YELP_MAT100.path), "keywords",
                              _YELP_MAT100.path), _YELP_MAT100.path)
    return _vocabulary_json({"source": f"{_HIIT} {_YELP_MAT50.path} and ..._100app.mat "
                                       "(variable keywords, column order of X_all)",
                             "keywords_min50": kw50, "keywords_min100": kw100})


_REVIEW = re.compile(r"<review>(.*?)</review>", re.S)
_FIELD = re.compile(r"<(\w+)>(.*?)</\1>", re.S)


def _blitzer_reviews(data: bytes, polarity: str, what: str) -> list[dict]:
    """The reviews of one Blitzer ``.review`` file (XML-like, one tag per field)."""
    # Decoding errors are replaced (U+FFFD) rather than fatal: the check sum decides.
    text = data.decode("utf-8", errors="replace")
    out = []
    for m in _REVIEW.finditer(text):
        f = {k: v.strip() for k, v in _FIELD.findall(m.group(1))}
        try:
            out.append({
                "id": f["unique_id"],
                "text": html.unescape(f["review_text"]),
                "title": html.unescape(f["title"]),
                "rating": int(float(f["rating"])),
                "date": datetime.strptime(f["date"], "%B %d, %Y").date().isoformat(),
                "domain": "kitchen",
                "asin": f["asin"],
                "polarity_file": polarity,
            })
        except (KeyError, ValueError) as e:
            raise ElicitError(f"{what}: review {len(out) + 1} is malformed ({e!r})") from None
    if not out:
        raise ElicitError(f"{what} holds no <review> records")
    return out


def _convert_amazon_raw(src: list[bytes]) -> bytes:
    return _jsonl(_blitzer_reviews(src[0], "positive", _BLITZER_POS.path)
                  + _blitzer_reviews(src[1], "negative", _BLITZER_NEG.path))


def _convert_yelp_raw(src: list[bytes]) -> bytes:
    # the last piece is empty or the record the source is cut off in the middle of
    lines = src[0].decode("utf-8").split("\n")[:-1]
    recs = []
    for k, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            r = json.loads(line)
            recs.append({"id": r["review_id"], "text": r["text"], "rating": int(r["stars"]),
                         "date": r["date"], "business_id": r["business_id"]})
        except (json.JSONDecodeError, KeyError, TypeError, ValueError) as e:
            raise ElicitError(f"{_YELP_JSON.path}, line {k}: not a Yelp review ({e})") from None
    return _jsonl(recs)


_AMAZON_BOW, _AMAZON_VOC, _ = PAPER_FILES["amazon"]
_YELP_BOW, _YELP_VOC, _ = PAPER_FILES["yelp"]

#: Every file :func:`fetch` can produce, in the order it fetches them.
MANIFEST: dict[str, DataFile] = {f.name: f for f in (
    DataFile(STOPWORDS_FILE,
             "0f21fbc8f4d86a06562bd61032209ae5cdc16aaad8cbfb09e064a7d5bb75e823", None,
             (_SMART,), None),
    DataFile(_AMAZON_BOW,
             "d4bb65d2a301749011637abc779ab15a5e419f3d9af147102e848acb3b4fe886",
             "c40a0c6087797458aa6d2278749f5c74f040fc659900b825959325a7707bca07",
             (_AMAZON_MAT,), partial(_paper_bow, what=_AMAZON_MAT.path,
                                     extra={"domain": "kitchen"})),
    DataFile(_AMAZON_VOC,
             "0e3a71cab98b7df1b4dcf0b8e2e7d4bc6a944d3cdaaab754c314b88df5faceff", None,
             (_AMAZON_MAT,), _convert_amazon_vocab),
    DataFile(_YELP_BOW,
             "18d59e97b3296a96f515bdc6be61b1ead4b8bb43953ab39945e8a1728159b776",
             "cfe927df47fd6ecb1e305c24aba64bc71ffc845bde616ed1efa6c900d4aeacd1",
             (_YELP_MAT50,), partial(_paper_bow, what=_YELP_MAT50.path)),
    DataFile(_YELP_VOC,
             "d69fe564b53345e2061f71d8476ca9297421747000dfa947838cf5a6dd59a651", None,
             (_YELP_MAT50, _YELP_MAT100), _convert_yelp_vocab),
    DataFile(RAW_FILES["amazon"],
             "6af3a2ea3ab967f5d5d9821710af3a67d79b1dc094186a323eb8df515b4a1d32",
             "c1ec63c880a03f444876e34558c0cc8d606ff379d812d5bcf84de413556b26d0",
             (_BLITZER_POS, _BLITZER_NEG), _convert_amazon_raw),
    DataFile(RAW_FILES["yelp"],
             "17436e12063343934284aef4300602503403656c90c4dad1c536a9bd48de1fbc",
             "1cdbbe4b2beeec9b9b64a941975e7d659c8f7933542667ad072986a884ff5128",
             (_YELP_JSON,), _convert_yelp_raw),
)}

#: Names for groups of files, usable in ``files=`` next to the file names.
FILE_GROUPS: dict[str, tuple[str, ...]] = {
    "all": tuple(MANIFEST),
    "paper": (STOPWORDS_FILE, _AMAZON_BOW, _AMAZON_VOC, _YELP_BOW, _YELP_VOC),
    "raw": (STOPWORDS_FILE, RAW_FILES["amazon"], RAW_FILES["yelp"]),
    "amazon": (STOPWORDS_FILE, _AMAZON_BOW, _AMAZON_VOC, RAW_FILES["amazon"]),
    "yelp": (STOPWORDS_FILE, _YELP_BOW, _YELP_VOC, RAW_FILES["yelp"]),
}


def select_files(files: str | Sequence[str] | None = None) -> list[DataFile]:
    """The manifest entries named by ``files`` (file or group names, a list or a comma-separated
    string; None: all), in manifest order."""
    if files is None:
        return list(MANIFEST.values())
    names = files.split(",") if isinstance(files, str) else list(files)
    wanted: set[str] = set()
    for n in (str(x).strip() for x in names):
        if n and n not in FILE_GROUPS and n not in MANIFEST:
            raise ElicitError(f"unknown data file {n!r}; use a group ({', '.join(FILE_GROUPS)}) "
                              f"or a file name ({', '.join(MANIFEST)})")
        wanted.update(FILE_GROUPS.get(n, (n,)) if n else ())
    if not wanted:
        raise ElicitError("no data file named; use a group or a file name")
    return [f for f in MANIFEST.values() if f.name in wanted]


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def verify(data: bytes, spec: DataFile) -> bool:
    """True if ``data`` is the file ``spec``: its own SHA-256, or that of its gzip content."""
    if _sha256(data) == spec.sha256:
        return True
    if spec.content_sha256 is None:
        return False
    try:
        return _sha256(gzip.decompress(data)) == spec.content_sha256
    except (OSError, EOFError, ValueError):
        return False


def _as_url(base: str) -> str:
    """A URL from a URL or a local folder (``/srv/mirror`` -> ``file:///srv/mirror``)."""
    base = str(base).strip()
    if re.match(r"^[A-Za-z][A-Za-z0-9+.-]*://", base):
        return base.rstrip("/")
    return Path(base).expanduser().resolve().as_uri()


def _download(url: str, name: str, data_dir: Path) -> bytes:
    try:
        with urllib.request.urlopen(url, timeout=TIMEOUT) as resp:
            return resp.read()
    except (urllib.error.URLError, OSError, ValueError) as e:
        reason = (f"HTTP {e.code} {e.reason}" if isinstance(e, urllib.error.HTTPError)
                  else str(getattr(e, "reason", None) or e))
        raise ElicitError(
            f"cannot download {url} ({reason}); if the network is not reachable, "
            f"copy the data files (here {name}) by hand into the data directory "
            f"{data_dir} (sources and SHA-256 sums: docs/data.md)") from None


def _gzip_bytes(content: bytes, name: str) -> bytes:
    # mtime=0 keeps the output of a conversion the same from run to run.
    buf = io.BytesIO()
    with gzip.GzipFile(filename=name.removesuffix(".gz"), mode="wb", fileobj=buf,
                       mtime=0) as gz:
        gz.write(content)
    return buf.getvalue()


def _mismatch(spec: DataFile, want: str, got: str, where: str, data_dir: Path) -> ElicitError:
    return ElicitError(
        f"SHA-256 mismatch for {spec.name} from {where}: expected {want}, got {got}; nothing "
        f"was written. Try again, use another mirror, or copy the file by hand into {data_dir}")


def fetch_dir(option: str | os.PathLike | None = None) -> Path:
    """The directory :func:`fetch` writes to: ``option``, else ``$ELICIT_DATA``, else
    ``<repo>/data`` (an error outside a source checkout)."""
    if option is not None and str(option) != "":
        return Path(option).expanduser()
    if env := os.environ.get(DATA_ENV):
        return Path(env).expanduser()
    if not (defaults := default_data_dirs()):  # <repo>/data first, in a source checkout only
        raise ElicitError(f"elicit is not run from a source checkout, so there is no "
                          f"<repo>/data; give the data directory (--data-dir) or set {DATA_ENV}")
    return defaults[0]


def fetch(data_dir: str | os.PathLike, files: str | Sequence[str] | None = None,
          mirror: str | None = None, force: bool = False, progress: bool = True,
          upstream: str | None = None) -> list[FetchResult]:
    """Download the data files into ``data_dir`` (created if missing) and verify their SHA-256
    sums; one :class:`FetchResult` per file, in manifest order.

    Parameters
    ----------
    files
        File names or groups (:data:`FILE_GROUPS`), a list or one comma-separated string;
        None means all.
    mirror, upstream
        Base URL (or local folder) of the finished files (default ``$ELICIT_DATA_MIRROR``;
        none: the original sources are converted), and one replacing :data:`GITHUB_RAW`
        (default ``$ELICIT_DATA_UPSTREAM``).
    force
        Download again a present file (without it one that does not verify is an error).
    progress
        Print one line per file to standard error.

    Raises
    ------
    ElicitError
        One line: a server cannot be reached, a download or conversion does not match its
        SHA-256 (nothing is written), or a present file does not verify without ``force``.
    """
    specs = select_files(files)
    data_dir = Path(data_dir).expanduser()
    if data_dir.exists() and not data_dir.is_dir():
        raise ElicitError(f"data directory {data_dir} exists but is not a directory")
    data_dir.mkdir(parents=True, exist_ok=True)
    mirror = mirror if mirror not in (None, "") else os.environ.get(MIRROR_ENV) or None
    upstream = upstream if upstream not in (None, "") else os.environ.get(UPSTREAM_ENV) or None
    base = _as_url(upstream) if upstream else GITHUB_RAW
    downloaded: dict[str, bytes] = {}  # once per URL: two files can share a source

    say = partial(print, file=sys.stderr, flush=True) if progress else (lambda msg: None)
    results = []
    for spec in specs:
        path = data_dir / spec.name
        if path.exists() and not force:
            if path.is_file() and verify(path.read_bytes(), spec):
                say(f"{spec.name}: present and verified, skipped")
                results.append(FetchResult(spec.name, path, "present"))
                continue
            raise ElicitError(f"{path} is present but does not match its SHA-256 ({spec.sha256})"
                              "; delete it, or replace it with force=True (--force)")
        urls = ((f"{_as_url(mirror)}/{urllib.parse.quote(spec.name)}",) if mirror
                else tuple(s.url(base) for s in spec.sources))
        for u in urls:
            say(f"{spec.name}: downloading {u}")
        for u in urls:
            if u not in downloaded:
                downloaded[u] = _download(u, spec.name, data_dir)
        raw = [downloaded[u] for u in urls]
        if mirror or spec.convert is None:
            data = raw[0]
            if not verify(data, spec):
                raise _mismatch(spec, spec.sha256, _sha256(data), urls[0], data_dir)
            status = "downloaded"
        else:
            content = spec.convert(raw)
            want = spec.content_sha256 or spec.sha256   # a gzip file's: its content's
            if _sha256(content) != want:
                raise _mismatch(spec, want, _sha256(content), "the conversion of "
                                + ", ".join(urls), data_dir)
            data = _gzip_bytes(content, spec.name) if spec.gzipped else content
            status = "converted"
        write_bytes_atomic(path, data)
        say(f"{spec.name}: {status}, SHA-256 verified ({len(data)} bytes)")
        results.append(FetchResult(spec.name, path, status, urls))
    return results
