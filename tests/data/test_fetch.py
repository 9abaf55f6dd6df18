"""Tests of elicit.data.fetch and ``elicit data fetch``, all without the network.

Mirrors are folders in ``tmp_path`` served as ``file://`` URLs. The original sources are
rebuilt from the shared data files (MATLAB files with scipy, Blitzer ``.review`` files, a
cut-off Yelp ``review.json``), so the converters are checked against the published sums.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import html
import json
import shutil
import socket
import urllib.error
import urllib.parse
import urllib.request
from datetime import date
from pathlib import Path

import numpy as np
import pytest
import scipy.io
import scipy.sparse
from conftest import REAL_DATA_DIR, needs_data

from elicit.cli.data import DATA_COMMANDS, add_data_parsers
from elicit.data import (
    DATA_ENV,
    PAPER_FILES,
    RAW_FILES,
    SHIPPED_STOPWORDS,
    STOPWORDS_FILE,
    load_dataset,
    load_raw_reviews,
)
from elicit.data import fetch as F
from elicit.data import files as data_files
from elicit.data.fetch import FILE_GROUPS, MANIFEST, fetch, fetch_dir, select_files
from elicit.errors import ElicitError

REAL = REAL_DATA_DIR


@pytest.fixture(autouse=True)
def no_network(monkeypatch):
    """Refuse every URL that is not a local file or this machine."""
    real = urllib.request.urlopen

    def guarded(url, *a, **kw):
        u = urllib.parse.urlparse(url if isinstance(url, str) else url.full_url)
        if u.scheme != "file" and u.hostname not in ("127.0.0.1", "localhost"):
            raise urllib.error.URLError("network disabled in tests")
        return real(url, *a, **kw)

    monkeypatch.setattr(urllib.request, "urlopen", guarded)
    for env in (F.MIRROR_ENV, F.UPSTREAM_ENV):
        monkeypatch.delenv(env, raising=False)


def _sha(p: Path) -> str:
    return hashlib.sha256(p.read_bytes()).hexdigest()


def _mirror(tmp_path: Path, names=None, src: Path = REAL) -> Path:
    m = tmp_path / "mirror"
    m.mkdir()
    for n in names or MANIFEST:
        shutil.copyfile(src / n, m / n)
    return m


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# --------------------------------------------------------------------------------------------
# the manifest
# --------------------------------------------------------------------------------------------

def test_manifest_and_groups():
    assert set(MANIFEST) == {STOPWORDS_FILE, *RAW_FILES.values(),
                             *(f for v in PAPER_FILES.values() for f in v[:2])}
    for spec in MANIFEST.values():
        assert len(spec.sha256) == 64 and spec.sources
        assert (spec.content_sha256 is not None) == spec.gzipped
        assert all(s.url().startswith("https://raw.githubusercontent.com/") for s in spec.sources)
        assert all(len(s.commit) == 40 for s in spec.sources)
    assert MANIFEST[STOPWORDS_FILE].convert is None                   # the only verbatim file
    assert [f.name for f in select_files("paper")] == list(FILE_GROUPS["paper"])
    assert select_files(["amazon", RAW_FILES["yelp"]])[-1].name == RAW_FILES["yelp"]
    assert len(select_files(None)) == len(select_files("all")) == 7
    with pytest.raises(ElicitError, match="unknown data file 'amazn'; use a group"):
        select_files("amazon,amazn")
    with pytest.raises(ElicitError, match="no data file named"):
        select_files(",")


def test_shipped_stop_list_has_the_manifest_sum():
    assert _sha(SHIPPED_STOPWORDS) == MANIFEST[STOPWORDS_FILE].sha256


def test_docs_list_the_manifest_sums():
    doc = (Path(F.__file__).resolve().parents[2] / "docs" / "data.md").read_text()
    for spec in MANIFEST.values():
        want = f"| `{spec.name}` | `{spec.sha256}` | "
        want += f"`{spec.content_sha256}` |" if spec.content_sha256 else "(not compressed) |"
        assert want in doc.splitlines(), spec.name


@needs_data
def test_manifest_sums_are_the_shared_files():
    for spec in MANIFEST.values():
        assert _sha(REAL / spec.name) == spec.sha256, spec.name
        if spec.gzipped:
            content = gzip.decompress((REAL / spec.name).read_bytes())
            assert hashlib.sha256(content).hexdigest() == spec.content_sha256, spec.name


# --------------------------------------------------------------------------------------------
# from a mirror
# --------------------------------------------------------------------------------------------

@needs_data
def test_fetch_from_file_mirror_into_empty_dir(tmp_path):
    mirror = _mirror(tmp_path)
    d = tmp_path / "new" / "data"                                      # created by fetch
    res = fetch(d, mirror=mirror.as_uri(), progress=False)
    assert [r.status for r in res] == ["downloaded"] * 7
    assert sorted(p.name for p in d.iterdir()) == sorted(MANIFEST)     # no temporary files
    for spec in MANIFEST.values():
        assert _sha(d / spec.name) == spec.sha256
    a = load_dataset("amazon", d)
    assert (a.n, a.p) == (5149, 337)
    y = load_dataset("yelp", d)
    assert (y.n, y.p) == (4086, 258)
    assert load_raw_reviews("amazon", d).n == 2000


@needs_data
def test_second_fetch_skips_and_force_downloads_again(tmp_path, capsys):
    mirror = _mirror(tmp_path, FILE_GROUPS["amazon"])
    d = tmp_path / "data"
    fetch(d, files="amazon", mirror=str(mirror), progress=False)       # a plain folder works
    before = {p.name: p.stat().st_mtime_ns for p in d.iterdir()}
    res = fetch(d, files="amazon", mirror=str(mirror))
    assert [r.status for r in res] == ["present"] * 4
    assert {p.name: p.stat().st_mtime_ns for p in d.iterdir()} == before
    assert "present and verified, skipped" in capsys.readouterr().err
    # Present files are checked without any download: a mirror is not even needed.
    assert [r.status for r in fetch(d, files="amazon", progress=False)] == ["present"] * 4
    res = fetch(d, files=[STOPWORDS_FILE], mirror=mirror.as_uri(), force=True, progress=False)
    assert res[0].status == "downloaded"
    fetch(d, files="amazon", progress=False, mirror=str(mirror))
    assert capsys.readouterr().err == ""                               # progress=False


@needs_data
def test_corrupted_mirror_file_is_refused(tmp_path):
    name = PAPER_FILES["amazon"][0]
    mirror = _mirror(tmp_path, [name])
    raw = bytearray((mirror / name).read_bytes())
    raw[len(raw) // 2] ^= 0xFF
    (mirror / name).write_bytes(bytes(raw))
    d = tmp_path / "data"
    with pytest.raises(ElicitError, match=rf"SHA-256 mismatch for {name} from file://.*: "
                                          rf"expected {MANIFEST[name].sha256}, got .*nothing "
                                          "was written") as e:
        fetch(d, files=[name], mirror=mirror.as_uri(), progress=False)
    assert "\n" not in str(e.value)
    assert list(d.iterdir()) == []                                     # nothing left


def test_present_file_that_does_not_verify(tmp_path):
    d = tmp_path / "data"
    d.mkdir()
    (d / STOPWORDS_FILE).write_text("the\n")
    mirror = _mirror(tmp_path, [STOPWORDS_FILE], SHIPPED_STOPWORDS.parent)
    # the command line's spelling beside the keyword's (it said "fetch with force")
    with pytest.raises(ElicitError, match=r"does not match its SHA-256 .*force=True \(--force\)"):
        fetch(d, files=[STOPWORDS_FILE], mirror=str(mirror), progress=False)
    assert (d / STOPWORDS_FILE).read_text() == "the\n"                 # never overwritten
    res = fetch(d, files=[STOPWORDS_FILE], mirror=str(mirror), force=True, progress=False)
    assert res[0].status == "downloaded"
    assert _sha(d / STOPWORDS_FILE) == MANIFEST[STOPWORDS_FILE].sha256


def test_recompressed_gzip_is_accepted(tmp_path):
    # Only the content of a gzip file counts: another zlib or time stamp is not a mismatch.
    spec = F.DataFile("x.jsonl.gz", "0" * 64, hashlib.sha256(b'{"a": 1}\n').hexdigest(), (),
                      None)
    assert F.verify(gzip.compress(b'{"a": 1}\n', mtime=5), spec)
    assert not F.verify(gzip.compress(b'{"a": 2}\n'), spec)
    assert not F.verify(b"not gzip", spec)


def test_mirror_from_environment(tmp_path, monkeypatch):
    mirror = _mirror(tmp_path, [STOPWORDS_FILE], SHIPPED_STOPWORDS.parent)
    monkeypatch.setenv(F.MIRROR_ENV, mirror.as_uri())
    res = fetch(tmp_path / "d", files=[STOPWORDS_FILE], progress=False)
    assert res[0].status == "downloaded" and res[0].urls[0].startswith(mirror.as_uri())


# --------------------------------------------------------------------------------------------
# unreachable servers
# --------------------------------------------------------------------------------------------

def test_unreachable_mirror_gives_one_line(tmp_path):
    url = f"http://127.0.0.1:{_closed_port()}"
    d = tmp_path / "data"
    with pytest.raises(ElicitError) as e:
        fetch(d, files="paper", mirror=url, progress=False)
    msg = str(e.value)
    assert "\n" not in msg
    assert msg.startswith(f"cannot download {url}/{STOPWORDS_FILE} (")
    assert "copy the data files" in msg and "by hand into the data directory" in msg
    assert str(d) in msg
    assert list(d.iterdir()) == []


def test_unreachable_github_gives_one_line(tmp_path):
    with pytest.raises(ElicitError) as e:
        fetch(tmp_path / "d", files=[PAPER_FILES["yelp"][0]], progress=False)
    msg = str(e.value)
    assert "\n" not in msg and "network disabled in tests" in msg
    assert ("https://raw.githubusercontent.com/HIIT/knowledge-elicitation-for-linear-regression/"
            "e780fb4f1a5db9b258557119c456fac373ba86f3/DATA_yelp/"
            "yelp_academic_data_clean_from2006_50app.mat") in msg
    assert "by hand into the data directory" in msg


def test_missing_mirror_file(tmp_path):
    mirror = tmp_path / "mirror"
    mirror.mkdir()
    with pytest.raises(ElicitError, match=r"cannot download file://.*smart_stopwords_english.txt "
                                          r"\(.*No such file"):
        fetch(tmp_path / "d", files=[STOPWORDS_FILE], mirror=str(mirror), progress=False)


# --------------------------------------------------------------------------------------------
# from the original sources (rebuilt here), converted
# --------------------------------------------------------------------------------------------

def _records(path: Path) -> list[dict]:
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        return [json.loads(line) for line in fh]


def _put(root: Path, src, data: bytes) -> Path:
    p = root / src.repo / src.commit / src.path
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_bytes(data)
    return p


def _mat(root: Path, src, recs: list[dict], vocab: list[str], sparse: bool) -> None:
    col = {w: j for j, w in enumerate(vocab)}
    X = np.zeros((len(recs), len(vocab)))
    for i, r in enumerate(recs):
        for k, c in r["bow"].items():
            if k in col:
                X[i, col[k]] = c
    kw = np.empty((1, len(vocab)), dtype=object)
    kw[0, :] = vocab
    p = _put(root, src, b"")
    scipy.io.savemat(p, {"X_all": scipy.sparse.csc_matrix(X) if sparse else X,
                         "Y_all": np.array([[r["rating"]] for r in recs], dtype=float),
                         "keywords": kw}, do_compression=True)


def _blitzer(recs: list[dict]) -> bytes:
    out = ["<reviews>\n"]
    for r in recs:
        d = date.fromisoformat(r["date"])
        out.append(
            f"<review>\n<unique_id>\n{r['id']}\n</unique_id>\n<asin>\n{r['asin']}\n</asin>\n"
            f"<helpful>\n\n</helpful>\n<rating>\n{r['rating']:.1f}\n</rating>\n"
            f"<title>\n{html.escape(r['title'], quote=False)}\n</title>\n"
            f"<date>\n{d:%B} {d.day}, {d.year}\n</date>\n"
            f"<review_text>\n{html.escape(r['text'], quote=False)}\n</review_text>\n"
            "</review>\n")
    out.append("</reviews>\n")
    return "".join(out).encode("utf-8")


def _yelp_json(recs: list[dict]) -> bytes:
    lines = [json.dumps({"review_id": r["id"], "user_id": "u", "business_id": r["business_id"],
                         "stars": float(r["rating"]), "useful": 0, "funny": 0, "cool": 0,
                         "text": r["text"], "date": r["date"]}, separators=(",", ":"))
             for r in recs]
    return ("\n".join(lines) + "\n" + lines[0][:57]).encode("utf-8")    # cut off mid-record


@pytest.fixture(scope="module")
def upstream(tmp_path_factory) -> Path:
    """The original sources' layout (<owner>/<repo>/<commit>/<path>) rebuilt from shared/data."""
    if REAL is None:
        pytest.skip("real data directory not found")
    root = tmp_path_factory.mktemp("upstream")
    _put(root, F._SMART, (REAL / STOPWORDS_FILE).read_bytes())
    bow, voc, _ = PAPER_FILES["amazon"]
    _mat(root, F._AMAZON_MAT, _records(REAL / bow),
         json.loads((REAL / voc).read_text())["keywords"], sparse=True)
    bow, voc, _ = PAPER_FILES["yelp"]
    v = json.loads((REAL / voc).read_text())
    recs = _records(REAL / bow)
    _mat(root, F._YELP_MAT50, recs, v["keywords_min50"], sparse=False)
    _mat(root, F._YELP_MAT100, recs, v["keywords_min100"], sparse=True)
    recs = _records(REAL / RAW_FILES["amazon"])
    _put(root, F._BLITZER_POS, _blitzer([r for r in recs if r["polarity_file"] == "positive"]))
    _put(root, F._BLITZER_NEG, _blitzer([r for r in recs if r["polarity_file"] == "negative"]))
    _put(root, F._YELP_JSON, _yelp_json(_records(REAL / RAW_FILES["yelp"])))
    return root


@pytest.mark.slow
def test_convert_from_original_sources(tmp_path, upstream, paper_dataset):
    d = tmp_path / "data"
    res = fetch(d, upstream=str(upstream), progress=False)
    assert [r.status for r in res] == ["downloaded"] + ["converted"] * 6
    assert sorted(p.name for p in d.iterdir()) == sorted(MANIFEST)
    for spec in MANIFEST.values():
        assert F.verify((d / spec.name).read_bytes(), spec), spec.name
        if not spec.gzipped:                         # JSON and text: the very same bytes
            assert _sha(d / spec.name) == spec.sha256
        else:                                        # gzip: the same content
            assert gzip.decompress((d / spec.name).read_bytes()) == gzip.decompress(
                (REAL / spec.name).read_bytes())
    assert res[1].urls[0] == F._AMAZON_MAT.url(upstream.as_uri())
    a, a0 = load_dataset("amazon", d), paper_dataset("amazon")
    assert a.vocabulary == a0.vocabulary and np.array_equal(a.counts, a0.counts)
    # A second fetch finds everything in place.
    assert {r.status for r in fetch(d, upstream=str(upstream), progress=False)} == {"present"}


@needs_data
def test_changed_source_is_refused(tmp_path):
    # the one source converted here, rebuilt as `upstream` does, not all seven (a second)
    bad = tmp_path / "bad_upstream"
    data = _yelp_json(_records(REAL / RAW_FILES["yelp"]))
    _put(bad, F._YELP_JSON, data.replace(b'"stars":4.0', b'"stars":3.0', 1))
    d = tmp_path / "data"
    name = RAW_FILES["yelp"]
    with pytest.raises(ElicitError, match=rf"SHA-256 mismatch for {name} from the conversion "
                                          rf"of file://.*: expected "
                                          rf"{MANIFEST[name].content_sha256}"):
        fetch(d, files=[name], upstream=bad.as_uri(), progress=False)
    assert list(d.iterdir()) == []


def test_bad_matlab_sources(tmp_path):
    convert = F.MANIFEST[PAPER_FILES["amazon"][0]].convert
    with pytest.raises(ElicitError, match="Git LFS pointer"):
        convert([b"version https://git-lfs.github.com/spec/v1\noid sha256:x\n"])
    with pytest.raises(ElicitError, match="not a readable MATLAB file"):
        convert([b"not a mat file at all" * 10])
    p = tmp_path / "m.mat"
    scipy.io.savemat(p, {"X": np.ones((2, 2))})
    with pytest.raises(ElicitError, match=r"has no variable 'X_all' \(variables: \['X'\]\)"):
        convert([p.read_bytes()])
    kw = np.empty((1, 2), dtype=object)
    kw[0, :] = ["a", "b"]
    scipy.io.savemat(p, {"X_all": np.array([[1.5, 0]]), "Y_all": [[1.0]], "keywords": kw})
    with pytest.raises(ElicitError, match="non-negative integers"):
        convert([p.read_bytes()])
    scipy.io.savemat(p, {"X_all": np.array([[1.0, 0, 2]]), "Y_all": [[1.0]], "keywords": kw})
    with pytest.raises(ElicitError, match="do not fit together"):
        convert([p.read_bytes()])


def test_bad_review_sources():
    with pytest.raises(ElicitError, match="holds no <review> records"):
        F._convert_amazon_raw([b"<reviews></reviews>", b""])
    broken = b"<review>\n<unique_id>\nx\n</unique_id>\n<rating>\nfive\n</rating>\n</review>"
    with pytest.raises(ElicitError, match="review 1 is malformed"):
        F._convert_amazon_raw([broken, broken])
    with pytest.raises(ElicitError, match="line 1: not a Yelp review"):
        F._convert_yelp_raw([b'{"review_id": "a"}\n'])


# --------------------------------------------------------------------------------------------
# the data directory and the command line
# --------------------------------------------------------------------------------------------

def test_fetch_dir_order(tmp_path, monkeypatch):
    monkeypatch.setenv(DATA_ENV, str(tmp_path / "env"))
    assert fetch_dir(tmp_path / "opt") == tmp_path / "opt"
    assert fetch_dir() == tmp_path / "env"
    monkeypatch.delenv(DATA_ENV)
    repo = Path(F.__file__).resolve().parents[2]
    assert fetch_dir() == repo / "data"
    # an installed package: files.py in <site-packages>/elicit/data, no pyproject.toml beside
    monkeypatch.setattr(data_files, "__file__", str(tmp_path / "elicit" / "data" / "files.py"))
    with pytest.raises(ElicitError, match="not run from a source checkout"):
        fetch_dir()
    not_dir = tmp_path / "file"
    not_dir.write_text("")
    with pytest.raises(ElicitError, match="is not a directory"):
        fetch(not_dir, progress=False)


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="elicit")
    add_data_parsers(p.add_subparsers(dest="command", required=True))
    return p


def _run(argv: list[str]) -> None:
    args = _parser().parse_args(argv)
    DATA_COMMANDS[args.command](args)


def test_cli_fetch(tmp_path, monkeypatch, capsys):
    mirror = _mirror(tmp_path, [STOPWORDS_FILE], SHIPPED_STOPWORDS.parent)
    d = tmp_path / "data"
    _run(["data", "fetch", "--data-dir", str(d), "--files", STOPWORDS_FILE,
          "--mirror", mirror.as_uri()])
    out = capsys.readouterr()
    assert f"data directory {d}: 1 downloaded" in out.out and "SHA-256 verified" in out.err
    monkeypatch.setenv(DATA_ENV, str(d))                               # default: $ELICIT_DATA
    _run(["data", "fetch", "--files", STOPWORDS_FILE, "--quiet"])
    assert capsys.readouterr() == ("", "")
    _run(["data", "fetch", "--files", STOPWORDS_FILE, "--mirror", str(mirror), "--force"])
    assert "1 downloaded" in capsys.readouterr().out
    with pytest.raises(ElicitError, match="cannot download"):
        _run(["data", "fetch", "--data-dir", str(tmp_path / "e"), "--files", "raw", "--quiet"])
    with pytest.raises(ElicitError, match="unknown data file 'nope'; use a group"):
        _run(["data", "fetch", "--data-dir", str(tmp_path / "f"), "--files", "paper,nope"])
    assert not (tmp_path / "f").exists()  # refused before anything is made or downloaded
    with pytest.raises(SystemExit):
        _parser().parse_args(["data"])


def test_cli_every_option_has_help():
    sub = next(a for a in _parser()._actions if isinstance(a, argparse._SubParsersAction))
    data = sub.choices["data"]
    fetch_p = next(a for a in data._actions
                   if isinstance(a, argparse._SubParsersAction)).choices["fetch"]
    opts = [a for a in fetch_p._actions if a.option_strings and a.dest != "help"]
    assert {a.option_strings[0] for a in opts} == {
        "--data-dir", "--files", "--mirror", "--upstream", "--force", "--quiet"}
    assert all(a.help for a in opts)
