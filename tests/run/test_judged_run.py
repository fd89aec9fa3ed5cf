"""A run on a problem whose reference is prose (issue #43): its answer is ungraded unless `--judge`
names a model, which then grades it through the model seam; the judge's calls go to
judge_calls.jsonl and its cost beside the verdict, never into the run's own calls or totals."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from physlab.cli import app
from physlab.llm.standin import Reply, StandinServer
from physlab.llm.standin.responders import last_user_text

STATEMENT = "A ball rests on the top of a smooth hill. Is its equilibrium stable? Say why."
REFERENCE = "the equilibrium is unstable because the potential energy has a maximum there"


def solver_and_judge(body: dict) -> Reply:
    """The stand-in plays the solver (plain text) and, when offered the verdict tool, the judge."""
    if any(t["function"]["name"] == "verdict" for t in body.get("tools") or []):
        said = json.loads(last_user_text(body))["candidate_final_answer"]
        ok = "unstable" in said.lower()
        return Reply(tool_calls=[("verdict", {"reasoning": f"the answer says {said!r}",
                                              "verdict": "correct" if ok else "incorrect"})])
    return Reply(content="The potential has a maximum at the top.\n\nFinal answer: the equilibrium is unstable.")


def solve(tmp_path, *extra: str) -> tuple[int, dict, object]:
    prob = tmp_path / "hill.yaml"
    prob.write_text(f"id: hilltop\nproblem: {STATEMENT}\nanswer: {REFERENCE}\n")
    ws = tmp_path / ("run" + "".join(x.strip("-")[:3] for x in extra))
    with StandinServer(solver_and_judge) as srv:
        out = CliRunner().invoke(app, ["solve", str(prob), "--strategy", "oneshot", "--model", "openai:standin",
                                       "--api-base", srv.base_url, "--workspace", str(ws), "--console", "quiet",
                                       *[x.replace("URL", srv.base_url) for x in extra]],
                                 env={"OPENAI_API_KEY": "sk-standin"})
    metrics = json.loads((ws / "metrics.json").read_text())
    return out.exit_code, metrics, ws


def test_an_answer_to_a_prose_reference_is_ungraded_without_a_judge(tmp_path):
    code, metrics, ws = solve(tmp_path)
    assert code == 0  # the run wrote its answer
    assert metrics["verdict"]["verdict"] == "ungraded"
    assert not (ws / "judge_calls.jsonl").exists()


def test_a_judge_grades_it_and_its_calls_are_counted_apart(tmp_path):
    code, metrics, ws = solve(tmp_path, "--judge", "openai:standin")
    assert code == 0
    v = metrics["verdict"]
    assert v["verdict"] == "correct" and v["judge"]["model"] == "openai:standin"
    assert "unstable" in v["judge"]["reasoning"] and v["judge"]["calls"] == 1
    judge_lines = (ws / "judge_calls.jsonl").read_text().splitlines()
    run_lines = (ws / "calls.jsonl").read_text().splitlines()
    assert len(judge_lines) == 1 and len(run_lines) == metrics["totals"]["calls"]
    assert all(json.loads(line)["role"] != "judge" for line in run_lines)  # the run's calls hold no judge's
