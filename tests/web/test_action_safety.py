"""Dashboard actions attacked (issue 21): a symlinked or hard-linked inbox.jsonl never gets
written through, a Host named `testserver` is not a loopback name, and a resume posted twice
starts one process — the page says "resuming" before that process exists."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from fastapi.testclient import TestClient

from physlab.lab import inbox
from physlab.lab.state import transitions as T
from physlab.lab.workspace import RunWorkspace
from physlab.run.lock import LOCK_FD_ENV, lock_run
from physlab.web import create_app, runs as web_runs


@pytest.fixture
def client(runs_root):
    return TestClient(create_app(runs_root), base_url="http://127.0.0.1")


@pytest.mark.parametrize("link", ["symlink", "hardlink"])
def test_actions_never_write_through_a_linked_inbox(client, runs_root, tmp_path, link):
    target = tmp_path / "outside.jsonl"
    target.write_text("precious\n")
    made = runs_root / "lab1" / inbox.INBOX
    (made.symlink_to if link == "symlink" else made.hardlink_to)(target)
    r = client.post("/api/runs/lab1/actions", json={"kind": "hint", "text": "try the code distance"})
    assert r.status_code == 400 and "inbox" in r.json()["detail"], r.text
    assert target.read_text() == "precious\n"


def test_a_symlinked_run_directory_gets_no_inbox_line(tmp_path):
    real = tmp_path / "real"
    real.mkdir()
    (real / "state.json").write_text("{}")
    (tmp_path / "link").symlink_to(real)
    with pytest.raises(Exception, match="symbolic link"):
        inbox.post(tmp_path / "link", "pause")
    assert not (real / inbox.INBOX).exists()


def test_the_testserver_host_is_not_loopback(runs_root):
    c = TestClient(create_app(runs_root))  # its default Host is "testserver"
    assert c.get("/api/runs").status_code == 403
    assert c.get("/api/runs", headers={"host": "testserver:8765"}).status_code == 403
    assert c.get("/api/runs", headers={"host": "localhost:8765"}).status_code == 200


def _sleeper_resumer(started: list, shown_before_start: list):
    """Start a stand-in engine the way the dashboard's resumer does: the process inherits the run's
    lock, takes it as `physlab solve --resume` would, and waits until the test closes its stdin."""
    code = ("import sys\nfrom physlab.run.lock import lock_run\n"
            "lock = lock_run(sys.argv[1])\nprint('locked', flush=True)\nsys.stdin.read()\n")

    def resume(run, summary, problem, lock):
        shown_before_start.append(web_runs.summary("lab1", run, run.parent)["status"])
        proc = subprocess.Popen([sys.executable, "-c", code, str(run)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                pass_fds=(lock.fd,), env={**os.environ, LOCK_FD_ENV: str(lock.fd)}, text=True)
        lock.hand_over(proc.pid)
        started.append(proc)
        return f"resuming (pid {proc.pid})"

    return resume


def demo_problem(tmp_path) -> str:
    """The fixture run's problem as a file `physlab solve` takes (the page checks it before resuming)."""
    path = tmp_path / "demo.yaml"
    path.write_text("id: demo_problem\nproblem: Find $F(p)$.\n")
    return str(path)


def test_resume_posted_twice_starts_one_engine_and_shows_resuming(runs_root, tmp_path):
    problem = demo_problem(tmp_path)
    ws = RunWorkspace(runs_root / "lab1")
    ws.commit(T.set_status(ws.load(), "paused", "paused by the physicist"), "iteration 3: paused by the physicist")
    started: list[subprocess.Popen] = []
    shown_before_start: list[str] = []
    c = TestClient(create_app(runs_root, resumer=_sleeper_resumer(started, shown_before_start)),
                   base_url="http://127.0.0.1")
    try:
        first = c.post("/api/runs/lab1/actions", json={"kind": "resume", "problem": problem})
        assert first.status_code == 200 and "resuming" in first.json()["detail"], first.text
        assert shown_before_start == ["resuming"]  # the page said so before the process existed
        assert started[0].stdout.readline().strip() == "locked"  # the engine took the handed lock
        status = {r["id"]: r["status"] for r in c.get("/api/runs").json()}
        assert status["lab1"] == "resuming"
        second = c.post("/api/runs/lab1/actions", json={"kind": "resume", "problem": problem})
        assert second.status_code == 409 and str(started[0].pid) in second.json()["detail"], second.text
        assert len(started) == 1
        with pytest.raises(Exception, match="already running or resuming"):
            lock_run(runs_root / "lab1")
    finally:
        for proc in started:
            proc.stdin.close()
            proc.wait(30)
    status = {r["id"]: r["status"] for r in c.get("/api/runs").json()}
    assert status["lab1"] == "paused"
    lock_run(runs_root / "lab1").release()  # free again once its engine ended


def test_a_resumer_that_fails_leaves_the_run_resumable(runs_root, tmp_path):
    ws = RunWorkspace(runs_root / "lab1")
    ws.commit(T.set_status(ws.load(), "paused", "paused by the physicist"), "iteration 3: paused by the physicist")

    def broken(run, summary, problem, lock):
        raise OSError("no such interpreter")

    c = TestClient(create_app(runs_root, resumer=broken), base_url="http://127.0.0.1", raise_server_exceptions=False)
    assert c.post("/api/runs/lab1/actions", json={"kind": "resume", "problem": demo_problem(tmp_path)}).status_code == 500
    assert {r["id"]: r["status"] for r in c.get("/api/runs").json()}["lab1"] == "paused"
    lock_run(runs_root / "lab1").release()


def test_a_planted_lock_file_never_hangs_the_page_or_the_run(runs_root, tmp_path):
    os.mkfifo(runs_root / "lab1" / ".physlab.lock")
    c = TestClient(create_app(runs_root), base_url="http://127.0.0.1")
    assert {r["id"]: r["status"] for r in c.get("/api/runs").json()}["lab1"] == "interrupted"  # nobody holds it
    with pytest.raises(Exception, match="not a regular file"):
        lock_run(runs_root / "lab1")
