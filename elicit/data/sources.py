"""Where a real-data run's reviews come from: the paper's matrices (:func:`paper_source`) or
a review file (:func:`corpus_source`), named in a few picklable fields so that worker
processes rebuild the data set themselves, once per process.
"""

from __future__ import annotations

import functools
import hashlib
import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from elicit.data.corpora import BowDataset, check_min_df, load_corpus, load_dataset
from elicit.data.files import PAPER_FILES, RAW_FILES, STOPWORDS_FILE, data_file, resolve_data_dir
from elicit.data.metafeatures import DEFAULT_META_DIM, EMBEDDINGS, PPMI_ARRAYS
from elicit.data.splits import RunData, check_standardize, prepare_run
from elicit.errors import ElicitError

DATASETS: tuple[str, ...] = tuple(PAPER_FILES)

#: Reviews a run takes for the model (100 training + 900 test, :func:`elicit.data.prepare_run`).
N_MODEL, N_TRAIN = 1000, 100
#: The fewest expert-set reviews a corpus must leave for the simulated LASSO expert: below
#: this a LASSO on a few hundred keywords has too little data to name 40 of them.
MIN_EXPERT_REVIEWS = 100

# Safe as a folder name and as a CSV cell: no path separators, no commas or quotes.
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")


@dataclass(frozen=True)
class DataSource:
    """The reviews of a real-data sweep (picklable; hashable, so it keys the cache): the
    paper's matrix in ``data_dir`` or a ``corpus`` file (``min_df`` None: scaled to it; its
    stop list checked in ``data_dir``), by absolute paths."""

    name: str
    data_dir: str | None = None
    corpus: str | None = None
    text_field: str = "text"
    rating_field: str = "rating"
    min_df: int | None = None

    def load(self) -> BowDataset:
        """The bag-of-words data set, loaded once per process (about a second per load)."""
        return _load(self)

    def run(self, seed: int, run: int, standardize: str = "model",
            meta_features: str | os.PathLike = "counts",
            meta_dim: int = DEFAULT_META_DIM) -> RunData:
        """Run ``run`` of seed ``seed`` (:func:`elicit.data.prepare_run`)."""
        return prepare_run(self.load(), split_seed(seed, run), n_model=N_MODEL, n_train=N_TRAIN,
                           standardize=check_standardize(standardize),
                           meta_features=meta_features, meta_dim=meta_dim)

    def check_keywords(self, check: Callable[..., None], meta_features: object,
                       meta_dim: int | None, run: RunData | None = None) -> None:
        """The keywords before a run is built (a file of meta-features: d = 1), or a built ``run``,
        through ``check`` (the model's memory check, passed in: data and model share a layer)."""
        d = N_TRAIN if meta_features == "counts" else meta_dim if meta_features in EMBEDDINGS else 1
        d, X = (d, None) if run is None else (run.U.shape[1], run.X_train)
        check(N_TRAIN, self.load().p, d, X, fewer=self.load().min_df_keeping, noun="keywords",
              also=PPMI_ARRAYS if meta_features == "ppmi" else 0)

    def config(self) -> dict:
        """What a sweep's ``config.json`` records about its data (a corpus with its
        SHA-256, so another file under the same name is refused rather than mixed in)."""
        if self.corpus is None:
            return {"dataset": self.name, "data_dir": self.data_dir}
        return {"dataset": self.name, "corpus": self.corpus,
                "corpus_sha256": file_sha256(self.corpus), "text_field": self.text_field,
                "rating_field": self.rating_field, "min_df": self.min_df}


@functools.cache
def _load(src: DataSource) -> BowDataset:
    if src.corpus is None:
        return load_dataset(src.name, src.data_dir)

    def refuse(texts: list[str], ratings: list[int]) -> None:  # before the keywords are counted
        if len(texts) - N_MODEL < MIN_EXPERT_REVIEWS:
            raise ElicitError(
                f"{src.corpus} has {len(texts)} reviews: a run, as a sweep splits the corpus, "
                f"takes {N_MODEL} for the model and sets at least {MIN_EXPERT_REVIEWS} aside for "
                f"a sweep's simulated expert; use a corpus of at least "
                f"{N_MODEL + MIN_EXPERT_REVIEWS} reviews")
        if len(set(ratings)) < 2:
            raise ElicitError(f"{src.corpus}: every rating is {ratings[0]}; a model of the "
                              "rating needs at least 2 different ones (is --rating-field the "
                              "rating?)")

    return load_corpus(src.corpus, text_field=src.text_field, rating_field=src.rating_field,
                       min_df=src.min_df, n_model=None, name=src.name, data_dir=src.data_dir,
                       check=refuse)


def split_seed(seed: int, run: int) -> int:
    """The integer seed of run ``run``'s split under the sweep seed ``seed``."""
    return int(np.random.SeedSequence([int(seed), int(run)]).generate_state(1)[0])


def file_sha256(path: str | os.PathLike) -> str:
    """The SHA-256 of a file's bytes (identifies a corpus in ``config.json``)."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def paper_source(dataset: str, data_dir: str | os.PathLike | None = None) -> DataSource:
    """The paper's matrix ``dataset`` from a data directory, resolved here in the parent
    process so every worker reads the same files."""
    if dataset not in DATASETS:
        raise ElicitError(f"unknown data set {dataset!r}: use one of {', '.join(DATASETS)} "
                          "(or --corpus FILE for a review file of your own)")
    rec, voc, _ = PAPER_FILES[dataset]
    ddir = resolve_data_dir(data_dir, required=[rec, voc, STOPWORDS_FILE]).resolve()
    return DataSource(dataset, data_dir=str(ddir))


def corpus_name(path: str | os.PathLike, name: str | None = None) -> str:
    """The label of a corpus: ``name``, or the file name without its suffixes; an error
    unless a plain name (letters, digits, ``_ . -``) other than the paper's data sets."""
    label = name if name is not None else Path(path).name.split(".")[0]
    what = "--name" if name is not None else f"the file name of {path}"
    if not _NAME.match(label or ""):
        raise ElicitError(f"{what} gives the data set label {label!r}; a label holds letters, "
                          "digits, '_', '.' and '-' only: give one with --name")
    if label in DATASETS:
        raise ElicitError(f"{what} gives the data set label {label!r}, reserved for the "
                          "paper's matrix: give another one with --name")
    return label


def corpus_source(path: str | os.PathLike, text_field: str = "text",
                  rating_field: str = "rating", min_df: int | None = None,
                  name: str | None = None,
                  data_dir: str | os.PathLike | None = None) -> DataSource:
    """A review file (:func:`elicit.data.load_corpus`) as the data of a real-data sweep,
    labelled ``name`` (default: the file's stem), its stop list checked in ``data_dir``."""
    p = Path(path)
    if not p.is_file():
        raise ElicitError(f"review file {p} not found")
    min_df = None if min_df is None else check_min_df(min_df)
    for fld, what in ((text_field, "text field"), (rating_field, "rating field")):
        if not isinstance(fld, str) or not fld:
            raise ElicitError(f"the {what} must be a non-empty name, got {fld!r}")
    return DataSource(corpus_name(p, name), corpus=str(p.resolve()), text_field=text_field,
                      rating_field=rating_field, min_df=min_df,
                      data_dir=None if data_dir is None else str(data_dir))


def make_source(dataset: str | None = None, corpus: str | os.PathLike | None = None, *,
                data_dir: str | os.PathLike | None = None, text_field: str | None = None,
                rating_field: str | None = None, min_df: int | None = None,
                name: str | None = None) -> DataSource:
    """The source of ``elicit realdata``'s options: ``--dataset`` or ``--corpus``, not both
    (an option of the other one is refused rather than silently ignored)."""
    if (dataset is None) == (corpus is None):
        raise ElicitError("give either --dataset (the paper's amazon/yelp matrices) or "
                          "--corpus FILE (a review file), not both")
    if dataset is not None:
        given = [o for o, v in (("--text-field", text_field), ("--rating-field", rating_field),
                                ("--min-df", min_df), ("--name", name)) if v is not None]
        if given:
            raise ElicitError(f"{given[0]} applies to --corpus only, not to --dataset")
        return paper_source(dataset, data_dir)
    assert corpus is not None   # its stop list is checked in data_dir, as $ELICIT_DATA's
    return corpus_source(corpus, "text" if text_field is None else text_field,
                         "rating" if rating_field is None else rating_field, min_df, name,
                         data_dir)


def source_from_config(cfg: dict, data_dir: str | os.PathLike | None = None) -> DataSource:
    """The source a sweep's ``config.json`` recorded (``data_dir`` overrides a paper
    sweep's data directory; a corpus must still be where it was, with the same content)."""
    if cfg.get("corpus") is None:
        # a recorded directory that is gone (the folder copied elsewhere): $ELICIT_DATA, ...
        recorded = cfg.get("data_dir") if Path(cfg.get("data_dir") or "").is_dir() else None
        return paper_source(cfg["dataset"], recorded if data_dir is None else data_dir)
    src = DataSource(cfg["dataset"], corpus=cfg["corpus"], text_field=cfg["text_field"],
                     rating_field=cfg["rating_field"], min_df=cfg.get("min_df"))
    if not Path(cfg["corpus"]).is_file():
        raise ElicitError(f"the sweep's corpus {cfg['corpus']} is no longer there; put it "
                          "back (table1 rebuilds the runs from it)")
    if file_sha256(cfg["corpus"]) != cfg.get("corpus_sha256"):
        raise ElicitError(f"{cfg['corpus']} changed since the sweep ran (its SHA-256 differs); "
                          "rerun the sweep into a new folder")
    return src


def shipped_corpus(which: str = "amazon", data_dir: str | os.PathLike | None = None) -> Path:
    """The shipped raw-text review file (``"amazon"``: 2000 kitchen reviews; ``"yelp"``)."""
    if which not in RAW_FILES:
        raise ElicitError(f"no shipped corpus {which!r}: use one of {', '.join(RAW_FILES)}")
    return data_file(RAW_FILES[which], data_dir)
