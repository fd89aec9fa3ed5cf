"""Report figures recomputed independently from the database (SQL, closed forms)."""

from __future__ import annotations

import csv
import json
import random
import re
import sqlite3

import pytest

from physlab.bench.report import apart_title, build_report, write_csv
from physlab.bench.report_render import write_html
from physlab.bench.stats import accuracy_interval
from physlab.bench.store import CellResult, CellSpec, ResultsStore, worker_id
from physlab.cli import main
from physlab.grading.verdict import Verdict
from physlab.llm.usage import CallRecord, Usage
from physlab.run.checkpoints import Checkpoint


def _fill(path, seed=1):
    """A synthetic but realistic database: 2 strategies x 2 models x 5 problems x 3 repeats."""
    rng = random.Random(seed)
    st = ResultsStore(path)
    w = worker_id()
    skill = {("a", "m1"): 0.8, ("a", "m2"): 0.4, ("b", "m1"): 0.6, ("b", "m2"): 0.1}
    for (s, m), p in skill.items():
        for i in range(5):
            for r in range(3):
                spec = CellSpec(problem_id=f"p{i}", strategy=s, model=m, repeat=r, suite="t", gradable=True)
                st.add_cells([spec])
                assert st.claim(spec.key, w)
                ok = rng.random() < p
                roles = {"solver": Usage(calls=1, input_tokens=rng.randint(100, 900), output_tokens=rng.randint(10, 300),
                                         cost_usd=rng.random() / 100)}
                if s == "b":
                    roles["critic"] = Usage(calls=2, input_tokens=rng.randint(100, 900), output_tokens=50, cost_usd=0.001)
                calls = [CallRecord(role=role, model=m, input_tokens=u.input_tokens, output_tokens=u.output_tokens)
                         for role, u in roles.items()]
                st.finish(spec.key, w, CellResult(status="complete", verdict="correct" if ok else "incorrect",
                                                  verdict_reason="", answer_code="def answer(): ...",
                                                  usage_by_role=roles, wall_s=rng.uniform(1, 10), calls=calls))
    # one crashed cell: counted as failed, not as graded
    spec = CellSpec(problem_id="p9", strategy="a", model="m1", repeat=0, suite="t", gradable=True)
    st.add_cells([spec])
    st.claim(spec.key, w)
    st.fail(spec.key, w, "boom")
    return st


def test_report_figures_match_sql_and_closed_forms(tmp_path):
    st = _fill(tmp_path / "r.sqlite")
    rep = build_report(st)
    db = sqlite3.connect(tmp_path / "r.sqlite")
    for g in rep.groups:
        n, k = db.execute("SELECT COUNT(*), SUM(verdict='correct') FROM cells WHERE state='done' AND "
                          "verdict IS NOT NULL AND strategy=? AND model=?", (g.strategy, g.model)).fetchone()
        crashed = db.execute("SELECT COUNT(*) FROM cells WHERE state='failed' AND gradable=1 AND strategy=? AND "
                             "model=?", (g.strategy, g.model)).fetchone()[0]
        assert (g.graded, g.correct, g.crashed) == (n, k, crashed)
        # each problem weighs the same: its share of cells solved, a crashed cell counting as unsolved
        per = db.execute("SELECT AVG(state='done' AND verdict='correct'), COUNT(*) FROM cells WHERE strategy=? "
                         "AND model=? AND (verdict IS NOT NULL OR state='failed') GROUP BY problem_id ORDER BY "
                         "problem_id", (g.strategy, g.model)).fetchall()
        assert g.accuracy == pytest.approx(sum(a for a, _ in per) / len(per))
        # the interval: exact at the effective size of the problems (3 repeats each), from SQL
        ci = accuracy_interval([a for a, _ in per], [c for _, c in per], [f"p{i}" for i in range(len(per))])
        assert (g.ci_low, g.ci_high) == pytest.approx((ci.low, ci.high))
        assert g.ci_low <= g.accuracy <= g.ci_high and g.ci_method == ci.method
        assert g.ci_method.endswith(f"{len(per)} problems (Korn-Graubard)")
        # pass@1 is the mean accuracy over problems; pass@3 with 3 repeats: solved at least once
        if not crashed:
            per = db.execute("SELECT problem_id, SUM(verdict='correct') FROM cells WHERE state='done' AND "
                             "strategy=? AND model=? GROUP BY problem_id", (g.strategy, g.model)).fetchall()
            assert g.pass_at_k[1] == pytest.approx(sum(c for _, c in per) / (3 * len(per)))
            assert g.pass_at_k[3] == pytest.approx(sum(c > 0 for _, c in per) / len(per))
            assert set(g.pass_at_k) == {1, 2, 3}
        # token share per role, from the calls table this time
        rows = db.execute("SELECT role, SUM(calls.input_tokens + calls.output_tokens) FROM calls JOIN cells "
                          "ON cells.key = calls.cell_key WHERE strategy=? AND cells.model=? GROUP BY role",
                          (g.strategy, g.model)).fetchall()
        tot = sum(t for _, t in rows)
        assert g.role_share == pytest.approx({r: t / tot for r, t in rows})
        toks = sorted(r[0] for r in db.execute(
            "SELECT input_tokens + output_tokens FROM cells WHERE state='done' AND strategy=? AND model=?",
            (g.strategy, g.model)))
        assert g.tokens_median == toks[len(toks) // 2]  # 15 cells: the 8th value
        inputs = sorted(r[0] for r in db.execute(
            "SELECT input_tokens FROM cells WHERE state='done' AND strategy=? AND model=?", (g.strategy, g.model)))
        assert g.input_median == inputs[len(inputs) // 2]
    a_m1 = next(g for g in rep.groups if (g.strategy, g.model) == ("a", "m1"))
    assert a_m1.failed == 1 and a_m1.cells == 15 and a_m1.crashed == 1 and a_m1.problems == 6
    # anytime accuracy: the cap is the cheapest group's p90; what the runs held within it, by SQL
    cap = rep.anytime_tokens
    for g in rep.groups:
        k = db.execute("SELECT SUM(verdict='correct' AND input_tokens + output_tokens <= ?) FROM cells "
                       "WHERE state='done' AND strategy=? AND model=?", (cap, g.strategy, g.model)).fetchone()[0]
        assert g.anytime_correct == g.equal_budget_correct == k
    # the 'b' strategy spends more (critic) so it loses some correct answers under the cap
    b_m1 = next(g for g in rep.groups if (g.strategy, g.model) == ("b", "m1"))
    assert b_m1.anytime_correct < b_m1.correct


def test_html_is_self_contained_and_csv_round_trips(tmp_path):
    st = _fill(tmp_path / "r.sqlite")
    rep = build_report(st, equal_tokens=800)
    html = write_html(rep, tmp_path / "report.html").read_text()
    imgs = re.findall(r'<img[^>]*src="([^"]*)"', html)
    assert len(imgs) == 6 and all(s.startswith("data:image/png;base64,") for s in imgs)
    assert "http://" not in html and "https://" not in html and "<link" not in html and "<script" not in html
    assert (tmp_path / "report_plots" / "accuracy_vs_cost.png").read_bytes()[:4] == b"\x89PNG"
    rows = list(csv.DictReader(write_csv(rep, tmp_path / "r.csv").open()))
    assert len(rows) == 4
    assert {r["strategy"] for r in rows} == {"a", "b"}
    assert all(float(r["ci95_low"]) <= float(r["accuracy"]) <= float(r["ci95_high"]) for r in rows)


def test_report_cli(tmp_path, capsys):
    _fill(tmp_path / "r.sqlite").close()
    with pytest.raises(SystemExit) as e:
        main(["bench", "report", "--db", str(tmp_path / "r.sqlite"), "--html", str(tmp_path / "o.html"),
              "--csv", str(tmp_path / "o.csv"), "--plots", str(tmp_path / "plots")])
    assert e.value.code == 0
    out = capsys.readouterr().out
    assert "accuracy" in out and (tmp_path / "o.html").is_file() and (tmp_path / "plots" / "accuracy_vs_tokens_budget.png").is_file()
    with pytest.raises(SystemExit) as e:
        main(["bench", "report", "--db", str(tmp_path / "nope.sqlite")])
    assert e.value.code == 2


def _cell(st, w, *, problem, strategy, model="m", repeat=0, verdict="correct", tokens=1000, cost=0.0,
          checkpoints=(), ran_as=None, reference_conditioned=False, judge=None, params=""):
    """One finished cell: its final verdict at ``tokens``, and its checkpoints as (tokens, verdict)."""
    spec = CellSpec(problem_id=problem, strategy=strategy, model=model, repeat=repeat, suite="t", gradable=True,
                    params=params)
    st.add_cells([spec])
    assert st.claim(spec.key, w)
    cps = [Checkpoint(step=f"round {i + 1}", answer_code=f"def answer(): return {i}", input_tokens=t,
                      cost_usd=cost * t / max(tokens, 1), verdict=Verdict(verdict=v, reason=""))
           for i, (t, v) in enumerate(checkpoints)]
    st.finish(spec.key, w, CellResult(
        status="complete", verdict=verdict, verdict_reason="", answer_code="def answer(): ...",
        usage_by_role={"solver": Usage(calls=1, input_tokens=tokens, cost_usd=cost)}, checkpoints=cps,
        ran_as=ran_as, reference_conditioned=reference_conditioned,
        judge_checks=judge[1] if judge else None, judge_agreed=judge[0] if judge else None))
    return spec.key


def _curve_db(path):
    """rsa improves over rounds (checkpoints), oneshot answers once; 4 problems x 2 repeats."""
    rng = random.Random(7)
    st, w = ResultsStore(path), worker_id()
    for i in range(4):
        for r in range(2):
            late = rng.choice(["correct", "incorrect"])
            _cell(st, w, problem=f"p{i}", strategy="rsa", repeat=r, verdict=late, tokens=9000 + 100 * i,
                  cost=0.09, checkpoints=[(1000 + 10 * r, "incorrect"), (4000 + 100 * i, rng.choice(["correct", "incorrect"])),
                                          (8000, late)])
            _cell(st, w, problem=f"p{i}", strategy="oneshot", repeat=r, tokens=1500,
                  verdict="correct" if i < 2 else "incorrect", cost=0.01)
    return st


def accuracy_by_hand(db_path, strategy: str, model: str, cap: float) -> float:
    """A group's accuracy at a token cap, straight from the database: each graded cell holds the
    last answer it had with at most `cap` tokens (its checkpoints, then its final answer at its own
    spend); a problem scores the share of its repeats holding a correct one; problems weigh the same."""
    db = sqlite3.connect(db_path)
    held: dict[str, list[bool]] = {}
    for key, pid, tokens, verdict in db.execute(
            "SELECT key, problem_id, input_tokens + output_tokens, verdict FROM cells WHERE strategy=? AND model=? "
            "AND state='done' AND verdict IS NOT NULL", (strategy, model)):
        points = db.execute("SELECT input_tokens + output_tokens, verdict FROM checkpoints WHERE cell_key=? "
                            "ORDER BY idx", (key,)).fetchall() + [(tokens, verdict)]
        within = [v for t, v in points if t <= cap]
        held.setdefault(pid, []).append(bool(within) and within[-1] == "correct")
    db.close()
    by_problem = [sum(v) / len(v) for v in held.values()]
    return sum(by_problem) / len(by_problem)


def test_a_curve_point_recomputed_by_hand_from_the_database(tmp_path):
    st = _curve_db(tmp_path / "r.sqlite")
    rep = build_report(st)
    (curve,) = [c for c in rep.curves if c.group == "rsa|m" and c.axis == "tokens"]
    cap = 4300.0
    point = next(p for p in curve.points if p.cap == cap)  # p3's round-2 checkpoint: a spend where it changes
    assert point.accuracy == pytest.approx(accuracy_by_hand(tmp_path / "r.sqlite", "rsa", "m", cap))
    assert point.low <= point.accuracy <= point.high
    # below the first checkpoint nothing is held; past every spend the curve is the accuracy column
    g = next(g for g in rep.groups if g.strategy == "rsa")
    assert curve.points[0].cap == 1000 and curve.points[0].accuracy == 0.0
    assert curve.points[-1].accuracy == pytest.approx(g.accuracy)
    # a cost axis too (runs cost money), from the same checkpoints
    assert any(c.group == "rsa|m" and c.axis == "cost_usd" for c in rep.curves)


def test_the_equal_budget_column_reads_the_curve_and_its_default_cap_reaches_a_correct_answer(tmp_path):
    st, w = ResultsStore(tmp_path / "r.sqlite"), worker_id()
    for i in range(5):  # a cheap scaffold that never solves anything, an expensive one that solves 3 of 5
        _cell(st, w, problem=f"p{i}", strategy="cheap", tokens=200, verdict="incorrect")
        _cell(st, w, problem=f"p{i}", strategy="deep", tokens=20_000, verdict="correct" if i < 3 else "incorrect",
              checkpoints=[(5000, "correct" if i < 3 else "incorrect")])
    rep = build_report(st)
    # the cheapest group's p90 (200 tokens) sat below every correct cell and the column read 0.000
    assert rep.equal_budget_tokens == 20_000  # the cheapest group that solved something: its p90
    deep = next(g for g in rep.groups if g.strategy == "deep")
    assert deep.equal_budget_accuracy == pytest.approx(0.6)
    rep = build_report(st, equal_tokens=6000)  # a cap between the checkpoints and the final answers
    deep = next(g for g in rep.groups if g.strategy == "deep")
    curve = next(c for c in rep.curves if c.group == "deep|m")
    assert deep.equal_budget_accuracy == pytest.approx(0.6) == [p for p in curve.points if p.cap <= 6000][-1].accuracy
    assert deep.equal_budget_correct == 3


def test_paired_comparison_is_the_exact_sign_test_over_shared_problems(tmp_path):
    st, w = ResultsStore(tmp_path / "r.sqlite"), worker_id()
    for i in range(10):  # a solves 9, b solves 1 (p0, which a also solves): 8 problems for a, none for b
        _cell(st, w, problem=f"p{i}", strategy="a", verdict="correct" if i < 9 else "incorrect")
        _cell(st, w, problem=f"p{i}", strategy="b", verdict="correct" if i == 0 else "incorrect")
    _cell(st, w, problem="only-a", strategy="a")  # not shared: left out of the comparison
    (c,) = build_report(st).comparisons
    assert (c.a, c.b, c.problems, c.a_better, c.b_better) == ("a|m", "b|m", 10, 8, 0)
    assert c.p_value == pytest.approx(2 * 0.5 ** 8)  # exact McNemar: 8 discordant pairs, all one way
    assert (c.accuracy_a, c.accuracy_b, c.difference) == pytest.approx((0.9, 0.1, 0.8))
    assert 0 < c.low <= 0.8 <= c.high <= 1


def test_repeats_do_not_narrow_the_interval_problems_do(tmp_path):
    """The issue's case: 20 problems x 2 identical repeats. Wilson over 40 cells gave [0.040, 0.231];
    the repeats carry no new information about the problems, so the interval is no narrower than
    the one-repeat one."""
    one, two = ResultsStore(tmp_path / "1.sqlite"), ResultsStore(tmp_path / "2.sqlite")
    w = worker_id()
    for i in range(20):
        for r in range(2):
            _cell(two, w, problem=f"p{i}", strategy="s", repeat=r, verdict="correct" if i < 2 else "incorrect")
        _cell(one, w, problem=f"p{i}", strategy="s", verdict="correct" if i < 2 else "incorrect")
    g1, g2 = build_report(one).groups[0], build_report(two).groups[0]
    assert g2.ci_high - g2.ci_low >= g1.ci_high - g1.ci_low
    assert g2.ci_high > 0.231 and g2.graded == 40 and g2.problems == 20


def test_matrix_reference_conditioned_runs_and_degraded_runs_are_kept_apart(tmp_path, capsys):
    st, w = ResultsStore(tmp_path / "r.sqlite"), worker_id()
    for i in range(3):
        for r in range(2):
            _cell(st, w, problem=f"p{i}", strategy="rsa", repeat=r, verdict="correct" if i <= r else "incorrect")
            _cell(st, w, problem=f"p{i}", strategy="scalar", repeat=r, reference_conditioned=True, judge=(3, 4),
                  params="setting=\"paper\"")
    _cell(st, w, problem="p0", strategy="tpbench-sympy", ran_as="majority vote of 8 (no verification)")
    _cell(st, w, problem="p1", strategy="tpbench-sympy")
    rep = build_report(st)
    assert rep.matrix["p0"]["rsa|m"] == [2, 2] and rep.matrix["p1"]["rsa|m"] == [1, 2]
    assert rep.matrix["p2"]["rsa|m"] == [0, 2]
    scalar = next(g for g in rep.groups if g.strategy == "scalar")
    assert scalar.reference_conditioned and (scalar.judge_agreed, scalar.judge_checks) == (18, 24)
    assert scalar not in rep.solvers
    assert all("scalar" not in c.a + c.b for c in rep.comparisons)  # never compared with solvers
    (sympy,) = [g for g in rep.groups if g.strategy == "tpbench-sympy"]   # one row: the strategy at its budget
    assert sympy.graded == 2 and sympy.ran_as_runs == {"majority vote of 8 (no verification)": 1}
    from rich.console import Console

    from physlab.bench.report_render import print_report

    print_report(rep, Console(width=250, record=True))
    out = capsys.readouterr().out
    assert apart_title() in out and "18/24 (75%)" in out
    assert "Problems × strategies: m" in out and "Paired comparisons" in out
    assert "ran as majority vote of 8" in out
    html = write_html(rep, tmp_path / "r.html").read_text()
    assert apart_title() in html and html.count("<h2>Problems × strategies") == 2


def test_plots_put_spend_on_log_axes_and_legends_beside_the_data(tmp_path):
    from physlab.bench import plots

    rep = build_report(_curve_db(tmp_path / "r.sqlite"))
    figs = plots.figures(rep)
    assert set(figs) == {"accuracy_vs_cost", "accuracy_vs_tokens_budget", "accuracy_vs_input_tokens_budget",
                         "accuracy_vs_cost_budget", "role_share"}
    for name, fig in figs.items():
        fig.canvas.draw()
        renderer = fig.canvas.get_renderer()
        legend = fig.legends[0]
        for ax in fig.axes:
            if name != "role_share":
                assert ax.get_xscale() == "log", name
            assert not legend.get_window_extent(renderer).overlaps(ax.get_window_extent(renderer)), name
        drawn, page = fig.get_tightbbox(renderer), fig.bbox_inches  # every label, tick and legend drawn
        assert page.x0 - 0.01 <= drawn.x0 and drawn.x1 <= page.x1 + 0.01, name  # ... inside the page
        assert page.y0 - 0.01 <= drawn.y0 and drawn.y1 <= page.y1 + 0.01, name


STUDENTS = "scripted:examples-strong,scripted:examples-weak"


@pytest.mark.slow
def test_report_of_a_sweep_of_the_examples(tmp_path, capsys):
    """The examples x 4 strategies x 2 scripted models x 3 repeats: the report shows problem-clustered
    intervals, paired comparisons, the per-problem matrix and accuracy-vs-budget curves, and one curve
    point is what the database says by hand."""
    db = tmp_path / "r.sqlite"
    with pytest.raises(SystemExit) as e:
        main(["bench", "run", "examples", "--strategies", "oneshot,rsa,multi-round,tpbench-vote", "--models",
              STUDENTS, "--repeats", "3", "--db", str(db), "--no-progress"])
    assert e.value.code == 0
    capsys.readouterr()
    with pytest.raises(SystemExit) as e:
        main(["bench", "report", "--db", str(db), "--plots", str(tmp_path / "plots")])
    assert e.value.code == 0
    text = capsys.readouterr().out
    for section in ("Korn-Graubard", "Paired comparisons", "Problems × strategies: scripted:examples-weak",
                    "anytime accuracy vs tokens spent, rsa × scripted:examples-strong"):
        assert section in text, section
    assert (tmp_path / "plots" / "accuracy_vs_tokens_budget.png").is_file()
    with pytest.raises(SystemExit):
        main(["bench", "report", "--db", str(db), "--json"])
    rep = json.loads(capsys.readouterr().out)
    n_problems = len(rep["matrix"])
    assert len(rep["groups"]) == 8 and n_problems >= 17
    for g in rep["groups"]:  # 3 repeats of every problem, yet the interval is over the problems
        # (the examples hold sub-problems of one CritPt challenge: the challenge is the unit)
        assert g["graded"] == 3 * n_problems and g["ci_method"].endswith("(Korn-Graubard)")
        assert g["clusters"] < n_problems
    strong = {g["strategy"]: g for g in rep["groups"] if g["model"] == "scripted:examples-strong"}
    assert strong["rsa"]["ci_low"] < strong["rsa"]["accuracy"] < strong["rsa"]["ci_high"]
    (vs,) = [c for c in rep["comparisons"] if (c["a"], c["b"]) == ("oneshot|scripted:examples-strong",
                                                                 "rsa|scripted:examples-strong")]
    assert vs["problems"] == n_problems and vs["difference"] < 0 and vs["p_value"] < 0.05
    assert all(len(row) == 8 for row in rep["matrix"].values())
    curves = {c["group"]: c["points"] for c in rep["curves"] if c["axis"] == "tokens"}
    assert len(curves) == 8
    rsa = curves["rsa|scripted:examples-strong"]
    assert len(rsa) > 10 and rsa[-1]["accuracy"] == pytest.approx(strong["rsa"]["accuracy"])
    # the first release's field stays for the tools that read it: the same token curves
    assert rep["budget_curves"]["rsa|scripted:examples-strong"] == [[p["cap"], p["accuracy"]] for p in rsa]
    point = rsa[len(rsa) // 2]
    assert point["accuracy"] == pytest.approx(accuracy_by_hand(db, "rsa", "scripted:examples-strong", point["cap"]))
    # the equal-budget column is the curves read at one cap, which reaches a correct answer
    cap = rep["equal_budget_tokens"]
    assert any(g["equal_budget_accuracy"] > 0 for g in rep["groups"])
    one = next(g for g in rep["groups"] if g["strategy"] == "tpbench-vote" and g["model"].endswith("weak"))
    assert one["equal_budget_accuracy"] == pytest.approx(accuracy_by_hand(db, "tpbench-vote", one["model"], cap))


def test_judge_graded_cells_are_reported_apart_and_ungraded_ones_are_not_wrong(tmp_path):
    """Issue #43: a judge model's verdicts are another kind of grading (a group of their own, never
    ranked beside rule-graded groups, their cost apart); an ungraded answer counts neither way."""
    st = ResultsStore(tmp_path / "r.sqlite")
    w = worker_id()
    cells = [("p1", 0, "correct", {}), ("p2", 0, "incorrect", {}), ("p3", 0, "ungraded", {}),
             ("p3", 1, "correct", {"graded_by": "judge:openai:j", "grading_calls": 1, "grading_cost_usd": 0.002}),
             ("p4", 1, "incorrect", {"graded_by": "judge:openai:j", "grading_calls": 1, "grading_cost_usd": 0.003})]
    for pid, repeat, verdict, by in cells:
        spec = CellSpec(problem_id=pid, strategy="oneshot", model="m", repeat=repeat, suite="t", gradable=True)
        st.add_cells([spec])
        assert st.claim(spec.key, w)
        assert st.finish(spec.key, w, CellResult(status="complete", verdict=verdict, answer_text="x", usage_by_role={
            "solver": Usage(calls=1, input_tokens=10, output_tokens=5, cost_usd=0.01)}, **by))
    rep = build_report(st)
    rules = next(g for g in rep.groups if not g.judge_graded)
    judged = next(g for g in rep.groups if g.judge_graded)
    assert (rules.graded, rules.correct, rules.ungraded, rules.accuracy) == (2, 1, 1, 0.5)
    assert (judged.graded, judged.correct) == (2, 1) and judged.grading_cost == pytest.approx(0.005)
    assert rules in rep.solvers and judged not in rep.solvers and judged in rep.reference_conditioned
    assert judged.total_cost == pytest.approx(0.02)  # the cells' own cost: the judge's is apart
    rows = {r["strategy"]: r for r in __import__("physlab.bench.report", fromlist=["summary_rows"]).summary_rows(rep)}
    assert rows["oneshot (judge-graded)"]["judge_graded"] == "yes" and rows["oneshot"]["ungraded"] == "1"
