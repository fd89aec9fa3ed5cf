"""SCALAR run analysis on synthetic run data with known answers."""

from __future__ import annotations

import numpy as np
import pytest

from physlab.strategies.scalar.analysis import (
    RunRecord,
    kruskal_wallis,
    mann_whitney_pairs,
    normalized_contrasts,
    plot_update_field,
    score_update_field,
    summarize,
    wilcoxon_gain,
    zero_crossings,
)

FEEDBACK = ["adversarial", "strict", "pedagogical", "lenient", "default"]


def test_per_run_metrics_and_summary():
    a = RunRecord(problem_id="p", scores=[60, 70, 85], passes=[False, False, True], feedback="strict")
    b = RunRecord(problem_id="p", scores=[50, None, 40], passes=[False, False, False], feedback="strict")
    c = RunRecord(problem_id="p", scores=[90], passes=[True], feedback="lenient")
    assert a.mean_score == pytest.approx(215 / 3) and a.gain == 25 and a.converged
    assert b.mean_score == 45 and b.gain == -10 and not b.converged  # the unscored turn is left out
    assert c.gain == 0  # a single-turn run has zero gain by construction
    s = summarize([a, b, c], "feedback")
    assert s["strict"]["n"] == 2 and s["strict"]["convergence_rate"] == 50.0
    assert s["strict"]["gain"] == pytest.approx(7.5) and s["lenient"]["final_score"] == 90
    assert summarize([a, b, c])["all"]["n"] == 3


def test_problem_normalized_contrasts_remove_problem_difficulty():
    recs = []
    # easy problem baseline 80, hard problem baseline 40; "lenient" sits 4 points above its local
    # baseline on both, "strict" 4 below; raw means are dominated by difficulty, contrasts are not
    for pid, base in (("easy", 80.0), ("hard", 40.0)):
        for fb, shift, conv in (("lenient", 4.0, True), ("strict", -4.0, False)):
            for _ in range(3):
                recs.append(RunRecord(problem_id=pid, model="m", feedback=fb, scores=[base + shift],
                                      passes=[conv]))
    d = normalized_contrasts(recs, "feedback")
    assert d[("m", "lenient")]["D_sbar"] == pytest.approx(4.0)
    assert d[("m", "strict")]["D_sbar"] == pytest.approx(-4.0)
    assert d[("m", "lenient")]["D_R"] == pytest.approx(50.0)
    assert d[("m", "strict")]["D_R"] == pytest.approx(-50.0)


def _runs_by_group(rng, shift: dict[str, float], n: int = 40) -> list[RunRecord]:
    recs = []
    for fb in FEEDBACK:
        for _ in range(n):
            s = list(np.clip(rng.normal(65 + shift.get(fb, 0.0), 8, size=3), 0, 100))
            recs.append(RunRecord(problem_id="p", feedback=fb, scores=s, passes=[False] * 3))
    return recs


def test_kruskal_detects_planted_difference_and_not_null():
    rng = np.random.default_rng(7)
    planted = _runs_by_group(rng, {"lenient": 12.0})
    res = kruskal_wallis(planted, "feedback", "mean_score")
    assert res.significant and res.p_value < 1e-4
    null_ps = [kruskal_wallis(_runs_by_group(np.random.default_rng(seed), {}), "feedback").p_value
               for seed in range(12)]
    # under the null the p-values are ~uniform: most are large, few below 0.05
    assert sum(p < 0.05 for p in null_ps) <= 2 and np.median(null_ps) > 0.2
    pairs = mann_whitney_pairs(planted, "feedback")
    assert len(pairs) == 10
    for (a, b), r in pairs.items():
        if "lenient" in (a, b):
            assert r.significant
    assert not pairs[("adversarial", "default")].significant


def test_kruskal_needs_two_groups_and_identical_values_are_null():
    recs = [RunRecord(problem_id="p", feedback="strict", scores=[50])]
    with pytest.raises(ValueError):
        kruskal_wallis(recs)
    same = [RunRecord(problem_id="p", feedback=f, scores=[50]) for f in ("a", "b") for _ in range(3)]
    assert kruskal_wallis(same).p_value == 1.0


def test_wilcoxon_on_gains():
    rng = np.random.default_rng(3)
    improving = [RunRecord(problem_id="p", scores=[s, s + rng.normal(8, 4)])
                 for s in rng.uniform(40, 70, 50)]
    assert wilcoxon_gain(improving).significant
    flat = [RunRecord(problem_id="p", scores=[s, s + d]) for s, d in
            zip(rng.uniform(40, 70, 50), rng.normal(0, 4, 50))]
    assert not wilcoxon_gain(flat).significant
    assert wilcoxon_gain([RunRecord(problem_id="p", scores=[50])]).p_value == 1.0


def _planted_drift_runs(s_star: float, k: float, n_runs: int, seed: int) -> list[RunRecord]:
    """s_{t+1} = s_t + k (s* - s_t) + noise: the true field v(s) = k (s* - s) crosses zero at s*."""
    rng = np.random.default_rng(seed)
    recs = []
    for _ in range(n_runs):
        s = [float(rng.uniform(20, 100))]
        for _ in range(4):
            s.append(float(np.clip(s[-1] + k * (s_star - s[-1]) + rng.normal(0, 3), 0, 100)))
        recs.append(RunRecord(problem_id="p", scores=s, passes=[False] * 5))
    return recs


def test_update_field_finds_planted_fixed_point():
    recs = _planted_drift_runs(63.0, 0.4, 300, seed=11)
    f = score_update_field(recs, bins=10, n_boot=200, seed=1)
    assert len(f.stable_fixed_points) == 1
    assert f.stable_fixed_points[0] == pytest.approx(63.0, abs=3.0)
    # the bootstrap band covers the true drift in well-populated bins, and is not degenerate
    for c, lo, hi, n in zip(f.centers, f.ci_low, f.ci_high, f.counts):
        if n >= 30:
            assert lo <= 0.4 * (63.0 - c) <= hi or abs(0.4 * (63.0 - c) - (lo + hi) / 2) < 2.0
            assert hi > lo
    assert all(d is None or d > 0 for d in f.diffusion)
    # a field that never crosses zero reports no fixed point
    up = [RunRecord(problem_id="p", scores=[s, s + 10]) for s in np.linspace(5, 85, 40)]
    g = score_update_field(up, bins=8, n_boot=50)
    assert g.zero_crossings == [] and g.stable_fixed_points == []


def test_update_field_skips_unscored_turns():
    recs = [RunRecord(problem_id="p", scores=[50, None, 70, 80])]
    f = score_update_field(recs, bins=[0, 60, 100], n_boot=10)
    assert f.counts == [0, 1] and f.v == [None, 10.0]


def test_zero_crossings_interpolates():
    zeros, stable = zero_crossings([10, 30, 50, 70], [4.0, 2.0, -2.0, 1.0])
    assert zeros == pytest.approx([40.0, 50 + 20 * 2 / 3]) and stable == pytest.approx([40.0])


def test_plot_writes_png(tmp_path):
    recs = _planted_drift_runs(63.0, 0.4, 60, seed=2)
    f = score_update_field(recs, bins=8, n_boot=50)
    path = plot_update_field({"planted": f}, tmp_path / "field.png")
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and path.stat().st_size > 2000


def test_report_bundles_metrics_tests_and_plot(tmp_path):
    from physlab.strategies.scalar.analysis import report

    rng = np.random.default_rng(5)
    recs = _runs_by_group(rng, {"lenient": 15.0}, n=15) + _planted_drift_runs(63.0, 0.4, 30, seed=4)
    rep = report(recs, by="feedback", out_dir=tmp_path, n_boot=50)
    assert rep["n_runs"] == len(recs) and rep["tests"]["kruskal_mean_score"]["p_value"] < 0.05
    assert len(rep["tests"]["mannwhitney_mean_score"]) == 10
    assert (tmp_path / "report.json").is_file() and (tmp_path / "score_update_field.png").is_file()
