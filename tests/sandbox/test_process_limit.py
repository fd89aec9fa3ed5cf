"""``max_processes`` is each run's own: a run that has used up its processes (a fork bomb held at
its limit) does not make the forks of another run, at the same time on another worker, fail. The
kernel counts RLIMIT_NPROC per user and user namespace, so this holds where each run has a user
namespace of its own (bubblewrap; the rlimit backend as your user, with namespaces) or each worker
a uid of its own (the rlimit backend as root)."""

from __future__ import annotations

import concurrent.futures
import os
import signal
import tempfile
import time
import uuid

import pytest

from physlab.sandbox import Sandbox, SandboxLimits, launch

from .sb_helpers import pids_with
from .test_rlimit_namespaces import NOBODY, SYSTEM_PYTHON, _as, _can_be_nobody

SETUPS = ["bwrap", "rlimit", "rlimit-without-namespaces", "rlimit-as-a-user"]


def _nobody_zygote(backend: str, preload: tuple[str, ...] = launch.SCIENTIFIC_STACK):
    """A worker as PhysLab started by an unprivileged user would have it (see test_rlimit_namespaces)."""
    import subprocess

    private = tempfile.mkdtemp(prefix="physlab-sb-")
    os.chown(private, NOBODY, NOBODY)
    os.chmod(private, 0o711)
    proc = subprocess.Popen(_as(NOBODY) + [SYSTEM_PYTHON, "-I", str(launch.ZYGOTE_SRC)],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                            cwd=private, env=launch.zygote_env("rlimit", private, preload=preload), start_new_session=True)
    return proc, private


@pytest.fixture(scope="module", params=SETUPS)
def box2(request):
    """A sandbox with two warm workers."""
    setup = request.param
    if setup == "bwrap" and not launch.bwrap_works()[0]:
        pytest.skip("bubblewrap does not work on this machine")
    if setup == "rlimit-as-a-user" and not (_can_be_nobody() and launch.rlimit_namespaces()):
        pytest.skip("needs root (to start workers as nobody), setpriv and namespaces")
    with pytest.MonkeyPatch.context() as mp:
        if setup == "rlimit-without-namespaces":
            mp.setattr(launch, "rlimit_namespaces", lambda: False)
        if setup == "rlimit-as-a-user":
            mp.setattr(launch, "_start_zygote", _nobody_zygote)
            mp.setattr(launch, "python_executable", lambda: SYSTEM_PYTHON)
        sandbox = Sandbox(setup.split("-")[0], workers=2)
        sandbox.warm(2)
    yield sandbox
    sandbox.close()


# Holds as many processes as it may (itself and `n` sleepers), then becomes the sign that it is full.
FILL = """\
import os, subprocess
TOKEN = {token!r}
for _ in range({n}):
    subprocess.Popen([TOKEN, "300"], executable="/bin/sleep")
os.execv("/bin/sleep", [TOKEN + "-full", "300"])
"""

# Forks `n` children that stay until it has counted them.
FORK = """\
import os
r, w = os.pipe()
kids = []
for _ in range({n}):
    try:
        pid = os.fork()
    except OSError as e:
        print("refused", e)
        break
    if pid == 0:
        os.close(w)
        os.read(r, 1)
        os._exit(0)
    kids.append(pid)
print("forked", len(kids))
os.close(w)
for pid in kids:
    os.waitpid(pid, 0)
"""


def test_a_run_at_its_process_limit_does_not_starve_another_runs_forks(box2):
    token = "physlab-nproc-" + uuid.uuid4().hex[:12]
    limits = SandboxLimits(timeout_s=120, max_processes=8)
    with concurrent.futures.ThreadPoolExecutor(1) as ex:
        full = ex.submit(box2.run_sync, FILL.format(token=token, n=limits.max_processes - 1), limits=limits)
        deadline = time.monotonic() + 120  # waits for the first run to be full, not to order events
        while not pids_with(token + "-full"):
            assert not full.done(), full.result()
            assert time.monotonic() < deadline, "the first run never filled its processes"
            time.sleep(0.05)
        held = len(pids_with(token))
        other = box2.run_sync(FORK.format(n=6), limits=limits)  # on the other worker, meanwhile
        still_full = len(pids_with(token))
        for line in pids_with(token + "-full"):
            os.kill(int(line.split()[0]), signal.SIGKILL)  # the first run ends with its sign
        first = full.result()
    assert other.exit_code == 0 and other.stdout == "forked 6\n", other
    assert still_full == held == limits.max_processes  # the first run held its limit all along
    assert first.exit_code == -signal.SIGKILL, first
    assert pids_with(token) == []
