"""The rlimit fallback where the kernel gives namespaces (issue 21, "never let the run see the
parent's /proc entries"): a run sees only its own processes, reaches no network (not even this
machine's loopback) and none of the host's IPC objects, as root and as an unprivileged user.

Each test is the attack as model-written code would make it."""

from __future__ import annotations

import ctypes
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import uuid
from pathlib import Path

import pytest

from physlab.sandbox import Sandbox, launch

SRC = str(Path(__file__).resolve().parents[2] / "src")
NOBODY = 65534
SYSTEM_PYTHON = "/usr/bin/python3"

LIST_PROC = r"""
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
# first uncover what lies under the run's /proc: unmount it, also from a user namespace of its own
print('umount', libc.umount2(b'/proc', 2), ctypes.get_errno())
if libc.unshare(0x10000000 | 0x00020000) == 0:
    print('umount in a user namespace', libc.umount2(b'/proc', 2), ctypes.get_errno())
for what in ('cmdline', 'status', 'environ'):
    try:
        print('CALLER', what, open(f'/proc/{CALLER}/{what}', 'rb').read()[:300])
    except OSError as e:
        print('hidden', what, e.errno)
for p in sorted(p for p in os.listdir('/proc') if p.isdigit()):
    for what in ('cmdline', 'environ'):
        try:
            data = open(f'/proc/{p}/{what}', 'rb').read().replace(b'\0', b' ')
        except OSError:
            continue
        print('PROC', p, what, data[:2000])
"""

CONNECT = r"""
import socket
for family, addr in ((socket.AF_INET, ('127.0.0.1', PORT)), (socket.AF_UNIX, ABSTRACT)):
    s = socket.socket(family, socket.SOCK_STREAM)
    s.settimeout(5)
    try:
        s.connect(addr)
        print('CONNECTED', addr)
    except OSError as e:
        print('refused', family, e.errno)
a, b = socket.socketpair()  # what multiprocessing and friends need still works
a.send(b'x')
print('socketpair', b.recv(1))
"""


def _processes_seen(out: str) -> list[str]:
    return [line for line in out.splitlines() if line.startswith("PROC ")]


def _pids_seen(out: str) -> str:
    """What a failure says: which processes the run saw (not what it read of them)."""
    return "the run saw pids " + " ".join(sorted({line.split()[1] for line in _processes_seen(out)}))


def _listeners():
    """A TCP listener on 127.0.0.1 and an abstract Unix socket, as a service on this machine."""
    tcp = socket.socket()
    tcp.bind(("127.0.0.1", 0))
    tcp.listen()
    unix = socket.socket(socket.AF_UNIX)
    name = "\0physlab-test-" + uuid.uuid4().hex
    unix.bind(name)
    unix.listen()
    return tcp, unix, name


def test_a_run_sees_neither_the_physlab_process_nor_anything_else_in_proc(tmp_path):
    """The caller (a physlab process, a token in its command line) runs the attack: its own
    /proc/<pid> entries, and every process /proc lists with its command line."""
    token = "physlab-caller-" + uuid.uuid4().hex
    (tmp_path / "attack.py").write_text(LIST_PROC)
    caller = ("import os, sys\nfrom physlab.sandbox import Sandbox\n"
              "box = Sandbox('rlimit', workers=1)\n"
              "res = box.run_sync(open(sys.argv[1]).read().replace('CALLER', str(os.getpid())))\n"
              "print(res.stdout, res.stderr, res.error, 'isolated_run', res.isolated_run)\n")
    env = {**os.environ, "PYTHONPATH": SRC, launch.ENV_VAR: "rlimit"}
    out = subprocess.run([sys.executable, "-c", caller, str(tmp_path / "attack.py"), token], env=env,
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    leaked = "CALLER" in out.stdout or token in out.stdout
    assert not leaked, _pids_seen(out.stdout)
    assert "hidden cmdline" in out.stdout, out.stdout[-2000:]  # the attack ran
    seen = _processes_seen(out.stdout)
    # only the run's own processes: its init and the code, both forks of the worker
    assert seen and all("_zygote.py" in line for line in seen), _pids_seen(out.stdout)
    assert len({line.split()[1] for line in seen}) <= 2, _pids_seen(out.stdout)
    assert "isolated_run True" in out.stdout


def test_a_run_reaches_no_service_on_this_machines_loopback(rl):
    tcp, unix, name = _listeners()
    try:
        res = rl.run_sync(CONNECT.replace("PORT", str(tcp.getsockname()[1])).replace("ABSTRACT", repr(name)))
    finally:
        tcp.close()
        unix.close()
    assert res.exit_code == 0, res.stderr
    assert "CONNECTED" not in res.stdout, res.stdout
    assert res.stdout.count("refused") == 2 and "socketpair b'x'" in res.stdout, res.stdout


def test_a_run_sees_none_of_the_hosts_system_v_shared_memory(rl):
    libc = ctypes.CDLL(None, use_errno=True)
    key = 0x5E000000 + uuid.uuid4().int % 0xFFFFFF
    shmid = libc.shmget(key, 4096, 0o1000 | 0o666)  # IPC_CREAT, readable and writable by all
    assert shmid >= 0, os.strerror(ctypes.get_errno())
    try:
        res = rl.run_sync(f"import ctypes\nlibc = ctypes.CDLL(None, use_errno=True)\n"
                          f"print('shmget', libc.shmget({key}, 0, 0), ctypes.get_errno())")
    finally:
        libc.shmctl(shmid, 0, None)  # IPC_RMID
    assert res.exit_code == 0, res.stderr
    assert res.stdout.startswith("shmget -1 2"), res.stdout  # ENOENT: no such segment here


def test_a_runs_dev_shm_is_its_own(rl):
    """POSIX shared memory lives in /dev/shm: a note left there reaches neither the next run on the
    same worker nor the host."""
    name = "physlab-note-" + uuid.uuid4().hex
    first = rl.run_sync(f"open('/dev/shm/{name}', 'w').write('for the next run')\nprint('left')")
    second = rl.run_sync(f"import os\nprint(os.path.exists('/dev/shm/{name}'))")
    assert first.stdout == "left\n", first.stderr
    assert second.stdout == "False\n", second.stderr
    assert not os.path.exists(f"/dev/shm/{name}")


# ---------------------------------------------------------------- PhysLab as an unprivileged user

def _can_be_nobody() -> bool:
    return (os.geteuid() == 0 and shutil.which("setpriv") is not None and os.path.exists(SYSTEM_PYTHON)
            and subprocess.run(["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups",
                                SYSTEM_PYTHON, "-I", "-c", f"open({str(launch.ZYGOTE_SRC)!r}).read()"],
                               capture_output=True).returncode == 0)


as_nobody = pytest.mark.skipif(not _can_be_nobody(),
                               reason="needs root, setpriv and a system Python any user may run")


def _as(uid: int) -> list[str]:
    return ["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups"]


@pytest.fixture
def nobody_box(monkeypatch):
    """The rlimit sandbox as PhysLab started by an unprivileged user: its workers run as nobody
    (on the system Python, which that user can run), everything else as in production."""

    def start(backend, preload=launch.SCIENTIFIC_STACK):
        private = tempfile.mkdtemp(prefix="physlab-sb-")
        os.chown(private, NOBODY, NOBODY)
        os.chmod(private, 0o711)
        proc = subprocess.Popen(_as(NOBODY) + [SYSTEM_PYTHON, "-I", str(launch.ZYGOTE_SRC)],
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                cwd=private, env=launch.zygote_env("rlimit", private, preload=preload),
                                start_new_session=True)
        return proc, private

    monkeypatch.setattr(launch, "_start_zygote", start)
    monkeypatch.setattr(launch, "python_executable", lambda: SYSTEM_PYTHON)
    box = Sandbox("rlimit", workers=1)
    yield box
    box.close()


@as_nobody
def test_as_an_unprivileged_user_a_run_cannot_read_the_users_other_processes(nobody_box):
    """As your own user, every process of yours holds what a run must not read (an API key in
    another PhysLab's environment): the run sees none of them, nor this machine's loopback."""
    secret = "sk-physlab-" + uuid.uuid4().hex
    other = subprocess.Popen(_as(NOBODY) + ["/bin/sh", "-c", "sleep 60; :"],
                             env={"OPENAI_API_KEY": secret, "PATH": "/usr/bin:/bin"})
    tcp, unix, name = _listeners()
    try:
        seen = nobody_box.run_sync(LIST_PROC.replace("CALLER", str(other.pid)))
        net = nobody_box.run_sync(CONNECT.replace("PORT", str(tcp.getsockname()[1]))
                                  .replace("ABSTRACT", repr(name)))
    finally:
        other.kill()
        other.wait()
        tcp.close()
        unix.close()
    assert seen.exit_code == 0, seen.stderr + seen.error
    leaked = secret in seen.stdout or "CALLER" in seen.stdout
    assert not leaked, _pids_seen(seen.stdout)
    assert "hidden cmdline" in seen.stdout, seen.stdout[-2000:]
    procs = _processes_seen(seen.stdout)
    assert procs and all("_zygote.py" in line for line in procs), _pids_seen(seen.stdout)
    assert net.exit_code == 0, net.stderr + net.error
    assert "CONNECTED" not in net.stdout and "socketpair b'x'" in net.stdout, net.stdout
