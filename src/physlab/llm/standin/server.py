"""The project's OpenAI-compatible stand-in server (tests and benchmarks; 127.0.0.1 only).

One event loop in a background thread on a random free port (``physlab.llm.standin.aio``): the
simulated latency is a timer per request, so the concurrency it observes is real, and it owns its
sockets, so "dropped connection" is a true drop (an ASGI app cannot close the socket without
answering). It replaced a thread-per-connection server that cost ~2.5x the CPU per request.

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
import threading
import time
from collections import Counter, deque
from dataclasses import dataclass, field
from typing import Any

from physlab.llm.standin.aio import LoopFrontend
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
class Answer:
    """What a request gets: ``drop`` (the connection closed, nothing sent), ``json`` (``payload``
    as a JSON body) or ``stream`` (``payload``: the SSE events, then the connection closes)."""

    kind: str
    status: int = 200
    payload: Any = None
    headers: dict[str, str] = field(default_factory=dict)
    counted: tuple[int, int, int] | None = None  # (answered, prompt, completion) tokens to count once sent


def sse_events(completion: dict[str, Any], include_usage: bool) -> list[bytes]:
    """A chat completion as the server-sent events of a streamed one (usage last, on request)."""
    base = {k: completion[k] for k in ("id", "created", "model")} | {"object": "chat.completion.chunk"}
    out: list[bytes] = []

    def send(obj: Any) -> None:
        out.append(b"data: " + (obj if isinstance(obj, bytes) else json.dumps(obj).encode()) + b"\n\n")

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
    return out


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
        self._frontend: LoopFrontend | None = None

    # ---- lifecycle -------------------------------------------------------------------------
    @property
    def port(self) -> int:
        assert self._frontend is not None, "server not started"
        return self._frontend.server_address[1]

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}/v1"

    @property
    def open_connections(self) -> int:
        """Client connections the server holds open right now."""
        return len(self._frontend._connections) if self._frontend is not None else 0

    def start(self) -> "StandinServer":
        self._frontend = LoopFrontend(self, self.host, self._port)
        return self

    def stop(self) -> None:
        if self._frontend is not None:
            self._frontend.stop()
            self._frontend = None

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

    # ---- answering (the front-end, physlab.llm.standin.aio, sends it) ---------------------------
    def admit(self, body: dict[str, Any]) -> tuple[Fault | None, float]:
        """Count a received request; the fault it gets and the delay before its answer."""
        fault = self._next_fault()
        with self._lock:
            self.stats.requests += 1
            self.requests.append(body)
            self.stats.in_flight += 1
            self.stats.max_in_flight = max(self.stats.max_in_flight, self.stats.in_flight)
            if fault:
                self.stats.faults[fault.kind] += 1
        delay = self.latency_s + (float(fault.opts.get("delay_s", 2.0)) if fault and fault.kind == "slow" else 0)
        return fault, delay

    def answer(self, body: dict[str, Any], fault: Fault | None) -> "Answer":
        """What to send back for ``body`` (after its delay)."""
        if fault and fault.kind == "drop":
            return Answer("drop")
        if fault and fault.kind == "rate_limit":
            ra = float(fault.opts.get("retry_after", 1))
            # Retry-After is whole seconds (RFC 9110); retry-after-ms (as OpenAI sends it) is exact.
            return Answer("json", 429, {"error": {"message": "rate limited (stand-in)", "type": "rate_limit_error",
                                                  "code": "rate_limit_exceeded"}},
                          {"Retry-After": str(math.ceil(ra)), "retry-after-ms": str(int(ra * 1000))})
        if fault and fault.kind == "server_error":
            return Answer("json", 500, {"error": {"message": "internal error (stand-in)", "type": "server_error"}})
        try:
            completion, _, n_prompt, n_completion = self.build(body, fault)
        except Exception as exc:  # responder failed (e.g. script exhausted): a clear 500
            return Answer("json", 500, {"error": {"message": f"stand-in responder failed: {exc}",
                                                  "type": "server_error"}})
        counted = (1 if "usage" in completion else 0, n_prompt, n_completion)
        if body.get("stream"):
            include_usage = bool((body.get("stream_options") or {}).get("include_usage"))
            return Answer("stream", 200, sse_events(completion, include_usage), counted=counted)
        return Answer("json", 200, completion, counted=counted)

    def answered(self, answer: "Answer", handling_s: float) -> None:
        """An answer went out: add the tokens it reported."""
        if answer.counted is None:
            return
        answered, n_prompt, n_completion = answer.counted
        with self._lock:
            self.stats.answered += answered
            self.stats.prompt_tokens += n_prompt
            self.stats.completion_tokens += n_completion
            self.stats.handling_s += handling_s

    def done(self) -> None:
        """A request admitted by :meth:`admit` is over (answered, dropped, or its client left)."""
        with self._lock:
            self.stats.in_flight -= 1

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
