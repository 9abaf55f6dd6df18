"""``results/REPORT.md``: the results of the paper's experiments beside the paper's numbers."""
