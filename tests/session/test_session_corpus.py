"""``elicit session new --corpus``: a session on any review corpus."""

from __future__ import annotations

import functools
import json

import numpy as np
import pytest
from helpers import check_data_dir_as_elicit_data, files_opened

from elicit.cli.main import main
from elicit.session.session import Session

# the sweeps here are read by their tables: figures drawn, not saved (conftest)
pytestmark = pytest.mark.usefixtures("unsaved_figures")

GOOD = ["great", "excellent", "love", "perfect", "sturdy"]
BAD = ["broken", "awful", "refund", "flimsy", "disappointed"]
FILLER = ["kettle", "handle", "lid", "water", "price", "box", "colour", "size"]


def _corpus(path, n: int = 1200, seed: int = 0) -> None:
    with open(path, "w") as fh:
        fh.write(_corpus_text(n, seed))


@functools.lru_cache(maxsize=4)
def _corpus_text(n: int, seed: int) -> str:
    """:func:`_corpus`'s lines, drawn once per process for each size (drawing them word by
    word costs 0.06 s, and seven tests write one of two sizes)."""
    rng = np.random.default_rng(seed)
    lines = []
    for _ in range(n):
        good, bad = rng.integers(0, 3), rng.integers(0, 3)
        words = list(rng.choice(GOOD, good)) + list(rng.choice(BAD, bad)) \
            + list(rng.choice(FILLER, 6))
        rng.shuffle(words)
        stars = int(np.clip(3 + good - bad + rng.integers(-1, 2), 1, 5))
        lines.append(json.dumps({"body": " ".join(words), "stars": stars}) + "\n")
    return "".join(lines)


def test_a_session_on_a_corpus_with_its_own_field_names(tmp_path, capsys):
    corpus = tmp_path / "kettles.jsonl"
    _corpus(corpus)
    out = tmp_path / "k.session"
    assert main(["session", "new", "--corpus", str(corpus), "--text-field", "body",
                 "--rating-field", "stars", "--min-df", "20", "--out", str(out),
                 "--engine", "numpy"]) == 0
    printed = capsys.readouterr().out
    with Session.open(out) as s:
        assert s.X.shape[0] == 100
        assert {"great", "broken", "kettle"} <= set(s.feature_names)
        assert f"{len(s.feature_names)} features" in printed
        assert "kettles.jsonl" in s.description and "seed 0, run 0" in s.description
        # the snippets come from the corpus itself
        assert any("great" in t for t in s.texts("great"))
        assert s.settings["pool_size"] == 400


def test_a_corpus_is_read_once_for_a_session(tmp_path):
    """`session new --corpus F` read F for the keywords, then all of it again for the
    snippets."""
    from elicit.session.loaders import corpus_inputs

    corpus = tmp_path / "kettles.jsonl"
    words = [*GOOD, *BAD, *FILLER]
    corpus.write_text("".join(json.dumps({"body": f"{words[k % 18]} {words[k % 7]} kettle",
                                          "stars": 1 + k % 5}) + "\n" for k in range(1100)))
    with files_opened() as opened:
        inputs = corpus_inputs(corpus, text_field="body", rating_field="stars", min_df=20)
    assert opened.count(corpus) == 1
    great = inputs["feature_names"].index("great")
    assert inputs["texts"][great] and all("great" in t for t in inputs["texts"][great])


def test_a_snippet_shows_the_characters_an_html_entity_stands_for():
    # the keyword fish_chips, counted in "fish &amp; chips" decoded, had no snippet there,
    # and a snippet showed "&quot;" to the expert
    from elicit.session.loaders import keyword_snippets

    texts = ["I had &quot;fish &amp; chips&quot;", "fish and chips"]
    assert keyword_snippets(["fish_chips", "had"], texts) == [['I had "fish & chips"'],
                                                               ['I had "fish & chips"']]


def test_a_snippet_holds_its_keyword_where_lower_casing_lengthens_the_text():
    # "İ".lower() is two characters: the keyword's place in the lower-cased text, used on the
    # text itself, cut a snippet 80 characters off, "…cuts", without the keyword
    from elicit.session.loaders import highlight, keyword_snippets

    text = "İ" * 80 + " a sharp knife that cuts"
    [[snippet]] = keyword_snippets(["knife"], [text])
    assert ("knife", True) in highlight("knife", snippet)


def test_a_corpus_sessions_run_is_the_sweeps_run(tmp_path):
    """--corpus F --run R --seed S takes run R of a sweep on F with seed S."""
    from elicit.data.sources import corpus_source

    corpus = tmp_path / "kettles.jsonl"
    _corpus(corpus)
    out = tmp_path / "k.session"
    assert main(["session", "new", "--corpus", str(corpus), "--text-field", "body",
                 "--rating-field", "stars", "--min-df", "20", "--run", "2", "--seed", "5",
                 "--out", str(out), "--engine", "numpy"]) == 0
    run = corpus_source(corpus, "body", "stars", 20).run(5, 2)
    with Session.open(out) as s:
        np.testing.assert_array_equal(s.X, run.X_train)
        assert s.feature_names == run.feature_names
        assert "seed 5, run 2" in s.description and s.settings["seed"] == 5


def test_corpus_options_and_errors_are_one_line(tmp_path, capsys):
    corpus = tmp_path / "kettles.jsonl"
    _corpus(corpus, n=1100)
    assert main(["session", "new", "--corpus", str(corpus), "--out",
                 str(tmp_path / "a.session")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0
    assert "no field 'text'; the fields are 'body', 'stars'" in err
    assert main(["session", "new", "--dataset", "amazon", "--rating-field", "stars", "--out",
                 str(tmp_path / "b.session")]) == 2
    assert "--rating-field go(es) with --corpus FILE only" in capsys.readouterr().err


@pytest.mark.parametrize("n", [300])
def test_a_corpus_too_small_for_a_run_is_refused(tmp_path, capsys, n):
    corpus = tmp_path / "small.jsonl"
    _corpus(corpus, n=n)
    assert main(["session", "new", "--corpus", str(corpus), "--text-field", "body",
                 "--rating-field", "stars", "--out", str(tmp_path / "s.session")]) == 2
    assert f"{n} reviews" in capsys.readouterr().err


def test_data_dir_with_a_corpus_is_the_choice_elicit_data_makes(tmp_path, capsys, monkeypatch):
    """--data-dir DIR beside --corpus is where the corpus's stop list is checked, as with
    $ELICIT_DATA=DIR: a missing DIR, or a stop list there other than the shipped one, is the
    same one-line error either way; an existing DIR without a stop list is taken."""
    corpus = tmp_path / "kettles.jsonl"
    _corpus(corpus, n=1100)
    args = ["session", "new", "--corpus", str(corpus), "--text-field", "body", "--rating-field",
            "stars", "--min-df", "20", "--engine", "numpy", "--overwrite"]

    def run(out, data_dir):
        return main([*args, "--out", str(out.with_suffix(".session")),
                     *([] if data_dir is None else ["--data-dir", str(data_dir)])])

    check_data_dir_as_elicit_data(run, tmp_path, capsys, monkeypatch)


def test_too_high_a_min_df_names_a_value_that_works(tmp_path, capsys):
    """--min-df leaving no keyword, or only one, is refused naming --min-df N (as the option
    is spelt), N the largest value that keeps the 2 keywords a question compares."""
    import re

    corpus = tmp_path / "kettles.jsonl"
    _corpus(corpus, n=1100)
    args = ["session", "new", "--corpus", str(corpus), "--text-field", "body", "--rating-field",
            "stars", "--engine", "numpy", "--overwrite", "--out", str(tmp_path / "k.session")]
    assert main([*args, "--min-df", "1100"]) == 2
    err = capsys.readouterr().err
    m = re.search(r"use --min-df (\d+) or lower", err)
    assert m and err.count("\n") == 1 and "min_df" not in err, err
    best = int(m.group(1))
    assert main([*args, "--min-df", str(best + 1)]) == 2
    assert f"use --min-df {best} or lower" in capsys.readouterr().err
    assert main([*args, "--min-df", str(best)]) == 0


def test_too_many_keywords_for_the_memory_are_refused_as_soon_as_they_are_counted(
        tmp_path, capsys, monkeypatch):
    """--min-df 1 on the 2000 kitchen reviews keeps 77,778 keywords: `session new` and
    `realdata` printed nothing for 2 minutes (standardisation, meta-features, pair counting),
    then ended in a numpy MemoryError traceback under a 4 GB limit, before the model's memory
    check. Here machines of 64 and 16 MiB and a corpus of 339 n-grams: refused in one line
    before the run's inputs are built, naming the --min-df that fits."""
    import re

    import elicit.data.sources as sources_mod
    import elicit.model.spec as spec_mod
    from elicit.data import load_corpus
    from elicit.session.loaders import corpus_inputs

    corpus = tmp_path / "kettles.jsonl"
    _corpus(corpus, n=1100)
    args = ["session", "new", "--corpus", str(corpus), "--text-field", "body", "--rating-field",
            "stars", "--engine", "numpy", "--out", str(tmp_path / "k.session")]
    real = sources_mod.prepare_run

    def no_run(*a, **k):  # the run's standardisation and meta-features come after the check
        raise AssertionError("the run was built before the keywords were checked")

    monkeypatch.setattr(sources_mod, "prepare_run", no_run)
    fits = []
    # a session's meta-features are its 100 training counts (p x p arrays of d = 100), a
    # sweep's a PPMI-10 embedding: 64 and 16 MiB
    for argv, mib in ((args, 64), (["realdata", *args[2:8], "--out", str(tmp_path / "sweep")], 16)):
        monkeypatch.setattr(spec_mod, "memory_limit", lambda mib=mib: mib * 2.0**20)
        assert main([*argv, "--min-df", "1"]) == 2
        err = capsys.readouterr().err
        m = re.search(r"^elicit: error: ([0-9,]+) keywords are too many for this machine \(.*"
                      r"GiB.*\): use --min-df (\d+) or higher \(keeps ([0-9,]+) keywords\)\n$",
                      err)
        assert m, err
        p, k, kept = (int(g.replace(",", "")) for g in m.groups())
        assert p == load_corpus(corpus, "body", "stars", min_df=1, n_model=None).p
        assert kept < p and load_corpus(corpus, "body", "stars", min_df=k, n_model=None).p == kept
        fits.append(k)
    assert not (tmp_path / "k.session").exists() and not (tmp_path / "sweep").exists()
    # the session's --min-df K passes the model's own check on the run's inputs (a session made
    # of them costs 0.7 s more)
    monkeypatch.setattr(sources_mod, "prepare_run", real)
    monkeypatch.setattr(spec_mod, "memory_limit", lambda: 64 * 2.0**20)
    inputs = corpus_inputs(corpus, text_field="body", rating_field="stars", min_df=fits[0])
    spec_mod.validate_regression(inputs["X"], inputs["y"], inputs["meta_features"])
