"""The weaker fallback: forced rlimit backend still scrubs the environment, uses a private work
dir, enforces limits and cleans up processes; auto falls back to it when bwrap is unusable."""

from __future__ import annotations

import json
import os

import pytest

from physlab.errors import UserError
from physlab.sandbox import Sandbox, SandboxLimits
from physlab.sandbox import launch

from .sb_helpers import wait_gone


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
        f"subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(120)', '{token}'], start_new_session=True)\n"
        f"subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(120)', '{token}-2'])\n")
    assert res.exit_code == 0, res.stderr
    assert wait_gone(token) == []


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
    monkeypatch.setattr(launch, "_warned", False)
    assert launch.resolve_backend("auto") == "rlimit"
    assert launch.resolve_backend("auto") == "rlimit"
    err = capsys.readouterr().err
    assert err.count("WEAKER") == 1
    with pytest.raises(UserError, match="bwrap"):
        launch.resolve_backend("bwrap")
