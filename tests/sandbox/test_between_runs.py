"""Nothing crosses between runs on one warm worker: not a request's data through memory, not a note
left in /dev or in System V shared memory, and no descriptor lets a run grow its worker.

Each test is an attack as model-written code would make it (issue 21)."""

from __future__ import annotations

import base64
import json
import threading
import uuid

from physlab.grading import Grader
from physlab.problems.model import Problem
from physlab.sandbox import Sandbox, SandboxLimits, pool as pool_mod

from .conftest import needs_bwrap
from .sb_helpers import _tree


def _needles(secret: str) -> list[bytes]:
    """``secret`` as raw bytes and as it reads inside base64 at each of the three alignments."""
    raw = secret.encode()
    out = [raw]
    for pad in range(3):
        enc = base64.b64encode(b"\0" * pad + raw)
        out.append(enc[((pad + 2) // 3) * 4: ((pad + len(raw)) // 3) * 4])
    return out


def scanner(secret: str) -> str:
    """Code that scans its own memory (everything it inherited from its worker) for ``secret``.

    The script must not hold the secret itself, or it would find its own copy: each needle is
    written as a regex of one-character classes (``[a][b]``), which the secret does not contain
    and which the compiled pattern stores as separate 32-bit codes."""
    pats = [b"".join(b"[" + bytes([c]) + b"]" for c in n) for n in _needles(secret)]
    return f"""
import re
pats = [re.compile(p) for p in {pats!r}]
hits = []
mem = open('/proc/self/mem', 'rb', 0)
for line in open('/proc/self/maps').read().splitlines():
    addr, perms = line.split()[:2]
    lo, hi = (int(x, 16) for x in addr.split('-'))
    if 'r' not in perms or hi - lo > (1 << 30):
        continue
    try:
        mem.seek(lo)
        data = mem.read(hi - lo)
    except (OSError, OverflowError, ValueError):
        continue
    hits += [line for p in pats if p.search(data)]
print('hits', len(hits), hits[:3])
"""


@needs_bwrap
def test_a_run_finds_nothing_of_an_earlier_request_in_its_memory():
    """The worker reads no request data before it forks the run: an earlier run's code, input
    files, stdin and output are not in the memory the next run inherits."""
    box = Sandbox("bwrap", workers=1)
    try:
        secret = "Zq" + uuid.uuid4().hex
        first = box.run_sync(f"print({secret!r}[::-1][::-1])\nkeep = {secret!r}",
                             files={"job.json": json.dumps({"reference": secret}).encode()},
                             stdin=secret.encode())
        assert first.exit_code == 0 and secret in first.stdout, first.stderr
        worker = box._pool._idle[0]
        res = box.run_sync(scanner(secret))
        assert box._pool._idle[0] is worker  # the same warm worker served both
    finally:
        box.close()
    assert res.exit_code == 0, res.stderr
    assert res.stdout.startswith("hits 0"), res.stdout


@needs_bwrap
def test_the_scanner_does_find_what_is_in_its_own_request():
    """The attack works: a secret in the run's own input files is found (so 'hits 0' above is
    the worker holding nothing, not a scanner that cannot see)."""
    box = Sandbox("bwrap", workers=1)
    try:
        secret = "Zq" + uuid.uuid4().hex
        res = box.run_sync(scanner(secret), files={"job.json": json.dumps({"reference": secret}).encode()})
    finally:
        box.close()
    assert res.exit_code == 0, res.stderr
    assert not res.stdout.startswith("hits 0"), res.stdout


@needs_bwrap
def test_after_grading_model_code_cannot_read_the_reference_from_memory(monkeypatch):
    """The issue's attack: a grading comparison on a sandbox, then model-written code on the same
    sandbox scans its heap for the reference. Trusted comparisons run on a pool of their own,
    and no request with the reference ever reaches a worker that runs model code."""
    seen: list[tuple[object, bytes]] = []
    real_run = pool_mod.Pool.run

    def spy(self, req, timeout_s):
        seen.append((self, json.dumps(req).encode()))
        return real_run(self, req, timeout_s)

    monkeypatch.setattr(pool_mod.Pool, "run", spy)
    secret = str(int(uuid.uuid4().int % 10**15) + 10**15)
    prob = Problem(id="leak", statement="s", answer_template="def answer(x):\n    ...",
                   reference=f"{secret}*x", reference_format="python")
    box = Sandbox("bwrap", workers=1)
    try:
        verdict = Grader(box, timeout_s=20, compare_timeout_s=60).grade_sync(prob, "def answer(x):\n    return 2*x\n")
        assert verdict.verdict == "incorrect", verdict
        res = box.run_sync(scanner(secret))
        model_pids = {w.proc.pid for w in box._pool._idle}
        trusted_pids = {w.proc.pid for w in box.trusted._pool._idle}
    finally:
        box.close()
    assert res.exit_code == 0, res.stderr
    assert res.stdout.startswith("hits 0"), res.stdout
    assert model_pids and trusted_pids and not model_pids & trusted_pids
    with_ref = [p for p, raw in seen if any(n in raw for n in _needles(secret))]
    assert with_ref and all(p is box.trusted._pool for p in with_ref)
    assert any(p is box._pool for p, _ in seen)  # the candidate itself ran on the model-code pool


def test_the_trusted_pool_is_one_per_sandbox_and_never_the_model_pool():
    box = Sandbox("rlimit", workers=1)
    try:
        assert box.trusted is box.trusted and box.trusted._pool is not box._pool
        assert box.trusted.backend == box.backend
        assert box.trusted.trusted is box.trusted
        box.warm(1, trusted=True)  # `physlab grade` starts both side by side
        assert len(box._pool._idle) == 1 and len(box.trusted._pool._idle) == 1
    finally:
        box.close()


def test_dev_is_read_only_with_only_the_usual_device_nodes(sb1):
    first = sb1.run_sync(
        "import os\n"
        "for p in ('/dev/note', '/dev/shm/note'):\n"
        "    try:\n"
        "        open(p, 'w').write('left by run one')\n"
        "        print('WROTE', p)\n"
        "    except OSError as e:\n"
        "        print('DENIED', p)\n"
        "print(sorted(n for n in os.listdir('/dev') if n not in ('shm', 'pts', 'mqueue')))\n")
    second = sb1.run_sync(
        "import os\nprint([p for p in ('/dev/note', '/dev/shm/note') if os.path.exists(p)])")
    assert first.exit_code == 0 and second.exit_code == 0, (first.stderr, second.stderr)
    assert "DENIED /dev/note" in first.stdout
    nodes = eval(first.stdout.splitlines()[-1])
    assert set(nodes) <= {"null", "zero", "full", "random", "urandom", "tty", "console", "ptmx",
                          "fd", "stdin", "stdout", "stderr", "core"}, nodes
    assert second.stdout.strip() == "[]"


def test_dev_shm_counts_toward_the_runs_disk_limit(sb1):
    """/dev/shm is memory: writing there is held to the run's disk limit, not beside it."""
    res = sb1.run_sync(
        "n = 0\n"
        "try:\n"
        "    with open('/dev/shm/big', 'wb') as f:\n"
        "        for _ in range(300):\n"
        "            f.write(b'0' * (1 << 20)); n += 1\n"
        "except OSError:\n"
        "    pass\n"
        "print(n)",
        limits=SandboxLimits(memory_mb=64, max_disk_mb=32, max_file_mb=512))
    assert res.exit_code == 0, res.stderr
    assert int(res.stdout) <= 32


def test_system_v_shared_memory_does_not_cross_runs(sb1):
    make = """
import ctypes
libc = ctypes.CDLL(None, use_errno=True)
libc.shmat.restype = ctypes.c_void_p
shmid = libc.shmget(0x5EC2E7, 4096, 0o1666)  # IPC_CREAT | 0666
print('shmid', shmid)
addr = libc.shmat(shmid, None, 0)
ctypes.memmove(addr, b'note from run one', 17)
"""
    read = """
import ctypes
libc = ctypes.CDLL(None, use_errno=True)
libc.shmat.restype = ctypes.c_void_p
shmid = libc.shmget(0x5EC2E7, 0, 0)
if shmid < 0:
    print('none')
else:
    addr = libc.shmat(shmid, None, 0)
    print(ctypes.string_at(addr, 17))
"""
    first = sb1.run_sync(make)
    assert first.exit_code == 0 and "shmid -1" not in first.stdout, first.stdout + first.stderr
    second = sb1.run_sync(read)
    assert second.exit_code == 0, second.stderr
    assert second.stdout.strip() == "none"


def _peak_rss_mb(pid: int) -> float:
    total = 0.0
    for p in _tree(pid):
        try:
            with open(f"/proc/{p}/status") as fh:
                for line in fh:
                    if line.startswith("VmHWM:"):
                        total = max(total, int(line.split()[1]) / 1024)
        except OSError:
            pass
    return total


@needs_bwrap
def test_no_descriptor_lets_a_run_grow_its_worker():
    """A run limited to 64 MB writes 1 GB into every descriptor it holds besides its own output:
    no process of the worker grows by more than a fraction of that."""
    box = Sandbox("bwrap", workers=1)
    try:
        box.warm()
        root = box._pool._idle[0].proc.pid
        before = _peak_rss_mb(root)
        attack = """
import os, time
chunk = b'x' * (1 << 20)
for fd in range(3, 64):
    try:
        os.fstat(fd)
    except OSError:
        continue
    for _ in range(1024):
        try:
            os.write(fd, chunk)
        except OSError:
            break
print('written', flush=True)
time.sleep(3)
"""
        out: list = []
        t = threading.Thread(target=lambda: out.append(
            box.run_sync(attack, limits=SandboxLimits(timeout_s=20, memory_mb=64))))
        t.start()
        peak = before
        while t.is_alive():  # sample while the run lasts (VmHWM only grows)
            peak = max(peak, _peak_rss_mb(root))
            t.join(0.02)
        peak = max(peak, _peak_rss_mb(root))
    finally:
        box.close()
    assert out and "written" in out[0].stdout, out
    assert peak - before < 300, (before, peak)


async def test_a_sweeps_bounded_sandbox_hands_the_grader_the_trusted_pool_under_the_same_bound():
    from physlab.bench.sweep import BoundedSandbox

    box = Sandbox("rlimit", workers=1)
    try:
        bounded = BoundedSandbox(box, 3)
        trusted = Grader(bounded).trusted_sandbox
        assert trusted._inner is box.trusted and trusted._sem is bounded._sem
        assert Grader(bounded).sandbox is bounded
    finally:
        box.close()
