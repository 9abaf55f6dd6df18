"""What a real-data sweep records about its meta-features."""

from __future__ import annotations

import json

import pytest
from helpers import one_line

from elicit.errors import ElicitError

# the sweeps here are read by their tables: figures drawn, not saved (conftest)
pytestmark = pytest.mark.usefixtures("unsaved_figures")


def test_old_config_stays_valid_and_other_meta_features_are_refused(tmp_path):
    from elicit.harness.store import SweepStore
    from elicit.paper.configs import meta_config

    check_config = SweepStore.open

    old = {"dataset": "amazon", "data_dir": "/x", "seed": 0, "standardize": "model"}
    (tmp_path / "config.json").write_text(json.dumps(old))
    part = "parts/run000.json"   # a folder with a result: else a failed start's, replaced
    (tmp_path / "parts").mkdir()
    (tmp_path / part).write_text("{}")
    # A folder written before the meta-features were recorded used counts.
    check_config(tmp_path, {**old, **meta_config("counts", 10)})
    assert json.loads((tmp_path / "config.json").read_text())["meta_features"] == "counts"
    with pytest.raises(ElicitError, match=r"meta_features: 'counts' there, 'ppmi' now; "
                                          r"meta_dim: None there, 10 now\); use another") as info:
        check_config(tmp_path, {**old, **meta_config("ppmi", 10)})
    one_line(str(info.value))
    check_config(tmp_path / "new", {**old, **meta_config("ppmi", 10)})
    (tmp_path / "new" / "parts").mkdir()
    (tmp_path / "new" / part).write_text("{}")
    with pytest.raises(ElicitError, match=r"meta_dim: 10 there, 25 now"):
        check_config(tmp_path / "new", {**old, **meta_config("ppmi", 25)})


def test_meta_config_of_a_file_is_its_hash(tmp_path):
    from elicit.paper.configs import meta_config

    (tmp_path / "m.csv").write_text("keyword,a\nk0,1\n")
    cfg = meta_config(tmp_path / "m.csv", 10)
    assert cfg["meta_features"] == "file" and cfg["meta_dim"] is None
    assert len(cfg["meta_features_sha256"]) == 64
    assert meta_config("counts", 25) == {"meta_features": "counts", "meta_dim": None}


def test_realdata_meta_features_default_to_ppmi_10_and_paper_to_counts(tmp_path):
    """elicit realdata's meta-features: PPMI-10 by default, the paper's counts with --paper
    (unless others are given), on the command line and in Python."""
    from elicit.cli.argtypes import sweep_meta_options
    from elicit.cli.main import build_parser
    from elicit.data.sources import corpus_source
    from elicit.paper.configs import RealDataConfig

    corpus = tmp_path / "c.csv"
    corpus.write_text("text,rating\ngood,5\n")
    src = corpus_source(corpus)
    for given, paper, want in [((None, None), False, ("ppmi", 10)),
                               ((None, None), True, ("counts", None)),
                               ((None, 25), False, ("ppmi", 25)),
                               (("lsa", None), True, ("lsa", 10)),
                               (("counts", None), False, ("counts", None))]:
        cfg = RealDataConfig(src, meta_features=given[0], meta_dim=given[1], paper=paper)
        rec = cfg.to_json()
        assert (rec["meta_features"], rec["meta_dim"]) == want, (given, paper)
        back = RealDataConfig.from_json(rec)
        assert back.to_json() == rec
    with pytest.raises(ElicitError, match="--meta-dim goes with --meta-features ppmi or lsa"):
        RealDataConfig(src, meta_dim=5, paper=True)
    args = build_parser().parse_args(["realdata", "--dataset", "amazon", "--out", "x"])
    assert sweep_meta_options(args.meta_features, args.meta_dim) == (None, None)
    assert sweep_meta_options(None, "25") == (None, 25)
    assert sweep_meta_options("ppmi", None) == ("ppmi", 10)
