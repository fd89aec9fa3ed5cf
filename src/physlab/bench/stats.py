"""Statistics for sweep reports: Wilson intervals, unbiased pass@k, quantiles, equal-budget
accuracy. Pure functions on plain numbers, so tests can check them against closed forms."""

from __future__ import annotations

import math
from collections import defaultdict
from typing import Iterable, Sequence

from scipy.stats import norm


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


def accuracy_at_cap(cells: Iterable[tuple[bool, float]], cap: float) -> tuple[int, int]:
    """Equal-budget accuracy from finished cells (correct, tokens used): a cell counts as correct
    at cap T only if it was correct and spent at most T tokens (a run stopped at T would not have
    reached its answer). Returns (correct_within_cap, n)."""
    n = k = 0
    for correct, tokens in cells:
        n += 1
        if correct and tokens <= cap:
            k += 1
    return k, n


def group_by(rows: Iterable[dict], *keys: str) -> dict[tuple, list[dict]]:
    out: dict[tuple, list[dict]] = defaultdict(list)
    for r in rows:
        out[tuple(r[k] for k in keys)].append(r)
    return dict(out)
