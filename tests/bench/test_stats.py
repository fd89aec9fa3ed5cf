"""Statistics checked against closed forms and brute force, not against themselves."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, strategies as st

from physlab.bench.stats import (
    accuracy_interval,
    exact_interval,
    holm,
    mean_pass_at_k,
    mover_paired,
    newcombe_paired,
    paired_comparison,
    pass_at_k,
    problem_accuracy,
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


def test_exact_interval_is_clopper_pearson_from_the_beta_quantiles():
    from scipy.stats import beta

    assert exact_interval(0, 20) == pytest.approx((0.0, 1 - 0.025 ** (1 / 20)))
    lo, hi = exact_interval(3, 20)
    assert (lo, hi) == pytest.approx((beta.ppf(0.025, 3, 18), beta.ppf(0.975, 4, 17)))
    assert exact_interval(0, 0) == (0.0, 1.0)


def test_accuracy_interval_is_exact_without_clusters_and_at_the_effective_size_with_them():
    values = [1.0] * 3 + [0.0] * 17
    ci = accuracy_interval(values, [1] * 20, [f"p{i}" for i in range(20)])
    assert (ci.low, ci.high) == pytest.approx(exact_interval(3, 20)) and "Clopper-Pearson" in ci.method
    # two sub-problems per challenge, always solved together: about ten draws, not twenty
    paired = accuracy_interval(values, [1] * 20, [f"c{i // 2}" for i in range(20)])
    assert paired.high - paired.low > ci.high - ci.low and "10 challenges" in paired.method
    # every repeat of every problem wrong: (at least) the interval of the 20 problems, not of the 60 cells
    none = accuracy_interval([0.0] * 20, [3] * 20, [f"p{i}" for i in range(20)])
    assert none.low == 0.0 and exact_interval(0, 20)[1] <= none.high < 0.2
    one = accuracy_interval([0.5], [4], ["p"])
    assert (one.low, one.high) == pytest.approx(exact_interval(2, 4))


def test_newcombe_matches_the_published_square_and_add_interval():
    # Bentur et al. 2009 (airway hyper-responsiveness), as tabulated by Fagerland, Lydersen & Laake:
    # [[1, 1], [7, 12]] gives -0.286 (-0.507 to -0.026)
    assert newcombe_paired(1, 1, 7, 12) == pytest.approx((-0.507, -0.026), abs=6e-4)
    lo, hi = newcombe_paired(2, 1, 0, 17)  # one discordant pair: no collapse to a point
    assert lo < 0 < hi and hi - lo > 0.1


def test_holm_is_the_step_down_maximum():
    assert holm([0.01, 0.04, 0.03]) == pytest.approx([0.03, 0.06, 0.06])
    assert holm([0.5, 0.9]) == pytest.approx([1.0, 1.0]) and holm([]) == []


def test_the_square_and_add_of_exact_intervals_widens_each_side_and_follows_the_correlation():
    xa = np.array([1.0, 2 / 3, 0.0, 1.0, 1 / 3, 0.0])
    xb = np.array([2 / 3, 2 / 3, 0.0, 1 / 3, 0.0, 0.0])
    cells, keys = [3] * 6, [f"p{i}" for i in range(6)]
    lo, hi = mover_paired(xa, xb, cells, keys)
    ia, ib = accuracy_interval(xa, cells, keys), accuracy_interval(xb, cells, keys)
    d = xa.mean() - xb.mean()
    assert lo < d < hi
    # uncorrelated sides would give the square root of the sum of squares; these move together, so less
    assert d - lo < math.hypot(xa.mean() - ia.low, ib.high - xb.mean())


def test_paired_comparison_counts_problems_not_repeats():
    a = {"p1": 1.0, "p2": 2 / 3, "p3": 0.0, "p4": 1.0}
    b = {"p1": 1 / 3, "p2": 2 / 3, "p3": 1 / 3, "p5": 0.0}
    res = paired_comparison(a, b, cells_a={p: 3 for p in a}, cells_b={p: 3 for p in b})
    assert (res.problems, res.a_better, res.b_better) == (3, 1, 1)  # p4, p5 are not shared; p2 is a tie
    assert res.p_value == pytest.approx(1.0)
    assert res.difference == pytest.approx(((1 - 1 / 3) + 0 + (0 - 1 / 3)) / 3)
    assert res.low < res.difference < res.high
    assert paired_comparison({"x": 1.0}, {"y": 0.0}) is None
    one = paired_comparison({f"p{i}": float(i < 3) for i in range(20)}, {f"p{i}": float(i < 2) for i in range(20)})
    assert "Newcombe" in one.method and (one.low, one.high) == pytest.approx(newcombe_paired(2, 1, 0, 17))
