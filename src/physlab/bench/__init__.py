"""Sweeps and reports: run every (problem, strategy, model, repeat) cell, store results in SQLite,
and report accuracy with intervals, pass@k, cost, role shares and an equal-budget view.

Public entry points::

    from physlab.bench.store import ResultsStore, CellSpec
    from physlab.bench.sweep import SweepConfig, run_sweep
    from physlab.bench.report import build_report, write_html, write_csv
    from physlab.bench.stats import wilson_interval, pass_at_k
"""
