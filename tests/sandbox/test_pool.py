"""Warm pool: reuse, isolation between runs, concurrency, replacement of dead or wedged workers."""

from __future__ import annotations

import asyncio
import os
import signal
import threading
import time

from physlab.sandbox import Sandbox, SandboxLimits, pool as pool_mod

from .conftest import needs_bwrap
from .sb_helpers import _tree


@needs_bwrap
def test_warm_reuse_is_faster_and_isolated():
    box = Sandbox("bwrap", workers=1)
    try:
        t0 = time.monotonic()
        first = box.run_sync(
            "import os\nopen('secret.txt', 'w').write('run one')\n"
            "open('/tmp/stray', 'w').write('x')\n"
            "open('/dev/shm/stray', 'w').write('x')\n"
            "import builtins\nbuiltins.LEAK = 1\nimport sympy\nsympy.LEAK = 2\nGLOBAL_FROM_ONE = 3\n"
            "print(os.getcwd())")
        cold = time.monotonic() - t0
        worker_pid = box._pool._idle[0].proc.pid
        t0 = time.monotonic()
        second = box.run_sync(
            "import os, builtins, sympy\n"
            "print(sorted(os.listdir('.')), os.path.exists('/tmp/stray'), os.path.exists('/dev/shm/stray'))\n"
            "print(hasattr(builtins, 'LEAK'), hasattr(sympy, 'LEAK'), 'GLOBAL_FROM_ONE' in globals())")
        warm = time.monotonic() - t0
        assert box._pool._idle[0].proc.pid == worker_pid  # same zygote served both
    finally:
        box.close()
    assert first.exit_code == 0 and second.exit_code == 0, (first.stderr, second.stderr)
    lines = second.stdout.splitlines()
    assert lines[0] == "['main.py'] False False"
    assert lines[1] == "False False False"
    assert warm < cold


async def test_concurrent_runs_are_all_correct(sb):
    async def one(i: int):
        return await sb.run(
            f"import sympy as sp\nn = {i}\nopen('out.txt', 'w').write(str(n))\n"
            f"print(sp.factorial(n + 3))",
            collect=["out.txt"])

    results = await asyncio.gather(*(one(i) for i in range(8)))
    import math

    for i, res in enumerate(results):
        assert res.exit_code == 0, res.stderr
        assert res.stdout.strip() == str(math.factorial(i + 3))
        assert res.files == {"out.txt": str(i).encode()}


async def test_run_sync_works_inside_an_event_loop_and_from_threads(sb):
    res = sb.run_sync("print('in loop')")  # blocking call from a coroutine: allowed
    assert res.stdout == "in loop\n"
    out = []
    threads = [threading.Thread(target=lambda i=i: out.append(sb.run_sync(f"print({i}*2)").stdout))
               for i in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(out) == ["0\n", "2\n", "4\n"]
    res = await asyncio.to_thread(sb.run_sync, "print('thread')")
    assert res.stdout == "thread\n", res


def test_sync_use_after_an_event_loop_closed(sb):
    asyncio.run(sb.run("print(1)"))
    asyncio.run(sb.run("print(2)"))  # a second loop: the pool is not tied to the first one
    assert sb.run_sync("print(3)").stdout == "3\n"


@needs_bwrap
def test_dead_or_wedged_worker_is_replaced_transparently(monkeypatch):
    monkeypatch.setattr(pool_mod, "GRACE_S", 0.5)
    box = Sandbox("bwrap", workers=1)
    try:
        assert box.run_sync("print(1)").exit_code == 0
        w = box._pool._idle[0]
        os.killpg(w.proc.pid, signal.SIGKILL)  # the worker dies between runs
        w.proc.wait(5)
        res = box.run_sync("print(2)")
        assert res.exit_code == 0 and res.stdout == "2\n"
        w2 = box._pool._idle[0]
        assert w2 is not w
        stopped: set[int] = set()
        while True:  # the worker stops answering (stop its tree until no process is left running)
            tree = set(_tree(w2.proc.pid))
            if tree <= stopped:
                break
            for pid in tree - stopped:
                try:
                    os.kill(pid, signal.SIGSTOP)
                except ProcessLookupError:  # a run's manager that was just exiting
                    pass
            stopped |= tree
            # A process stops on its way back from the kernel: one in the middle of forking (the
            # worker forks the next run's manager, a copy of a large heap) makes its child after
            # the signal. Only once all are stopped does listing the tree again find every child.
            deadline = time.monotonic() + 10
            while any(_state(pid) not in ("T", "t", "Z", None) for pid in stopped):
                assert time.monotonic() < deadline, {pid: _state(pid) for pid in stopped}
                time.sleep(0.01)
        res = box.run_sync("print(3)", limits=SandboxLimits(timeout_s=0.5))
        assert res.timed_out and "stopped answering" in res.error
        assert w2.proc.poll() is not None  # killed, not left stopped
        assert box.run_sync("print(4)").stdout == "4\n"
    finally:
        box.close()


@needs_bwrap
def test_close_leaves_no_worker_behind():
    from .sb_helpers import host_pids_with

    box = Sandbox("bwrap", workers=2)
    box.warm()
    pids = [w.proc.pid for w in box._pool._idle]
    assert len(pids) == 2
    box.close()
    for pid in pids:
        assert not os.path.exists(f"/proc/{pid}") or open(f"/proc/{pid}/stat").read().split()[2] == "Z"
    assert all(p not in host_pids_with("zygote.py") for p in pids)


def _state(pid: int) -> str | None:
    """A process's state letter from /proc (T: stopped), None once it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return None
