"""`physlab runs show RUN | head -1` and a long `physlab runs list | head -1`: the reader closes the
pipe early, and PhysLab ends quietly (no traceback, nothing on stderr)."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys

from physlab.api import solve_async
from physlab.problems import resolve_problem


def piped_to_head(args: list[str], cwd) -> tuple[str, str, int]:
    """``python -m physlab ARGS | head -1`` in a shell; (head's line, physlab's stderr, its exit code)."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    cmd = f"{sys.executable} -m physlab {' '.join(args)} 2>err.txt | head -1; echo \"rc=${{PIPESTATUS[0]}}\""
    out = subprocess.run(["bash", "-c", cmd], cwd=cwd, capture_output=True, text=True, env=env, timeout=120).stdout
    line, rc = out.splitlines()[0], int(out.splitlines()[-1].removeprefix("rc="))
    return line, (cwd / "err.txt").read_text(), rc


def test_a_closed_pipe_ends_quietly(tmp_path):
    run = tmp_path / "runs" / "one"
    asyncio.run(solve_async(resolve_problem("examples/quantum_error_correction_main"), "oneshot",
                           "scripted:oneshot-qec-correct", workspace=run))
    line, err, _ = piped_to_head(["runs", "show", str(run)], tmp_path)
    assert line.startswith("quantum_error_correction_main — oneshot") and err == ""
    for i in range(3000):  # more than a pipe holds, so the writer meets the closed pipe
        (tmp_path / "runs" / f"r{i:04d}").mkdir()
        (tmp_path / "runs" / f"r{i:04d}" / "metrics.json").write_text(json.dumps(
            {"problem_id": "p", "strategy": "oneshot", "model": "scripted:x", "status": "complete"}))
    for args in (["runs", "list"], ["runs", "list", "--json"]):
        line, err, rc = piped_to_head(args, tmp_path)
        assert line.strip() in ("Runs under runs", "[") and err == "", args   # the table's title, or the JSON
        assert rc in (0, 1, 141), rc
