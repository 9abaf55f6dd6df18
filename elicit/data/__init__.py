"""Data: find the data directory, load review corpora, build the features, split a run
(``docs/data.md``). The names used from the package are re-exported here; not
:mod:`elicit.data.fetch`'s, so that the name stays the module.
"""

from __future__ import annotations

from elicit.data.corpora import (
    BowDataset,
    default_min_df,
    load_bow,
    load_corpus,
    load_dataset,
    load_paper_bow,
    load_raw_reviews,
    select_features,
    vectorize_texts,
)
from elicit.data.files import (
    DATA_ENV,
    PAPER_FILES,
    RAW_FILES,
    SHIPPED_STOPWORDS,
    STOPWORDS_FILE,
    default_data_dirs,
    load_stopwords,
    read_records,
    resolve_data_dir,
)
from elicit.data.metafeatures import polarity_auc
from elicit.data.splits import (
    STANDARDIZE_CHOICES,
    RunData,
    prepare_run,
    split_indices,
    standardise,
)

# To replace a name looked up at call time (as tests do), patch its module, not this package.

__all__ = [
    "BowDataset",
    "DATA_ENV",
    "PAPER_FILES",
    "RAW_FILES",
    "RunData",
    "SHIPPED_STOPWORDS",
    "STANDARDIZE_CHOICES",
    "STOPWORDS_FILE",
    "default_data_dirs",
    "default_min_df",
    "load_bow",
    "load_corpus",
    "load_dataset",
    "load_paper_bow",
    "load_raw_reviews",
    "load_stopwords",
    "polarity_auc",
    "prepare_run",
    "read_records",
    "resolve_data_dir",
    "select_features",
    "split_indices",
    "standardise",
    "vectorize_texts",
]
