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


async def test_the_reference_is_supplied_only_to_parameters_that_ask_for_it(tmp_path):
    problem = Problem(id="q", statement="Find x.", reference="42", reference_format="number",
                      solution="SECRET_WORKED_SOLUTION")
    from physlab.strategies import registry, runner

    asks = registry.get("scalar").Params.parse("scalar", {"critic_reference": True})
    assert asks.sees_reference and runner._reference_for(problem, "scalar", asks) == "SECRET_WORKED_SOLUTION"
    assert runner._reference_for(problem, "scalar", registry.get("scalar").Params()) is None
    # no other strategy's parameters can ask for it
    for name in registry.names():
        assert not registry.get(name).Params().sees_reference or name == "scalar"
    with pytest.raises(UserError, match="unknown --param 'critic_reference'"):
        registry.get("oneshot").Params.parse("oneshot", {"critic_reference": True})


async def test_critic_reference_on_open_question_is_bad_input(tmp_path):
    with pytest.raises(UserError):
        await run_solve(OPEN, "scalar", "scripted:scalar-demo", workspace=tmp_path / "r",
                        params={"critic_reference": True})


async def test_a_reference_conditioned_run_is_marked_and_only_its_critic_sees_the_key(tmp_path):
    problem = Problem(id="q", statement="Find x.", reference="42", reference_format="number",
                      solution="SECRET_WORKED_SOLUTION")
    ws = tmp_path / "r"
    await run_solve(problem, "scalar", "scripted:scalar-demo", workspace=ws, params={"critic_reference": True})
    metrics = json.loads((ws / "metrics.json").read_text())
    assert metrics["reference_conditioned"] is True
    for line in (ws / "calls.jsonl").read_text().splitlines():
        call = json.loads(line)
        assert ("SECRET_WORKED_SOLUTION" in json.dumps(call["request"])) == (call["role"] == "critic")
    plain = tmp_path / "plain"
    await run_solve(problem, "scalar", "scripted:scalar-demo", workspace=plain)
    assert json.loads((plain / "metrics.json").read_text())["reference_conditioned"] is False
    assert "SECRET" not in (plain / "calls.jsonl").read_text()
