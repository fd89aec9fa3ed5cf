"""`physlab models check` against a local server as it is (issue #47): the stand-in playing
llama-cpp-python with a small model finds the server-constrained output mode and recommends it,
the output cap's field the server reads, its window, a dropped system message, tools only with
``tool_choice: "auto"``, one request at a time; every probe is capped and each finding is known as
soon as it is found. And hostile servers on 127.0.0.1 (issue #45 item 7): a body sent a byte at a
time, a stream without end, a 150 MB reply - the check ends, within its time, without reading
them whole."""

from __future__ import annotations

import json
import re
import socket
import socketserver
import threading
import time

import pytest

from physlab.cli import main
from physlab.llm.standin import Habits, ModelResponder, StandinServer

STATUS = re.compile(r"^(ok|warn|FAIL|skip) +([a-z ]+): (.*)$")


@pytest.fixture(autouse=True)
def _no_ambient_key(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("PHYSLAB_MODELS_CONFIG", raising=False)


def check(capsys, *args: str) -> tuple[int, dict[str, tuple[str, str]], str]:
    with pytest.raises(SystemExit) as exc:
        main(["models", "check", *args])
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    findings = {}
    for line in out.splitlines():
        if m := STATUS.match(line):
            assert m.group(2) not in findings, f"two lines for {m.group(2)}"
            findings[m.group(2)] = (m.group(1), m.group(3))
    return exc.value.code, findings, out + err


def test_llama_cpp_python_with_a_small_model_gets_the_constrained_mode(capsys, monkeypatch):
    monkeypatch.setenv("LOCAL_KEY", "sk-local")
    habits = Habits.llama_cpp_python(context_window=8192, api_key="sk-local")
    with StandinServer(ModelResponder(), habits=habits, latency_s=0.25) as srv:
        url = srv.base_url
        code, f, out = check(capsys, "openai:gemma", "--api-base", url, "--api-key-env", "LOCAL_KEY")
    assert code == 0, out
    assert f["tool calling"][0] == "warn" and 'tool_choice "auto"' in f["tool calling"][1]
    assert f["native output"][0] == "warn" and "Input should be 'text' or 'json_object'" in f["native output"][1]
    assert f["constrained output"][0] == "ok"
    assert f["prompted output"][0] == "warn"
    assert "--output-mode constrained" in f["output mode"][1]
    # the suggested command is the one that works: the key's variable and the mode included (issue #44 item 4)
    assert (f"lab run: can start (physlab solve PROBLEM --model openai:gemma --api-base {url} "
            "--api-key-env LOCAL_KEY --output-mode constrained)") in out
    status, text = f["output cap"]
    assert "as max_tokens, which it honours" in text and "it ignores max_completion_tokens" in text
    assert "8,192 tokens (discovered" in f["context window"][1]
    # the lab's first requests are counted by the server's own tokenizer, as sent in the mode found
    assert "counted by the server's tokenizer (llama-cpp-python), the requests as sent in constrained mode" \
        in f["lab prompts"][1]
    assert f["concurrency"][0] == "warn" and "slots: 1" in f["concurrency"][1]
    assert f["streaming"][0] == "warn" and "no usage" in f["streaming"][1]
    # every request of the check carried a cap the server honours, none ran to the end of the window
    assert all(b.get("max_tokens") or b.get("max_completion_tokens") for b in srv.requests)
    # (the streamed probes are closed at their first words: llama-cpp-python then stops generating)
    assert all(u["completion_tokens"] <= 256 for u in srv.usages)


def test_a_chat_format_that_drops_the_system_message_is_said(capsys):
    with StandinServer(ModelResponder(), habits=Habits.llama_cpp_python(chat_format="gemma")) as srv:
        code, f, out = check(capsys, "openai:gemma", "--api-base", srv.base_url)
    status, text = f["system message"]
    assert status == "warn" and "dropped" in text and "chat format" in text


def test_each_finding_is_known_as_soon_as_it_is_found():
    import asyncio

    from physlab.llm.preflight import check_model

    seen: list[tuple[str, int]] = []
    with StandinServer(ModelResponder()) as srv:
        asyncio.run(check_model("openai:gpt-4o", api_base=srv.base_url,
                                on_finding=lambda f: seen.append((f.check, srv.stats.requests))))
        total = srv.stats.requests
    assert seen[0][0] == "reachable" and seen[0][1] <= 2 < total  # said before the other probes went out


# ---- hostile servers (issue #45 item 7) ----------------------------------------------------------------

class _Hostile(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, behaviour):
        self.behaviour = behaviour
        self.stopping = threading.Event()
        self.sent = 0
        super().__init__(("127.0.0.1", 0), _HostileHandler)

    @property
    def base_url(self):
        return f"http://127.0.0.1:{self.server_address[1]}/v1"

    def __enter__(self):
        threading.Thread(target=self.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc):
        self.stopping.set()
        self.shutdown()
        self.server_close()


class _HostileHandler(socketserver.StreamRequestHandler):
    def handle(self):
        while not self.server.stopping.is_set():
            head = b""
            while b"\r\n\r\n" not in head:
                chunk = self.connection.recv(65536)
                if not chunk:
                    return
                head += chunk
            headers, _, body = head.partition(b"\r\n\r\n")
            length = int(re.search(rb"content-length: *(\d+)", headers, re.I).group(1))
            while len(body) < length:
                body += self.connection.recv(65536)
            try:
                self.server.behaviour(self, json.loads(body))
            except OSError:
                return

    def send(self, data: bytes) -> None:
        self.connection.sendall(data)
        self.server.sent += len(data)


def _slow_loris(h, body):
    h.send(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{")
    while not h.server.stopping.wait(0.2):
        h.send(b" ")  # each byte resets a read timeout


def _endless_stream(h, body):
    if not body.get("stream"):
        reply = {"id": "x", "object": "chat.completion", "created": 0, "model": "m", "choices": [
            {"index": 0, "message": {"role": "assistant", "content": "ready"}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 5, "completion_tokens": 1, "total_tokens": 6}}
        data = json.dumps(reply).encode()
        h.send(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n" % len(data) + data)
        return
    h.send(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n")
    event = {"id": "x", "object": "chat.completion.chunk", "created": 0, "model": "m",
             "choices": [{"index": 0, "delta": {"content": "ready "}, "finish_reason": None}]}
    while not h.server.stopping.wait(0.05):
        h.send(b"data: " + json.dumps(event).encode() + b"\n\n")


def _huge_reply(h, body):
    size = 150 * 1024 * 1024
    h.send(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n" % (size + 200))
    h.send(b'{"id": "x", "object": "chat.completion", "created": 0, "model": "m", "choices": [{"index": 0, '
           b'"finish_reason": "stop", "message": {"role": "assistant", "content": "')
    block = b"z" * (1 << 20)
    for _ in range(150):
        h.send(block)
    raise OSError("done")  # the rest is never sent: the client should have left long before


def _registry(tmp_path, timeout_s=5):
    reg = tmp_path / "models.yaml"
    reg.write_text(f'models:\n  "openai:*":\n    timeout_s: {timeout_s}\n')
    return str(reg)


@pytest.mark.slow
def test_a_body_sent_a_byte_at_a_time_ends_the_check_within_its_timeout(capsys, tmp_path):
    with _Hostile(_slow_loris) as srv:
        t0 = time.monotonic()
        code, f, out = check(capsys, "openai:x", "--api-base", srv.base_url, "--models-config", _registry(tmp_path))
        took = time.monotonic() - t0
    assert code == 1 and f["reachable"][0] == "FAIL" and "timed out" in f["reachable"][1], out
    assert took < 30  # two tries of 5 s each, then nothing else is sent


@pytest.mark.slow
def test_a_stream_without_end_is_cut_at_the_probe_timeout(capsys, tmp_path):
    with _Hostile(_endless_stream) as srv:
        t0 = time.monotonic()
        code, f, out = check(capsys, "openai:x", "--api-base", srv.base_url, "--models-config", _registry(tmp_path))
        took = time.monotonic() - t0
    assert f["reachable"][0] == "ok", out
    assert f["streaming"][0] == "warn"
    assert took < 60


def test_a_150_mb_reply_is_cut_not_read_whole(capsys, tmp_path):
    with _Hostile(_huge_reply) as srv:
        code, f, out = check(capsys, "openai:x", "--api-base", srv.base_url, "--models-config",
                             _registry(tmp_path, timeout_s=60))
        sent = srv.sent
    assert code == 1 and f["reachable"][0] == "FAIL" and "max_reply_bytes" in f["reachable"][1], out
    # the client left after a few MB; the server's writes then failed (a socket buffer holds a few MB more)
    assert sent < 40 * 1024 * 1024


def test_a_port_that_accepts_and_never_answers_is_bounded(capsys, tmp_path):
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen(16)  # accepts connections (the kernel's backlog) and never reads or answers
    try:
        t0 = time.monotonic()
        code, f, out = check(capsys, "openai:x", "--api-base", f"http://127.0.0.1:{s.getsockname()[1]}/v1",
                             "--models-config", _registry(tmp_path, timeout_s=2))
        took = time.monotonic() - t0
    finally:
        s.close()
    assert code == 1 and f["reachable"][0] == "FAIL" and took < 15, out


async def test_a_run_refused_tools_advises_the_mode_the_check_recommends():
    """Issue #44 item 4: the check recommended native where solve's hint said prompted; one source of
    advice now, so the first mode a failed run names is the one the check picks for that server."""
    import re as _re

    from pydantic import BaseModel
    from pydantic_ai import Agent

    from physlab.llm.errors import ModelFailure
    from physlab.llm.meter import RunMeter
    from physlab.llm.models import RunModels
    from physlab.llm.output import structured_output
    from physlab.llm.preflight import check_model

    class Answer(BaseModel):
        value: int

    with StandinServer(ModelResponder(), habits=Habits(refuse_tools=True)) as srv:
        report = await check_model("openai:qwen3-32b", api_base=srv.base_url)
        models = RunModels("openai:qwen3-32b", meter=RunMeter(), api_base=srv.base_url)
        model = models.for_role("solver")
        with pytest.raises(ModelFailure) as exc:
            await Agent(model, output_type=structured_output(model, Answer)).run("go")
        await models.aclose()
    first = _re.search(r"--output-mode (\w+)", str(exc.value)).group(1)
    assert report.output_mode == "native" and first == report.output_mode
