"""A finished run's git tree is clean: what the run wrote after its last iteration (the final
ANSWER.md, metrics.json) is in its last commit, after a resume too."""

from __future__ import annotations

import asyncio
import subprocess

from physlab.api import solve_async
from physlab.problems import resolve_problem
from physlab.strategies.lab import LabParams

QEC = "examples/quantum_error_correction_main"


def git(ws, *args) -> str:
    return subprocess.run(["git", *args], cwd=ws, capture_output=True, text=True, check=True).stdout


def assert_clean_and_committed(ws) -> None:
    assert git(ws, "status", "--porcelain") == ""
    for name in ("ANSWER.md", "answer.py", "metrics.json", "calls.jsonl", "state.json"):
        assert git(ws, "show", f"HEAD:{name}") == (ws / name).read_text(), name


def test_a_finished_lab_run_has_a_clean_tree_also_after_a_resume(tmp_path):
    ws = tmp_path / "qec"
    attempt = asyncio.run(solve_async(resolve_problem(QEC), "lab", "scripted:lab-qec", workspace=ws,
                                     params={"max_iterations": 4}))
    assert attempt.status == "partially_complete"
    assert_clean_and_committed(ws)
    assert git(ws, "log", "-1", "--format=%s").startswith("run ended: partially_complete, verdict correct")
    # the run recorded its cap of 4 iterations: it goes on under the lab's default cap when given it
    more = {"max_iterations": LabParams().max_iterations}
    asyncio.run(solve_async(resolve_problem(QEC), "lab", "scripted:lab-qec", resume=ws, params=more))
    assert_clean_and_committed(ws)
    n = len(git(ws, "log", "--format=%s").splitlines())
    asyncio.run(solve_async(resolve_problem(QEC), "lab", "scripted:lab-qec", resume=ws))  # nothing left to do
    assert_clean_and_committed(ws)
    assert len(git(ws, "log", "--format=%s").splitlines()) == n           # no stack of empty sessions
