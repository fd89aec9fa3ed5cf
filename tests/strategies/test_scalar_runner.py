"""SCALAR through the runner with the registered scripted scenario, the reference-conditioned
Critic wiring, and `runs rescore` as a CLI command."""

from __future__ import annotations

import json

import pytest
import typer
from typer.testing import CliRunner

from physlab.errors import UserError
from physlab.problems.model import Problem
from physlab.strategies.runner import run_solve
from physlab.strategies.scalar import register_scalar_runs
from physlab.strategies.scalar.analysis import load_records
from physlab.strategies.scalar.rescore import rescore_file_name

OPEN = Problem(id="decay", statement="Compute the lifetime of Phi to lowest order in mu.")


def test_scalar_demo_through_runner_and_rescore_cli(tmp_path):
    import asyncio

    ws = tmp_path / "run"
    attempt = asyncio.run(run_solve(OPEN, "scalar", "scripted:scalar-demo", workspace=ws,
                                    params={"feedback": "lenient", "expertise": "expert"}))
    assert attempt.status == "complete" and attempt.stop_reason == "passed"
    metrics = json.loads((ws / "metrics.json").read_text())
    assert set(metrics["per_role"]) == {"actor", "critic", "judge"}
    assert metrics["details"]["scores"] == [62, 85] and metrics["details"]["config"]["feedback"] == "lenient"
    calls = [json.loads(x) for x in (ws / "calls.jsonl").read_text().splitlines() if x.strip()]
    assert [c["role"] for c in calls] == ["actor", "critic", "judge"] * 2
    transcript = json.loads((ws / "scalar_transcript.json").read_text())
    assert transcript["gradable"] is False and transcript["turns"][1]["judge"]["equivalence_source"] == "judge"

    app = typer.Typer()
    runs = typer.Typer()
    register_scalar_runs(runs)
    app.add_typer(runs, name="runs")
    out = CliRunner().invoke(app, ["runs", "rescore", str(ws), "--judge", "scripted:scalar-demo", "--json"])
    assert out.exit_code == 0, out.output
    summary = json.loads(out.output.strip().splitlines()[-1])
    assert summary["scores"] == [62, 85] and summary["converged"] is True
    assert (ws / rescore_file_name("scripted:scalar-demo")).is_file()
    rescore_calls = ws / rescore_file_name("scripted:scalar-demo").replace(".json", ".calls.jsonl")
    assert [json.loads(x)["role"] for x in rescore_calls.read_text().splitlines()] == ["judge", "judge"]
    assert len((ws / "calls.jsonl").read_text().splitlines()) == 6  # the run's own record untouched
    assert load_records([ws], judge="scripted:scalar-demo")[0].scores == [62, 85]

    bad = CliRunner().invoke(app, ["runs", "rescore", str(tmp_path), "--judge", "scripted:scalar-demo"])
    assert bad.exit_code != 0 and isinstance(bad.exception, UserError)

    rep = CliRunner().invoke(app, ["runs", "scalar-report", str(tmp_path), "--out", str(tmp_path / "rep"),
                                   "--n-boot", "20"])
    assert rep.exit_code == 0, rep.output
    assert "1 runs, grouped by feedback" in rep.output and "lenient: n=1 s_bar=73.5" in rep.output
    report = json.loads((tmp_path / "rep" / "report.json").read_text())
    assert report["overall"]["convergence_rate"] == 100.0
    assert (tmp_path / "rep" / "score_update_field.png").read_bytes()[:4] == b"\x89PNG"


async def test_runner_supplies_the_reference_only_when_asked(tmp_path):
    problem = Problem(id="q", statement="Find x.", reference="42", reference_format="number",
                      solution="SECRET_WORKED_SOLUTION")
    from physlab.strategies import runner

    assert runner._critic_reference(problem, "scalar", {"critic_reference": True}) == "SECRET_WORKED_SOLUTION"
    assert runner._critic_reference(problem, "scalar", {}) is None
    assert runner._critic_reference(problem, "oneshot", {"critic_reference": True}) is None


async def test_critic_reference_on_open_question_is_bad_input(tmp_path):
    with pytest.raises(UserError):
        await run_solve(OPEN, "scalar", "scripted:scalar-demo", workspace=tmp_path / "r",
                        params={"critic_reference": True})
