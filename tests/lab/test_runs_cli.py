"""`physlab runs ...`: show, messages to a run, rewind; bad input exits 2 with one line."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from physlab.cli import app
from physlab.lab import inbox
from tests.lab.helpers import solve
from tests.lab.mini import mini_problem, register

runner = CliRunner()


@pytest.fixture
async def finished_run(tmp_path):
    ws = tmp_path / "run"
    await solve(ws, register("lab-mini-cli"), problem=mini_problem())
    return ws


def invoke(*args):
    from physlab.cli import main
    try:
        main(list(args))
    except SystemExit as exc:
        return exc.code
    return 0


async def test_runs_show_json_and_text(finished_run):
    res = runner.invoke(app, ["runs", "show", str(finished_run), "--json"])
    assert res.exit_code == 0, res.output
    data = json.loads(res.output)
    assert data["status"] == "complete" and data["established_results"][0]["value"] == "42"
    assert set(data["usage_by_role"]) >= {"orchestrator", "computer", "reviewer", "formatter"}
    assert data["last_iterations"][0].startswith("iteration 3")
    res = runner.invoke(app, ["runs", "show", str(finished_run)])
    assert res.exit_code == 0 and "Usage per role" in res.output


async def test_runs_messages_land_in_the_inbox(finished_run):
    for args in (["comment", str(finished_run), "check the sign", "--on", "WH-1"],
                 ["hint", str(finished_run), "try symmetry"],
                 ["challenge", str(finished_run), "doubt it", "--on", "ER-1"],
                 ["redirect", str(finished_run), "change course"]):
        res = runner.invoke(app, ["runs", *args])
        assert res.exit_code == 0, res.output
    runner.invoke(app, ["runs", "rewind", str(finished_run), "--to", "1"])   # waiting for a resume: it can be stopped
    assert runner.invoke(app, ["runs", "stop", str(finished_run)]).exit_code == 0
    msgs = inbox.read(finished_run)
    assert [m["kind"] for m in msgs] == ["comment", "hint", "challenge", "redirect", "stop"]
    assert msgs[0]["on"] == "WH-1" and msgs[2]["on"] == "ER-1"
    # a torn last line (writer killed mid-write) is skipped, not fatal
    with open(finished_run / "inbox.jsonl", "a") as f:
        f.write('{"id": "x", "kind": "hi')
    assert len(inbox.read(finished_run)) == 5


async def test_runs_rewind(finished_run):
    res = runner.invoke(app, ["runs", "rewind", str(finished_run), "--to", "1"])
    assert res.exit_code == 0, res.output
    data = json.loads(runner.invoke(app, ["runs", "show", str(finished_run), "--json"]).output)
    # the lab's state runs again from iteration 1; nobody runs it yet: the run is interrupted, as
    # `runs list` and the dashboard say, until it is resumed
    assert data["iteration"] == 1 and data["lab_status"] == "running" and data["status"] == "interrupted"


async def test_runs_rewind_refuses_a_run_another_process_is_running(finished_run, capsys):
    """Rewinding under a live engine would swap the state it is about to commit over: refused in one
    line naming the holder, and nothing is rewound."""
    from physlab.run.lock import lock_run

    before = json.loads(runner.invoke(app, ["runs", "show", str(finished_run), "--json"]).output)
    with lock_run(finished_run):
        assert invoke("runs", "rewind", str(finished_run), "--to", "1") == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: ") and "already running" in err[0], err
    after = json.loads(runner.invoke(app, ["runs", "show", str(finished_run), "--json"]).output)
    assert after["iteration"] == before["iteration"] and after["status"] == before["status"]


def test_bad_input_exits_2_with_one_line(tmp_path, capsys):
    assert invoke("runs", "show", str(tmp_path / "nope")) == 2
    assert invoke("runs", "hint", str(tmp_path), "x") == 2          # not a run directory
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 2 and all(line.startswith("error: ") for line in err)


async def test_challenge_must_target_an_er(finished_run, capsys):
    assert invoke("runs", "challenge", str(finished_run), "x", "--on", "WH-1") == 2
    assert invoke("runs", "rewind", str(finished_run), "--to", "99") == 2


async def test_runs_show_any_strategys_run(tmp_path):
    """A oneshot run (or a sweep cell) has no research state: show gives its outcome and usage."""
    from physlab.api import solve_async
    from physlab.problems import resolve_problem

    ws = tmp_path / "one"
    await solve_async(resolve_problem("examples/quantum_error_correction_main"), "oneshot",
                     "scripted:oneshot-qec-correct", workspace=ws)
    res = runner.invoke(app, ["runs", "show", str(ws), "--json"])
    assert res.exit_code == 0, res.output
    data = json.loads(res.output)
    assert (data["strategy"], data["status"], data["verdict"]) == ("oneshot", "complete", "correct")
    assert data["usage_by_role"]["solver"]["calls"] == 1
    res = runner.invoke(app, ["runs", "show", str(ws)])
    assert res.exit_code == 0 and "oneshot with scripted:oneshot-qec-correct" in res.output
    assert "verdict correct" in res.output and "Usage per role" in res.output
    (ws / "metrics.json").unlink()  # still running, or killed before it finished
    data = json.loads(runner.invoke(app, ["runs", "show", str(ws), "--json"]).output)
    # nobody runs it and it never wrote its record: interrupted, as `runs list` and the dashboard say
    assert data["status"] == "interrupted" and data["usage_by_role"]["solver"]["calls"] == 1
    empty = tmp_path / "empty"
    empty.mkdir()
    assert invoke("runs", "show", str(empty)) == 2
    assert invoke("runs", "hint", str(ws), "x") == 2  # messages still go to lab runs only
