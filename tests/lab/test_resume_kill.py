"""`--resume DIR` after `kill -9` in the middle of an iteration: nothing committed is lost, the
half-done iteration is redone, and spend already recorded in calls.jsonl is kept."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from physlab.lab.state.invariants import check

from tests.lab.helpers import calls, git_subjects, solve, state_of
from tests.lab.mini import mini_problem, register

REPO = Path(__file__).resolve().parents[2]

CHILD = r"""
import asyncio, sys, time
from pathlib import Path
sys.path.insert(0, {repo!r})
from tests.lab.mini import Mini, mini_problem, register
from tests.lab.helpers import solve
ws = Path({ws!r})

def block():
    (ws / "BLOCKED").write_text("x")
    time.sleep(120)            # killed here, mid-iteration 2

class Blocking(Mini):
    seen = {{}}
    hooks = {{2: block}}

asyncio.run(solve(ws, register("lab-mini-kill", Blocking), problem=mini_problem()))
"""


async def test_resume_after_kill_9_mid_iteration(tmp_path):
    ws = tmp_path / "run"
    proc = subprocess.Popen([sys.executable, "-c", CHILD.format(repo=str(REPO), ws=str(ws))],
                            cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    try:
        deadline = time.monotonic() + 90
        while not (ws / "BLOCKED").exists():
            assert proc.poll() is None, proc.stderr.read().decode()[-2000:]
            assert time.monotonic() < deadline, "child never reached iteration 2"
            time.sleep(0.1)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
    finally:
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGKILL)
    assert git_subjects(ws)[0].startswith("iteration 1:")       # the killed iteration never committed
    calls_before = len(calls(ws))
    (ws / "BLOCKED").unlink()

    a = await solve(ws, register("lab-mini-after-kill"), problem=mini_problem(), resume=True)
    assert a.status == "complete", a.stop_reason
    s = state_of(ws)
    assert check(s) == [] and s.iteration == 3
    assert any(e.kind == "resume" for e in s.events)
    assert len(calls(ws)) > calls_before                        # the killed process's calls are kept
    subjects = git_subjects(ws)
    assert [x.split(":")[0] for x in reversed(subjects)] == ["iteration 0", "iteration 1", "iteration 2", "iteration 3"]
