"""Statistics checked against closed forms and brute force, not against themselves."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, strategies as st

from physlab.bench.stats import (
    mean_pass_at_k,
    paired_comparison,
    pass_at_k,
    problem_accuracy,
    problem_bootstrap,
    quantile,
    solved_within,
    wilson_interval,
)


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


def test_a_run_holds_its_last_answer_within_the_cap():
    trace = [(100, False), (500, True), (900, False), (1200, True)]  # checkpoints, then the final answer
    assert [solved_within(trace, cap) for cap in (99, 100, 499, 500, 899, 900, 1199, 1200, 10**9)] == \
        [False, False, False, True, True, False, False, True, True]
    assert problem_accuracy([trace, [(50, True)]], [60, 600]).tolist() == [0.5, 1.0]


def test_problem_bootstrap_is_scipys_percentile_bootstrap_over_problems():
    from scipy.stats import bootstrap

    shares = np.array([1.0, 0.5, 0.0, 1.0, 0.0, 0.5, 1.0])
    lo, hi = problem_bootstrap(shares)
    ref = bootstrap((shares,), np.mean, method="percentile", n_resamples=9999,
                    rng=np.random.default_rng(0)).confidence_interval
    assert (float(lo), float(hi)) == pytest.approx((ref.low, ref.high))
    # a curve: every cap resampled with the same problems, so a cap that repeats a row repeats its band
    lo2, hi2 = problem_bootstrap(np.stack([shares, shares, 1 - shares]))
    assert lo2[0] == lo2[1] == pytest.approx(lo) and lo2[2] == pytest.approx(1 - hi)
    assert problem_bootstrap(np.array([1.0])) is None  # one problem: no bootstrap over problems


def test_paired_comparison_counts_problems_not_repeats():
    a = {"p1": 1.0, "p2": 2 / 3, "p3": 0.0, "p4": 1.0}
    b = {"p1": 1 / 3, "p2": 2 / 3, "p3": 1 / 3, "p5": 0.0}
    res = paired_comparison(a, b)
    assert (res.problems, res.a_better, res.b_better) == (3, 1, 1)  # p4, p5 are not shared; p2 is a tie
    assert res.p_value == pytest.approx(1.0)
    assert res.difference == pytest.approx(((1 - 1 / 3) + 0 + (0 - 1 / 3)) / 3)
    assert paired_comparison({"x": 1.0}, {"y": 0.0}) is None
