"""Answers files (the CritPt export: test_critpt_export.py)."""

from __future__ import annotations

import json

import pytest

from physlab.bench.answers import load_answers
from physlab.errors import UserError


def test_answers_file_forms(tmp_path):
    f = tmp_path / "a.yaml"
    f.write_text("p1: 'x**2'\np2: 3.5\np3: {reference: 'a+b', rtol: 0.01}\n")
    got = load_answers(f)
    assert got["p1"] == {"reference": "x**2"}
    assert got["p2"] == {"reference": "3.5", "reference_format": "number"}
    assert got["p3"] == {"reference": "a+b", "rtol": 0.01}
    bad = tmp_path / "b.json"
    bad.write_text(json.dumps({"p1": {"answer": 1}}))
    with pytest.raises(UserError, match=r"b.json: field 'p1'"):
        load_answers(bad)
    bad.write_text("[1, 2]")
    with pytest.raises(UserError, match="mapping"):
        load_answers(bad)
    with pytest.raises(UserError, match="not found"):
        load_answers(tmp_path / "none.yaml")


async def test_grading_later_grades_each_checkpoint_once_beside_its_cell(tmp_path):
    """CritPt-style: answers arrive after the sweep; the checkpoints' verdicts come with the cell's, so
    the accuracy-vs-budget curves need no second pass."""
    from physlab.bench.answers import grade_db
    from physlab.bench.store import CellResult, CellSpec, ResultsStore, worker_id
    from physlab.grading.verdict import Verdict
    from physlab.problems.model import Problem
    from physlab.run.checkpoints import Checkpoint

    st = ResultsStore(tmp_path / "r.sqlite")
    st.add_problems([Problem(id="q", statement="What is 1+1?", answer_template="def answer():\n    return ...\n")])
    spec = CellSpec(problem_id="q", strategy="rsa", model="m", repeat=0, suite="s")
    st.add_cells([spec])
    w = worker_id()
    st.claim(spec.key, w)
    wrong, right = "def answer():\n    return 3\n", "def answer():\n    return 2\n"
    st.finish(spec.key, w, CellResult(status="complete", answer_code=right, checkpoints=[
        Checkpoint(step="round 1", answer_code=wrong), Checkpoint(step="round 2", answer_code=right)]))
    answers = tmp_path / "answers.yaml"
    answers.write_text("q: '2'\n")
    graded: list[str] = []

    class CountingGrader:
        async def grade(self, problem, code):
            graded.append(code)
            ok = code.strip().endswith("return 2")
            return Verdict(verdict="correct" if ok else "incorrect", reason="")

    assert await grade_db(st, answers, grader=CountingGrader()) == {"correct": 1}
    assert [c["verdict"] for c in st.checkpoints()] == ["incorrect", "correct"]
    assert sorted(graded) == sorted([wrong, right])  # the final answer and round 2's: graded once


async def test_grading_later_with_a_judge_grades_written_answers_to_prose_references(tmp_path, monkeypatch):
    """`bench grade --judge`: a cell answered in words to a prose reference is ungraded by the rules
    and graded by the judge model, marked as judge-graded with the judge's calls and cost."""
    from physlab.bench.answers import grade_db
    from physlab.bench.store import CellResult, CellSpec, ResultsStore, worker_id
    from physlab.llm.standin import Reply, StandinServer
    from physlab.problems.model import Problem

    st = ResultsStore(tmp_path / "r.sqlite")
    st.add_problems([Problem(id="hill", statement="Is the equilibrium at the top of a hill stable?")])
    w = worker_id()
    for repeat, text in enumerate(["Final answer: it is unstable.", "Final answer: it is stable."]):
        spec = CellSpec(problem_id="hill", strategy="oneshot", model="m", repeat=repeat, suite="s")
        st.add_cells([spec])
        st.claim(spec.key, w)
        st.finish(spec.key, w, CellResult(status="complete", answer_text=text))
    answers = tmp_path / "answers.yaml"
    answers.write_text("hill: 'the equilibrium is unstable: the potential has a maximum there'\n")
    assert await grade_db(st, answers) == {"ungraded": 2}  # no judge: neither right nor wrong

    def judge(body):
        said = json.loads(body["messages"][-1]["content"])["candidate_final_answer"]
        return Reply(tool_calls=[("verdict", {"reasoning": said, "verdict": "correct" if "unstable" in said else "incorrect"})])

    monkeypatch.setenv("OPENAI_API_KEY", "sk-standin")
    with StandinServer(judge) as srv:
        counts = await grade_db(st, answers, judge="openai:standin", api_base=srv.base_url)
    assert counts == {"correct": 1, "incorrect": 1}
    rows = sorted(st.cells(), key=lambda r: r["repeat"])
    assert [r["verdict"] for r in rows] == ["correct", "incorrect"]
    assert all(r["graded_by"] == "judge:openai:standin" and r["grading_calls"] == 1 for r in rows)
