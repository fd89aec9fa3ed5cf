"""Shared helpers for the lab tests: the QEC problem, a run through the real runner, scenarios."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import sympy as sp

from physlab.api import solve_async
from physlab.lab.state.models import ResearchState
from physlab.problems import resolve_problem


def qec_problem():
    return resolve_problem("examples/quantum_error_correction_main")


async def solve(ws: Path, model: str = "scripted:lab-qec", *, problem=None, resume: bool = False,
                events=None, budget=None, tools: str | None = None, **params: Any):
    return await solve_async(problem or qec_problem(), "lab", model, workspace=ws if not resume else None,
                            resume=ws if resume else None, params=params, events=events, budget=budget, tools=tools)


def state_of(ws: Path) -> ResearchState:
    return ResearchState.model_validate_json((ws / "state.json").read_text())


def calls(ws: Path) -> list[dict]:
    return [json.loads(line) for line in (ws / "calls.jsonl").read_text().splitlines() if line.strip()]


def matches_reference(answer_code: str, problem) -> bool:
    """Independent check used only when the project grader is not importable yet."""
    ns: dict[str, Any] = {}
    exec(answer_code, ns)  # our own scripted answer, in a test
    p = sp.symbols("p")
    ref_ns: dict[str, Any] = {"sp": sp, "p": p}
    exec(problem.reference if "F_logical" in problem.reference else f"F_logical = {problem.reference}", ref_ns)
    return sp.simplify(ns["answer"](p) - ref_ns["F_logical"]) == 0


def git_subjects(ws: Path) -> list[str]:
    import subprocess

    from physlab.run.git import ENDED

    out = subprocess.run(["git", "log", "--format=%s"], cwd=ws, capture_output=True, text=True, check=True).stdout
    return [s for s in out.splitlines() if not s.startswith(ENDED)]  # the lab's own commits (not the run's end)


def lab_role_of():
    """For a stand-in serving a lab scenario over HTTP: the role a request belongs to, from the
    first line of that role's prompt file, which opens its instructions."""
    from importlib import resources

    from physlab.lab.roles import ROLES
    from physlab.llm.standin.scenario import role_by_instructions

    return role_by_instructions({r: resources.files("physlab.lab.roles").joinpath(f"{r}.md").read_text(
        encoding="utf-8").splitlines()[0] for r in ROLES})


_BUSY_ENGINE = r"""
import asyncio, sys, time
from pathlib import Path
sys.path.insert(0, {repo!r})
from tests.lab.mini import Mini, mini_problem, register
from tests.lab.helpers import solve
ws = Path({ws!r})

def block():
    (ws / "BLOCKED").write_text("x")
    time.sleep(120)            # busy (or killed) here, in the middle of iteration 2

class Blocking(Mini):
    seen = {{}}
    hooks = {{2: block}}

asyncio.run(solve(ws, register({name!r}, Blocking), problem=mini_problem()))
"""


def engine_busy_in_iteration_2(ws: Path, name: str):
    """Another process running the mini lab problem in ``ws``, stopped in the middle of iteration 2
    (after iteration 1's commit). The caller kills it (SIGKILL: it is its own session)."""
    import subprocess
    import sys
    import time

    repo = Path(__file__).resolve().parents[2]
    proc = subprocess.Popen([sys.executable, "-c", _BUSY_ENGINE.format(repo=str(repo), ws=str(ws), name=name)],
                            cwd=repo, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    deadline = time.monotonic() + 90
    while not (ws / "BLOCKED").exists():
        if proc.poll() is not None:
            raise AssertionError(proc.stderr.read().decode()[-2000:])
        if time.monotonic() > deadline:
            proc.kill()
            raise AssertionError("the engine never reached iteration 2")
        time.sleep(0.1)  # polling a file another process writes, not ordering our own events
    return proc
