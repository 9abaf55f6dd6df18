"""The paper's experiments (Afrabandpey, Peltola & Kaski, IJCAI 2019, Sec. 4).

Pipelines, each also an ``elicit`` command and a step of ``experiments/reproduce.py``:

* :func:`~elicit.paper.synthetic.run_synthetic`: Figs. 3-4 (``synthetic``);
* :func:`~elicit.paper.realdata.run_realdata`: Fig. 5 on Amazon, Yelp or any review corpus
  (``realdata``);
* :func:`~elicit.paper.table1.run_table1`: Table 1 (``table1``);
* :func:`~elicit.paper.bench.run_bench`: timings and decision quality (``bench``);
* :func:`~elicit.paper.report.write_report`: ``REPORT.md`` from a results folder.

Their parts: ``problems`` (what one run is, its seeds), ``sources`` (where a real-data run's
reviews come from: the paper's matrices or any review corpus), ``sweep`` (strategies over
runs), ``runner`` (parallel, resumable tasks), ``lasso_expert`` and ``baselines`` (the
real-data expert and the regression baselines), ``runinfo`` (each real-data run's baselines,
reference lines and tau2 CV), ``tau2`` (cross-validated prior scale), ``samples`` (Table 1's
sample-addition loops), ``labels`` (names shown in figures and tables), ``plots``, and
``report_real`` / ``report_claims`` (the real-data sections of the report).
"""
