"""SCALAR through the runner with the registered scripted scenario, who is handed the reference in
each setting, and `runs rescore` as a CLI command."""

from __future__ import annotations

import json

import pytest
import typer
from typer.testing import CliRunner

from physlab.api import solve_async
from physlab.cli import scalar as scalar_cli
from physlab.errors import UserError
from physlab.problems.model import Problem
from physlab.strategies.scalar.analysis import load_records
from physlab.strategies.scalar.rescore import rescore_file_name

OPEN = Problem(id="decay", statement="Compute the lifetime of Phi to lowest order in mu.")


def test_scalar_demo_through_runner_and_rescore_cli(tmp_path):
    import asyncio

    ws = tmp_path / "run"
    attempt = asyncio.run(solve_async(OPEN, "scalar", "scripted:scalar-demo", workspace=ws,
                                     params={"feedback": "lenient", "expertise": "expert"}))
    assert attempt.status == "complete" and attempt.stop_reason == "passed"
    metrics = json.loads((ws / "metrics.json").read_text())
    assert set(metrics["per_role"]) == {"actor", "critic", "judge"}
    assert metrics["details"]["scores"] == [62, 85] and metrics["details"]["config"]["feedback"] == "lenient"
    calls = [json.loads(x) for x in (ws / "calls.jsonl").read_text().splitlines() if x.strip()]
    assert [c["role"] for c in calls] == ["actor", "critic", "judge"] * 2
    transcript = json.loads((ws / "scalar_transcript.json").read_text())
    assert transcript["gradable"] is False and transcript["config"]["setting"] == "no reference"
    assert metrics["reference_conditioned"] is False  # an open question: nobody saw a reference

    app = typer.Typer()
    runs = typer.Typer()
    scalar_cli.register(runs)
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
    from physlab.run import runner
    from physlab.strategies import registry

    for setting in ("paper", "blind"):
        asks = registry.get("scalar").Params.parse("scalar", {"setting": setting})
        assert asks.sees_reference and runner._reference_for(problem, asks) == "SECRET_WORKED_SOLUTION"
    assert runner._reference_for(OPEN, registry.get("scalar").Params()) is None  # none to give
    # no other strategy's parameters can ask for it
    for name in registry.names():
        assert not registry.get(name).Params().sees_reference or name == "scalar"
    with pytest.raises(UserError, match="unknown --param 'setting'"):
        registry.get("oneshot").Params.parse("oneshot", {"setting": "paper"})
    with pytest.raises(UserError, match="--param setting: input should be 'paper' or 'blind'"):
        registry.get("scalar").Params.parse("scalar", {"setting": "open"})


async def test_a_setting_on_an_open_question_is_bad_input(tmp_path):
    with pytest.raises(UserError, match="has none"):
        await solve_async(OPEN, "scalar", "scripted:scalar-demo", workspace=tmp_path / "r", params={"setting": "paper"})


@pytest.mark.parametrize("setting,readers", [("paper", {"critic", "judge"}), ("blind", {"judge"})])
async def test_a_run_where_a_role_saw_the_key_is_marked_reference_conditioned(tmp_path, setting, readers):
    problem = Problem(id="q", statement="Find x.", reference="42", reference_format="number",
                      solution="SECRET_WORKED_SOLUTION")
    ws = tmp_path / "r"
    await solve_async(problem, "scalar", "scripted:scalar-demo", workspace=ws, params={"setting": setting})
    metrics = json.loads((ws / "metrics.json").read_text())
    assert metrics["reference_conditioned"] is True
    saw = {json.loads(line)["role"] for line in (ws / "calls.jsonl").read_text().splitlines()
           if "SECRET_WORKED_SOLUTION" in json.dumps(json.loads(line)["request"])}
    assert saw == readers
    assert "SECRET" not in (ws / "scalar_transcript.json").read_text()  # the sandbox can read the workspace
    # the grader's verdict beside the Judge's: how often they agreed
    agreement = metrics["details"]["judge_agreement"]
    assert agreement["checked"] == 2 and 0 <= agreement["agreed"] <= 2


def test_rescore_cli_gives_the_new_judge_the_reference_from_the_problem(tmp_path):
    import asyncio

    problem_file = tmp_path / "q.yaml"
    problem_file.write_text("id: q\nproblem: Find x.\nanswer: '42'\nsolution: SECRET_WORKED_SOLUTION\n")
    from physlab.problems import resolve_problem

    ws = tmp_path / "run"
    asyncio.run(solve_async(resolve_problem(problem_file), "scalar", "scripted:scalar-demo", workspace=ws))
    app, runs = typer.Typer(), typer.Typer()
    scalar_cli.register(runs)
    app.add_typer(runs, name="runs")
    missing = CliRunner().invoke(app, ["runs", "rescore", str(ws), "--judge", "scripted:scalar-demo"])
    assert missing.exit_code != 0 and "--problem" in str(missing.exception)
    other = tmp_path / "other.yaml"
    other.write_text("id: other\nproblem: Find y.\nanswer: '1'\n")
    wrong = CliRunner().invoke(app, ["runs", "rescore", str(ws), "--judge", "scripted:scalar-demo", "--problem", str(other)])
    assert wrong.exit_code != 0 and "this run is on 'q'" in str(wrong.exception)
    out = CliRunner().invoke(app, ["runs", "rescore", str(ws), "--judge", "scripted:scalar-demo",
                                   "--problem", str(problem_file), "--json"])
    assert out.exit_code == 0, out.output
    calls = (ws / rescore_file_name("scripted:scalar-demo").replace(".json", ".calls.jsonl")).read_text()
    assert calls.count("SECRET_WORKED_SOLUTION") >= 2  # each re-scored turn, against the reference
