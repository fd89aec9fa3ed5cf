"""One engine per run (issue 21): while a process runs a lab run, a second `--resume` of it is
refused in one line before it spends anything, and git's index.lock is never deleted while a live
process holds it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from physlab.errors import UserError
from physlab.lab.workspace import RunWorkspace
from physlab.run.lock import lock_run
from tests.lab.helpers import calls, engine_busy_in_iteration_2, git_subjects, solve, state_of
from tests.lab.mini import Mini, mini_problem, register


async def test_a_second_engine_on_a_running_run_is_refused_before_it_spends(tmp_path):
    ws = tmp_path / "run"
    proc = engine_busy_in_iteration_2(ws, "lab-mini-busy")
    try:
        spent, head = len(calls(ws)), git_subjects(ws)[0]
        with pytest.raises(UserError) as err:
            await solve(ws, register("lab-mini-second"), problem=mini_problem(), resume=True)
        msg = str(err.value)
        assert "\n" not in msg and f"pid {proc.pid}" in msg and "already running" in msg, msg
        assert len(calls(ws)) == spent and git_subjects(ws)[0] == head  # not one call, not one commit
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
    (ws / "BLOCKED").unlink()
    a = await solve(ws, register("lab-mini-after-busy"), problem=mini_problem(), resume=True)
    assert a.status == "complete", a.stop_reason  # the kernel dropped the dead engine's lock


async def test_the_lock_is_held_for_the_engines_whole_life(tmp_path):
    ws = tmp_path / "run"
    refused: list[str] = []

    def try_lock():
        try:
            lock_run(ws).release()
        except UserError as exc:
            refused.append(str(exc))

    class Probing(Mini):
        seen: dict = {}
        hooks = {1: try_lock, 2: try_lock}

    a = await solve(ws, register("lab-mini-probe", Probing), problem=mini_problem())
    assert a.status == "complete"
    assert len(refused) == 2 and all(f"pid {os.getpid()}" in r for r in refused), refused
    lock_run(ws).release()  # free once the run ended
    assert ".physlab.lock" not in subprocess.run(["git", "ls-files"], cwd=ws, capture_output=True, text=True).stdout
    assert state_of(ws).status == "complete"


def test_index_lock_held_by_a_live_process_is_never_deleted(tmp_path):
    ws = RunWorkspace(tmp_path / "run")
    ws.init()
    lock = tmp_path / "run" / ".git" / "index.lock"
    holder = subprocess.Popen([sys.executable, "-c", "import sys; f = open(sys.argv[1], 'w'); sys.stdin.read()", str(lock)],
                              stdin=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 30
        while not lock.exists():
            assert time.monotonic() < deadline
            time.sleep(0.05)
        with pytest.raises(UserError, match=f"process {holder.pid}"):
            ws.init()
        assert lock.exists()
    finally:
        holder.stdin.close()
        holder.wait(10)
    ws.init()  # its holder is gone: a stale lock is cleared as before
    assert not lock.exists()
