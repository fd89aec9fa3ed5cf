"""The command line's last resort (issue 21): a full disk is one line naming the file it hit,
damaged run files are one line naming the file, and a bug is one line saying where its traceback
went — never a traceback, never two."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
import typer

from physlab import cli
from physlab.lab import show

SRC = str(Path(__file__).resolve().parents[1] / "src")
PROBLEM = "examples/quantum_error_correction_main"


def physlab(*args: str, **kw) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": SRC}
    env.pop(cli.DEBUG_ENV, None)
    return subprocess.run([sys.executable, "-m", "physlab", *args], capture_output=True, text=True, env=env,
                          timeout=300, **kw)


def one_line_error(out: subprocess.CompletedProcess) -> str:
    assert "Traceback" not in out.stderr and "During handling" not in out.stderr, out.stderr[-3000:]
    lines = [line for line in out.stderr.splitlines() if line.startswith("error:")]
    assert len(lines) == 1, out.stderr
    return lines[0]


@pytest.fixture(scope="module")
def finished_run(tmp_path_factory):
    ws = tmp_path_factory.mktemp("runs") / "oneshot"
    out = physlab("solve", PROBLEM, "--strategy", "oneshot", "--model", "scripted:oneshot-qec-correct",
                  "--workspace", str(ws))
    assert out.returncode == 0, out.stderr
    return ws


def test_a_damaged_calls_line_is_one_line_naming_the_file(finished_run, tmp_path):
    ws = tmp_path / "run"
    shutil.copytree(finished_run, ws)
    with open(ws / "calls.jsonl", "a") as fh:
        fh.write('{"role": 5}\n')
    out = physlab("runs", "show", str(ws))
    assert out.returncode == 2
    line = one_line_error(out)
    assert str(ws / "calls.jsonl") in line and "line 2" in line, line


def test_a_damaged_metrics_file_is_one_line_naming_the_file(finished_run, tmp_path):
    ws = tmp_path / "run"
    shutil.copytree(finished_run, ws)
    (ws / "metrics.json").write_text(json.dumps({"verdict": "correct"}))
    out = physlab("runs", "show", str(ws))
    assert out.returncode == 2
    line = one_line_error(out)
    assert str(ws / "metrics.json") in line and "verdict" in line, line


@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("unshare"), reason="mounts a small tmpfs (root)")
def test_a_full_disk_is_one_line_naming_the_file(tmp_path):
    disk = tmp_path / "disk"
    disk.mkdir()
    script = (f"mount -t tmpfs -o size=96k tmpfs {disk} && exec {sys.executable} -m physlab solve {PROBLEM} "
              f"--strategy lab --model scripted:lab-qec --workspace {disk}/run")
    env = {**os.environ, "PYTHONPATH": SRC}
    env.pop(cli.DEBUG_ENV, None)
    out = subprocess.run(["unshare", "-m", "--propagation", "private", "sh", "-c", script], cwd=tmp_path,
                         capture_output=True, text=True, env=env, timeout=300)
    assert out.returncode == 1
    line = one_line_error(out)
    assert "no space left on device" in line and f"{disk}/run/" in line, line


def test_a_bug_is_one_line_with_its_traceback_kept(monkeypatch, capsys, tmp_path):
    def broken(root):
        raise TypeError("'<' not supported between instances of 'int' and 'str'")

    monkeypatch.setattr(show, "plain_summary", broken)
    monkeypatch.delenv(cli.DEBUG_ENV, raising=False)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    with pytest.raises(SystemExit) as ex:
        cli.main(["runs", "show", str(tmp_path)])
    assert ex.value.code == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    assert err.startswith("error: unexpected TypeError: '<' not supported")
    saved = next(tmp_path.glob("physlab-crash-*.txt"))
    assert str(saved) in err and "Traceback" in saved.read_text()


def test_abort_is_one_line(monkeypatch, capsys, tmp_path):
    def aborted(root):
        raise typer.Abort()

    monkeypatch.setattr(show, "plain_summary", aborted)
    with pytest.raises(SystemExit) as ex:
        cli.main(["runs", "show", str(tmp_path)])
    assert ex.value.code == 1 and capsys.readouterr().err == "aborted\n"
