"""The Resume box of a run on the physicist's own problem file is filled with that file (the spec
the run recorded, FILE#ID), which loads as the run's problem -- not a bare id that resolves to
nothing."""

from __future__ import annotations

import asyncio
import html
import re
import shutil

from fastapi.testclient import TestClient

from physlab.api import solve_async
from physlab.lab import inbox
from physlab.problems import resolve_problem
from physlab.problems.suites import BUILTIN_DIR
from physlab.web import create_app
from physlab.web.app import check_resume
from physlab.web.runs import summary


def test_the_resume_box_holds_the_runs_own_problem_file(tmp_path):
    mine = tmp_path / "my problems" / "fidelity.json"            # the user's own file (a space in its path)
    mine.parent.mkdir()
    shutil.copy(BUILTIN_DIR / "examples" / "critpt_quantum_error_correction.json", mine)
    problem = resolve_problem(f"{mine}#quantum_error_correction_main")
    ws = tmp_path / "runs" / "mine"

    def pause_at_2(kind, **data):
        if kind == "iteration" and data.get("iteration") == 2:
            inbox.post(ws, "pause")

    asyncio.run(solve_async(problem, "lab", "scripted:lab-qec", workspace=ws, events=pause_at_2))
    page = TestClient(create_app(tmp_path / "runs"), base_url="http://127.0.0.1").get("/runs/mine").text
    value = html.unescape(re.search(r'<input id="resume-problem" value="([^"]*)"', page).group(1))
    assert value == f"{mine.resolve()}#quantum_error_correction_main"
    assert resolve_problem(value).id == problem.id
    run = (tmp_path / "runs" / "mine").resolve()
    assert check_resume(run, value, summary("mine", run, run.parent)) == value   # what the button would send
