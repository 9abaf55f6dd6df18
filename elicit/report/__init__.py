"""``results/REPORT.md``: the results of the paper's experiments beside the paper's numbers.

:func:`write_report` (:mod:`~elicit.report.writer`) writes the whole report from a results
folder; :mod:`~elicit.report.realdata` reads the real-data sweeps (their ``config.json`` and
CSV files) and writes their sections; :mod:`~elicit.report.claims` sets the paper's claims
against ours.
"""

from elicit.report.writer import write_report

__all__ = ["write_report"]
