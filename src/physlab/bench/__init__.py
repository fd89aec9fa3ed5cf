"""Sweeps and reports: run every (problem, strategy, model, repeat) cell, store results in SQLite,
and report accuracy with intervals over problems, paired comparisons, the problem x strategy matrix,
accuracy as a function of budget (from each run's checkpoints), pass@k, cost and role shares.

Public entry points::

    from physlab.bench.store import ResultsStore, CellSpec
    from physlab.bench.sweep import SweepConfig, run_sweep     # executor="ray": cells on a Ray cluster
    from physlab.bench.report import build_report, write_csv
    from physlab.bench.report_render import print_report, write_html
    from physlab.bench.stats import problem_bootstrap, paired_comparison, pass_at_k
"""
