"""Report figures recomputed independently from the database (SQL, closed forms)."""

from __future__ import annotations

import csv
import math
import random
import re
import sqlite3

import pytest

from physlab.bench.report import build_report, write_csv, write_html
from physlab.bench.store import CellResult, CellSpec, ResultsStore, worker_id
from physlab.cli import main
from physlab.llm.usage import CallRecord, Usage

Z = 1.959963984540054


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
        assert (g.graded, g.correct) == (n, k)
        assert g.accuracy == pytest.approx(k / n)
        p = k / n
        c = (p + Z * Z / (2 * n)) / (1 + Z * Z / n)
        h = Z * math.sqrt(p * (1 - p) / n + Z * Z / (4 * n * n)) / (1 + Z * Z / n)
        assert (g.ci_low, g.ci_high) == pytest.approx((max(0, c - h), min(1, c + h)), abs=1e-9)
        # pass@1 is the mean accuracy over problems; pass@3 with 3 repeats: solved at least once
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
    a_m1 = next(g for g in rep.groups if (g.strategy, g.model) == ("a", "m1"))
    assert a_m1.failed == 1 and a_m1.cells == 15
    # equal-budget: the cap is the cheapest group's p90; accuracy within it recomputed by SQL
    cap = rep.equal_budget_tokens
    for g in rep.groups:
        k = db.execute("SELECT SUM(verdict='correct' AND input_tokens + output_tokens <= ?) FROM cells "
                       "WHERE state='done' AND strategy=? AND model=?", (cap, g.strategy, g.model)).fetchone()[0]
        assert g.equal_budget_correct == k
    # the 'b' strategy spends more (critic) so it loses some correct answers under the cap
    b_m1 = next(g for g in rep.groups if (g.strategy, g.model) == ("b", "m1"))
    assert b_m1.equal_budget_correct < b_m1.correct


def test_html_is_self_contained_and_csv_round_trips(tmp_path):
    st = _fill(tmp_path / "r.sqlite")
    rep = build_report(st, equal_tokens=800)
    html = write_html(rep, tmp_path / "report.html").read_text()
    imgs = re.findall(r"<img[^>]*src='([^']*)'", html)
    assert len(imgs) == 3 and all(s.startswith("data:image/png;base64,") for s in imgs)
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
    assert "accuracy" in out and (tmp_path / "o.html").is_file() and (tmp_path / "plots" / "equal_budget.png").is_file()
    with pytest.raises(SystemExit) as e:
        main(["bench", "report", "--db", str(tmp_path / "nope.sqlite")])
    assert e.value.code == 2
