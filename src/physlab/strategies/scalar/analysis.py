"""Analysis over many SCALAR runs (seed 003, sections 2.2, 3 and appendices D-E).

Pure functions on run records (one record = one Actor-Critic-Judge run):
- per-run metrics: mean per-turn score s_bar, gain g = s_{T-1} - s_0, convergence r;
- group summaries and problem-normalized contrasts D_sbar(m, c), D_R(m, c);
- tests (scipy.stats, two-sided): Kruskal-Wallis across groups, Mann-Whitney pairwise, Wilcoxon
  signed-rank on gains;
- the projected score-update field v(s) = E[s_{t+1} - s_t | s_t ~ s] in score bins with run-level
  bootstrap 95% CIs, the diffusion estimate D_b, its zero crossings s*, and a PNG plot.

Turns whose Judge reply was unparsable have no score (None): they are left out of s_bar and of the
transitions that touch them (a parse failure is not a measured score of 0).
"""

from __future__ import annotations

import itertools
import json
import math
import warnings
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
from pydantic import BaseModel, Field


class RunRecord(BaseModel):
    run_id: str = ""
    problem_id: str
    model: str = ""
    judge_model: str = ""
    expertise: str = "default"
    style: str = "default"
    feedback: str = "default"
    scores: list[float | None] = Field(default_factory=list)
    passes: list[bool] = Field(default_factory=list)

    @property
    def persona(self) -> str:
        return f"{self.expertise}/{self.style}"

    @property
    def valid_scores(self) -> list[float]:
        return [float(s) for s in self.scores if s is not None]

    @property
    def mean_score(self) -> float | None:
        v = self.valid_scores
        return float(np.mean(v)) if v else None

    @property
    def gain(self) -> float | None:
        v = self.valid_scores
        return v[-1] - v[0] if v else None

    @property
    def final_score(self) -> float | None:
        v = self.valid_scores
        return v[-1] if v else None

    @property
    def converged(self) -> bool:
        return any(self.passes)


def record_from_transcript(transcript: Any, run_id: str = "", rescore: Any = None) -> RunRecord:
    """A RunRecord from a ScalarTranscript (scores of the original Judge, or of ``rescore``)."""
    cfg = transcript.config
    src = rescore if rescore is not None else transcript
    return RunRecord(run_id=run_id, problem_id=transcript.problem_id, model=transcript.model,
                     judge_model=getattr(src, "judge_model", ""), expertise=cfg.get("expertise", "default"),
                     style=cfg.get("style", "default"), feedback=cfg.get("feedback", "default"),
                     scores=list(src.scores), passes=list(src.passes))


def load_records(run_dirs: Iterable[Path | str], judge: str | None = None) -> list[RunRecord]:
    """Records from SCALAR run directories; with ``judge``, the scores of that re-scoring Judge."""
    from physlab.strategies.scalar.rescore import Rescore, rescore_file_name
    from physlab.strategies.scalar.transcript import load_transcript

    out = []
    for d in run_dirs:
        tr = load_transcript(d)
        rescore = None
        if judge is not None:
            path = Path(d) / rescore_file_name(judge)
            if not path.is_file():
                continue
            rescore = Rescore.model_validate_json(path.read_text(encoding="utf-8"))
        out.append(record_from_transcript(tr, run_id=str(d), rescore=rescore))
    return out


# ------------------------------------------------------------------------------------ metrics

Metric = Callable[[RunRecord], float | None]
METRICS: dict[str, Metric] = {
    "mean_score": lambda r: r.mean_score,
    "gain": lambda r: r.gain,
    "final_score": lambda r: r.final_score,
    "converged": lambda r: float(r.converged),
}


def _metric(metric: str | Metric) -> Metric:
    if callable(metric):
        return metric
    if metric not in METRICS:
        raise ValueError(f"unknown metric {metric!r} (expected one of {', '.join(METRICS)})")
    return METRICS[metric]


def _key(key: str | Callable[[RunRecord], Any]) -> Callable[[RunRecord], Any]:
    return key if callable(key) else (lambda r: getattr(r, key))


def groups(records: Sequence[RunRecord], key: str | Callable[[RunRecord], Any],
           metric: str | Metric) -> dict[Any, list[float]]:
    """metric values per group (runs with no value left out)."""
    k, m = _key(key), _metric(metric)
    out: dict[Any, list[float]] = {}
    for r in records:
        v = m(r)
        if v is not None and not math.isnan(v):
            out.setdefault(k(r), []).append(float(v))
    return out


def summarize(records: Sequence[RunRecord], key: str | Callable[[RunRecord], Any] | None = None
              ) -> dict[Any, dict[str, float]]:
    """n, mean per-turn score, mean final score, mean gain, convergence rate (%) per group (or all)."""
    k = _key(key) if key is not None else (lambda r: "all")
    buckets: dict[Any, list[RunRecord]] = {}
    for r in records:
        buckets.setdefault(k(r), []).append(r)
    out = {}
    for g, rs in buckets.items():
        def mean(vals: list[float | None]) -> float:
            v = [x for x in vals if x is not None]
            return float(np.mean(v)) if v else float("nan")

        out[g] = {"n": len(rs), "mean_score": mean([r.mean_score for r in rs]),
                  "final_score": mean([r.final_score for r in rs]), "gain": mean([r.gain for r in rs]),
                  "convergence_rate": 100.0 * float(np.mean([r.converged for r in rs]))}
    return out


def normalized_contrasts(records: Sequence[RunRecord], group: str = "feedback",
                         baseline: Sequence[str] = ("model", "problem_id")) -> dict[tuple, dict[str, float]]:
    """Problem-normalized contrasts: for each (model, group value),
    D_sbar = < s_bar_i - <s_bar>_{model, problem(i)} > and D_R = 100 < r_i - <r>_{model, problem(i)} >."""
    base_s: dict[tuple, list[float]] = {}
    base_r: dict[tuple, list[float]] = {}
    for r in records:
        b = tuple(getattr(r, x) for x in baseline)
        if r.mean_score is not None:
            base_s.setdefault(b, []).append(r.mean_score)
        base_r.setdefault(b, []).append(float(r.converged))
    ms = {b: float(np.mean(v)) for b, v in base_s.items()}
    mr = {b: float(np.mean(v)) for b, v in base_r.items()}
    ds: dict[tuple, list[float]] = {}
    dr: dict[tuple, list[float]] = {}
    for r in records:
        b = tuple(getattr(r, x) for x in baseline)
        cell = (r.model, getattr(r, group))
        if r.mean_score is not None:
            ds.setdefault(cell, []).append(r.mean_score - ms[b])
        dr.setdefault(cell, []).append(100.0 * (float(r.converged) - mr[b]))
    return {c: {"D_sbar": float(np.mean(ds[c])) if c in ds else float("nan"),
                "D_R": float(np.mean(dr[c])), "n": len(dr[c])} for c in dr}


# --------------------------------------------------------------------------------------- tests


class TestResult(BaseModel):
    __test__: ClassVar[bool] = False  # not a pytest class
    test: str
    statistic: float
    p_value: float
    n: dict[str, int] = Field(default_factory=dict)

    @property
    def significant(self) -> bool:
        return self.p_value < 0.05


def kruskal_wallis(records: Sequence[RunRecord], key: str | Callable[[RunRecord], Any] = "feedback",
                   metric: str | Metric = "mean_score") -> TestResult:
    """Kruskal-Wallis H-test: do the groups' metric values come from one distribution?"""
    from scipy import stats

    g = {k: v for k, v in groups(records, key, metric).items() if v}
    if len(g) < 2:
        raise ValueError("Kruskal-Wallis needs at least two non-empty groups")
    values = list(g.values())
    if len({x for v in values for x in v}) == 1:  # all identical: no evidence of any difference
        return TestResult(test="kruskal", statistic=0.0, p_value=1.0, n={str(k): len(v) for k, v in g.items()})
    res = stats.kruskal(*values)
    return TestResult(test="kruskal", statistic=float(res.statistic), p_value=float(res.pvalue),
                      n={str(k): len(v) for k, v in g.items()})


def mann_whitney_pairs(records: Sequence[RunRecord], key: str | Callable[[RunRecord], Any] = "feedback",
                       metric: str | Metric = "mean_score") -> dict[tuple[Any, Any], TestResult]:
    """Two-sided Mann-Whitney U for every pair of groups (uncorrected p-values, as in the paper)."""
    from scipy import stats

    g = {k: v for k, v in groups(records, key, metric).items() if v}
    out = {}
    for a, b in itertools.combinations(sorted(g, key=str), 2):
        res = stats.mannwhitneyu(g[a], g[b], alternative="two-sided")
        out[(a, b)] = TestResult(test="mannwhitneyu", statistic=float(res.statistic), p_value=float(res.pvalue),
                                 n={str(a): len(g[a]), str(b): len(g[b])})
    return out


def wilcoxon_gain(records: Sequence[RunRecord]) -> TestResult:
    """Wilcoxon signed-rank on paired (s_0, s_{T-1}): is the median gain non-zero?"""
    from scipy import stats

    pairs = [(r.valid_scores[0], r.valid_scores[-1]) for r in records if len(r.valid_scores) >= 1]
    first = np.array([p[0] for p in pairs])
    last = np.array([p[1] for p in pairs])
    if len(pairs) == 0 or np.all(first == last):
        return TestResult(test="wilcoxon", statistic=0.0, p_value=1.0, n={"runs": len(pairs)})
    res = stats.wilcoxon(last, first)
    return TestResult(test="wilcoxon", statistic=float(res.statistic), p_value=float(res.pvalue),
                      n={"runs": len(pairs)})


# -------------------------------------------------------------------------- score-update field


class UpdateField(BaseModel):
    edges: list[float]
    centers: list[float]
    v: list[float | None] = Field(description="Mean next-turn update per bin (None: empty bin).")
    ci_low: list[float | None]
    ci_high: list[float | None]
    diffusion: list[float | None] = Field(description="D_b = Var(delta s) / 2 per bin.")
    counts: list[int]
    zero_crossings: list[float] = Field(default_factory=list)
    stable_fixed_points: list[float] = Field(default_factory=list,
                                             description="Crossings where v goes from + to - (attracting).")


def transitions(records: Sequence[RunRecord]) -> list[list[tuple[float, float]]]:
    """Per run, the observed (s_t, s_{t+1} - s_t) pairs (pairs touching an unscored turn dropped)."""
    out = []
    for r in records:
        pairs = [(float(a), float(b) - float(a)) for a, b in zip(r.scores, r.scores[1:])
                 if a is not None and b is not None]
        if pairs:
            out.append(pairs)
    return out


def _bin_means(per_run: list[list[tuple[float, float]]], edges: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    nb = len(edges) - 1
    sums, counts = np.zeros(nb), np.zeros(nb)
    for pairs in per_run:
        if not pairs:
            continue
        s = np.array([p[0] for p in pairs])
        d = np.array([p[1] for p in pairs])
        idx = np.clip(np.searchsorted(edges, s, side="right") - 1, 0, nb - 1)
        np.add.at(sums, idx, d)
        np.add.at(counts, idx, 1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(counts > 0, sums / np.maximum(counts, 1), np.nan), counts


def zero_crossings(centers: Sequence[float], v: Sequence[float | None]) -> tuple[list[float], list[float]]:
    """Linear-interpolated zeros of v between neighbouring non-empty bins; also the ones where v
    goes from positive to negative (projected fixed points that attract)."""
    pts = [(c, x) for c, x in zip(centers, v) if x is not None and not math.isnan(x)]
    zeros, stable = [], []
    for (c0, v0), (c1, v1) in zip(pts, pts[1:]):
        if v0 == 0:
            zeros.append(c0)
            continue
        if v0 * v1 < 0:
            z = c0 + (c1 - c0) * v0 / (v0 - v1)
            zeros.append(z)
            if v0 > 0 > v1:
                stable.append(z)
    if pts and pts[-1][1] == 0:
        zeros.append(pts[-1][0])
    return zeros, stable


def score_update_field(records: Sequence[RunRecord], *, bins: int | Sequence[float] = 10,
                       score_range: tuple[float, float] = (0.0, 100.0), n_boot: int = 1000,
                       seed: int = 0, min_count: int = 1) -> UpdateField:
    """Estimate v(s) = E[s_{t+1} - s_t | s_t in bin] with run-level bootstrap 95% CIs.

    Bins with fewer than ``min_count`` transitions are reported empty. The bootstrap resamples runs
    (not transitions) with replacement, since turns within a run are dependent."""
    edges = np.asarray(bins, dtype=float) if not isinstance(bins, int) else \
        np.linspace(score_range[0], score_range[1], bins + 1)
    per_run = transitions(records)
    v, counts = _bin_means(per_run, edges)
    nb = len(edges) - 1
    diff = np.full(nb, np.nan)
    allpairs = [p for run in per_run for p in run]
    if allpairs:
        s = np.array([p[0] for p in allpairs])
        d = np.array([p[1] for p in allpairs])
        idx = np.clip(np.searchsorted(edges, s, side="right") - 1, 0, nb - 1)
        for b in range(nb):
            sel = d[idx == b]
            if len(sel) >= 2:
                diff[b] = 0.5 * float(np.var(sel, ddof=1))
    lo, hi = np.full(nb, np.nan), np.full(nb, np.nan)
    if per_run and n_boot > 0:
        # per-run bin sums and counts, so each bootstrap replicate is one indexed sum over runs
        run_sums, run_counts = np.zeros((len(per_run), nb)), np.zeros((len(per_run), nb))
        for i, pairs in enumerate(per_run):
            s_i = np.array([p[0] for p in pairs])
            idx = np.clip(np.searchsorted(edges, s_i, side="right") - 1, 0, nb - 1)
            np.add.at(run_sums[i], idx, [p[1] for p in pairs])
            np.add.at(run_counts[i], idx, 1)
        rng = np.random.default_rng(seed)
        picks = rng.integers(0, len(per_run), (n_boot, len(per_run)))
        sums_b, counts_b = run_sums[picks].sum(axis=1), run_counts[picks].sum(axis=1)
        with np.errstate(invalid="ignore", divide="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # empty bins are all-NaN: reported as None
            boots = np.where(counts_b > 0, sums_b / np.maximum(counts_b, 1), np.nan)
            lo = np.nanpercentile(boots, 2.5, axis=0)
            hi = np.nanpercentile(boots, 97.5, axis=0)
    keep = counts >= min_count

    def lst(a: np.ndarray) -> list[float | None]:
        return [float(x) if k and not math.isnan(x) else None for x, k in zip(a, keep)]

    centers = [float(x) for x in (edges[:-1] + edges[1:]) / 2]
    vv = lst(v)
    zeros, stable = zero_crossings(centers, vv)
    return UpdateField(edges=[float(e) for e in edges], centers=centers, v=vv, ci_low=lst(lo), ci_high=lst(hi),
                       diffusion=lst(diff), counts=[int(c) for c in counts], zero_crossings=zeros,
                       stable_fixed_points=stable)


def plot_update_field(fields: dict[str, UpdateField] | UpdateField, path: Path | str,
                      title: str = "Score-update field") -> Path:
    """PNG of v(s) with its bootstrap band and the zero crossings marked (matplotlib, Agg)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    if isinstance(fields, UpdateField):
        fields = {"": fields}
    fig, ax = plt.subplots(figsize=(6.4, 4.2), dpi=120)
    ax.axhline(0.0, color="0.5", lw=0.8)
    for label, f in fields.items():
        xs = [c for c, v in zip(f.centers, f.v) if v is not None]
        ys = [v for v in f.v if v is not None]
        line, = ax.plot(xs, ys, "o-", label=label or None)
        band = [(c, lo, hi) for c, lo, hi in zip(f.centers, f.ci_low, f.ci_high) if lo is not None and hi is not None]
        if band:
            ax.fill_between([b[0] for b in band], [b[1] for b in band], [b[2] for b in band],
                            color=line.get_color(), alpha=0.2)
        for z in f.zero_crossings:
            ax.plot([z], [0.0], marker="D", color=line.get_color(), ms=7, mec="k")
    ax.set_xlabel("Judge score $s_t$")
    ax.set_ylabel(r"$v(s)=\mathbb{E}[s_{t+1}-s_t \mid s_t\simeq s]$")
    ax.set_title(title)
    if any(fields):
        ax.legend(fontsize=8)
    fig.tight_layout()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, format="png")
    plt.close(fig)
    return path


# ------------------------------------------------------------------------------------ report


def find_run_dirs(paths: Iterable[Path | str]) -> list[Path]:
    """SCALAR run directories under ``paths`` (a run directory itself, or any parent of some)."""
    from physlab.strategies.scalar.transcript import TRANSCRIPT_FILE

    found: list[Path] = []
    for p in map(Path, paths):
        if (p / TRANSCRIPT_FILE).is_file():
            found.append(p)
        elif p.is_dir():
            found += sorted(t.parent for t in p.rglob(TRANSCRIPT_FILE))
    return found


def report(records: Sequence[RunRecord], by: str = "feedback", out_dir: Path | str | None = None,
           *, bins: int = 10, n_boot: int = 1000, seed: int = 0) -> dict[str, Any]:
    """Everything above in one JSON-able dict (and, with ``out_dir``, report.json and a PNG of the
    score-update field per (model, problem))."""
    out: dict[str, Any] = {"n_runs": len(records), "by": by,
                           "summary": {str(k): v for k, v in summarize(records, by).items()},
                           "overall": summarize(records)["all"] if records else {}}
    tests: dict[str, Any] = {}
    for metric in ("mean_score", "converged", "gain"):
        try:
            tests[f"kruskal_{metric}"] = kruskal_wallis(records, by, metric).model_dump()
        except ValueError as exc:
            tests[f"kruskal_{metric}"] = {"error": str(exc)}
    tests["mannwhitney_mean_score"] = {f"{a} vs {b}": r.model_dump()
                                       for (a, b), r in mann_whitney_pairs(records, by).items()}
    tests["wilcoxon_gain"] = wilcoxon_gain(records).model_dump() if records else None
    out["tests"] = tests
    out["contrasts"] = {f"{m} | {g}": v for (m, g), v in normalized_contrasts(records, by).items()}
    fields: dict[str, UpdateField] = {}
    for key in sorted({(r.model, r.problem_id) for r in records}):
        sub = [r for r in records if (r.model, r.problem_id) == key]
        fields[f"{key[0]} | {key[1]}"] = score_update_field(sub, bins=bins, n_boot=n_boot, seed=seed)
    out["update_fields"] = {k: f.model_dump() for k, f in fields.items()}
    if out_dir is not None:
        out_dir = Path(out_dir)
        out_dir.mkdir(parents=True, exist_ok=True)
        if fields:
            out["plot"] = str(plot_update_field(fields, out_dir / "score_update_field.png"))
        (out_dir / "report.json").write_text(json.dumps(out, indent=1, default=str), encoding="utf-8")
    return out
