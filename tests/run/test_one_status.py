"""A run has one status, whoever reads it: `solve`'s summary, metrics.json, `runs list`, `runs show
--json` and the dashboard (its table, its JSON and the run's page) all say the same. The case that
used to disagree: a lab run whose first model call failed (error, interrupted, running)."""

from __future__ import annotations

import json

import pytest
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from physlab.cli import app
from physlab.web import create_app
from tests.run.keyed import KEY_ENV, QEC, keyed_standin, physlab

LOCAL = "http://127.0.0.1"  # the dashboard answers loopback hosts only
runner = CliRunner()


@pytest.mark.slow
def test_a_lab_run_whose_first_call_failed_has_one_status_everywhere(tmp_path):
    root = tmp_path / "runs"
    ws = root / "nokey"
    with keyed_standin() as srv:          # the server wants a key; none is set, so none is sent
        solved = physlab("solve", QEC, "--strategy", "lab", "--model", "openai:standin", "--api-base",
                         srv.base_url, "--workspace", str(ws), unset=(KEY_ENV, "OPENAI_API_KEY"))
        assert srv.stats.faults["unauthorized"] >= 1
    assert solved.returncode == 1, solved.stderr
    assert "status: error" in solved.stdout
    assert json.loads((ws / "metrics.json").read_text())["status"] == "error"

    listed = runner.invoke(app, ["runs", "list", "--root", str(root), "--json"])
    assert [r["status"] for r in json.loads(listed.output)] == ["error"]
    shown = runner.invoke(app, ["runs", "show", str(ws), "--json"])
    assert json.loads(shown.output)["status"] == "error"

    c = TestClient(create_app(root), base_url=LOCAL)
    assert [r["status"] for r in c.get("/api/runs").json()] == ["error"]
    assert c.get("/api/runs/nokey").json()["summary"]["status"] == "error"
    for html in (c.get("/").text, c.get("/runs/nokey").text):
        badges = {b.split('"')[0] for b in html.split('class="badge ')[1:]}
        assert "error" in badges and not badges & {"running", "interrupted", "resuming", "complete"}, badges
