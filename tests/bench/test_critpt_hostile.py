"""The CritPt export and submission against what a hostile results database, a hostile grading
server or a careless URL would do: no file outside --dir, a newer schema refused (not used with its
cells dropped), a locked or full database said to be so, the API key nowhere it could be printed or
stored, no credentials in a stored URL, no key sent unencrypted to another host."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from physlab.bench.critpt_export import build_batches
from physlab.bench.critpt_submit import GradingFailed, submit
from physlab.bench.store import SCHEMA_VERSION, ResultsStore
from physlab.errors import UserError

from .critpt_fixtures import cli, sweep, write_public_challenges

KEY = "sk-critpt-e6d0c1a9f3b24e7c"
SRC = str(Path(__file__).resolve().parents[2] / "src")


@pytest.fixture(scope="module")
def swept(tmp_path_factory) -> Path:
    """A results database holding one finished sweep of the 70 public challenges."""
    d = tmp_path_factory.mktemp("swept")
    db = d / "r.sqlite"
    asyncio.run(sweep(write_public_challenges(d / "c"), db))
    return db


@pytest.fixture
def db(swept, tmp_path) -> Path:
    path = tmp_path / "r.sqlite"
    con = sqlite3.connect(swept)
    con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    con.close()
    shutil.copy(swept, path)
    return path


@pytest.fixture(autouse=True)
def _key(monkeypatch):
    monkeypatch.setenv("CRITPT_KEY", KEY)


def one_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


# ---------------------------------------------------------------- the database


def test_a_problem_id_holding_dotdot_writes_nothing_outside_dir(db, tmp_path, capsys):
    con = sqlite3.connect(db)
    con.execute("UPDATE cells SET problem_id='../../escaped' WHERE problem_id='Challenge_3_main'")
    con.commit()
    con.close()
    out_dir = tmp_path / "a" / "b" / "export"
    code, _, err = cli(capsys, "export-critpt", "--db", str(db), "--dir", str(out_dir), "--allow-partial")
    assert code == 2 and "Traceback" not in err
    (line,) = [x for x in err.splitlines() if x.startswith("error:")]  # (after the warning --allow-partial gives)
    assert "../../escaped" in line and "--dir" in line and "nothing written" in line, line
    assert not list(tmp_path.rglob("escaped*")) and not any(out_dir.rglob("*.json"))


def test_a_database_of_a_newer_schema_is_refused_naming_both_versions(db, tmp_path, capsys):
    con = sqlite3.connect(db)
    con.execute("UPDATE meta SET value=? WHERE key='schema_version'", (str(SCHEMA_VERSION + 1),))
    con.commit()
    con.close()
    for argv in (["export-critpt", "--db", str(db), "--out", str(tmp_path / "b.json")],
                 ["report", "--db", str(db)],
                 ["run", "examples", "--strategies", "oneshot", "--models", "scripted:oneshot-qec-correct", "--db", str(db)]):
        code, _, err = cli(capsys, *argv)
        assert code == 2, (argv, err)
        line = one_line(err)
        assert f"schema {SCHEMA_VERSION + 1}" in line and f"up to {SCHEMA_VERSION}" in line, line
        assert "newer PhysLab" in line
    con = sqlite3.connect(db)
    assert con.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()[0] == str(SCHEMA_VERSION + 1)
    con.close()


def test_a_locked_database_is_said_to_be_locked(db):
    holder = sqlite3.connect(db, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    try:
        with pytest.raises(UserError) as exc:
            ResultsStore(db, busy_timeout_s=0.2, create=False)
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert "locked" in str(exc.value) and "not a PhysLab results database" not in str(exc.value), exc.value


FULL = """
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
# a disk with 64 KB free: a tmpfs of that size, in a mount namespace of this process's own
if libc.unshare(0x00020000) != 0 or libc.mount(b"none", b"/", None, (1 << 18) | 0x4000, None) != 0 \\
        or libc.mount(b"tmpfs", sys.argv[1].encode(), b"tmpfs", 0, b"size=64k") != 0:
    print("SKIP", os.strerror(ctypes.get_errno()))
    sys.exit(0)
from physlab.bench.store import ResultsStore
from physlab.errors import UserError
try:
    ResultsStore(os.path.join(sys.argv[1], "r.sqlite"))
    print("opened")
except UserError as exc:
    print(exc)
"""


def test_a_full_disk_is_said_to_be_full(tmp_path):
    disk = tmp_path / "small-disk"
    disk.mkdir()
    out = subprocess.run([sys.executable, "-c", FULL, str(disk)], capture_output=True, text=True,
                         env={**os.environ, "PYTHONPATH": SRC}, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    if out.stdout.startswith("SKIP"):
        pytest.skip(f"cannot mount a small disk here ({out.stdout.strip()})")
    assert "disk" in out.stdout and "is full" in out.stdout, out.stdout
    assert "not a PhysLab results database" not in out.stdout, out.stdout


def test_a_file_that_is_not_a_database_is_still_called_so(tmp_path):
    junk = tmp_path / "notes.sqlite"
    junk.write_bytes(b"these are my notes, not a database" * 200)
    with pytest.raises(UserError) as exc:
        ResultsStore(junk, create=False)
    assert "not a PhysLab results database" in str(exc.value)


# ---------------------------------------------------------------- the grading server


class EchoingServer:
    """A grading server that puts the key it was sent into what it answers: its error message, a
    stream's error event, or the payload of a grade (with per-challenge details)."""

    def __init__(self, mode: str):
        self.mode = mode
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args) -> None:
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
                key = self.headers.get("x-api-key")
                if server.mode == "refused":
                    status, reply = 401, {"error": f"Invalid API key: {key}"}
                elif server.mode == "bad request":
                    status, reply = 400, {"detail": {"message": "bad batch", "echo": {"x-api-key": key}}}
                elif server.mode in ("stream error", "progress"):
                    status, reply = 200, None
                elif server.mode == "no accuracy":
                    status, reply = 200, {"accuracy": key}
                else:
                    status, reply = 200, {"accuracy": 0.5, "timeout_rate": 0.0, "server_timeout_count": 0,
                                          "judge_error_count": 0, "account": {key: "ok", "key": key},
                                          "results": [{"problem_id": s["problem_id"], "score": 1.0, "note": key}
                                                      for s in body["submissions"]]}
                if reply is None:
                    events = ([{"type": "progress", "completed": key, "total": 70}] if server.mode == "progress"
                              else [{"type": "error", "message": f"key {key} over quota"}])
                    raw = "".join(json.dumps(e) + "\n" for e in events).encode()
                    ctype = "application/x-ndjson"
                else:
                    raw, ctype = json.dumps(reply).encode(), "application/json"
                self.send_response(status)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/api/v2/critpt/evaluate"

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._server.shutdown()
        self._server.server_close()


def everything_stored(db: Path) -> str:
    con = sqlite3.connect(db)
    try:
        return "\n".join(con.iterdump())
    finally:
        con.close()


@pytest.mark.parametrize("mode", ["refused", "bad request", "stream error", "no accuracy", "graded"])
def test_a_server_that_echoes_the_key_gets_it_neither_printed_nor_stored(db, capsys, mode):
    with EchoingServer(mode) as srv:
        code, out, err = cli(capsys, "submit-critpt", "--db", str(db), "--api-key-env", "CRITPT_KEY",
                             "--url", srv.url, "--no-progress")
    assert code == (0 if mode == "graded" else 1), err
    assert KEY not in out and KEY not in err, (out, err)
    stored = everything_stored(db)
    assert "critpt_submissions" in stored and KEY not in stored
    assert "[redacted]" in stored  # what it said is kept, without the key
    if mode != "graded":
        assert "[redacted]" in err


def test_a_progress_event_carrying_the_key_is_not_read_as_a_count(db):
    """(The progress bar only shows on a terminal, so this goes through submit() itself.)"""
    store = ResultsStore(db, create=False)
    try:
        (batch,) = build_batches(store)
        seen: list[tuple[int, int]] = []
        with EchoingServer("progress") as srv, pytest.raises(GradingFailed) as exc:
            submit(store, batch, url=srv.url, api_key=KEY, timeout_s=30, progress=lambda c, t: seen.append((c, t)))
    finally:
        store.close()
    assert KEY not in str(exc.value) and seen == [(0, 70)]
    assert KEY not in everything_stored(db)


def test_a_url_with_a_user_name_and_password_is_refused(db, capsys):
    code, _, err = cli(capsys, "submit-critpt", "--db", str(db), "--api-key-env", "CRITPT_KEY",
                       "--url", "https://me:hunter2@grader.example.org/api/v2/critpt/evaluate", "--dry-run")
    assert code == 2
    line = one_line(err)
    assert "--url" in line and "password" in line and "hunter2" not in line, line
    assert "hunter2" not in everything_stored(db)


@pytest.mark.parametrize("url, ok", [
    ("http://grader.example.org/api/v2/critpt/evaluate", False),
    ("http://10.0.0.7:8000/evaluate", False),
    ("http://127.0.0.1:8000/evaluate", True),
    ("http://localhost:8000/evaluate", True),
    ("http://[::1]:8000/evaluate", True),
    ("https://grader.example.org/api/v2/critpt/evaluate", True),
])
def test_plain_http_to_another_host_needs_an_explicit_flag(db, capsys, url, ok):
    argv = ["submit-critpt", "--db", str(db), "--api-key-env", "CRITPT_KEY", "--url", url, "--dry-run"]
    code, out, err = cli(capsys, *argv)
    if ok:
        assert code == 0 and "would send repeat 0" in out, err
        return
    assert code == 2
    line = one_line(err)
    assert "--url" in line and "https" in line and "--allow-http" in line, line
    code, out, err = cli(capsys, *argv, "--allow-http")
    assert code == 0 and "would send repeat 0" in out, err
