"""The package does not grow (issue 24): ``elicit/`` holds at most 22,700 lines of Python.

The budget was set when the direction kind was added: the rebuild around ``QuestionKind`` had
to pay for the new kind. A new feature pays for itself by making room elsewhere (dead code,
one idea written twice, prose that docs/ already holds), not by raising this number.
"""

from __future__ import annotations

from pathlib import Path

import elicit

PACKAGE = Path(elicit.__file__).resolve().parent
BUDGET = 22_700


def test_the_package_stays_within_its_line_budget():
    sizes = {p.relative_to(PACKAGE).as_posix(): len(p.read_bytes().splitlines())
             for p in PACKAGE.rglob("*.py")}
    total = sum(sizes.values())
    largest = ", ".join(f"{k} {v}" for k, v in sorted(sizes.items(), key=lambda kv: -kv[1])[:5])
    assert total <= BUDGET, f"elicit/ has {total} lines, budget {BUDGET}; largest: {largest}"
