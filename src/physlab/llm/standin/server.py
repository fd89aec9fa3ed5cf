"""The project's OpenAI-compatible stand-in server (tests and benchmarks; 127.0.0.1 only).

Standard-library ``ThreadingHTTPServer`` on a random free port, in a background thread: one thread
per connection makes the concurrency it observes real, and raw socket access makes "dropped
connection" a true drop (an ASGI app cannot close the socket without answering).

    with StandinServer(ScriptedResponder([...]), latency_s=0.2) as srv:
        srv.inject("rate_limit", retry_after=1)     # next request gets 429 + Retry-After
        ... openai:standin --api-base srv.base_url ...
        srv.stats.prompt_tokens, srv.stats.completion_tokens, srv.stats.max_in_flight

Endpoints: POST /v1/chat/completions (tools, tool_calls, streaming SSE with a final usage chunk when
``stream_options.include_usage``), GET /v1/models.

Token counting: ceil(characters / 4) of every message's text, tool-call arguments and tool
definitions for the prompt, and of the reply's text and arguments for the completion. The server
adds to ``stats`` exactly what it reports in the usage blocks it sends.

Faults (``inject(kind, times=1, **opts)``), applied to the next requests in order:
rate_limit (429, ``retry_after`` s), server_error (500), slow (``delay_s``), length (reply cut,
finish_reason=length), malformed_tool_json, unknown_tool, empty_choices (``choices: []``),
drop (connection closed without an answer).
"""

from __future__ import annotations

import itertools
import json
import math
import socket
import threading
import time
from collections import Counter, deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from physlab.llm.standin.responders import EchoResponder, Reply, Responder, args_json, as_reply

FAULT_KINDS = ("rate_limit", "server_error", "slow", "length", "malformed_tool_json", "unknown_tool",
               "empty_choices", "drop")


def count_tokens(text: str) -> int:
    return math.ceil(len(text) / 4) if text else 0


def prompt_tokens(body: dict[str, Any]) -> int:
    n = 0
    for msg in body.get("messages", []):
        n += 4  # per-message overhead, like real chat templates
        c = msg.get("content")
        if isinstance(c, str):
            n += count_tokens(c)
        elif isinstance(c, list):
            for part in c:
                if isinstance(part, dict):
                    n += count_tokens(part.get("text", "")) if part.get("type") == "text" else 85
        for tc in msg.get("tool_calls") or []:
            n += count_tokens(tc.get("function", {}).get("name", "") + tc.get("function", {}).get("arguments", ""))
    if body.get("tools"):
        n += count_tokens(json.dumps(body["tools"]))
    return n


@dataclass
class Fault:
    kind: str
    opts: dict[str, Any] = field(default_factory=dict)


@dataclass
class StandinStats:
    requests: int = 0  # every POST /v1/chat/completions received
    answered: int = 0  # those that got a usage block (tokens counted)
    prompt_tokens: int = 0
    completion_tokens: int = 0
    in_flight: int = 0
    max_in_flight: int = 0
    faults: Counter = field(default_factory=Counter)
    handling_s: float = 0.0  # time spent inside the handler for answered requests (excl. latency)

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens


class StandinServer:
    def __init__(self, responder: Responder | None = None, *, latency_s: float = 0.0,
                 model_name: str = "standin", host: str = "127.0.0.1", port: int = 0) -> None:
        self.responder: Responder = responder or EchoResponder()
        self.latency_s = latency_s
        self.model_name = model_name
        self.host = host
        self._port = port
        self.stats = StandinStats()
        self.requests: list[dict[str, Any]] = []
        self._faults: deque[Fault] = deque()
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # ---- lifecycle -------------------------------------------------------------------------
    @property
    def port(self) -> int:
        assert self._httpd is not None, "server not started"
        return self._httpd.server_address[1]

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}/v1"

    def start(self) -> "StandinServer":
        server = self

        class Handler(_Handler):
            srv = server

        class Httpd(ThreadingHTTPServer):
            daemon_threads = True
            request_queue_size = 256
            allow_reuse_address = True

        self._httpd = Httpd((self.host, self._port), Handler)
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05},
                                        name="physlab-standin", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None

    def __enter__(self) -> "StandinServer":
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    # ---- control -----------------------------------------------------------------------------
    def inject(self, kind: str, times: int = 1, **opts: Any) -> None:
        if kind not in FAULT_KINDS:
            raise ValueError(f"unknown fault '{kind}' (known: {', '.join(FAULT_KINDS)})")
        with self._lock:
            for _ in range(times):
                self._faults.append(Fault(kind, opts))

    def _next_fault(self) -> Fault | None:
        with self._lock:
            return self._faults.popleft() if self._faults else None

    # ---- building replies ------------------------------------------------------------------
    def build(self, body: dict[str, Any], fault: Fault | None) -> tuple[dict[str, Any], Reply, int, int]:
        """The completion (non-streamed shape), the reply, and the tokens it reports."""
        kind = fault.kind if fault else None
        if kind == "empty_choices":  # nothing usable served: the responder is not consulted, no usage
            return ({"id": f"chatcmpl-{next(self._ids)}", "object": "chat.completion",
                     "created": int(time.time()), "model": body.get("model", self.model_name),
                     "choices": []}, Reply(), 0, 0)
        reply = as_reply(self.responder(body))
        content = reply.content
        calls = [(name, args_json(args)) for name, args in reply.tool_calls]
        finish = reply.finish_reason
        tools = [t["function"]["name"] for t in body.get("tools") or [] if t.get("type") == "function"]
        if kind == "malformed_tool_json":
            if calls:
                calls = [(n, a[: max(1, len(a) // 2)] + ',"oops') for n, a in calls]
            elif tools:
                calls = [(tools[0], '{"unterminated": ')]
        elif kind == "unknown_tool":
            calls = [(fault.opts.get("name", "no_such_tool"), "{}")]
        if finish is None:
            finish = "tool_calls" if calls else "stop"
        cap = body.get("max_completion_tokens") or body.get("max_tokens")
        full = count_tokens(content or "") + sum(count_tokens(n + a) for n, a in calls)
        if kind == "length" or (cap and full > cap):
            budget_chars = (cap * 4) if (cap and full > cap) else max(1, len(content or "") // 2)
            if content:
                content = content[:budget_chars]
            if calls:
                calls = [(n, a[: max(1, len(a) // 2)]) for n, a in calls]
            finish = "length"
        n_prompt = prompt_tokens(body)
        n_completion = count_tokens(content or "") + sum(count_tokens(n + a) for n, a in calls)
        message: dict[str, Any] = {"role": "assistant", "content": content}
        if calls:
            message["tool_calls"] = [
                {"id": f"call_{next(self._ids)}", "type": "function", "function": {"name": n, "arguments": a}}
                for n, a in calls]
        completion = {
            "id": f"chatcmpl-{next(self._ids)}", "object": "chat.completion", "created": int(time.time()),
            "model": body.get("model", self.model_name),
            "choices": [{"index": 0, "message": message, "finish_reason": finish, "logprobs": None}],
            "usage": {"prompt_tokens": n_prompt, "completion_tokens": n_completion,
                      "total_tokens": n_prompt + n_completion},
        }
        return completion, reply, n_prompt, n_completion


class _Handler(BaseHTTPRequestHandler):
    srv: StandinServer
    protocol_version = "HTTP/1.1"

    def setup(self) -> None:
        super().setup()
        # Headers and body go out in separate writes; without this, Nagle + delayed ACK add ~40 ms.
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        return

    def _json(self, status: int, payload: Any, headers: dict[str, str] | None = None) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        if self.path.rstrip("/") in ("/v1/models", "/models"):
            self._json(200, {"object": "list", "data": [
                {"id": self.srv.model_name, "object": "model", "created": 0, "owned_by": "physlab-standin"}]})
        else:
            self._json(404, {"error": {"message": f"no route {self.path}", "type": "not_found"}})

    def do_POST(self) -> None:
        if self.path.rstrip("/") not in ("/v1/chat/completions", "/chat/completions"):
            self._json(404, {"error": {"message": f"no route {self.path}", "type": "not_found"}})
            return
        length = int(self.headers.get("Content-Length") or 0)
        try:
            body = json.loads(self.rfile.read(length) or b"{}")
        except json.JSONDecodeError:
            self._json(400, {"error": {"message": "body is not JSON", "type": "invalid_request_error"}})
            return
        srv = self.srv
        with srv._lock:
            srv.stats.requests += 1
            srv.requests.append(body)
            srv.stats.in_flight += 1
            srv.stats.max_in_flight = max(srv.stats.max_in_flight, srv.stats.in_flight)
        try:
            self._serve(body)
        finally:
            with srv._lock:
                srv.stats.in_flight -= 1

    def _serve(self, body: dict[str, Any]) -> None:
        srv = self.srv
        fault = srv._next_fault()
        if fault:
            with srv._lock:
                srv.stats.faults[fault.kind] += 1
        delay = srv.latency_s + (float(fault.opts.get("delay_s", 2.0)) if fault and fault.kind == "slow" else 0)
        if delay:
            time.sleep(delay)
        t0 = time.perf_counter()
        if fault and fault.kind == "drop":
            self.close_connection = True
            try:
                self.connection.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            return
        if fault and fault.kind == "rate_limit":
            ra = float(fault.opts.get("retry_after", 1))
            # Retry-After is whole seconds (RFC 9110); retry-after-ms (as OpenAI sends it) is exact.
            self._json(429, {"error": {"message": "rate limited (stand-in)", "type": "rate_limit_error",
                                       "code": "rate_limit_exceeded"}},
                       headers={"Retry-After": str(math.ceil(ra)), "retry-after-ms": str(int(ra * 1000))})
            return
        if fault and fault.kind == "server_error":
            self._json(500, {"error": {"message": "internal error (stand-in)", "type": "server_error"}})
            return
        try:
            completion, reply, n_prompt, n_completion = srv.build(body, fault)
        except Exception as exc:  # responder failed (e.g. script exhausted): a clear 500
            self._json(500, {"error": {"message": f"stand-in responder failed: {exc}", "type": "server_error"}})
            return
        try:
            if body.get("stream"):
                include_usage = bool((body.get("stream_options") or {}).get("include_usage"))
                self._stream(completion, include_usage)
            else:
                self._json(200, completion)
        except (BrokenPipeError, ConnectionResetError):  # the client gave up (e.g. timed out)
            self.close_connection = True
            return
        with srv._lock:
            srv.stats.answered += 1 if "usage" in completion else 0
            srv.stats.prompt_tokens += n_prompt
            srv.stats.completion_tokens += n_completion
            srv.stats.handling_s += time.perf_counter() - t0

    def _stream(self, completion: dict[str, Any], include_usage: bool) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True
        base = {k: completion[k] for k in ("id", "created", "model")} | {"object": "chat.completion.chunk"}

        def send(obj: Any) -> None:
            self.wfile.write(b"data: " + (obj if isinstance(obj, bytes) else json.dumps(obj).encode()) + b"\n\n")
            self.wfile.flush()

        for choice in completion["choices"]:
            msg = choice["message"]
            send(base | {"choices": [{"index": 0, "delta": {"role": "assistant", "content": ""},
                                      "finish_reason": None}]})
            text = msg.get("content") or ""
            step = max(1, len(text) // 4 or 1)
            for i in range(0, len(text), step):
                send(base | {"choices": [{"index": 0, "delta": {"content": text[i:i + step]},
                                          "finish_reason": None}]})
            for j, tc in enumerate(msg.get("tool_calls") or []):
                send(base | {"choices": [{"index": 0, "delta": {"tool_calls": [
                    {"index": j, "id": tc["id"], "type": "function",
                     "function": {"name": tc["function"]["name"], "arguments": tc["function"]["arguments"]}}]},
                    "finish_reason": None}]})
            send(base | {"choices": [{"index": 0, "delta": {}, "finish_reason": choice["finish_reason"]}]})
        if include_usage and "usage" in completion:
            send(base | {"choices": [], "usage": completion["usage"]})
        send(b"[DONE]")
