"""Statistics for sweep reports: intervals by bootstrap over problems (repeats nested in them),
paired comparisons of two strategies on the same problems, accuracy within a budget from a run's
checkpoints, unbiased pass@k, quantiles, and Wilson intervals for the one-problem case. Pure
functions on plain numbers, so tests can check them against closed forms and scipy."""

from __future__ import annotations

import math
from collections import defaultdict
from typing import Iterable, NamedTuple, Sequence

import numpy as np
from scipy.stats import binomtest, bootstrap, norm


def wilson_interval(successes: int, n: int, confidence: float = 0.95) -> tuple[float, float]:
    """Wilson score interval for a binomial proportion. (0, 1) when n == 0."""
    if n <= 0:
        return (0.0, 1.0)
    if not 0 <= successes <= n:
        raise ValueError(f"successes={successes} outside [0, {n}]")
    z = float(norm.ppf(0.5 + confidence / 2))
    p = successes / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z / denom * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return (max(0.0, centre - half), min(1.0, centre + half))


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k from n samples of which c are correct (Chen et al. 2021):
    1 - C(n-c, k) / C(n, k)."""
    if k > n or k < 1:
        raise ValueError(f"pass@{k} needs 1 <= k <= n (n={n})")
    if n - c < k:
        return 1.0
    # product form avoids huge binomials
    prod = 1.0
    for i in range(n - c + 1, n + 1):
        prod *= 1.0 - k / i
    return 1.0 - prod


def mean_pass_at_k(per_problem: Iterable[tuple[int, int]], k: int) -> float | None:
    """Mean pass@k over problems given (n_samples, n_correct) each; None if any problem has
    fewer than k samples (pass@k is then not estimable for the group)."""
    vals = []
    for n, c in per_problem:
        if n < k:
            return None
        vals.append(pass_at_k(n, c, k))
    return sum(vals) / len(vals) if vals else None


def quantile(values: Sequence[float], q: float) -> float | None:
    """Linear-interpolated quantile (numpy's default method); None for no values."""
    xs = sorted(values)
    if not xs:
        return None
    pos = (len(xs) - 1) * q
    lo = math.floor(pos)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)


Trace = Sequence[tuple[float, bool]]


def solved_within(trace: Trace, cap: float) -> bool:
    """Was the run solved at spend ``cap``? ``trace`` is (spend, correct) of each answer that
    became the run's best, in the order they came, its final answer last: at cap T the run holds
    the last answer it had by then (a run stopped at T would have had nothing later)."""
    solved = False
    for spent, correct in trace:
        if spent <= cap:
            solved = correct
    return solved


def problem_accuracy(traces: Sequence[Trace], caps: Sequence[float]) -> np.ndarray:
    """The share of one problem's repeats solved within each cap (shape: caps)."""
    return np.array([sum(solved_within(t, cap) for t in traces) / len(traces) for cap in caps])


def problem_bootstrap(per_problem: np.ndarray, confidence: float = 0.95, *, n_resamples: int = 9999,
                      seed: int = 0) -> tuple[np.ndarray, np.ndarray] | None:
    """Percentile bootstrap interval of the mean over problems. ``per_problem`` has problems on its
    last axis (one accuracy per problem: its repeats stay together, nested in it, never drawn as
    independent samples); earlier axes (e.g. caps) are resampled with the same problems, so a
    curve's band is one set of resamples. None with fewer than two problems."""
    data = np.asarray(per_problem, dtype=float)
    if data.shape[-1] < 2:
        return None
    res = bootstrap((data,), np.mean, axis=-1, vectorized=True, method="percentile",
                    confidence_level=confidence, n_resamples=n_resamples, rng=np.random.default_rng(seed))
    return np.asarray(res.confidence_interval.low), np.asarray(res.confidence_interval.high)


class Paired(NamedTuple):
    problems: int
    mean_a: float
    mean_b: float
    difference: float  # mean over problems of (a - b)
    low: float | None  # paired bootstrap interval of the difference
    high: float | None
    a_better: int  # problems where a solved more of its repeats than b
    b_better: int
    p_value: float  # exact two-sided sign test over those problems (exact McNemar with one repeat)


def paired_comparison(a: dict[str, float], b: dict[str, float], confidence: float = 0.95,
                      seed: int = 0) -> Paired | None:
    """Two strategies on the problems both were graded on (per-problem accuracy each). None when
    they share no problem."""
    common = sorted(set(a) & set(b))
    if not common:
        return None
    xa = np.array([a[p] for p in common])
    xb = np.array([b[p] for p in common])
    d = xa - xb
    ci = problem_bootstrap(d, confidence, seed=seed)
    wins, losses = int((d > 0).sum()), int((d < 0).sum())
    p = binomtest(wins, wins + losses, 0.5).pvalue if wins + losses else 1.0
    return Paired(len(common), float(xa.mean()), float(xb.mean()), float(d.mean()),
                  None if ci is None else float(ci[0]), None if ci is None else float(ci[1]),
                  wins, losses, float(p))


def group_by(rows: Iterable[dict], *keys: str) -> dict[tuple, list[dict]]:
    out: dict[tuple, list[dict]] = defaultdict(list)
    for r in rows:
        out[tuple(r[k] for k in keys)].append(r)
    return dict(out)
