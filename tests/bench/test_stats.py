"""Statistics checked against closed forms and brute force, not against themselves."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, strategies as st

from physlab.bench.stats import accuracy_at_cap, mean_pass_at_k, pass_at_k, quantile, wilson_interval


@pytest.mark.parametrize(
    "k,n,lo,hi",
    [  # published Wilson 95% intervals (Newcombe 1998, Table I; Brown, Cai & DasGupta 2001)
        (81, 263, 0.2553, 0.3662),
        (15, 148, 0.0624, 0.1605),
        (0, 20, 0.0, 0.1611),
        (1, 29, 0.0061, 0.1718),
    ],
)
def test_wilson_matches_published_values(k, n, lo, hi):
    got = wilson_interval(k, n)
    assert got[0] == pytest.approx(lo, abs=6e-4)
    assert got[1] == pytest.approx(hi, abs=6e-4)


def test_wilson_closed_form_and_edges():
    z = 1.959963984540054
    k, n = 7, 12
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    assert wilson_interval(k, n) == pytest.approx((centre - half, centre + half), abs=1e-12)
    assert wilson_interval(0, 0) == (0.0, 1.0)
    lo, hi = wilson_interval(10, 10)
    assert hi == pytest.approx(1.0) and lo < 1.0
    with pytest.raises(ValueError):
        wilson_interval(3, 2)


def _pass_at_k_brute(n: int, c: int, k: int) -> float:
    samples = [True] * c + [False] * (n - c)
    subsets = list(itertools.combinations(range(n), k))
    return sum(any(samples[i] for i in s) for s in subsets) / len(subsets)


@given(st.integers(1, 9).flatmap(lambda n: st.tuples(st.just(n), st.integers(0, n), st.integers(1, n))))
def test_pass_at_k_is_the_subset_average(args):
    n, c, k = args
    assert pass_at_k(n, c, k) == pytest.approx(_pass_at_k_brute(n, c, k), abs=1e-12)


def test_pass_at_k_mean_and_limits():
    assert pass_at_k(3, 0, 3) == 0.0
    assert pass_at_k(3, 1, 3) == 1.0
    assert pass_at_k(3, 1, 1) == pytest.approx(1 / 3)
    assert mean_pass_at_k([(3, 1), (3, 0)], 2) == pytest.approx((2 / 3 + 0) / 2)
    assert mean_pass_at_k([(3, 1), (2, 0)], 3) is None
    with pytest.raises(ValueError):
        pass_at_k(2, 1, 3)


@given(st.lists(st.floats(0, 1e6), min_size=1, max_size=30), st.sampled_from([0.0, 0.5, 0.9, 1.0]))
def test_quantile_matches_numpy(xs, q):
    assert quantile(xs, q) == pytest.approx(float(np.percentile(xs, q * 100)), rel=1e-9, abs=1e-9)


def test_accuracy_at_cap_counts_only_answers_within_budget():
    cells = [(True, 100), (True, 500), (False, 50), (True, 1000)]
    assert accuracy_at_cap(cells, 99) == (0, 4)
    assert accuracy_at_cap(cells, 500) == (2, 4)
    assert accuracy_at_cap(cells, 10_000) == (3, 4)
