"""`--resume DIR` after `kill -9` in the middle of an iteration: nothing committed is lost, the
half-done iteration is redone, and spend already recorded in calls.jsonl is kept."""

from __future__ import annotations

import os
import signal

from physlab.lab.state.invariants import check
from tests.lab.helpers import calls, engine_busy_in_iteration_2, git_subjects, solve, state_of
from tests.lab.mini import mini_problem, register


async def test_resume_after_kill_9_mid_iteration(tmp_path):
    ws = tmp_path / "run"
    proc = engine_busy_in_iteration_2(ws, "lab-mini-kill")
    try:
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
