"""The paper's experiments (Afrabandpey et al. 2019, Sec. 4), built on :mod:`elicit.harness`:
the synthetic one (Figs. 3-4), the real-data one (Fig. 5), Table 1 and ``elicit bench``."""

from elicit.paper.configs import RealDataConfig, SyntheticConfig
from elicit.paper.realdata import run_realdata
from elicit.paper.synthetic import run_synthetic
from elicit.paper.table1 import run_table1

__all__ = ["RealDataConfig", "SyntheticConfig", "run_realdata", "run_synthetic", "run_table1"]
