"""Data: find the data directory, load review corpora, build the features, split a run.

Two kinds of input are supported (see ``docs/data.md``):

* the paper's exact bag-of-words matrices (``*_paper_bow_*.jsonl.gz`` + a vocabulary JSON):
  one JSON object per review with an integer ``rating`` and a ``bow`` dict keyword -> count;
* raw-text reviews (the shipped substitutes, or any user JSONL/CSV file, optionally gzipped,
  with text and rating fields named by the user: :func:`load_corpus`); they are turned into
  counts with scikit-learn's :class:`~sklearn.feature_extraction.text.CountVectorizer`.

Both end up as a :class:`BowDataset`. The feature rule (:func:`select_features`) is the paper's:
drop keywords whose tokens are all SMART stop words (the list ships with elicit) and keep
keywords that occur in at least ``min_df`` reviews. :func:`prepare_run` then makes one
experimental run: the 100/900 train/test split of 1000 random reviews, the remaining reviews
as the expert set, standardisation (by default with the statistics of all 1000 model reviews'
inputs, ``standardize="model"``; ``"train"`` uses the 100 training reviews only) and the
meta-features ``U`` (the transposed raw training counts).

The package is split by job:

* :mod:`elicit.data.files`: the data directory, the paper's file names, record readers,
  rating parsing, stop words, vocabularies;
* :mod:`elicit.data.corpora`: :class:`BowDataset`, the feature rule, the paper's matrices,
  raw-text vectorisation, :func:`load_corpus`;
* :mod:`elicit.data.splits`: split indices, standardisation, :class:`RunData`,
  :func:`prepare_run`;
* :mod:`elicit.data.metafeatures`: the meta-features ``U`` of a run (the paper's training
  counts, PPMI or LSA embeddings of the unlabelled reviews, a file) and their polarity AUC;
* :mod:`elicit.data.fetch`: the manifest of the data files and ``fetch`` (``elicit data
  fetch``), which downloads them; import it from there (it is not re-exported here, so that
  the name ``elicit.data.fetch`` stays the module).

Every public name of the first three is re-exported here, so ``from elicit.data import X``
works for all of them.
"""

from __future__ import annotations

from elicit.data.corpora import (
    PAPER_MIN_DF_FRACTION,
    TOKEN_PATTERN,
    BowDataset,
    TextDataset,
    default_min_df,
    is_stopword_keyword,
    keyword_tokens,
    load_bow,
    load_corpus,
    load_dataset,
    load_paper_bow,
    load_raw_reviews,
    read_reviews,
    select_features,
    vectorize_texts,
)
from elicit.data.files import (
    DATA_ENV,
    DATA_SOURCE_HINT,
    PAPER_FILES,
    RAW_FILES,
    SHIPPED_STOPWORDS,
    STOPWORDS_FILE,
    DatasetName,
    data_file,
    default_data_dirs,
    load_stopwords,
    load_vocabulary,
    parse_rating,
    read_csv_records,
    read_jsonl,
    read_records,
    resolve_data_dir,
)
from elicit.data.metafeatures import (
    DEFAULT_META_DIM,
    META_FEATURES,
    TYPICAL_SQ_DISTANCE,
    meta_features,
    polarity_auc,
)
from elicit.data.splits import (
    STANDARDIZE_CHOICES,
    RunData,
    Standardize,
    prepare_run,
    split_indices,
    standardise,
)

# Code that looks a name up at call time does so in the module that defines it: to replace
# ``default_data_dirs`` (as tests do), patch ``elicit.data.files``, not this package.

__all__ = [
    "BowDataset",
    "DATA_ENV",
    "DEFAULT_META_DIM",
    "DATA_SOURCE_HINT",
    "DatasetName",
    "META_FEATURES",
    "PAPER_FILES",
    "PAPER_MIN_DF_FRACTION",
    "RAW_FILES",
    "RunData",
    "SHIPPED_STOPWORDS",
    "STANDARDIZE_CHOICES",
    "STOPWORDS_FILE",
    "Standardize",
    "TOKEN_PATTERN",
    "TYPICAL_SQ_DISTANCE",
    "TextDataset",
    "data_file",
    "default_data_dirs",
    "default_min_df",
    "is_stopword_keyword",
    "keyword_tokens",
    "load_bow",
    "load_corpus",
    "load_dataset",
    "load_paper_bow",
    "load_raw_reviews",
    "load_stopwords",
    "load_vocabulary",
    "meta_features",
    "parse_rating",
    "polarity_auc",
    "prepare_run",
    "read_csv_records",
    "read_jsonl",
    "read_records",
    "read_reviews",
    "resolve_data_dir",
    "select_features",
    "split_indices",
    "standardise",
    "vectorize_texts",
]
