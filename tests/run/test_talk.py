"""Talking to a run does what it says: a message that makes no sense for the run's state is
refused in one line (CLI and dashboard alike), the reply says when the run takes a message in,
a resume never turns a run's answer into no answer, and a paused run shows as paused."""

from __future__ import annotations

import asyncio
import json
import os
import time

import pytest
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from physlab.api import solve_async
from physlab.cli import app, main
from physlab.lab import inbox
from physlab.problems import resolve_problem
from physlab.web import create_app

LOCAL = "http://127.0.0.1"  # the dashboard answers loopback hosts only

QEC = "examples/quantum_error_correction_main"
runner = CliRunner()


def solve(ws, *, resume=False, events=None, **params):
    return asyncio.run(solve_async(resolve_problem(QEC), "lab", "scripted:lab-qec", workspace=None if resume else ws,
                                  resume=ws if resume else None, events=events, params=params))


def exit_code(*args) -> int:
    try:
        main(list(args))
    except SystemExit as exc:
        return exc.code
    return 0


def pause_at(ws, iteration):
    def events(kind, **data):
        if kind == "iteration" and data.get("iteration") == iteration:
            inbox.post(ws, "pause")
    return events


@pytest.fixture(scope="module")
def budget_ended(tmp_path_factory):
    """A run the iteration budget ended with a correct answer (partially_complete)."""
    ws = tmp_path_factory.mktemp("talk") / "partial"
    attempt = solve(ws, max_iterations=4)
    assert (attempt.status, attempt.verdict.verdict) == ("partially_complete", "correct")
    return ws


@pytest.fixture(scope="module")
def paused(tmp_path_factory):
    ws = tmp_path_factory.mktemp("talk") / "paused"
    attempt = solve(ws, events=pause_at(ws, 2))
    return ws, attempt


def test_pause_or_stop_on_an_ended_run_is_refused_in_one_line(budget_ended, capsys):
    for kind in ("pause", "stop"):
        assert exit_code("runs", kind, str(budget_ended)) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"error: {budget_ended}: this run has already ended (partially_complete): there is nothing to {k}"
                   for k in ("pause", "stop")]
    assert inbox.read(budget_ended) == []
    res = runner.invoke(app, ["runs", "hint", str(budget_ended), "check the p -> 0 limit"])
    assert res.exit_code == 0 and "has ended (partially_complete)" in res.output and "--resume" in res.output
    assert "next iteration boundary" not in res.output


def test_a_paused_run_shows_paused_and_is_not_graded(paused, capsys):
    ws, attempt = paused
    assert attempt.status == "paused" and attempt.verdict is None
    metrics = json.loads((ws / "metrics.json").read_text())
    assert (metrics["status"], metrics["verdict"], metrics["has_answer"]) == ("paused", None, False)
    data = json.loads(runner.invoke(app, ["runs", "show", str(ws), "--json"]).output)
    assert (data["status"], data["verdict"]) == ("paused", None)
    row = TestClient(create_app(ws.parent), base_url=LOCAL).get("/api/runs").json()[0]
    assert (row["status"], row["verdict"]) == ("paused", None)
    html = TestClient(create_app(ws.parent), base_url=LOCAL).get("/runs/paused").text
    assert 'class="badge paused"' in html and "badge invalid" not in html
    assert exit_code("runs", "pause", str(ws)) == 2 and "already paused" in capsys.readouterr().err
    res = runner.invoke(app, ["runs", "stop", str(ws)])   # a paused run can be told to wrap up when resumed
    assert res.exit_code == 0 and "the run is paused: it takes it in when you resume it" in res.output


def test_a_stale_pause_never_turns_an_answer_into_no_answer(tmp_path):
    ws = tmp_path / "run"
    assert solve(ws, max_iterations=4).verdict.verdict == "correct"
    inbox.post(ws, "pause")        # sent after the run ended (before this was refused, or by another tool)
    attempt = solve(ws, resume=True)
    assert attempt.status in ("complete", "partially_complete") and attempt.verdict.verdict == "correct"
    state = json.loads((ws / "state.json").read_text())
    assert state["status"] != "paused" and inbox.read(ws)[0]["id"] in state["inbox_consumed"]
    assert any(e["kind"] == "human_ignored" for e in state["events"])


def test_the_dashboard_says_what_the_cli_says(budget_ended, paused, tmp_path):
    c = TestClient(create_app(budget_ended.parent), base_url=LOCAL)
    r = c.post("/api/runs/partial/actions", json={"kind": "pause"})
    assert r.status_code == 409 and "already ended (partially_complete)" in r.json()["detail"]
    r = c.post("/api/runs/partial/actions", json={"kind": "comment", "on": "ER-2", "text": "why?"})
    assert r.status_code == 200 and "next iteration boundary" not in r.json()["detail"]
    assert "has ended (partially_complete)" in r.json()["detail"]
    assert "taken in if the run is resumed" in c.get("/fragments/runs/partial").text
    assert 'data-state="ended"' in c.get("/runs/partial").text
    ws, _ = paused
    c = TestClient(create_app(ws.parent), base_url=LOCAL)
    r = c.post("/api/runs/paused/actions", json={"kind": "hint", "text": "use symmetry"})
    assert r.status_code == 200 and "when you resume it" in r.json()["detail"]
    assert "waiting for the run to be resumed" in c.get("/fragments/runs/paused").text


async def test_talk_to_the_run_only_on_lab_runs(tmp_path):
    await solve_async(resolve_problem(QEC), "oneshot", "scripted:oneshot-qec-correct", workspace=tmp_path / "one")
    html = TestClient(create_app(tmp_path), base_url=LOCAL).get("/runs/one").text
    assert "Talk to the run" not in html and 'id="action-form"' not in html


@pytest.mark.slow
def test_a_resume_from_the_page_leaves_no_defunct_process(budget_ended):
    c = TestClient(create_app(budget_ended.parent), base_url=LOCAL)
    r = c.post("/api/runs/partial/actions", json={"kind": "resume", "problem": QEC})
    assert r.status_code == 200, r.text
    pid = int(r.json()["detail"].split("pid ")[1].rstrip(")"))
    deadline = time.monotonic() + 120
    while os.path.exists(f"/proc/{pid}") and time.monotonic() < deadline:  # ended and reaped: gone
        time.sleep(0.2)
    assert not os.path.exists(f"/proc/{pid}"), open(f"/proc/{pid}/status").read().splitlines()[2]
    assert json.loads((budget_ended / "metrics.json").read_text())["verdict"]["verdict"] == "correct"


def test_a_run_nobody_runs_is_interrupted_and_one_that_runs_cannot_be_resumed_twice(tmp_path, capsys):
    from physlab.lab.workspace import RunWorkspace
    from physlab.run.lock import lock_run

    ws = tmp_path / "killed"
    solve(ws, max_iterations=4)
    w = RunWorkspace(ws)
    w.commit(w.rewind(2), "iteration 2: as a kill -9 leaves it")   # its state says running; no process runs it
    c = TestClient(create_app(tmp_path), base_url=LOCAL)
    assert c.get("/api/runs").json()[0]["status"] == "interrupted"
    assert exit_code("runs", "pause", str(ws)) == 2 and "not running" in capsys.readouterr().err
    res = runner.invoke(app, ["runs", "stop", str(ws)])
    assert res.exit_code == 0 and "the run is interrupted: it takes it in when you resume it" in res.output
    with lock_run(ws):                                               # now a process runs it
        assert c.get("/api/runs").json()[0]["status"] == "running"
        r = c.post("/api/runs/killed/actions", json={"kind": "pause"})
        assert r.status_code == 200 and "next iteration boundary" in r.json()["detail"]
        r = c.post("/api/runs/killed/actions", json={"kind": "resume", "problem": QEC})
        assert r.status_code == 409 and "already resuming or running" in r.json()["detail"]
