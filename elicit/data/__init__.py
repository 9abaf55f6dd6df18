"""Data: find the data directory, load review corpora, build the features, split a run.

Two kinds of input end up as a :class:`BowDataset` (``docs/data.md``): the paper's exact
bag-of-words matrices, and raw-text reviews (shipped substitutes, or any JSONL/CSV file,
optionally gzipped: :func:`load_corpus`) counted by scikit-learn's ``CountVectorizer``.
:func:`prepare_run` makes one experimental run of a data set.

The modules: :mod:`~elicit.data.files` (the data directory, file names, record readers, stop
words, vocabularies), :mod:`~elicit.data.corpora` (:class:`BowDataset`, the feature rule,
loaders), :mod:`~elicit.data.splits` (split, standardisation, :class:`RunData`),
:mod:`~elicit.data.metafeatures` (the meta-features ``U``) and :mod:`elicit.data.fetch`
(``elicit data fetch``; not re-exported, so that the name stays the module). Every public
name of files, corpora and splits is re-exported here, and a few of metafeatures.
"""

from __future__ import annotations

from elicit.data.corpora import (
    PAPER_MIN_DF_FRACTION,
    TOKEN_PATTERN,
    BowDataset,
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

# To replace a name looked up at call time (as tests do), patch its module, not this package.

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
