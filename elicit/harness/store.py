"""A sweep's results folder (its files: ``docs/simulations.md``, ``docs/realdata.md``), which
owns the settings its results were made with: records are reused by where they lie alone, so
a rerun with other settings is refused rather than mixed in. A rerun of other code is not
refused: each record names the code that made it (:func:`made_by` lists them).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Mapping
from pathlib import Path

from elicit.elicitation.kinds import PAPER_QUESTIONS, spell_questions
from elicit.errors import ElicitError
from elicit.internal.io import write_json_atomic
from elicit.internal.locks import hold_folder
from elicit.internal.provenance import code_version

CONFIG_FILE = "config.json"
PARTS = "parts"

#: Settings that config.json files written before they existed lack, and the value those
#: sweeps used: an old folder stays valid for a rerun with these values (``strategy``: none, a
#: sweep runs several; ``pool_size``: none, each problem's own, where a real-data sweep has
#: always recorded its; ``stan_file``: the shipped programs).
LEGACY_CONFIG: dict[str, object] = {"meta_features": "counts", "meta_dim": None,
                                     "model": "paper", "utility_target": "predictive",
                                     "questions": spell_questions(PAPER_QUESTIONS),
                                     "pool": "paper", "irrelevant": 0, "strategy": None,
                                     "pool_size": None, "stan_file": None,
                                     "stan_file_sha256": None, "tau2_again": []}
#: Paths that may differ between reruns (the same files can be found elsewhere; a corpus, a
#: meta-features file, a Stan program or a folder of problems is compared by its content hash).
PATH_KEYS = ("data_dir", "corpus", "meta_features_file", "problems", "stan_file")


def settings_difference(old: Mapping[str, object], new: Mapping[str, object]) -> str:
    """``"k: a there, b now; ..."`` for every setting of ``new`` that ``old`` records
    otherwise (paths excepted; a key ``old`` lacks counts as its :data:`LEGACY_CONFIG`
    value); empty when they agree."""
    def was(k: str) -> object:
        return old.get(k, LEGACY_CONFIG.get(k, "not recorded"))

    return "; ".join(f"{k}: {was(k)!r} there, {v!r} now" for k, v in new.items()
                     if k not in PATH_KEYS and was(k) != v)


class SweepStore:
    """The results folder of one sweep, its ``settings`` (as in ``config.json``) and its
    records: :meth:`open` one to write, :meth:`find` one to read a finished sweep."""

    def __init__(self, folder: Path, settings: Mapping[str, object]) -> None:
        # Use open() or find(): a store made here has not checked its folder.
        self.folder = Path(folder)
        self.settings = dict(settings)

    @classmethod
    def open(cls, folder: str | Path, settings: Mapping[str, object]) -> SweepStore:
        """The store of ``folder`` for a sweep with ``settings`` (JSON-able), written to
        ``config.json`` with this call's ``"code"`` (no setting); an :class:`ElicitError` if the
        folder holds records of other settings (naming each one), or records and no config."""
        folder = Path(folder)
        path = folder / CONFIG_FILE
        folder.mkdir(parents=True, exist_ok=True)
        if not hold_folder(folder):  # else each call's parts end up under the other's config
            raise ElicitError(f"another call is writing into {folder}; wait for it to end or "
                              "use another output folder (--out)")
        # as config.json will hold them (a tuple as a list), so that a rerun compares equal
        settings = json.loads(json.dumps(dict(settings)))
        held = any((folder / PARTS).rglob("*.json"))
        if not path.exists() and held:
            raise ElicitError(f"{folder} holds sweep parts but no {CONFIG_FILE}, so their "
                              f"settings are unknown; delete {folder / PARTS} or use another "
                              "output folder (--out)")
        # no part: config.json is a failed start's, and the corrected rerun takes the folder
        if held and (diff := settings_difference(_read_config(path), settings)):
            raise ElicitError(f"{folder} holds results of other settings ({diff}); use "
                              "another output folder (--out) or delete this one")
        write_json_atomic(path, {**settings, "code": code_version()}, indent=1)
        return cls(folder, settings)

    @classmethod
    def find(cls, folder: str | Path) -> SweepStore | None:
        """The store of the sweep in ``folder`` (its recorded settings); None: no config.json."""
        path = Path(folder) / CONFIG_FILE
        return cls(Path(folder), _read_config(path)) if path.exists() else None

    def part_path(self, dataset: str, strategy: str, run: int) -> Path:
        """Run ``run`` of query strategy ``strategy``: its MSE curve, questions, answers."""
        return self.folder / PARTS / dataset / strategy / f"run{run:03d}.json"

    def runinfo_path(self, dataset: str, run: int) -> Path:
        """Run ``run``'s reference record (baselines, reference lines, tau2 CV)."""
        return self.part_path(dataset, "runinfo", run)

    def samples_path(self, method: str, run: int) -> Path:
        """Run ``run``'s Table 1 sample curve of ``method`` (in ``table1/`` beside the sweep)."""
        return (self.folder.parent / "table1" / PARTS / self.folder.name / method
                / f"run{run:03d}.json")

    @staticmethod
    def save(path: Path, record: Mapping[str, object]) -> None:
        """Write the record at ``path`` with the code that made it, in the process that did
        (``"code"``: :func:`~elicit.internal.provenance.code_version`)."""
        write_json_atomic(path, {**record, "code": code_version()})

    @staticmethod
    def load(path: Path) -> dict | None:
        """The record at ``path``, or None if there is none."""
        return _read_json(path, "delete it and run the command again: it is computed again") \
            if path.exists() else None

    def need(self, path: Path, what: str) -> dict:
        """The record at ``path``, which a finished sweep holds (an :class:`ElicitError` naming
        ``what`` if it is missing)."""
        if (record := self.load(path)) is None:
            raise ElicitError(f"{self.folder} has no {what}; run the sweep first")
        return record

    def missing(self, paths: Mapping[str, Path],
                current: Callable[[dict], bool] | None = None) -> tuple[str, ...]:
        """The keys of ``paths`` whose record is missing or, by ``current``, out of date."""
        return tuple(key for key, path in paths.items()
                     if (record := self.load(path)) is None
                     or (current is not None and not current(record)))


def made_by(folder: str | Path, by: str | None = None) -> str:
    """"Made by commit `by`." (default: :func:`~elicit.internal.provenance.code_version`) if
    every record (:meth:`SweepStore.save`) in ``parts/`` of ``folder`` or of a folder in it
    names that code, else each version and its records (`unknown`: from before they named it)."""
    by = by or code_version()
    made = Counter(str(_read_json(p, "delete it and run the command again").get("code", "unknown"))
                   for pattern in (PARTS, f"*/{PARTS}")  # not results/quick/'s
                   for p in Path(folder).glob(f"{pattern}/**/*.json"))
    if set(made) <= {by}:
        return f"Made by commit `{by}`."
    # sorted: "unknown" after every hash and "elicit+"
    words = ", ".join(f"`{v}` ({n})" for v, n in sorted(made.items()))
    return f"Written by commit `{by}` from run records made by {words}."


def _read_json(path: Path, fix: str):
    try:
        return json.loads(path.read_text())
    except json.JSONDecodeError as e:     # edited by hand, or a disk error: never half-written
        raise ElicitError(f"{path} is damaged (not JSON: {e.msg}, line {e.lineno}); "
                          f"{fix}") from None


def _read_config(path: Path) -> dict:
    return _read_json(path, f"delete the folder {path.parent} (its results cannot be told "
                            "apart) or use another --out")
