"""The bubblewrap boundary: no network, no caller environment, no home/cwd//work, read-only system."""

from __future__ import annotations

import json
import os
import socket
import sys
from pathlib import Path

from physlab.sandbox import Sandbox


def test_runs_python_with_the_scientific_stack(sb):
    res = sb.run_sync("import sympy as sp, numpy, scipy, mpmath\n"
                      "x = sp.symbols('x')\nprint(sp.integrate(sp.sin(x)**2, (x, 0, sp.pi)))")
    assert res.exit_code == 0, res.stderr
    assert res.stdout.strip() == "pi/2"
    assert res.backend == "bwrap" and res.isolated_run


def test_network_is_unreachable_even_loopback_services_of_the_host(sb):
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(5)
    port = server.getsockname()[1]
    code = f"""
import socket
s = socket.socket()
s.settimeout(2)
try:
    s.connect(("127.0.0.1", {port}))
    print("CONNECTED")
except OSError as e:
    print("BLOCKED", type(e).__name__)
try:
    socket.getaddrinfo("example.com", 80)
    print("DNS OK")
except OSError:
    print("NO DNS")
"""
    res = sb.run_sync(code)
    server.setblocking(False)
    try:
        accepted = [server.accept()]
    except BlockingIOError:
        accepted = []
    server.close()
    assert res.exit_code == 0, res.stderr
    assert "BLOCKED" in res.stdout and "CONNECTED" not in res.stdout
    assert "NO DNS" in res.stdout
    assert accepted == []


def test_environment_is_scrubbed(monkeypatch):
    monkeypatch.setenv("PHYSLAB_TEST_SECRET", "s3cr3t-value-42")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-should-not-leak")
    box = Sandbox("bwrap", workers=1)
    try:
        res = box.run_sync(
            "import os, json\n"
            "print(json.dumps(dict(os.environ)))\n"
            "for p in ('/proc/self/environ', '/proc/1/environ'):\n"
            "    try:\n        print(open(p, 'rb').read())\n    except OSError as e:\n        print('no', p)\n")
    finally:
        box.close()
    assert res.exit_code == 0, res.stderr
    assert "s3cr3t-value-42" not in res.stdout and "sk-test" not in res.stdout
    env = json.loads(res.stdout.splitlines()[0])
    assert "PHYSLAB_TEST_SECRET" not in env and "OPENAI_API_KEY" not in env
    assert env["HOME"] == os.getcwd() or env["HOME"].startswith("/tmp")
    assert env["MPLBACKEND"] == "Agg" and env["OMP_NUM_THREADS"] == "1"


def test_home_cwd_work_and_dotenv_are_invisible(sb, tmp_path, monkeypatch):
    dotenv = tmp_path / ".env"
    dotenv.write_text("OPENAI_API_KEY=sk-secret\n")
    monkeypatch.chdir(tmp_path)
    home = Path(os.path.expanduser("~"))
    python_roots = [Path(r) for r in __import__("physlab.sandbox.launch", fromlist=["x"]).python_roots()]
    # entries of the real home that are not on the way to the (read-only) Python installation
    private = [str(p) for p in sorted(home.iterdir())[:30]
               if not any(r == p or p in r.parents for r in python_roots)]
    probes = [str(dotenv), str(tmp_path), "/work", "/work/main", "/work/main/src", "/root/.bash_history",
              *private]
    code = ("import os, json\n"
            f"probes = {probes!r}\n"
            "print(json.dumps({p: os.path.exists(p) for p in probes}))\n"
            "print(os.getcwd())\n")
    res = sb.run_sync(code)
    assert res.exit_code == 0, res.stderr
    seen = json.loads(res.stdout.splitlines()[0])
    assert not any(seen.values()), {p: v for p, v in seen.items() if v}
    assert res.stdout.splitlines()[1] != str(tmp_path)


def test_system_and_python_are_read_only(sb):
    site = next(p for p in sys.path if p.endswith("site-packages"))
    code = f"""
import os
for target in ("/usr/physlab-probe", "/etc/physlab-probe", {site + '/physlab-probe'!r}, "/physlab-probe"):
    try:
        open(target, "w").write("x")
        print("WROTE", target)
    except OSError as e:
        print("DENIED", target)
open("ok.txt", "w").write("the work dir is writable")
print(open("ok.txt").read())
"""
    res = sb.run_sync(code)
    assert res.exit_code == 0, res.stderr
    assert "WROTE" not in res.stdout
    assert res.stdout.count("DENIED") == 4
    assert "the work dir is writable" in res.stdout
    assert not os.path.exists("/usr/physlab-probe") and not os.path.exists(site + "/physlab-probe")


def test_code_cannot_see_or_signal_its_worker(sb1):
    first = sb1.run_sync("print('warm')")
    assert first.exit_code == 0
    host_pid = sb1._pool._idle[0].proc.pid
    code = """
import os, signal
print(sorted(int(p) for p in os.listdir('/proc') if p.isdigit()), flush=True)
for pid in range(1, 200):
    if pid != os.getpid():
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
try:
    os.killpg(0, signal.SIGKILL)
except OSError:
    pass
print("still here")
"""
    res = sb1.run_sync(code)
    pids = eval(res.stdout.splitlines()[0])
    assert pids == [1, 2], pids  # only the run's own init and itself
    after = sb1.run_sync("print(6*7)")
    assert after.stdout.strip() == "42"
    assert sb1._pool._idle[0].proc.pid == host_pid  # same warm worker survived


def test_os_exit_and_signals_are_reported(sb):
    assert sb.run_sync("import os; os._exit(7)").exit_code == 7
    res = sb.run_sync("import os, signal; os.kill(os.getpid(), signal.SIGSEGV)")
    assert res.exit_code == -11 or res.exit_code == 139 or res.signal == 11
    res = sb.run_sync("raise SystemExit('bye')")
    assert res.exit_code == 1 and "bye" in res.stderr
    res = sb.run_sync("1/0")
    assert res.exit_code == 1 and "ZeroDivisionError" in res.stderr and "main.py" in res.stderr
