"""The README quotes the committed reproduction, not a figure of its own.

The README's results table (between the markers ``<!-- results table -->`` and
``<!-- end results table -->``) names, per row, the folder of a sweep in ``results/``; this
test reads the same quantities from ``results/REPORT.md`` (each sweep's table, the
paper-literal comparison, the relevance-and-pair table and the synthetic table) and requires
the README's cells to be the report's, character for character. It also requires the README's
cost line to be the report's wall and CPU time and commit. A rerun of ``make reproduce``
that moves a figure fails this test until the README is updated.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
REPORT = ROOT / "results" / "REPORT.md"

#: the README table's columns after the first, and the report rows that hold them
COLUMNS = ("predict the mean", "no answers", "random, 100", "non-sequential, 100",
           "sequential, 100", "all answers given", "expert's full knowledge")
_SWEEP_ROWS = {  # a sweep section's quantity table
    "predict the mean": r"\*\*predict the mean\*\* \(reference\)",
    "no answers": r"initial MSE \([^|]*\)",
    "random, 100": r"MSE after 100 answers, Random",
    "non-sequential, 100": r"MSE after 100 answers, Non-sequential",
    "sequential, 100": r"MSE after 100 answers, Sequential",
    "all answers given": r"\*\*all ~\d+ answers given\*\* \(reference\)",
    "expert's full knowledge": r"\*\*expert's full knowledge \(yardstick\)\*\* \(reference\)",
}
_MIXED_ROWS = {  # the relevance-and-pair table (one column per data set)
    "predict the mean": r"\*\*predict the mean\*\* \(reference\)",
    "no answers": r"\*\*no expert input \(the start, 0 answers\)\*\* \(reference\)",
    "random, 100": r"Random, after 100 answers",
    "non-sequential, 100": r"Non-sequential, after 100 answers",
    "sequential, 100": r"Sequential, after 100 answers",
    "all answers given": r"\*\*all answers given\*\* \(reference\)",
    "expert's full knowledge": r"\*\*expert's full knowledge \(yardstick\)\*\* \(reference\)",
}
_MIXED_DATASETS = {"amazon-mixed": "Amazon", "yelp-mixed": "Yelp", "kitchen-mixed": "kitchen"}


def _first(value: str) -> str:
    """A cell's figure: its first number (a mean, without its ± s.e.)."""
    m = re.match(r"\s*([-+]?\d+\.\d+)", value)
    return m.group(1) if m else value.strip()


def _rows(lines: list[str]) -> list[list[str]]:
    return [[c.strip() for c in ln.strip().strip("|").split("|")] for ln in lines
            if ln.startswith("|") and not set(ln) <= set("|-: ")]


def _block(text: str, start: str) -> list[str]:
    """The lines of the Markdown table after the first line matching ``start``."""
    lines = text.splitlines()
    i = next(k for k, ln in enumerate(lines) if re.search(start, ln))
    while not lines[i].startswith("|"):
        i += 1
    j = i
    while j < len(lines) and lines[j].startswith("|"):
        j += 1
    return lines[i:j]


def report_figures(report: str, folder: str) -> dict[str, str]:
    """The README's columns for the sweep in ``results/<folder>``, as the report prints them."""
    if folder == "synthetic":
        rows = {r[0]: r for r in _rows(_block(report, r"^## Synthetic data"))}
        mean = re.search(r"Predicting the training mean gives ([-+]?\d+\.\d+)", report)
        assert mean, "the report's synthetic section names no mean prediction"
        return {"predict the mean": mean.group(1), "no answers": _first(rows["sequential"][1]),
                "random, 100": _first(rows["random"][2]),
                "non-sequential, 100": _first(rows["nonsequential"][2]),
                "sequential, 100": _first(rows["sequential"][2]),
                "all answers given": "—", "expert's full knowledge": "—"}
    if folder in _MIXED_DATASETS:
        rows = _rows(_block(report, r"^## Relevance and pair questions"))
        col = rows[0].index(_MIXED_DATASETS[folder])
        return {name: _first(next(r[col] for r in rows if re.fullmatch(pat, r[0])))
                for name, pat in _MIXED_ROWS.items()}
    if folder.endswith("-paper"):
        rows = _rows(_block(report, r"^## The paper-literal configuration beside"))
        head = rows[0]
        name = {"amazon-paper": "Amazon", "yelp-paper": "Yelp"}[folder]
        row = next(r for r in rows if r[0] == name and r[1].startswith("paper-literal"))
        cell = {k: _first(v) for k, v in zip(head, row)}
        return {"predict the mean": cell["predict the mean"], "no answers": cell["initial"],
                "random, 100": cell["Random"], "non-sequential, 100": cell["Non-sequential"],
                "sequential, 100": cell["Sequential"],
                "all answers given": cell["all answers given"],
                "expert's full knowledge": cell.get("yardstick", "—")}
    rows = _rows(_block(report, rf"^### .*folder `{re.escape(folder)}`\)"))
    return {name: _first(next(r[1] for r in rows if re.fullmatch(pat, r[0])))
            for name, pat in _SWEEP_ROWS.items()}


def readme_table(readme: str) -> dict[str, dict[str, str]]:
    """The README's results table: folder -> column -> cell."""
    m = re.search(r"<!-- results table -->\n(.*?)<!-- end results table -->", readme, re.S)
    assert m, "the README has no results table between its markers"
    rows = _rows(m.group(1).splitlines())
    assert tuple(rows[0][1:]) == COLUMNS, rows[0]
    table = {}
    for r in rows[1:]:
        folder = re.search(r"`([\w-]+)`", r[0])
        assert folder, f"README results row {r[0]!r} names no results folder"
        table[folder.group(1)] = dict(zip(COLUMNS, r[1:]))
    return table


@pytest.mark.skipif(not REPORT.exists(), reason="no committed results/REPORT.md")
def test_the_readmes_figures_are_the_committed_reports():
    report, readme = REPORT.read_text(), README.read_text()
    table = readme_table(readme)
    assert {"synthetic", "amazon", "yelp", "amazon-mixed"} <= set(table)
    for folder, cells in table.items():
        assert (ROOT / "results" / folder).is_dir(), f"results/{folder} is not committed"
        assert cells == report_figures(report, folder), folder


@pytest.mark.skipif(not REPORT.exists(), reason="no committed results/REPORT.md")
def test_the_readmes_cost_line_is_the_reports():
    report, readme = REPORT.read_text(), README.read_text()
    # "+changes+<hash>": the checkout differed from the commit (elicit.internal.provenance)
    commit = re.search(r"Made by commit `(\w+(?:\+changes\+\w+)?)`", report)
    wall = re.search(r"Wall time of the last `make reproduce` call: (\d+\.\d) min", report)
    cpu = re.search(r"^CPU time: (\d+\.\d) min", report, re.M)
    assert commit and wall and cpu
    quoted = re.search(r"<!-- results cost -->(.*?)<!-- end results cost -->", readme, re.S)
    assert quoted, "the README has no cost line between its markers"
    line = " ".join(quoted.group(1).split())
    assert f"`{commit.group(1)}`" in line
    assert f"{wall.group(1)} min wall" in line and f"{cpu.group(1)} CPU-minutes" in line


def test_the_parsers_read_a_report_as_written(tmp_path):
    """The parsers on a small report in the writer's format: a changed figure is seen."""
    report = "\n".join([
        "Made by commit `abc`.", "",
        "## Synthetic data (paper Sec. 4.1, Figs. 3-4)", "",
        "2 runs, test MSE. Predicting the training mean gives 90.068 ± 31.528.", "",
        "| strategy | MSE, 0 answers | MSE, 100 answers | runs |", "|---|---|---|---|",
        "| nonsequential | 16.008 | 10.253 ± 1.299 | 2 |",
        "| random | 16.008 | 8.813 ± 0.397 | 2 |",
        "| sequential | 16.008 | 8.488 ± 0.568 | 2 |", "",
        "### Amazon (model standardisation, tau2 by CV; folder `amazon`)", "",
        "| quantity | ours | paper |", "|---|---|---|",
        "| **predict the mean** (reference) | 2.521 ± 0.034 | not reported |",
        "| initial MSE (no feedback) | 1.945 ± 0.089 | 2.26 |",
        "| MSE after 100 answers, Random | 1.936 ± 0.090 | Fig. 5 only |",
        "| MSE after 100 answers, Non-sequential | 1.937 ± 0.087 | Fig. 5 only |",
        "| MSE after 100 answers, Sequential | 1.930 ± 0.091 | Fig. 5 only |",
        "| **all ~780 answers given** (reference) | 1.933 ± 0.093 | not reported |",
        "| **expert's full knowledge (yardstick)** (reference) | 1.684 | not reported |", ""])
    assert report_figures(report, "synthetic") == {
        "predict the mean": "90.068", "no answers": "16.008", "random, 100": "8.813",
        "non-sequential, 100": "10.253", "sequential, 100": "8.488",
        "all answers given": "—", "expert's full knowledge": "—"}
    got = report_figures(report, "amazon")
    assert got["sequential, 100"] == "1.930" and got["expert's full knowledge"] == "1.684"
    readme = "\n".join(["<!-- results table -->",
                        "| sweep | " + " | ".join(COLUMNS) + " |",
                        "|" + "---|" * (len(COLUMNS) + 1),
                        "| Amazon (`amazon`) | 2.521 | 1.945 | 1.936 | 1.937 | 1.931 | 1.933 "
                        "| 1.684 |", "<!-- end results table -->"])
    assert readme_table(readme)["amazon"] != got  # 1.931 is not the report's 1.930
