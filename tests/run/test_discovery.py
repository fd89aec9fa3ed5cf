"""Which directories are runs is one question with one answer (`physlab.run.files.is_run_dir`), asked
the same way by `solve --resume`, `runs list` and the dashboard: a run killed the moment it started
(its run.json and PROBLEM.md written, nothing else yet) is a run to each of them, and a folder of
something else is a run to none."""

from __future__ import annotations

import asyncio
import json

from fastapi.testclient import TestClient
from typer.testing import CliRunner

from physlab.api import solve_async
from physlab.cli import app
from physlab.errors import UserError
from physlab.problems import resolve_problem
from physlab.web import create_app

QEC = "examples/quantum_error_correction_main"
LOCAL = "http://127.0.0.1"  # the dashboard answers loopback hosts only
runner = CliRunner()


def test_a_run_killed_as_it_started_is_listed_everywhere_and_a_stray_folder_nowhere(tmp_path):
    root = tmp_path / "runs"
    ws = root / "just-started"
    asyncio.run(solve_async(resolve_problem(QEC), "oneshot", "scripted:oneshot-qec-correct", workspace=ws))
    for path in ws.iterdir():  # what a kill right after the start leaves: the start and the problem
        if path.name not in ("run.json", "PROBLEM.md"):
            path.unlink()
    (root / "notes").mkdir()
    (root / "notes" / "ideas.md").write_text("not a run\n")

    listed = runner.invoke(app, ["runs", "list", "--root", str(root), "--json"])
    assert listed.exit_code == 0, listed.output
    rows = json.loads(listed.output)
    assert [(r["id"], r["status"], r["strategy"]) for r in rows] == [("just-started", "interrupted", "oneshot")]

    page = TestClient(create_app(root), base_url=LOCAL)
    assert [(r["id"], r["status"]) for r in page.get("/api/runs").json()] == [("just-started", "interrupted")]
    assert page.get("/api/runs/just-started").status_code == 200
    assert page.get("/api/runs/notes").status_code == 404

    resumed = runner.invoke(app, ["solve", "--resume", str(root / "notes")])
    assert isinstance(resumed.exception, UserError) and "not a run directory" in str(resumed.exception)
