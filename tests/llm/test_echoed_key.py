"""A key a server echoes is neither printed nor kept. A careless proxy answers 401 with "Incorrect API
key provided: <the key>" (and passes on an upstream's token in its message): the solve console, LOG.md,
calls.jsonl, metrics.json, state.json and the run's git history, and `models check`, show
"[redacted]" where the key and any token-shaped string were."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
KEY_ENV, KEY = "MY_PROXY_KEY", "proxy-Kq7Zr2Wm9Xv4Lp8Nt3Bd"   # not token-shaped: only known as the key in use
UPSTREAM = "sk-ant-api03-UpstreamSecretTokenAbcdefghijklmnop0123"   # token-shaped: some other key it leaks


class CarelessProxy:
    """401 to everything, echoing the bearer token it was sent and an upstream's key."""

    def __init__(self) -> None:
        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args) -> None:
                pass

            def _refuse(self) -> None:
                sent = self.headers.get("Authorization", "").removeprefix("Bearer ")
                body = json.dumps({"error": {"message": f"Incorrect API key provided: {sent}. Upstream said: "
                                                        f"invalid x-api-key {UPSTREAM} (Bearer {sent})",
                                             "type": "invalid_request_error", "code": "invalid_api_key"}}).encode()
                self.send_response(401)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                self._refuse()

            do_GET = _refuse

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def __enter__(self) -> CarelessProxy:
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def physlab(*args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, KEY_ENV: KEY, "PYTHONPATH": os.pathsep.join([str(REPO / "src"), str(REPO)])}
    return subprocess.run([sys.executable, "-m", "physlab", *args], capture_output=True, text=True, env=env,
                          timeout=300, stdin=subprocess.DEVNULL)


def everything_kept(ws: Path) -> dict[str, str]:
    """Every file of the run, and every version of every file in its git history."""
    out = {str(p.relative_to(ws)): p.read_text(errors="replace") for p in ws.rglob("*")
           if p.is_file() and ".git" not in p.parts}
    if (ws / ".git").exists():
        out["git history"] = subprocess.run(["git", "-C", str(ws), "log", "--all", "-p", "--format=%B"],
                                            capture_output=True, text=True).stdout
    return out


@pytest.mark.slow
def test_a_key_the_server_echoes_is_redacted_everywhere_the_run_keeps_or_prints_it(tmp_path):
    ws = tmp_path / "run"
    with CarelessProxy() as proxy:
        done = physlab("solve", "examples/quantum_error_correction_main", "--model", "openai:gpt-4o", "--api-base",
                       proxy.base_url, "--api-key-env", KEY_ENV, "--workspace", str(ws), "--console", "lines")
    assert done.returncode == 1
    kept = {"console": done.stdout + done.stderr, **everything_kept(ws)}
    assert {"calls.jsonl", "metrics.json", "state.json", "LOG.md", "git history"} <= set(kept)
    for where, text in kept.items():
        assert KEY not in text and UPSTREAM not in text, where
    assert "Incorrect API key provided: [redacted]" in kept["calls.jsonl"]
    assert "[redacted]" in kept["console"] and "[redacted]" in kept["metrics.json"]


@pytest.mark.slow
def test_models_check_redacts_what_the_server_echoes():
    with CarelessProxy() as proxy:
        done = physlab("models", "check", "openai:gpt-4o", "--api-base", proxy.base_url,
                       "--api-key-env", KEY_ENV)
    said = done.stdout + done.stderr
    assert "Incorrect API key provided" in said or "[redacted]" in said, said
    assert KEY not in said and UPSTREAM not in said
