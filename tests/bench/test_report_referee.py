"""A report a referee would accept (issue #34, findings 6-9), at the accuracies CritPt lives at:
intervals that cover (exact Clopper-Pearson, the challenge as the unit where sub-problems or repeats
exist), paired intervals that do not collapse, Holm-adjusted p-values beside the raw ones, each
strategy over all its problems at a budget (cut-short runs counted as what they answered, crashed
cells in the denominator), "anytime accuracy at T" named as such and real equal-budget comparisons
from sweeps run at each budget, oracles in their own table, input / output / cached tokens apart."""

from __future__ import annotations

import pytest
from rich.console import Console
from scipy.stats import binomtest

from physlab.bench.report import apart_title, build_report
from physlab.bench.report_render import print_report
from physlab.bench.store import CellResult, CellSpec, ResultsStore, worker_id
from physlab.grading.verdict import Verdict
from physlab.llm.usage import Budget, Usage
from physlab.problems.model import Problem
from physlab.run.checkpoints import Checkpoint


def _cell(st, w, *, problem, strategy, model="m", repeat=0, verdict="correct", tokens=(1000, 100), cached=0,
          cost=0.0, budget=None, stop="answered", ran_as=None, reference_conditioned=False, checkpoints=()):
    spec = CellSpec(problem_id=problem, strategy=strategy, model=model, repeat=repeat, suite="t", gradable=True,
                    budget=budget or Budget())
    st.add_cells([spec])
    assert st.claim(spec.key, w)
    cps = [Checkpoint(step=f"round {i + 1}", answer_code="def answer(): return 1", input_tokens=t,
                      verdict=Verdict(verdict=v, reason="")) for i, (t, v) in enumerate(checkpoints)]
    usage = Usage(calls=1, input_tokens=tokens[0], output_tokens=tokens[1], cost_usd=cost, cache_read_tokens=cached)
    st.finish(spec.key, w, CellResult(status="complete", stop_reason=stop, verdict=verdict, verdict_reason="",
                                      answer_code="def answer(): ...", usage_by_role={"solver": usage},
                                      ran_as=ran_as, reference_conditioned=reference_conditioned, checkpoints=cps))
    return spec


def _crash(st, w, *, problem, strategy, model="m", repeat=0):
    spec = CellSpec(problem_id=problem, strategy=strategy, model=model, repeat=repeat, suite="t", gradable=True)
    st.add_cells([spec])
    st.claim(spec.key, w)
    st.fail(spec.key, w, "boom")


def _group(rep, strategy):
    (g,) = [g for g in rep.groups if g.strategy == strategy]
    return g


# ---- finding 6: intervals ------------------------------------------------------------------------

def test_none_of_twenty_is_reported_with_the_exact_interval(tmp_path):
    st, w = ResultsStore(tmp_path / "r.sqlite"), worker_id()
    for i in range(20):
        _cell(st, w, problem=f"p{i}", strategy="s", verdict="incorrect")
    g = build_report(st).groups[0]
    assert g.accuracy == 0.0 and g.ci_low == 0.0
    assert g.ci_high == pytest.approx(1 - 0.025 ** (1 / 20))  # 0.168, was [0.000, 0.000]
    assert "exact" in g.ci_method


def test_one_repeat_per_problem_gets_the_clopper_pearson_interval(tmp_path):
    st, w = ResultsStore(tmp_path / "r.sqlite"), worker_id()
    for i in range(20):
        _cell(st, w, problem=f"p{i}", strategy="s", verdict="correct" if i == 0 else "incorrect")
    g = build_report(st).groups[0]
    ci = binomtest(1, 20).proportion_ci(0.95, method="exact")
    assert (g.ci_low, g.ci_high) == pytest.approx((ci.low, ci.high))


def test_sub_problems_of_one_challenge_are_one_unit(tmp_path):
    """Ten challenges of two sub-problems each, solved or failed together: twenty problems but ten
    independent draws. The interval is the challenges', not twenty problems' (which is narrower)."""
    st, w = ResultsStore(tmp_path / "r.sqlite"), worker_id()
    flat, w2 = ResultsStore(tmp_path / "flat.sqlite"), worker_id()
    problems = []
    for c in range(10):
        for part in ("main", "sub_1"):
            pid = f"ch{c}_{part}"
            problems.append(Problem(id=pid, statement="x", extra={"format": "critpt", "dataset_name": f"ch{c}"}))
            verdict = "correct" if c < 3 else "incorrect"
            _cell(st, w, problem=pid, strategy="s", verdict=verdict)
            _cell(flat, w2, problem=pid, strategy="s", verdict=verdict)
    st.add_problems(problems, suite="t")
    g, f = build_report(st).groups[0], build_report(flat).groups[0]
    assert g.accuracy == f.accuracy == pytest.approx(0.3)
    assert g.clusters == 10 and f.clusters == 20 and "10 challenges" in g.ci_method
    assert g.ci_high - g.ci_low > f.ci_high - f.ci_low


def test_a_paired_interval_does_not_collapse_when_few_problems_disagree(tmp_path):
    st, w = ResultsStore(tmp_path / "r.sqlite"), worker_id()
    for i in range(20):  # a solves p0..p2, b solves p0..p1: one discordant problem
        _cell(st, w, problem=f"p{i}", strategy="a", verdict="correct" if i < 3 else "incorrect")
        _cell(st, w, problem=f"p{i}", strategy="b", verdict="correct" if i < 2 else "incorrect")
    (c,) = build_report(st).comparisons
    assert c.difference == pytest.approx(0.05)
    assert c.low < 0 < c.high and c.high - c.low > 0.1        # Newcombe's interval, not [0.000, 0.150]
    assert c.p_value == pytest.approx(1.0) and "Newcombe" in c.method


def test_p_values_are_holm_adjusted_beside_the_raw_ones(tmp_path):
    st, w = ResultsStore(tmp_path / "r.sqlite"), worker_id()
    solved = {"a": 18, "b": 6, "c": 5}
    for s, k in solved.items():
        for i in range(20):
            _cell(st, w, problem=f"p{i}", strategy=s, verdict="correct" if i < k else "incorrect")
    comps = build_report(st).comparisons
    assert len(comps) == 3
    raw = sorted(c.p_value for c in comps)
    adjusted = sorted(c.p_holm for c in comps)
    expected, running = [], 0.0
    for i, p in enumerate(raw):
        running = max(running, min(1.0, (3 - i) * p))
        expected.append(running)
    assert adjusted == pytest.approx(expected)
    assert all(c.p_holm >= c.p_value for c in comps)


# ---- finding 7: a strategy over all its problems at a budget -------------------------------------

def test_runs_cut_short_by_a_cap_count_as_what_they_answered_in_one_row(tmp_path):
    st, w = ResultsStore(tmp_path / "r.sqlite"), worker_id()
    cap = Budget(max_tokens=20_000)
    for i in range(20):
        short = i >= 16
        _cell(st, w, problem=f"p{i}", strategy="rsa", budget=cap, verdict="correct" if i < 16 else "incorrect",
              stop="budget:max_tokens" if short else "voted", ran_as="3 of 4 rounds" if short else None)
        _cell(st, w, problem=f"p{i}", strategy="tpbench-vote", budget=cap, verdict="correct" if i < 10 else "incorrect",
              stop="budget:max_tokens" if i % 2 else "voted")
    rep = build_report(st)
    rsa = _group(rep, "rsa")
    assert (rsa.correct, rsa.graded, rsa.accuracy) == (16, 20, pytest.approx(0.8))  # RSA at the budget: 16/20
    assert rsa.cut_short == 4 and rsa.ran_as_runs == {"3 of 4 rounds": 4}
    assert _group(rep, "tpbench-vote").cut_short == 10       # TPBench's cut-short runs are counted too
    out = Console(width=250, record=True)
    print_report(rep, out)
    assert "ran as" not in out.export_text().split("Problems ×")[0]  # no row split by what a cap did


# ---- finding 8: anytime accuracy, and equal budgets from real capped sweeps ----------------------

def test_anytime_accuracy_is_named_as_such_and_a_real_budget_comparison_comes_from_capped_sweeps(tmp_path):
    st, w = ResultsStore(tmp_path / "r.sqlite"), worker_id()
    for i in range(10):
        # uncapped: oneshot answers with 238 tokens; at --budget-tokens 554 the runs sent nothing
        _cell(st, w, problem=f"p{i}", strategy="oneshot", tokens=(200, 38), verdict="correct" if i < 5 else "incorrect")
        _cell(st, w, problem=f"p{i}", strategy="oneshot", budget=Budget(max_tokens=554), tokens=(0, 0),
              verdict="invalid", stop="budget:max_tokens")
        _cell(st, w, problem=f"p{i}", strategy="oneshot", budget=Budget(max_tokens=20_000), tokens=(200, 38),
              verdict="correct" if i < 5 else "incorrect")
    rep = build_report(st, equal_tokens=554)
    (sweep,) = rep.budget_sweeps
    assert [p.budget_tokens for p in sweep.points] == [554, 20_000, None]
    assert [p.accuracy for p in sweep.points] == pytest.approx([0.0, 0.5, 0.5])
    uncapped = next(g for g in rep.groups if g.config == "-")
    assert uncapped.anytime_accuracy == pytest.approx(0.5) and rep.anytime_tokens == 554
    console = Console(width=250, record=True)
    print_report(rep, console)
    text = console.export_text()
    assert "anytime accuracy at 554" in text and "equal-budget" not in text
    assert "Accuracy at each budget" in text


# ---- finding 9: oracles apart, crashed cells counted, token axes apart -----------------------------

def test_the_oracle_is_reported_apart_and_never_ranked(tmp_path):
    st, w = ResultsStore(tmp_path / "r.sqlite"), worker_id()
    for i in range(10):
        _cell(st, w, problem=f"p{i}", strategy="tpbench-bon", verdict="correct" if i < 8 else "incorrect")
        _cell(st, w, problem=f"p{i}", strategy="tpbench-vote", verdict="correct" if i < 3 else "incorrect")
    rep = build_report(st)
    bon = _group(rep, "tpbench-bon")
    assert bon.oracle and bon not in rep.solvers
    assert rep.comparisons == []
    console = Console(width=250, record=True)
    print_report(rep, console)
    assert apart_title() in console.export_text()


def test_crashed_cells_stay_in_the_denominator_and_are_shown(tmp_path):
    st, w = ResultsStore(tmp_path / "r.sqlite"), worker_id()
    for i in range(8):
        _cell(st, w, problem=f"p{i}", strategy="s")
    for i in (8, 9):
        _crash(st, w, problem=f"p{i}", strategy="s")
    g = build_report(st).groups[0]
    assert (g.correct, g.graded, g.crashed, g.problems) == (8, 8, 2, 10)
    assert g.accuracy == pytest.approx(0.8)                    # was 1.0: the crashes left the denominator


def test_input_output_and_cached_tokens_are_separate_axes_with_cost_in_dollars(tmp_path):
    st, w = ResultsStore(tmp_path / "r.sqlite"), worker_id()
    for i in range(5):
        _cell(st, w, problem=f"p{i}", strategy="s", tokens=(1000 + i, 50 + i), cached=600, cost=0.02)
    rep = build_report(st)
    g = rep.groups[0]
    assert (g.input_median, g.output_median, g.cached_median, g.cost_median) == (1002, 52, 600, pytest.approx(0.02))
    assert {c.axis for c in rep.curves} >= {"input_tokens", "output_tokens", "cost_usd"}
    console = Console(width=250, record=True)
    print_report(rep, console)
    head = console.export_text()
    assert "input/output/cached med" in head and "1,002/52/600" in head and "cost med $" in head


# ---- the pictures and the dashboard say the same --------------------------------------------------

def test_the_plots_name_the_interval_the_report_computes(tmp_path):
    """The accuracy-vs-spend plot's axis said 'bootstrap over problems' after the report's intervals
    became exact (Clopper-Pearson at the effective size)."""
    from physlab.bench.plots import accuracy_vs_cost_figure

    st, w = ResultsStore(tmp_path / "r.sqlite"), worker_id()
    for i in range(10):
        _cell(st, w, problem=f"p{i}", strategy="s", verdict="correct" if i < 2 else "incorrect")
    fig = accuracy_vs_cost_figure(build_report(st))
    labels = [ax.get_ylabel() for ax in fig.axes if ax.get_ylabel()]
    assert labels and all("exact 95%" in y and "bootstrap" not in y for y in labels), labels
    # no price known: the axis is the tokens, and says that it adds input and output unweighted
    assert "input + output tokens" in fig.axes[0].get_xlabel()


def test_a_spend_axis_within_one_decade_still_has_numbers_on_it(tmp_path):
    """The report's accuracy-vs-dollars panel had no number on its x axis when every group's cost sat
    within one decade (no power of ten in view, and the minor ticks' labels switched off)."""
    from physlab.bench.plots import accuracy_vs_cost_figure

    st, w = ResultsStore(tmp_path / "r.sqlite"), worker_id()
    for strategy, cost in (("a", 0.012), ("b", 0.031), ("c", 0.055)):
        for i in range(4):
            _cell(st, w, problem=f"p{i}", strategy=strategy, cost=cost, verdict="correct" if i < 2 else "incorrect")
    fig = accuracy_vs_cost_figure(build_report(st))
    fig.canvas.draw()
    (ax,) = [a for a in fig.axes if "USD" in a.get_xlabel()]
    lo, hi = ax.get_xlim()
    shown = [t.get_text() for t in ax.get_xticklabels(minor=False) + ax.get_xticklabels(minor=True)
             if t.get_text() and lo <= t.get_position()[0] <= hi]
    assert len(shown) >= 2, shown


def test_the_dashboard_sweeps_page_shows_the_referees_statistics(tmp_path):
    """The Sweeps page shows the report's own figures: the Holm-adjusted p beside the raw one and the
    method of each paired interval, the intervals named as they are computed, the oracle apart from the
    solvers, and the curves named as anytime accuracy (what a run held), not what a cap would leave."""
    import html as htmllib
    import re

    from fastapi.testclient import TestClient

    from physlab.web import create_app

    st, w = ResultsStore(tmp_path / "results.sqlite"), worker_id()
    for i in range(12):
        _cell(st, w, problem=f"p{i}", strategy="oneshot", verdict="correct" if i < 3 else "incorrect")
        _cell(st, w, problem=f"p{i}", strategy="rsa", verdict="correct" if i < 9 else "incorrect")
        _cell(st, w, problem=f"p{i}", strategy="multi-round", verdict="correct" if i < 4 else "incorrect")
        _cell(st, w, problem=f"p{i}", strategy="tpbench-bon", verdict="correct" if i < 11 else "incorrect")
    rep = build_report(st)
    st.close()
    (tmp_path / "runs").mkdir()
    client = TestClient(create_app(tmp_path / "runs", db=tmp_path / "results.sqlite"), base_url="http://127.0.0.1")
    page = client.get("/sweeps").text
    table = re.search(r'<table [^>]*id="comparisons".*?</table>', page, re.S).group(0)
    heads = [htmllib.unescape(h) for h in re.findall(r"<th(?:\s[^>]*)?>(.*?)</th>", table)]
    assert heads[7:] == ["p (exact)", "p (Holm)", "method"], heads
    rows = re.findall(r"<tr>(.*?)</tr>", table.split("<tbody>")[1], re.S)
    assert len(rows) == len(rep.comparisons) == 3
    for row, c in zip(rows, rep.comparisons):
        cells = [htmllib.unescape(re.sub(r"<[^>]+>", "", x)).strip() for x in re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)]
        assert cells[7:] == [f"{c.p_value:.3g}", f"{c.p_holm:.3g}", c.method]
    assert "bootstrap" not in page.lower() and "uncorrected" not in page
    assert "anytime accuracy" in page.lower() and "a cap of that many" not in page
    solvers = re.search(r'id="summary-table".*?</table>', page, re.S).group(0)
    assert "tpbench-bon" not in solvers
    assert apart_title() in page


def test_the_difference_intervals_are_adjusted_like_the_p_values(tmp_path):
    """Issue #44: the p-values were Holm-adjusted and the intervals beside them were not, so an
    interval clear of 0 among many comparisons read as evidence its p (Holm) denied. The interval
    shown is adjusted too (Bonferroni: all of the report's intervals hold together with 95%), the
    one-comparison interval stays in the JSON, and the report says which is which."""
    from physlab.bench import stats
    from physlab.bench.report_render import write_html

    st, w = ResultsStore(tmp_path / "r.sqlite"), worker_id()
    solved = {"a": 12, "b": 7, "c": 3}
    for s, k in solved.items():
        for i in range(20):
            _cell(st, w, problem=f"p{i}", strategy=s, verdict="correct" if i < k else "incorrect")
    rep = build_report(st)
    assert len(rep.comparisons) == 3
    for c in rep.comparisons:
        xa, xb = [i < solved[c.a.split("|")[0]] for i in range(20)], [i < solved[c.b.split("|")[0]] for i in range(20)]
        both = sum(x and y for x, y in zip(xa, xb))
        a_only, b_only = sum(x and not y for x, y in zip(xa, xb)), sum(y and not x for x, y in zip(xa, xb))
        table = (both, a_only, b_only, 20 - both - a_only - b_only)
        assert (c.low, c.high) == pytest.approx(stats.newcombe_paired(*table))
        assert (c.low_adjusted, c.high_adjusted) == pytest.approx(stats.newcombe_paired(*table, 1 - 0.05 / 3))
        assert c.low_adjusted < c.low and c.high_adjusted > c.high
    a_b = next(c for c in rep.comparisons if (c.a, c.b) == ("a|m", "b|m"))
    assert a_b.low > 0 > a_b.low_adjusted                  # clear of 0 alone; not among three
    out = Console(width=250, record=True)
    print_report(rep, out)
    text = out.export_text()
    shown = f"{a_b.difference:+.3f} [{a_b.low_adjusted:+.3f}, {a_b.high_adjusted:+.3f}]"
    assert shown in text and f"[{a_b.low:+.3f}, {a_b.high:+.3f}]" not in text
    assert "adjusted for the 3 comparisons" in text
    html = write_html(rep, tmp_path / "report.html").read_text()
    assert shown in html and "adjusted for the 3 comparisons" in html
