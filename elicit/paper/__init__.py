"""The paper's experiments: problems, sweeps, baselines, Table 1, benchmarks, report."""
