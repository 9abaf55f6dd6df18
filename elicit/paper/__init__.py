"""The paper's experiments (Afrabandpey et al. 2019, Sec. 4), built on :mod:`elicit.harness`:
the synthetic one (Figs. 3-4), the real-data one (Fig. 5), Table 1 and ``elicit bench``."""
