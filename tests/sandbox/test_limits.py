"""Every limit: wall time, memory, processes, output, file size, leftovers, files in/out."""

from __future__ import annotations

import resource
import time

import pytest

from physlab.errors import UserError
from physlab.sandbox import SandboxLimits

from .sb_helpers import _tree, pids_with


def test_infinite_loop_times_out_quickly(sb):
    t0 = time.monotonic()
    res = sb.run_sync("while True:\n    pass", limits=SandboxLimits(timeout_s=1))
    assert res.timed_out and res.exit_code is None and res.limit_hit == "timeout"
    assert time.monotonic() - t0 < 4
    assert not res.ok


def test_cpu_limit_below_wall_limit(sb):
    res = sb.run_sync("while True:\n    pass", limits=SandboxLimits(timeout_s=20, cpu_s=1))
    assert not res.timed_out and res.limit_hit == "cpu", res
    assert res.duration_s < 10


def test_memory_bomb_is_stopped_and_reported(sb):
    code = "chunks = []\nwhile True:\n    chunks.append(bytearray(50 * 1024 * 1024))"
    res = sb.run_sync(code, limits=SandboxLimits(timeout_s=20, memory_mb=300))
    assert res.exit_code == 1 and res.limit_hit == "memory", res
    assert "MemoryError" in res.stderr
    ok = sb.run_sync("x = bytearray(100 * 1024 * 1024); print(len(x))", limits=SandboxLimits(memory_mb=300))
    assert ok.exit_code == 0 and ok.stdout.strip() == str(100 * 1024 * 1024)


def test_fork_bomb_is_bounded_and_leaves_nothing(sb):
    sb.run_sync("pass")

    def processes() -> int:  # every host process under this sandbox's (idle) workers
        return sum(len(_tree(w.proc.pid)) for w in list(sb._pool._idle))

    before = processes()
    code = "import os\nwhile True:\n    os.fork()"
    res = sb.run_sync(code, limits=SandboxLimits(timeout_s=20, max_processes=16))
    assert res.limit_hit in ("processes", "timeout"), res
    assert res.duration_s < 15  # (as the worker measured it: the machine's load is not the sandbox's)
    assert processes() == before  # at once: the run is reaped when it returns
    after = sb.run_sync("import os; print(sorted(int(p) for p in os.listdir('/proc') if p.isdigit()))")
    assert after.stdout.strip() == "[1, 2]"  # the next run sees no survivor


def test_background_processes_do_not_outlive_the_run(sb):
    token = "physlab-leftover-91c2"
    code = f"""
import os, subprocess, sys
subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)", "{token}"], start_new_session=True)
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        os.execv(sys.executable, [sys.executable, "-c", "import time; time.sleep(120)", "{token}-daemon"])
    os._exit(0)
print("spawned")
"""
    res = sb.run_sync(code)
    assert res.exit_code == 0 and "spawned" in res.stdout
    assert pids_with(token) == []


def test_huge_print_is_truncated_without_parent_blowup(sb):
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    res = sb.run_sync("import sys\nfor _ in range(200):\n    sys.stdout.write('x' * 1_000_000)\nprint('done', file=sys.stderr)",
                      limits=SandboxLimits(max_output_bytes=10_000))
    after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    assert res.truncated and res.limit_hit == "output"
    assert len(res.stdout) == 10_000 and res.exit_code == 0
    assert "done" in res.stderr
    assert (after - before) < 100_000  # KiB: the 200 MB never reached this process


def test_file_size_limit(sb):
    res = sb.run_sync("open('big.bin', 'wb').write(b'0' * (3 * 1024 * 1024))",
                      limits=SandboxLimits(max_file_mb=1))
    assert res.exit_code != 0 and "File too large" in res.stderr


def test_files_in_and_out_with_caps(sb):
    res = sb.run_sync(
        "import json\n"
        "data = json.load(open('inputs/params.json'))\n"
        "open('result.txt', 'w').write(str(data['a'] + data['b']))\n"
        "import matplotlib.pyplot as plt\nplt.plot([0, 1], [0, 1])\nplt.savefig('plot.png')\n"
        "open('notes.log', 'w').write('not collected')\n",
        files={"inputs/params.json": b'{"a": 2, "b": 40}'},
        collect=["*.txt", "*.png"],
    )
    assert res.exit_code == 0, res.stderr
    assert res.files["result.txt"] == b"42"
    assert res.files["plot.png"].startswith(b"\x89PNG")
    assert "notes.log" not in res.files and not res.files_truncated

    capped = sb.run_sync("for i in range(3):\n    open(f'f{i}.dat', 'wb').write(b'x' * 800)",
                         collect=["*.dat"], limits=SandboxLimits(max_return_file_bytes=2000))
    assert capped.files_truncated and len(capped.files) == 2
    assert sum(len(v) for v in capped.files.values()) <= 2000


def test_collect_does_not_follow_symlinks_out_of_the_work_dir(sb):
    res = sb.run_sync("import os\nos.symlink('/etc/ld.so.cache', 'leak.txt')", collect=["*.txt"])
    assert res.exit_code == 0 and res.files == {}


def test_stdin_is_passed(sb):
    res = sb.run_sync("import sys\nprint(sys.stdin.read().upper())", stdin=b"hello")
    assert res.stdout.strip() == "HELLO"


@pytest.mark.parametrize("name", ["../escape.txt", "/etc/passwd", "", "in\x00put.txt", "inputs/", "a//b.txt",
                                  "./a.txt", "a/./b.txt", "."])
def test_bad_input_file_names_are_user_errors(sb, name):
    with pytest.raises(UserError):
        sb.run_sync("pass", files={name: b"x"})


@pytest.mark.parametrize("field", ["timeout_s", "cpu_s"])
@pytest.mark.parametrize("value", [float("inf"), float("nan")])
def test_limits_refuse_times_that_cannot_be_waited_for(field, value):
    from pydantic import ValidationError

    with pytest.raises(ValidationError):
        SandboxLimits(**{field: value})


@pytest.mark.parametrize("name", ["in\x00put.txt", "inputs/", "a//b.txt"])
def test_a_bad_input_name_that_reaches_the_worker_is_one_line_not_a_dead_supervisor(sb, name):
    """Past the front door's check (a caller building requests itself), the run's supervisor
    still refuses the name in one line and the worker keeps serving."""
    req = sb._request("print('ran')", SandboxLimits(), {"ok.txt": b"x"}, None, None)
    req["files"][name] = req["files"].pop("ok.txt")
    res = sb._result(sb._pool.run(req, 30), SandboxLimits())
    assert res.exit_code is None and "input file" in res.error and "ran" not in res.stdout, res
    assert len(res.error.splitlines()) == 1
    assert sb.run_sync("print(6*7)").stdout == "42\n"
