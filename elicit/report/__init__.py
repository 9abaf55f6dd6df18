"""``results/REPORT.md``: the results of the paper's experiments beside the paper's numbers
(:func:`write_report`)."""

from elicit.report.writer import write_report

__all__ = ["write_report"]
