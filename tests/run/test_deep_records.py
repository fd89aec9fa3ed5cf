"""A run file made to crash its readers: one line of calls.jsonl nested 100,000 deep. `runs show`
and `--resume` say which file and which line in one line (exit 2), never "unexpected
RecursionError (a PhysLab bug)"."""

from __future__ import annotations

import pytest

from physlab import api
from tests.run.keyed import QEC, pause_at, physlab

pytestmark = pytest.mark.slow

DEEP = '{"role": "computer", "model": "scripted:lab-qec", "request": ' + "[" * 100_000 + "]" * 100_000 + "}\n"


@pytest.fixture
def deep_run(tmp_path):
    ws = tmp_path / "qec"
    record = api.solve(QEC, "lab", "scripted:lab-qec", workspace=ws, events=pause_at(ws, 1))
    assert record.status == "paused"
    with (ws / "calls.jsonl").open("a") as fh:
        fh.write(DEEP)
    lines = (ws / "calls.jsonl").read_text().count("\n")
    return ws, lines


@pytest.mark.parametrize("command", [("runs", "show"), ("solve", "--resume")], ids=["runs show", "solve --resume"])
def test_a_calls_line_nested_100000_deep_is_one_line_naming_it(deep_run, command):
    ws, n = deep_run
    done = physlab(*command, str(ws))
    assert done.returncode == 2, done.stderr
    said = done.stderr.strip()
    assert len(said.splitlines()) == 1, said
    assert "PhysLab bug" not in said and "calls.jsonl" in said and f"line {n}" in said
