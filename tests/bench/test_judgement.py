"""The lab's judgement per sweep group (issue 33): a table the bench report can show beside its
accuracy, pooled from each lab cell's metrics.json."""

from __future__ import annotations

import pytest

from physlab.bench.judgement import judgement_rows, judgement_table
from physlab.bench.store import CellResult, CellSpec, ResultsStore, worker_id
from physlab.lab.judgement import Judgement
from physlab.llm.usage import Usage
from physlab.run.record import RunRecord, write_record


def _lab_cell(st, w, tmp_path, *, problem, model, judgement, params=""):
    spec = CellSpec(problem_id=problem, strategy="lab", model=model, repeat=0, suite="t", gradable=True, params=params)
    st.add_cells([spec])
    assert st.claim(spec.key, w)
    ws = tmp_path / spec.key.replace("/", "_").replace(":", "_")
    ws.mkdir()
    write_record(ws, RunRecord(status="complete", strategy="lab", details={"judgement": judgement}))
    st.finish(spec.key, w, CellResult(status="complete", verdict="correct", usage_by_role={
        "reviewer": Usage(calls=1, output_tokens=10)}, workspace=str(ws)))


def j(raised, on_er, upheld, ruled, needs, review, work, total):
    return Judgement(critiques_raised=raised, on_established=on_er, share_on_established=None, ruled=ruled,
                     upheld=upheld, dismissed=0, needs_evidence=needs, share_upheld=None, to_planner=0, accepted=0,
                     declined=0, rejected=0, expired=0, from_physicist=0, stalls_escalated=0, demotions=0,
                     review_output_tokens=review, work_output_tokens=work, output_tokens=total,
                     review_output_share=None, work_output_share=None).model_dump()


def test_judgement_is_pooled_per_sweep_group(tmp_path):
    st, w = ResultsStore(tmp_path / "r.sqlite"), worker_id()
    _lab_cell(st, w, tmp_path, problem="p1", model="m1", judgement=j(4, 1, 1, 1, 0, 300, 300, 1000))
    _lab_cell(st, w, tmp_path, problem="p2", model="m1", judgement=j(6, 2, 0, 2, 1, 100, 500, 1000))
    _lab_cell(st, w, tmp_path, problem="p1", model="m2", judgement=j(0, 0, 0, 0, 0, 0, 10, 10))
    _lab_cell(st, w, tmp_path, problem="p3", model="m2", judgement={"critiques_raised": "many"})   # unreadable
    rows = {r.model: r for r in judgement_rows(st)}
    one = rows["m1"]
    assert (one.runs, one.critiques, one.on_established, one.upheld, one.needs_evidence) == (2, 10, 3, 1, 1)
    assert one.critiques_median == 5 and one.share_on_established == pytest.approx(0.3)
    assert one.share_upheld == pytest.approx(1 / 3) and one.review_output_share == pytest.approx(0.2)
    assert one.work_output_share == pytest.approx(0.4)
    assert rows["m2"].share_on_established is None and rows["m2"].share_upheld is None
    title, header, body = judgement_table(st)
    assert "judgement" in title.lower() and "upheld" in " ".join(header) and len(body) == 2


def test_bench_report_prints_the_labs_judgement_beside_its_accuracy(tmp_path, capsys, monkeypatch):
    from physlab.cli import main

    monkeypatch.setenv("COLUMNS", "200")                # a table that fits on one line per row
    st, w = ResultsStore(tmp_path / "r.sqlite"), worker_id()
    _lab_cell(st, w, tmp_path, problem="p1", model="m1", judgement=j(4, 1, 1, 1, 0, 300, 300, 1000))
    st.close()
    with pytest.raises(SystemExit) as e:
        main(["bench", "report", "--db", str(tmp_path / "r.sqlite")])
    assert e.value.code == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "The lab's judgement" in text and "1 of 1 (100%)" in text and "lab × m1" in text
    ResultsStore(tmp_path / "none.sqlite").close()     # a report without lab cells has no such table
    with pytest.raises(SystemExit) as e:
        main(["bench", "report", "--db", str(tmp_path / "none.sqlite")])
    assert "judgement" not in capsys.readouterr().out
