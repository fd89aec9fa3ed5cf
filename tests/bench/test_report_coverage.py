"""The report's 95% intervals cover (issue #34, done means): simulated, seeded sweeps at 5 %, 10 % and
30 % accuracy on 20 and 70 problems -- one run per problem, three repeats of unequal problems, and
CritPt-like challenges of sub-problems -- and the interval the report gives holds the true accuracy
at least 93 % of the time in each. ``python benchmarks/report_coverage.py`` prints the table, beside
the bootstrap the report used before."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

_BENCH = Path(__file__).resolve().parents[2] / "benchmarks" / "report_coverage.py"


def _coverage_module():
    spec = importlib.util.spec_from_file_location("report_coverage", _BENCH)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


@pytest.mark.slow
@pytest.mark.parametrize("shape", ["one run", "3 repeats", "challenges"])
@pytest.mark.parametrize("accuracy", [0.05, 0.10, 0.30])
@pytest.mark.parametrize("problems", [20, 70])
def test_the_reports_interval_covers_at_least_93_percent(shape, accuracy, problems):
    bench = _coverage_module()
    assert bench.report_coverage(shape, accuracy, problems, sims=2000, seed=0) >= 0.93


@pytest.mark.slow
@pytest.mark.parametrize("shape", ["one run", "3 repeats"])
@pytest.mark.parametrize("accuracy", [0.05, 0.10, 0.30])
@pytest.mark.parametrize("problems", [20, 70])
def test_the_paired_interval_covers_at_least_93_percent(shape, accuracy, problems):
    assert _coverage_module().paired_coverage(accuracy, problems, sims=1000, seed=0, shape=shape) >= 0.93


def test_the_percentile_bootstrap_the_report_used_undercovers_at_low_accuracy():
    """What the issue measured (66 % at 20 problems and 5 %): the reason the interval changed."""
    assert _coverage_module().bootstrap_coverage("one run", 0.05, 20, sims=200, seed=0, method="percentile") < 0.8
