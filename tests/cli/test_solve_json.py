"""`physlab solve --json` prints the run's record: every field metrics.json holds, with the same
values (the contract only adds), and the answer as the run wrote it with where it is -- what the
Python API's `solve` returns."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from physlab.cli import app

runner = CliRunner()


def test_solve_json_is_the_record_with_the_answer_as_written(tmp_path):
    ws = tmp_path / "ising"
    res = runner.invoke(app, ["solve", "examples/sm_ising_1d", "--model", "scripted:examples-strong", "-s", "oneshot",
                              "--workspace", str(ws), "--json"])
    assert res.exit_code == 0, res.output
    printed = json.loads(res.stdout)
    metrics = json.loads((ws / "metrics.json").read_text())
    assert {k: printed.get(k) for k in metrics} == metrics              # every field, the same value
    assert printed["status"] == "complete" and printed["verdict"]["verdict"] == "correct"
    assert printed["answer_code"] == (ws / "answer.py").read_text()
    assert printed["answer_text"] == (ws / "ANSWER.md").read_text()
    assert printed["workspace"] == str(ws)
