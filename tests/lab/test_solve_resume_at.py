"""`physlab solve --resume DIR@N` continues a finished lab run from the end of iteration N."""

from __future__ import annotations

import json
import subprocess

from typer.testing import CliRunner

from physlab.cli import app
from physlab.cli.solve import split_resume

runner = CliRunner()


def test_split_resume(tmp_path):
    assert split_resume(None) == (None, None)
    assert split_resume(str(tmp_path)) == (tmp_path, None)
    assert split_resume(f"{tmp_path}@3") == (tmp_path, 3)
    odd = tmp_path / "run@2"          # a directory whose name really ends in @2 is taken as is
    odd.mkdir()
    assert split_resume(str(odd)) == (odd, None)


def test_resume_from_an_earlier_iteration(tmp_path):
    ws = tmp_path / "run"
    args = ["solve", "examples/quantum_error_correction_main", "--strategy", "lab",
            "--model", "scripted:lab-qec", "--console", "quiet"]
    first = runner.invoke(app, [*args, "--workspace", str(ws)])
    assert first.exit_code == 0, first.output
    log = lambda: subprocess.run(["git", "log", "--format=%s"], cwd=ws, capture_output=True,  # noqa: E731
                                 text=True, check=True).stdout.splitlines()
    before = log()
    again = runner.invoke(app, [*args, "--resume", f"{ws}@2"])
    assert again.exit_code == 0, again.output
    after = log()
    assert any(m.startswith("rewind to iteration 2") for m in after)
    # iterations 3.. were redone on top of the rewind, and the earlier ones stay in history
    assert len(after) > len(before)
    metrics = json.loads((ws / "metrics.json").read_text())
    assert metrics["verdict"]["verdict"] == "correct"
