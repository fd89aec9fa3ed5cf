"""Do the report's 95% intervals cover? Simulated sweeps at the accuracies CritPt lives at.

    python benchmarks/report_coverage.py [--sims 2000] [--seed 0] [--quick]

For each true accuracy (5 %, 10 %, 30 %) and number of problems (20, 70), draws ``--sims`` sweeps
(seeded), computes the interval the report gives (``physlab.bench.stats.accuracy_interval``, the
function ``bench report`` calls) and prints how often it holds the true accuracy, in three shapes of
sweep:

- ``one run``: one run per problem, each solved with the true accuracy (the leaderboard's shape);
- ``3 repeats``: three runs per problem, problems of unequal difficulty (a Beta spread with
  intra-problem correlation 0.3 around the true mean);
- ``challenges``: CritPt-like challenges of 1 to 4 sub-problems that share a difficulty.

Beside it, for comparison, the interval the report used to give (a percentile bootstrap over
problems) and a BCa bootstrap over challenges, on fewer sweeps (they are slow); then the coverage of
the paired interval (two strategies 5 points apart whose problems' outcomes are correlated, one run
or three repeats per problem). Exits 1 if any of the report's intervals covers less than 93 %.
"""

from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from physlab.bench import stats

ACCURACIES = (0.05, 0.10, 0.30)
PROBLEMS = (20, 70)
SHAPES = ("one run", "3 repeats", "challenges")
THRESHOLD = 0.93


def draw(shape: str, p: float, n: int, rng: np.random.Generator) -> tuple[np.ndarray, list[int], list[str]]:
    """One simulated sweep: per-problem accuracies, cells per problem, each problem's challenge."""
    if shape == "one run":
        return rng.binomial(1, p, n).astype(float), [1] * n, [f"p{i}" for i in range(n)]
    icc = 0.3  # difficulty spread: Beta(a, b) with mean p and intra-problem correlation icc
    a, b = p * (1 / icc - 1), (1 - p) * (1 / icc - 1)
    if shape == "3 repeats":
        difficulty = rng.beta(a, b, n)
        return rng.binomial(3, difficulty) / 3, [3] * n, [f"p{i}" for i in range(n)]
    sizes: list[int] = []
    while sum(sizes) < n:
        sizes.append(int(rng.integers(1, 5)))
    sizes[-1] -= sum(sizes) - n
    clusters = [f"c{c}" for c, size in enumerate(sizes) for _ in range(size)]
    difficulty = np.repeat(rng.beta(a, b, len(sizes)), sizes)
    return rng.binomial(1, difficulty).astype(float), [1] * n, clusters


def report_coverage(shape: str, p: float, n: int, sims: int, seed: int) -> float:
    rng = np.random.default_rng([seed, SHAPES.index(shape), int(p * 1000), n])
    hits = 0
    for _ in range(sims):
        values, cells, clusters = draw(shape, p, n, rng)
        ci = stats.accuracy_interval(values, cells, clusters)
        hits += ci.low <= p <= ci.high
    return hits / sims


def bootstrap_coverage(shape: str, p: float, n: int, sims: int, seed: int, method: str) -> float:
    """The percentile bootstrap over problems (the report before) or BCa over challenges."""
    from scipy.stats import bootstrap

    rng = np.random.default_rng([seed + 1, SHAPES.index(shape), int(p * 1000), n])
    hits = 0
    for _ in range(sims):
        values, cells, clusters = draw(shape, p, n, rng)
        if method == "percentile":
            data: tuple[np.ndarray, ...] = (values,)

            def statistic(x, axis=-1):
                return x.mean(axis=axis)
        else:
            keys = sorted(set(clusters))
            data = (np.array([values[[c == k for c in clusters]].sum() for k in keys]),
                    np.array([clusters.count(k) for k in keys], dtype=float))

            def statistic(s, m, axis=-1):  # type: ignore[misc]
                return s.sum(axis=axis) / m.sum(axis=axis)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # a degenerate sample (every value 0) gives a point or nan
            res = bootstrap(data, statistic, paired=len(data) > 1, vectorized=True, method=method,
                            n_resamples=999, rng=rng)
        # a sample with no spread (every problem 0) has no bootstrap interval: the point it is
        estimate = float(values.mean())
        lo = float(np.nan_to_num(res.confidence_interval.low, nan=estimate))
        hi = float(np.nan_to_num(res.confidence_interval.high, nan=estimate))
        hits += lo <= p <= hi
    return hits / sims


def paired_coverage(p: float, n: int, sims: int, seed: int, gap: float = 0.05, shape: str = "one run") -> float:
    """The report's paired interval for two strategies on the same problems, correlated: with one
    run per problem both solve the easy problems first (a at p + gap, b at p with a little noise of
    its own; Newcombe's interval); with three repeats of problems of unequal difficulty, a's chance
    on each problem is b's plus gap (the square-and-add of exact intervals)."""
    rng = np.random.default_rng([seed + 2, SHAPES.index(shape), int(p * 1000), n])
    noise = 0.02
    truth = (p + gap) - (p * (1 - noise) + (1 - p) * noise) if shape == "one run" else gap
    ids = [f"p{i}" for i in range(n)]
    hits = 0
    for _ in range(sims):
        if shape == "one run":
            u = rng.random(n)
            xa = (u < p + gap).astype(float)
            xb = ((u < p) ^ (rng.random(n) < noise)).astype(float)
            cells = 1
        else:
            icc = 0.3
            difficulty = rng.beta(p * (1 / icc - 1), (1 - p) * (1 / icc - 1), n)
            truth = float(np.mean(np.minimum(difficulty + gap, 1.0) - difficulty))
            xa = rng.binomial(3, np.minimum(difficulty + gap, 1.0)) / 3
            xb = rng.binomial(3, difficulty) / 3
            cells = 3
        res = stats.paired_comparison(dict(zip(ids, xa)), dict(zip(ids, xb)), cells_a=dict.fromkeys(ids, cells),
                                      cells_b=dict.fromkeys(ids, cells))
        hits += res is not None and res.low <= truth <= res.high
    return hits / sims


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sims", type=int, default=2000, help="simulated sweeps per cell of the table")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--quick", action="store_true", help="leave out the (slow) bootstrap columns")
    args = ap.parse_args()
    boot_sims = max(100, args.sims // 5)
    worst = 1.0
    print(f"coverage of the nominal 95% interval ({args.sims} sweeps each"
          + ("" if args.quick else f"; the bootstrap columns {boot_sims}") + ")")
    print(f"{'shape':12s} {'accuracy':>8s} {'problems':>8s} {'report':>8s}"
          + ("" if args.quick else f" {'before (percentile)':>20s} {'BCa by challenge':>17s}"))
    for shape in SHAPES:
        for p in ACCURACIES:
            for n in PROBLEMS:
                cov = report_coverage(shape, p, n, args.sims, args.seed)
                worst = min(worst, cov)
                line = f"{shape:12s} {p:8.0%} {n:8d} {cov:8.1%}"
                if not args.quick:
                    line += (f" {bootstrap_coverage(shape, p, n, boot_sims, args.seed, 'percentile'):20.1%}"
                             f" {bootstrap_coverage(shape, p, n, boot_sims, args.seed, 'BCa'):17.1%}")
                print(line, flush=True)
    print("\npaired interval, two strategies 5 points apart on the same problems (Newcombe with one run, "
          "the square-and-add of exact intervals with repeats):")
    for shape in ("one run", "3 repeats"):
        for p in ACCURACIES:
            for n in PROBLEMS:
                cov = paired_coverage(p, n, args.sims, args.seed, shape=shape)
                worst = min(worst, cov)
                print(f"{'paired, ' + shape:18s} {p:8.0%} {n:8d} {cov:8.1%}", flush=True)
    print(f"\nworst coverage of the report's intervals: {worst:.1%} (needs at least {THRESHOLD:.0%})")
    return 0 if worst >= THRESHOLD else 1


if __name__ == "__main__":
    sys.exit(main())
