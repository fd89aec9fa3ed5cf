"""Statistics for sweep reports, chosen to hold at the accuracies CritPt lives at (5-30 % on 20 to 70
problems): exact (Clopper-Pearson) intervals for accuracy, with the challenge as the sampling unit
where sub-problems or repeats exist; Newcombe's interval and the exact McNemar test for two
strategies on the same problems (its square-and-add of exact intervals when repeats exist);
Holm's adjustment for the many comparisons of one report; accuracy within a budget from a run's
checkpoints; unbiased pass@k; quantiles. Pure functions on plain numbers, so tests can check them
against closed forms and scipy, and ``benchmarks/report_coverage.py`` can check that they cover.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Sequence
from typing import NamedTuple

import numpy as np
from scipy.stats import beta, binomtest, norm, t as student_t

CONFIDENCE = 0.95


class Interval(NamedTuple):
    low: float
    high: float
    method: str


def wilson_interval(successes: int, n: int, confidence: float = CONFIDENCE) -> tuple[float, float]:
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


def exact_interval(successes: int, n: int, confidence: float = CONFIDENCE) -> tuple[float, float]:
    """Clopper-Pearson interval (scipy's ``binomtest(...).proportion_ci(method='exact')``): it never
    covers less than ``confidence``, at any accuracy and any n. (0, 1) when n == 0."""
    if n <= 0:
        return (0.0, 1.0)
    ci = binomtest(int(successes), int(n)).proportion_ci(confidence, method="exact")
    return (float(ci.low), float(ci.high))


def _beta_interval(x: float, n: float, confidence: float) -> tuple[float, float]:
    """Clopper-Pearson's beta quantiles at a fractional count ``x`` of ``n`` (an effective sample);
    scipy's proportion_ci takes integers only."""
    a = 1 - confidence
    low = 0.0 if x <= 0 else float(beta.ppf(a / 2, x, n - x + 1))
    high = 1.0 if x >= n else float(beta.ppf(1 - a / 2, x + 1, n - x))
    return (low, high)


def accuracy_interval(per_problem: Sequence[float] | np.ndarray, cells: Sequence[int], clusters: Sequence[str],
                      confidence: float = CONFIDENCE) -> Interval:
    """The interval of the mean over problems of ``per_problem`` (each problem's share of its
    ``cells`` solved), problems grouped into ``clusters`` (a challenge and its sub-problems).

    One cell per problem and one problem per cluster: the binomial case, Clopper-Pearson. Otherwise
    the problems of a cluster (and the repeats of a problem) are not independent draws, and the
    interval is Clopper-Pearson at the sample's effective size (Korn & Graubard 1998, the US NCHS
    standard for clustered proportions): n* = p(1-p) / Var(p), the variance taken between clusters
    (a ratio estimator, clusters of any size), scaled by (z / t_{k-1})^2 for k clusters. With no
    spread between clusters (every cluster the same, or p = 0 or 1) n* is the number of clusters.
    """
    values = np.asarray(per_problem, dtype=float)
    if values.size == 0:
        return Interval(0.0, 1.0, "no graded problem")
    p = float(values.mean())
    keys = list(clusters)
    k = len(set(keys))
    n_cells = int(sum(cells))
    binary = bool(np.all((values == 0) | (values == 1)))
    if all(c == 1 for c in cells) and k == values.size and binary:
        lo, hi = exact_interval(int(values.sum()), int(values.size), confidence)
        return Interval(lo, hi, f"exact (Clopper-Pearson) over {values.size} problems")
    unit = "challenges" if k < values.size else "problems"
    if k == 1:  # one cluster: its repeats are the only draws there are
        solved = round(float(np.dot(values, cells)))
        lo, hi = exact_interval(solved, n_cells, confidence)
        return Interval(lo, hi, f"exact (Clopper-Pearson) over {n_cells} repeats of one problem")
    sums: dict[str, float] = defaultdict(float)
    sizes: dict[str, int] = defaultdict(int)
    for key, v in zip(keys, values):
        sums[key] += float(v)
        sizes[key] += 1
    y = np.array([sums[c] for c in sums])
    m = np.array([sizes[c] for c in sums], dtype=float)
    var = k / (k - 1) * float(((y - p * m) ** 2).sum()) / float(m.sum()) ** 2
    if p in (0.0, 1.0) or var <= 0:
        n_eff = float(k)
    else:
        n_eff = min(p * (1 - p) / var, float(n_cells))
    z = float(norm.ppf(0.5 + confidence / 2))
    n_eff *= (z / float(student_t.ppf(0.5 + confidence / 2, k - 1))) ** 2
    lo, hi = _beta_interval(p * n_eff, n_eff, confidence)
    return Interval(lo, hi, f"exact at the effective size of {k} {unit} (Korn-Graubard)")


def newcombe_paired(both: int, a_only: int, b_only: int, neither: int,
                    confidence: float = CONFIDENCE) -> tuple[float, float]:
    """Newcombe's hybrid score interval (1998, method 10) for the difference of two paired
    proportions p_a - p_b, from the 2x2 table of pairs. It keeps a positive width when few pairs
    disagree (a bootstrap of the differences collapses there)."""
    n = both + a_only + b_only + neither
    if n == 0:
        return (-1.0, 1.0)
    p1, p2 = (both + a_only) / n, (both + b_only) / n
    l1, u1 = wilson_interval(both + a_only, n, confidence)
    l2, u2 = wilson_interval(both + b_only, n, confidence)
    margins = (both + a_only) * (b_only + neither) * (both + b_only) * (a_only + neither)
    # The correlation of the two margins, as Newcombe corrects it: a positive association is
    # reduced by n/2 (and none below that), a negative one is used as it is.
    assoc: float = both * neither - a_only * b_only
    assoc = assoc - n / 2 if assoc > n / 2 else (assoc if assoc < 0 else 0.0)
    phi = assoc / math.sqrt(margins) if margins else 0.0
    delta = math.sqrt(max(0.0, (p1 - l1) ** 2 - 2 * phi * (p1 - l1) * (u2 - p2) + (u2 - p2) ** 2))
    eps = math.sqrt(max(0.0, (u1 - p1) ** 2 - 2 * phi * (u1 - p1) * (p2 - l2) + (p2 - l2) ** 2))
    d = p1 - p2
    return (max(-1.0, d - delta), min(1.0, d + eps))


def sign_test(wins: int, losses: int) -> float:
    """Exact two-sided sign test on the units one side did better on (the exact McNemar test when
    each unit is one pair of binary outcomes)."""
    return float(binomtest(wins, wins + losses, 0.5).pvalue) if wins + losses else 1.0


def mover_paired(xa: np.ndarray, xb: np.ndarray, cells: Sequence[int], clusters: Sequence[str],
                 confidence: float = CONFIDENCE) -> tuple[float, float]:
    """Newcombe's square-and-add (MOVER, Zou & Donner 2008) for the difference of two accuracies
    measured on the same clustered problems: each side's exact interval at its effective size
    (:func:`accuracy_interval`), combined with the correlation of the clusters' accuracies. With one
    cell per problem it is Newcombe's method with exact instead of Wilson margins."""
    ia, ib = accuracy_interval(xa, cells, clusters, confidence), accuracy_interval(xb, cells, clusters, confidence)
    p1, p2 = float(np.mean(xa)), float(np.mean(xb))
    keys = sorted(set(clusters))
    mask = [np.array([c == k for c in clusters]) for k in keys]
    ca, cb = np.array([xa[m].mean() for m in mask]), np.array([xb[m].mean() for m in mask])
    phi = float(np.corrcoef(ca, cb)[0, 1]) if len(keys) > 1 and ca.std() > 0 and cb.std() > 0 else 0.0
    delta = math.sqrt(max(0.0, (p1 - ia.low) ** 2 - 2 * phi * (p1 - ia.low) * (ib.high - p2) + (ib.high - p2) ** 2))
    eps = math.sqrt(max(0.0, (ia.high - p1) ** 2 - 2 * phi * (ia.high - p1) * (p2 - ib.low) + (p2 - ib.low) ** 2))
    return (max(-1.0, p1 - p2 - delta), min(1.0, p1 - p2 + eps))


def holm(p_values: Sequence[float]) -> list[float]:
    """Holm's step-down adjustment of ``p_values`` (in their order). scipy has no Holm (its
    ``false_discovery_control`` is Benjamini-Hochberg, another question), so it is written here."""
    order = sorted(range(len(p_values)), key=lambda i: p_values[i])
    out = [1.0] * len(p_values)
    running, m = 0.0, len(p_values)
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * p_values[i]))
        out[i] = running
    return out


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
    the last answer it had by then (a run stopped at T would have had nothing later). A crashed
    run's trace is empty: it holds nothing at any cap."""
    solved = False
    for spent, correct in trace:
        if spent <= cap:
            solved = correct
    return solved


def problem_accuracy(traces: Sequence[Trace], caps: Sequence[float]) -> np.ndarray:
    """The share of one problem's repeats solved within each cap (shape: caps)."""
    return np.array([sum(solved_within(t, cap) for t in traces) / len(traces) for cap in caps])


class Paired(NamedTuple):
    problems: int
    clusters: int
    mean_a: float
    mean_b: float
    difference: float  # mean over problems of (a - b)
    low: float
    high: float
    a_better: int  # problems where a solved more of its repeats than b
    b_better: int
    p_value: float  # exact two-sided sign test over the clusters (exact McNemar with binary pairs)
    method: str


def paired_comparison(a: dict[str, float], b: dict[str, float], *, cells_a: dict[str, int] | None = None,
                      cells_b: dict[str, int] | None = None, clusters: dict[str, str] | None = None,
                      confidence: float = CONFIDENCE) -> Paired | None:
    """Two strategies on the problems both were graded on (per-problem accuracy each). With one
    cell per problem on each side and one problem per cluster: Newcombe's interval and the exact
    McNemar test. Otherwise (repeats, or sub-problems of one challenge): the square-and-add of the
    two exact intervals at their effective sizes (:func:`mover_paired`) and the exact sign test over
    clusters. None when they share no problem."""
    common = sorted(set(a) & set(b))
    if not common:
        return None
    cluster_of = clusters or {}
    keys = [cluster_of.get(p, p) for p in common]
    xa, xb = np.array([a[p] for p in common]), np.array([b[p] for p in common])
    d = xa - xb
    wins, losses = int((d > 0).sum()), int((d < 0).sum())
    one_cell = all((cells_a or {}).get(p, 1) == 1 and (cells_b or {}).get(p, 1) == 1 for p in common)
    binary = bool(np.all(np.isin(xa, (0.0, 1.0))) and np.all(np.isin(xb, (0.0, 1.0))))
    k = len(set(keys))
    if one_cell and binary and k == len(common):
        both, neither = int(((xa == 1) & (xb == 1)).sum()), int(((xa == 0) & (xb == 0)).sum())
        lo, hi = newcombe_paired(both, wins, losses, neither, confidence)
        return Paired(len(common), k, float(xa.mean()), float(xb.mean()), float(d.mean()), lo, hi, wins, losses,
                      sign_test(wins, losses), "Newcombe; McNemar exact")
    by_cluster: dict[str, list[float]] = defaultdict(list)
    for key, v in zip(keys, d):
        by_cluster[key].append(float(v))
    means = np.array([np.mean(v) for v in by_cluster.values()])
    p = sign_test(int((means > 0).sum()), int((means < 0).sum()))
    cells = [max((cells_a or {}).get(q, 1), (cells_b or {}).get(q, 1)) for q in common]
    lo, hi = mover_paired(xa, xb, cells, keys, confidence)
    unit = "challenges" if k < len(common) else "problems"
    return Paired(len(common), k, float(xa.mean()), float(xb.mean()), float(d.mean()), lo, hi, wins, losses,
                  p, f"MOVER of exact intervals, {k} {unit}; sign test")


def group_by(rows: Iterable[dict], *keys: str) -> dict[tuple, list[dict]]:
    out: dict[tuple, list[dict]] = defaultdict(list)
    for r in rows:
        out[tuple(r[k] for k in keys)].append(r)
    return dict(out)
