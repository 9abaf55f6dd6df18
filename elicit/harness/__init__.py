"""The machinery of simulated-expert sweeps: the task runner and its cluster, the sweep of
query strategies, the MSE and kernel figures, the display labels."""
