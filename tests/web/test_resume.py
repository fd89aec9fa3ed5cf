"""Resume from the page really continues a paused lab run (a detached `physlab solve --resume`)."""

from __future__ import annotations

import asyncio
import json
import time

import pytest
from fastapi.testclient import TestClient

from physlab.api import solve_async
from physlab.lab import inbox
from physlab.problems import resolve_problem
from physlab.web import create_app

PROBLEM = "examples/quantum_error_correction_main"


@pytest.mark.slow
def test_pause_then_resume_from_the_dashboard(tmp_path):
    ws = tmp_path / "qec"

    def pause_at_2(kind, **data):
        if kind == "iteration" and data.get("iteration") == 2:
            inbox.post(ws, "pause")

    asyncio.run(solve_async(resolve_problem(PROBLEM), "lab", "scripted:lab-qec", workspace=ws, events=pause_at_2))
    assert json.loads((ws / "state.json").read_text())["status"] == "paused"
    c = TestClient(create_app(tmp_path), base_url="http://127.0.0.1")
    r = c.post("/api/runs/qec/actions", json={"kind": "resume", "problem": PROBLEM})
    assert r.status_code == 200 and "resuming" in r.json()["detail"]
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        m = json.loads((ws / "metrics.json").read_text())
        if m.get("status") == "complete":
            break
        time.sleep(0.5)
    assert m["status"] == "complete" and m["verdict"]["verdict"] == "correct"
    assert c.get("/api/runs").json()[0]["status"] == "complete"
