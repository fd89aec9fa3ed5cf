"""The Python API for notebooks: physlab.load_problems / solve / grade (and their async twins),
with a scripted model and the real grader."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path

import pytest

import physlab
from physlab.errors import UserError

REPO = Path(__file__).resolve().parents[1]
QEC = "examples/quantum_error_correction_main"


def test_import_physlab_is_cheap_and_exports_the_api():
    code = ("import sys, physlab; heavy = [m for m in ('sympy', 'pydantic_ai', 'typer', 'physlab.api') "
            "if m in sys.modules]; print(heavy, sorted(physlab.__all__))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.startswith("[] ")
    for name in ("solve", "solve_async", "grade", "grade_async", "load_problems"):
        assert name in out and callable(getattr(physlab, name))


def test_load_problems_from_a_suite_a_file_and_one_id(tmp_path):
    probs = physlab.load_problems("examples")
    assert len(probs) >= 17 and {p.suite for p in probs} == {"examples"}
    f = tmp_path / "mine.yaml"
    f.write_text("- id: a\n  problem: one\n  answer: 1\n- id: b\n  problem: two\n")
    assert [p.id for p in physlab.load_problems(f)] == ["a", "b"]
    [one] = physlab.load_problems(QEC)
    assert one.id == "quantum_error_correction_main" and one.gradable
    with pytest.raises(UserError, match="unknown suite 'exampels'.*did you mean examples"):
        physlab.load_problems("exampels")


def test_grade_a_right_and_a_wrong_candidate():
    right = physlab.grade(QEC, REPO / "examples" / "qec_reference_answer.py")
    assert right.verdict == "correct", right.reason
    wrong = physlab.grade(QEC, "import sympy as sp\n\ndef answer(p):\n    return 1 - p\n")
    assert wrong.verdict == "incorrect"
    text = "The fidelity is below.\n```python\ndef answer(p):\n    return 1\n```\n"
    assert physlab.grade(QEC, text).verdict == "incorrect"


def test_solve_writes_a_run_and_returns_the_graded_attempt(tmp_path):
    ws = tmp_path / "run"
    attempt = physlab.solve(QEC, "oneshot", "scripted:oneshot-qec-correct", workspace=ws, max_calls=5)
    assert attempt.status == "complete" and attempt.verdict.verdict == "correct"
    assert attempt.usage.calls == 1 and Path(attempt.details["workspace"]) == ws
    metrics = json.loads((ws / "metrics.json").read_text())
    assert metrics["verdict"]["verdict"] == "correct" and metrics["totals"]["calls"] == 1
    assert (ws / "answer.py").read_text().strip() == attempt.answer_code.strip()
    # the answer it wrote grades the same way through the API
    assert physlab.grade(QEC, ws / "answer.py").verdict == "correct"


def test_solve_takes_a_problem_object_and_a_budget_that_stops_it(tmp_path):
    problem = physlab.load_problems(QEC)[0]
    attempt = physlab.solve(problem, "oneshot", "scripted:oneshot-wrong", workspace=tmp_path / "w")
    assert attempt.verdict.verdict == "incorrect"
    with pytest.raises(UserError, match="either budget"):
        from physlab.llm.usage import Budget
        physlab.solve(problem, "oneshot", "scripted:oneshot-wrong", budget=Budget(max_calls=1), max_calls=2)
    with pytest.raises(UserError, match="no model given"):
        physlab.solve(problem, "oneshot", workspace=tmp_path / "x")


async def test_async_twins_and_the_sync_ones_inside_a_running_loop(tmp_path, monkeypatch):
    """In Jupyter a loop is already running: the blocking functions must still work there."""
    monkeypatch.delenv("PHYSLAB_MODEL", raising=False)
    attempt = await physlab.solve_async(QEC, "oneshot", "scripted:oneshot-qec-correct", workspace=tmp_path / "a")
    assert attempt.verdict.verdict == "correct"
    verdict = await physlab.grade_async(QEC, attempt.answer_code)
    assert verdict.verdict == "correct"
    assert asyncio.get_running_loop() is not None
    assert physlab.grade(QEC, attempt.answer_code).verdict == "correct"  # blocking, from inside the loop


def test_bad_input_is_a_user_error_not_a_traceback(tmp_path):
    with pytest.raises(UserError, match="no reference answer"):
        physlab.grade(physlab.load_problems("examples")[0].model_copy(update={"reference": None}), "x = 1")
    with pytest.raises(UserError, match="expected a Problem"):
        physlab.grade(42, "x = 1")
    with pytest.raises(UserError, match="cannot read the candidate"):
        physlab.grade(QEC, tmp_path / "missing.py")


def test_the_documented_example_runs_as_written(tmp_path, monkeypatch, capsys):
    """docs/api.md's example, executed: it prints what the page says it does."""
    import re

    doc = (REPO / "docs" / "api.md").read_text()
    example = re.findall(r"```python\n(.*?)```", doc, flags=re.S)[0]
    monkeypatch.chdir(tmp_path)  # its run goes to runs/ under the current directory
    exec(compile(example, "docs/api.md", "exec"), {})
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split()[1:] == ["quantum_error_correction_main", "True"]
    assert lines[1].startswith("complete correct 1 runs/") and (tmp_path / lines[1].split()[-1]).is_dir()
    assert lines[2].startswith("correct") and lines[3].startswith("incorrect")


def test_the_readme_shows_the_api_and_the_inspect_export_and_its_example_runs(tmp_path, monkeypatch, capsys):
    import re

    readme = (REPO / "README.md").read_text()
    section = readme.split("## What you can do")[1].split("\n## ")[0]
    assert "physlab bench export-inspect" in section and "inspect view --log-dir" in section
    [example] = re.findall(r"```python\n(.*?)```", section, flags=re.S)
    assert "physlab.solve(" in example and "physlab.grade(" in example
    monkeypatch.chdir(tmp_path)
    exec(compile(example, "README.md", "exec"), {})
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("correct runs/") and out[1] == "incorrect"
