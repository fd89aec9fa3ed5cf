"""PhysicsMinions through the runner with the registered scripted scenario: the same workspace
files (metrics.json, calls.jsonl, ANSWER.md) as every strategy, plus minions_trace.json."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from physlab.api import solve_async
from physlab.problems.model import Problem

SAMPLE = Path(__file__).resolve().parents[2] / "src/physlab/problems/data/hipho_sample"
EXAMPLES = Path(__file__).resolve().parents[2] / "src/physlab/problems/data/examples"


def _calls(ws: Path) -> list[dict]:
    return [json.loads(line) for line in (ws / "calls.jsonl").read_text().splitlines() if line.strip()]


async def test_minions_demo_on_a_figure_problem(tmp_path):
    # the HiPhO sample item with a figure, as an open question (no reference: nothing to grade)
    img = SAMPLE / "image_question" / "IPhO_2025_3_a_1.png"
    problem = Problem(id="champagne", statement="Express the pressure in the bubble (see Fig. 1).",
                      images=[img], extra={"answer_types": ["Expression"], "units": [None]})
    ws = tmp_path / "run"
    attempt = await solve_async(problem, "minions", "scripted:minions-demo", workspace=ws)
    assert attempt.status == "complete" and attempt.stop_reason == "accepted"
    metrics = json.loads((ws / "metrics.json").read_text())
    assert metrics["strategy"] == "minions" and metrics["status"] == "complete"
    roles = {c["role"] for c in _calls(ws)}
    assert {"visual_inspector", "visual_verifier", "solver", "introspector", "physics_verifier",
            "general_verifier"} <= roles
    assert set(metrics["per_role"]) == roles
    assert metrics["totals"]["calls"] == len(_calls(ws))
    trace = json.loads((ws / "minions_trace.json").read_text())
    assert trace["figures"][0]["verified"] is True
    # the demo's physics objection reset the count once, then two passes
    assert [i["consecutive_passes"] for i in trace["iterations"]] == [0, 1, 2]
    assert "\\boxed{0}" in (ws / "ANSWER.md").read_text()


async def test_minions_budget_is_respected_through_the_runner(tmp_path):
    from physlab.llm.usage import Budget

    problem = Problem(id="q", statement="Find the period of a pendulum of length L.")
    ws = tmp_path / "run"
    attempt = await solve_async(problem, "minions", "scripted:minions-demo", workspace=ws,
                               budget=Budget(max_calls=3))
    assert attempt.status == "partially_complete" and attempt.stop_reason == "budget:max_calls"
    assert len(_calls(ws)) <= 3 and (ws / "ANSWER.md").is_file()


@pytest.mark.slow
async def test_minions_demo_on_a_graded_example(tmp_path):
    from physlab.problems import resolve_problem

    problem = resolve_problem(str(EXAMPLES / "sm_ising_1d.yaml"))
    ws = tmp_path / "run"
    attempt = await solve_async(problem, "minions", "scripted:minions-demo", workspace=ws)
    metrics = json.loads((ws / "metrics.json").read_text())
    assert (ws / "answer.py").is_file() and "def answer" in (ws / "answer.py").read_text()
    assert metrics["verdict"]["verdict"] in ("correct", "incorrect", "invalid")
    assert attempt.verdict is not None and attempt.verdict.verdict == "incorrect"  # placeholder zeros
