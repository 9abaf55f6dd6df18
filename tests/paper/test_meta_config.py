"""What a real-data sweep records about its meta-features."""

from __future__ import annotations

import json

import pytest

from elicit.errors import ElicitError


def one_line(message: str) -> str:
    assert "\n" not in message
    return message


def test_old_config_stays_valid_and_other_meta_features_are_refused(tmp_path):
    from elicit.harness.store import SweepStore
    from elicit.paper.configs import meta_config

    check_config = SweepStore.open

    old = {"dataset": "amazon", "data_dir": "/x", "seed": 0, "standardize": "model"}
    (tmp_path / "config.json").write_text(json.dumps(old))
    # A folder written before the meta-features were recorded used counts.
    check_config(tmp_path, {**old, **meta_config("counts", 10)})
    assert json.loads((tmp_path / "config.json").read_text())["meta_features"] == "counts"
    with pytest.raises(ElicitError, match=r"meta_features: 'counts' there, 'ppmi' now; "
                                          r"meta_dim: None there, 10 now\); use another") as info:
        check_config(tmp_path, {**old, **meta_config("ppmi", 10)})
    one_line(str(info.value))
    check_config(tmp_path / "new", {**old, **meta_config("ppmi", 10)})
    with pytest.raises(ElicitError, match=r"meta_dim: 10 there, 25 now"):
        check_config(tmp_path / "new", {**old, **meta_config("ppmi", 25)})


def test_meta_config_of_a_file_is_its_hash(tmp_path):
    from elicit.paper.configs import meta_config

    (tmp_path / "m.csv").write_text("keyword,a\nk0,1\n")
    cfg = meta_config(tmp_path / "m.csv", 10)
    assert cfg["meta_features"] == "file" and cfg["meta_dim"] is None
    assert len(cfg["meta_features_sha256"]) == 64
    assert meta_config("counts", 25) == {"meta_features": "counts", "meta_dim": None}
