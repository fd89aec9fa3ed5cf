"""The weaker fallback: forced rlimit backend still scrubs the environment, uses a private work
dir, enforces limits and cleans up processes; auto falls back to it when bwrap is unusable."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from physlab.errors import UserError
from physlab.sandbox import Sandbox, SandboxLimits, launch

from .sb_helpers import pids_with


def test_rlimit_scrubs_env_and_uses_private_cwd(monkeypatch, tmp_path):
    monkeypatch.setenv("PHYSLAB_TEST_SECRET", "rl-secret-77")
    monkeypatch.chdir(tmp_path)
    box = Sandbox("rlimit", workers=1)
    try:
        res = box.run_sync("import os, json\nopen('here.txt', 'w').write('x')\n"
                           "print(json.dumps({'env': dict(os.environ), 'cwd': os.getcwd()}))")
    finally:
        box.close()
    assert res.backend == "rlimit" and res.exit_code == 0, res.stderr
    data = json.loads(res.stdout)
    assert "PHYSLAB_TEST_SECRET" not in data["env"] and "rl-secret-77" not in res.stdout
    assert data["cwd"] != str(tmp_path) and not (tmp_path / "here.txt").exists()
    assert not os.path.exists(data["cwd"])  # removed after the run


def test_rlimit_limits(rl):
    res = rl.run_sync("while True: pass", limits=SandboxLimits(timeout_s=1))
    assert res.timed_out
    res = rl.run_sync("x = bytearray(8 * 1024**3)", limits=SandboxLimits(memory_mb=256))
    assert res.limit_hit == "memory"
    res = rl.run_sync("print('y' * 100000)", limits=SandboxLimits(max_output_bytes=100))
    assert res.truncated and len(res.stdout) == 100
    res = rl.run_sync("open('f', 'wb').write(b'0' * 3_000_000)", limits=SandboxLimits(max_file_mb=1))
    assert res.exit_code != 0


def test_rlimit_kills_leftovers(rl):
    token = "physlab-rl-leftover-5d1"
    res = rl.run_sync(
        "import subprocess, sys\n"
        f"subprocess.Popen(['/bin/sh', '-c', 'sleep 120; :', '{token}'], start_new_session=True)\n"
        f"subprocess.Popen(['/bin/sh', '-c', 'sleep 120; :', '{token}-2'])\n")
    assert res.exit_code == 0, res.stderr
    assert pids_with(token) == []


def test_env_var_forces_backend_and_bad_value_is_user_error(monkeypatch):
    monkeypatch.setenv(launch.ENV_VAR, "rlimit")
    assert launch.resolve_backend("auto") == "rlimit"
    monkeypatch.setenv(launch.ENV_VAR, "chroot")
    with pytest.raises(UserError, match=launch.ENV_VAR):
        launch.resolve_backend("auto")
    with pytest.raises(UserError):
        launch.resolve_backend("docker")


def test_auto_falls_back_loudly_once_when_bwrap_is_unusable(monkeypatch, capsys):
    monkeypatch.delenv(launch.ENV_VAR, raising=False)
    monkeypatch.setattr(launch, "bwrap_works", lambda: (False, "bubblewrap is not installed"))
    monkeypatch.setattr(launch.os, "geteuid", lambda: 1000)
    monkeypatch.setattr(launch, "_warned", False)
    assert launch.resolve_backend("auto") == "rlimit"
    assert launch.resolve_backend("auto") == "rlimit"
    err = capsys.readouterr().err
    assert err.count("WEAKER") == 1
    with pytest.raises(UserError, match="bwrap"):
        launch.resolve_backend("bwrap")


# ---------------------------------------------------------------- the fallback, attacked (issue 21)

needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="the unprivileged-user tests need root")
SRC = str(Path(__file__).resolve().parents[2] / "src")


@pytest.mark.parametrize("euid", [0, 1000])
@pytest.mark.parametrize("namespaces", [True, False])
def test_the_warning_says_exactly_what_is_and_is_not_isolated(monkeypatch, capsys, euid, namespaces):
    monkeypatch.setenv(launch.ENV_VAR, "rlimit")
    monkeypatch.setattr(launch, "_warned", False)
    monkeypatch.setattr(launch.os, "geteuid", lambda: euid)
    monkeypatch.setattr(launch, "rlimit_namespaces", lambda: namespaces)
    assert launch.resolve_backend("auto") == "rlimit"
    err = capsys.readouterr().err
    assert err.count("\n") == 1  # one line
    isolated, _, not_isolated = err.partition("NOT isolated")
    assert "Isolated:" in isolated and "limits" in isolated and "environment" in isolated, err
    assert ("unprivileged uid" in isolated) == (euid == 0), err
    if namespaces:  # the run's own PID, IPC and network namespaces (tests/sandbox/test_rlimit_namespaces.py)
        assert "own PID, IPC and network namespaces" in isolated and "only its own processes" in isolated, err
        assert "reaches no network, not even services on this machine's loopback" in isolated, err
        assert "network" not in not_isolated and "process list" not in not_isolated, err
        # and a root of its own (tests/sandbox/test_rlimit_file_view.py)
        assert "its own root" in isolated and "no problem file" in isolated and "/sys" in isolated, err
        assert "files" not in not_isolated and "/tmp" not in not_isolated, err
    else:
        assert "files readable by all users" in not_isolated and "/tmp" in not_isolated, err
        assert ("your files" in not_isolated) == (euid != 0), err
        # as your user, RLIMIT_NPROC counts all of your processes (tests/sandbox/test_process_limit.py)
        assert ("all of your processes count against it" in not_isolated) == (euid != 0), err
        assert "the network (including services on this machine's loopback)" in not_isolated, err
        assert "the process list in /proc" in not_isolated and "process list" not in isolated, err
        assert ("environment (API keys)" in not_isolated) == (euid != 0), err
        assert "no network" not in err  # the old text read as if the network were blocked


def test_root_without_bubblewrap_is_refused_unless_the_user_says_so(monkeypatch, capsys):
    monkeypatch.delenv(launch.ENV_VAR, raising=False)
    monkeypatch.setattr(launch, "bwrap_works", lambda: (False, "bubblewrap is not installed"))
    monkeypatch.setattr(launch.os, "geteuid", lambda: 0)
    monkeypatch.setattr(launch, "_warned", False)
    with pytest.raises(UserError) as err:
        launch.resolve_backend("auto")
    msg = str(err.value)
    assert "\n" not in msg and "root" in msg and f"{launch.ENV_VAR}=rlimit" in msg, msg
    assert ("a root of its own" in msg if launch.rlimit_namespaces() else
            "files readable by all users are not isolated" in msg), msg
    monkeypatch.setenv(launch.ENV_VAR, "rlimit")  # said explicitly: allowed, with the warning
    assert launch.resolve_backend("auto") == "rlimit"
    monkeypatch.delenv(launch.ENV_VAR)
    assert launch.resolve_backend("rlimit") == "rlimit"  # --backend rlimit is explicit too


@pytest.mark.parametrize("platform, advice", [("darwin", "Linux"), ("linux", "apt-get install bubblewrap")])
def test_without_bubblewrap_the_user_is_told_what_to_install(monkeypatch, capsys, platform, advice):
    monkeypatch.delenv(launch.ENV_VAR, raising=False)
    monkeypatch.setattr(launch.shutil, "which", lambda name: None)
    monkeypatch.setattr(launch.os.path, "exists", lambda p: False)
    monkeypatch.setattr(launch.sys, "platform", platform)
    launch.bwrap_works.cache_clear()
    try:
        ok, why = launch.bwrap_works()
    finally:
        launch.bwrap_works.cache_clear()
    assert not ok and advice in why, why
    if platform == "darwin":
        assert "Lima" in why or "Docker" in why or "VM" in why, why


@needs_root
def test_rlimit_runs_code_as_an_unprivileged_user_that_can_still_import(rl):
    res = rl.run_sync(
        "import os, cmath, fractions, decimal, xml.dom.minidom, sympy.physics.units\n"
        "open('out.txt', 'w').write('ok')\n"
        "print(os.getuid(), os.geteuid(), os.getgid(), os.getegid(), os.getgroups())\n"
        "print(cmath.sqrt(-4))",
        collect=["out.txt"])
    assert res.exit_code == 0, res.stderr
    uid, euid, gid, egid, groups = res.stdout.splitlines()[0].split(" ", 4)
    assert "0" not in (uid, euid, gid, egid) and groups == "[]", res.stdout
    assert res.stdout.splitlines()[1] == "2j" and res.files == {"out.txt": b"ok"}


@needs_root
def test_rlimit_code_cannot_read_the_callers_api_key_or_its_proc_entries(tmp_path):
    """The caller (a physlab process with a key in its environment) runs the attack in the rlimit
    sandbox: every /proc/<pid>/environ, fd, cwd and mem it can open is reported."""
    secret = "sk-physlab-" + uuid.uuid4().hex
    attack = """
import os
mine = str(os.getpid())
for p in sorted(os.listdir('/proc')):
    if not p.isdigit() or p == mine:
        continue
    for what in ('environ', 'mem', 'maps'):
        try:
            with open(f'/proc/{p}/{what}', 'rb') as f:
                data = f.read(1 << 20)
            if data:  # another uid's maps opens, but reads empty
                print('READ', p, what, data.replace(b'\\0', b' ')[:4000])
        except OSError:
            pass
    for what in ('cwd', 'root', 'fd'):
        try:
            print('READ', p, what, os.listdir(f'/proc/{p}/{what}')[:3])
        except OSError:
            pass
"""
    (tmp_path / "attack.py").write_text(attack)
    caller = ("import sys\nfrom physlab.sandbox import Sandbox\n"
              "box = Sandbox('rlimit', workers=1)\n"
              "res = box.run_sync(open(sys.argv[1]).read())\n"
              "print(res.stdout, res.stderr, res.error)\n")
    env = {**os.environ, "OPENAI_API_KEY": secret, "PYTHONPATH": SRC, launch.ENV_VAR: "rlimit"}
    out = subprocess.run([sys.executable, "-c", caller, str(tmp_path / "attack.py")], env=env,
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert secret not in out.stdout and secret not in out.stderr
    assert "READ" not in out.stdout, out.stdout[:2000]


@needs_root
def test_rlimit_processes_are_limited_per_run(rl):
    res = rl.run_sync(
        "import os, time\nn = 0\n"
        "for _ in range(40):\n"
        "    try:\n        pid = os.fork()\n    except OSError:\n        break\n"
        "    if pid == 0:\n        time.sleep(60)\n        os._exit(0)\n"
        "    n += 1\n"
        "print(n)",
        limits=SandboxLimits(max_processes=8, timeout_s=30))
    assert res.exit_code == 0, res.stderr
    assert int(res.stdout) < 8


def test_rlimit_a_daemon_does_not_survive_by_killing_its_worker(rl):
    token = "physlab-rl-daemon-" + uuid.uuid4().hex[:8]
    code = f"""
import os, signal, subprocess, sys
subprocess.Popen(['/bin/sh', '-c', 'sleep 120; :', '{token}'], start_new_session=True)
chain, pid = [], os.getppid()
while pid > 1:  # the run's supervisors are forks of the worker: the worker is the topmost
    try:
        cmd = open(f'/proc/{{pid}}/cmdline', 'rb').read()
        ppid = int(open(f'/proc/{{pid}}/stat').read().rsplit(')', 1)[1].split()[1])
    except OSError:
        break
    if b'zygote' not in cmd:
        break
    chain.append(pid)
    pid = ppid
try:
    os.kill(chain[-1], signal.SIGKILL)
    print('killed the worker')
except OSError as e:
    print('cannot kill the worker', e.errno)
"""
    rl.run_sync(code)
    assert pids_with(token) == []
    assert rl.run_sync("print(6*7)").stdout == "42\n"


@pytest.fixture
def rl_without_namespaces(monkeypatch):
    """The rlimit sandbox on a host whose kernel refuses the runs their namespaces."""
    monkeypatch.setattr(launch, "rlimit_namespaces", lambda: False)
    box = Sandbox("rlimit", workers=1)
    yield box
    box.close()


def test_rlimit_runs_live_in_the_workers_cgroup_where_one_can_be_made(rl_without_namespaces):
    box = rl_without_namespaces
    box.warm(1)
    cgroup = box._pool._idle[0].hello.get("cgroup")
    if not cgroup:
        pytest.skip("no cgroup v2 this process may write to")
    res = box.run_sync("print(open('/proc/self/cgroup').read())")
    assert res.exit_code == 0, res.stderr
    assert os.path.basename(cgroup) in res.stdout


def test_without_namespaces_runs_go_on_as_the_warning_says(rl_without_namespaces):
    """Where the kernel refuses namespaces the run still runs, its processes are still killed, and
    what it sees is what the warning names: the process list (and the loopback)."""
    token = "physlab-rl-nons-" + uuid.uuid4().hex[:8]
    res = rl_without_namespaces.run_sync(
        "import os, subprocess\n"
        f"subprocess.Popen(['/bin/sh', '-c', 'sleep 120; :', '{token}'], start_new_session=True)\n"
        "print(len([p for p in os.listdir('/proc') if p.isdigit()]) > 3, os.getppid() > 1)")
    assert res.exit_code == 0 and not res.isolated_run, res.stderr
    assert res.stdout == "True True\n"
    assert pids_with(token) == []
    assert "the process list in /proc" in launch.fallback_warning()
