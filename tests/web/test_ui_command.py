"""`physlab ui` as a newcomer starts it: in a folder with no runs/ yet (it starts, and lists runs
once they appear) and with a sweep's results.sqlite beside where runs/ would be (found without --db)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from physlab.web.server import free_port
from tests.web.helpers import build_lab_run, build_results_db

REPO = Path(__file__).resolve().parents[2]


def start_ui(cwd: Path, *args: str) -> tuple[subprocess.Popen, str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO / "src"), str(REPO)])}
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "physlab", "ui", "--port", str(port), *args], cwd=cwd, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True)
    said = []
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        said.append(line)
        if line.startswith("PhysLab dashboard on"):
            return proc, "".join(said)
    proc.kill()
    raise AssertionError(f"`physlab ui` did not start: {''.join(said)} {proc.stderr.read()}")


def get(url: str) -> str:
    with urllib.request.urlopen(url, timeout=30) as r:
        return r.read().decode()


def test_ui_starts_without_a_runs_folder_and_finds_the_results_database_beside_it(tmp_path):
    build_results_db(tmp_path / "results.sqlite")
    proc, said = start_ui(tmp_path)
    try:
        url = said.split("PhysLab dashboard on ", 1)[1].split()[0]
        assert "results.sqlite" in said and "no runs yet" in said
        assert "No runs" in get(url)
        sweeps = get(url + "sweeps")
        assert 'id="summary-table"' in sweeps and "results.sqlite" in sweeps
        build_lab_run(tmp_path / "runs" / "first")                 # the first run appears once made
        assert 'href="/runs/first"' in get(url)
    finally:
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=30)


def test_a_runs_path_that_is_a_file_is_still_one_line(tmp_path):
    (tmp_path / "runs").write_text("not a folder")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO / "src"), str(REPO)])}
    p = subprocess.run([sys.executable, "-m", "physlab", "ui", "--port", str(free_port())], cwd=tmp_path, env=env,
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 2 and p.stderr.count("\n") == 1 and "--runs" in p.stderr
