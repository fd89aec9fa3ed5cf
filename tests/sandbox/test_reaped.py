"""When a run returns — with its result, at a limit or at its timeout — every process it started is
already gone, zombies included, under every backend: nothing of it runs on, holds memory or counts
against the next run's process limit, and the caller needs no grace period to see that. Also when
the worker itself stops answering and is replaced."""

from __future__ import annotations

import time
import uuid

import pytest

from physlab.sandbox import Sandbox, SandboxLimits, launch
from physlab.sandbox.pool import Worker

from .sb_helpers import alive, pids_with, process_tree, running, worker_trees

BACKENDS = ["bwrap", "rlimit", "rlimit-without-namespaces"]


@pytest.fixture(scope="module", params=BACKENDS)
def box(request):
    if request.param == "bwrap" and not launch.bwrap_works()[0]:
        pytest.skip("bubblewrap does not work on this machine")
    with pytest.MonkeyPatch.context() as mp:
        if request.param == "rlimit-without-namespaces":  # a kernel that refuses the runs their namespaces
            mp.setattr(launch, "rlimit_namespaces", lambda: False)
        sandbox = Sandbox(request.param.split("-")[0], workers=1)
        sandbox.warm(1)
    yield sandbox
    sandbox.close()


# Three ways to outlive a run: a plain child, a child in a session of its own, and a daemon
# (double fork, own session, orphaned, deaf to SIGTERM and SIGHUP). The run goes on only once all
# three have started, so none can be missed by being late.
LEAVE_BEHIND = """\
import os, signal, subprocess, sys
TOKEN = {token!r}
subprocess.Popen([TOKEN + "-child", "300"], executable="/bin/sleep")
subprocess.Popen([TOKEN + "-session", "300"], executable="/bin/sleep", start_new_session=True)
r, w = os.pipe()  # closed on exec: EOF once the daemon runs sleep
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        signal.signal(signal.SIGHUP, signal.SIG_IGN)
        os.execv("/bin/sleep", [TOKEN + "-daemon", "300"])
    os._exit(0)
os.close(w)
os.read(r, 1)
print("all started", flush=True)
"""

ENDINGS = {
    "exits": ("", SandboxLimits(timeout_s=60)),
    "times out": ("while True:\n    pass\n", SandboxLimits(timeout_s=3)),
    "fork bomb": ("while True:\n    try:\n        os.fork()\n    except OSError:\n        pass\n",
                  SandboxLimits(timeout_s=10, max_processes=16)),
}


@pytest.mark.parametrize("ending", list(ENDINGS))
def test_when_a_run_returns_nothing_it_started_is_left(box, ending):
    box.run_sync("pass")
    (before,) = worker_trees(box)  # the worker and the manager it forked for the next run
    token = "physlab-reaped-" + uuid.uuid4().hex[:12]
    tail, limits = ENDINGS[ending]
    res = box.run_sync(LEAVE_BEHIND.format(token=token) + tail, limits=limits)
    assert "all started" in res.stdout, res
    assert (res.exit_code == 0) if ending == "exits" else res.limit_hit in ("timeout", "processes"), res
    # at once, no polling: nothing of the run (its leftovers, the manager that served it) is there
    assert pids_with(token) == []
    assert not alive(before[-1])
    (after,) = worker_trees(box)
    assert len(after) == len(before), (before, after)


def test_a_worker_that_stops_answering_is_replaced_with_nothing_of_its_run_left(box):
    """The caller gives up on a worker (it stopped answering) and kills it: what the run started
    is gone when the kill returns."""
    token = "physlab-reaped-" + uuid.uuid4().hex[:12]
    code = LEAVE_BEHIND.format(token=token) + "while True:\n    pass\n"
    worker = Worker(box.backend)
    tree = process_tree(worker.proc.pid)
    try:
        with pytest.raises(TimeoutError):
            worker.request(box._request(code, SandboxLimits(timeout_s=600), None, None, None),
                           time.monotonic() + 0.01)
        deadline = time.monotonic() + 120  # waits for the run to be under way, not to order a kill
        while len(pids_with(token)) < 3:
            assert time.monotonic() < deadline, "the run never started its three sleepers"
            time.sleep(0.05)
        tree = process_tree(worker.proc.pid)
    finally:
        worker.kill()
    assert pids_with(token) == []
    # (bubblewrap's own monitor exits before its pid 1 is reaped: the machine's init reaps that)
    assert [p for p in tree if running(p)] == []

