"""`bench report` keeps protocols apart (issue #41): cells a sweep ran under `--protocol paper` are
groups of their own, never pooled with PhysLab's; the report says which protocol each group ran,
shows the budget and parameters without repeating it, and compares one strategy under the two."""

from __future__ import annotations

from rich.console import Console

from physlab.bench.report import build_report, summary_rows
from physlab.bench.report_render import group_table, print_report
from physlab.bench.store import CellResult, CellSpec, ResultsStore, params_tag, worker_id
from physlab.llm.usage import Budget, Usage


def _sweep(st, w, *, protocol: str, budget: Budget, solved: int):
    for i in range(10):
        spec = CellSpec(problem_id=f"p{i}", strategy="rsa", model="m", repeat=0, suite="t", gradable=True,
                        budget=budget, protocol=protocol,
                        params=params_tag({"@protocol": protocol}) if protocol != "physlab" else "")
        st.add_cells([spec])
        assert st.claim(spec.key, w)
        st.finish(spec.key, w, CellResult(status="complete", verdict="correct" if i < solved else "incorrect",
                                          usage_by_role={"generator": Usage(calls=1, input_tokens=500)}))


def test_protocols_are_groups_of_their_own_said_and_compared(tmp_path):
    st, w = ResultsStore(tmp_path / "r.sqlite"), worker_id()
    for protocol, solved in (("physlab", 7), ("paper", 4)):
        for budget in (Budget(), Budget(max_tokens=2000)):
            _sweep(st, w, protocol=protocol, budget=budget, solved=solved)
    rep = build_report(st)
    assert sorted((g.protocol, g.setting) for g in rep.groups) == [
        ("paper", "-"), ("paper", "max_tokens=2000"), ("physlab", "-"), ("physlab", "max_tokens=2000")]
    assert all(g.problems == 10 and g.cells == 10 for g in rep.groups)            # never pooled
    heads, rows = group_table(rep, rep.solvers)
    assert heads[:4] == ["strategy", "model", "protocol", "budget|params"]
    assert sorted(r[2:4] for r in rows) == [["paper", "-"], ["paper", "max_tokens=2000"], ["physlab", "-"],
                                            ["physlab", "max_tokens=2000"]]       # @protocol not repeated
    assert [row["protocol"] for row in summary_rows(rep)] == [g.protocol for g in rep.groups]
    across = [c for c in rep.comparisons if "paper protocol" in c.b and "paper protocol" not in c.a]
    assert len(across) == 2 and all(abs(c.difference - 0.3) < 1e-9 for c in across)   # what the paper setting costs
    assert sorted(s.params for s in rep.budget_sweeps) == ["", "paper protocol"]
    out = Console(width=250, record=True)
    print_report(rep, out)
    text = out.export_text()
    assert "rsa × m × paper protocol" in text and '@protocol' not in text.split("Problems ×")[0]


def test_a_report_of_physlab_cells_says_every_group_ran_physlab(tmp_path):
    st, w = ResultsStore(tmp_path / "r.sqlite"), worker_id()
    _sweep(st, w, protocol="physlab", budget=Budget(), solved=5)
    rep = build_report(st)
    assert "protocol" not in group_table(rep, rep.solvers)[0]
    out = Console(width=250, record=True)
    print_report(rep, out)
    assert "protocol: physlab, PhysLab's defaults, for every group" in out.export_text()
