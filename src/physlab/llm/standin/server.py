"""The project's OpenAI-compatible stand-in server (tests and benchmarks; 127.0.0.1 only).

The standard library's threading HTTP server on a random free port: a thread per connection, so
the concurrency it observes is real (the simulated latency is that thread waiting), and it owns its
sockets, so "dropped connection" is a true drop (an ASGI app cannot close the socket without
answering).

    with StandinServer(ScriptedResponder([...]), latency_s=0.2) as srv:
        srv.inject("rate_limit", retry_after=1)     # next request gets 429 + Retry-After
        ... openai:standin --api-base srv.base_url ...
        srv.stats.prompt_tokens, srv.stats.completion_tokens, srv.stats.max_in_flight

``latency_s`` is seconds, or a callable ``(request_body) -> seconds`` drawn per request (a
benchmark's latency distribution); ``srv.served`` maps each completion's id to when its request
arrived and the latency it was given.

Endpoints: POST /v1/chat/completions (tools, tool_calls, streaming SSE with a final usage chunk when
``stream_options.include_usage``), GET /v1/models. Keep-alive and pipelined requests are served in
order on one connection; errors are JSON with a message.

Token counting: ceil(characters / 4) of every message's text, tool-call arguments and tool
definitions for the prompt, and of the reply's text and arguments for the completion. The server
adds to ``stats`` exactly what it reports in the usage blocks it sends.

Faults (``inject(kind, times=1, **opts)``), applied to the next requests in order:
rate_limit (429, ``retry_after`` s; ``style="proxy"`` sends only LiteLLM's
``llm_provider-retry-after(-ms)``), server_error (500), slow (``delay_s``), length (reply cut,
finish_reason=length), malformed_tool_json, unknown_tool, empty_choices (``choices: []``, with
``usage=True`` a usage block too, as some servers send), drop (connection closed without an answer).

Habits (``StandinServer(..., habits=Habits(...))``), the way real servers behave on every request:
``refuse_tools`` (vLLM without a tool parser: 400 '"auto" tool choice requires
--enable-auto-tool-choice and --tool-call-parser to be set'), ``default_max_tokens`` (a reply is
cut there when the request gives no cap) and ``max_output_tokens`` (a larger cap is refused with
OpenAI's 400), ``context_window`` (prompt + cap beyond it: vLLM's 400 "This model's maximum context
length is N tokens..."; without a cap the reply gets what is left), ``rpm`` (requests per
``rpm_window_s`` beyond it get 429 with the headers of ``rate_limit_style``: ``openai``
(Retry-After, retry-after-ms) or ``proxy`` (only LiteLLM's ``llm_provider-retry-after``)),
``usd_per_mtok`` (input, output: every answer states its cost in ``x-litellm-response-cost``),
``api_key`` (a proxy's 401 without it), ``report_usage=False`` (replies and streams carry no usage
block, as some servers and proxies send none) and ``prefix_cache`` (a prompt's prefix already seen
is reported as ``prompt_tokens_details.cached_tokens`` in blocks of 16 tokens, as vLLM's prefix
cache does). ``Habits.llama_cpp_python()`` plays llama-cpp-python with a small model (see
physlab.llm.standin.habits): an ignored cap name, a refused ``json_schema``, a ``json_object``
schema held to, one request at a time, a dropped system message, mangled parts, a tokenizer.
"""

from __future__ import annotations

import itertools
import json
import math
import random
import socket
import sys
import threading
import time
from collections import Counter, deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from physlab.llm.standin.fuzz_schema import instance as schema_instance
from physlab.llm.standin.habits import SMALL_MODEL_TEXT, Habits, HabitState, rate_limit_headers
from physlab.llm.standin.responders import EchoResponder, Reply, Responder, args_json, as_reply

FAULT_KINDS = ("rate_limit", "server_error", "slow", "length", "malformed_tool_json", "unknown_tool",
               "empty_choices", "drop")

RAMBLE_TOKENS = 8192  # how far a model that never stops runs with no cap and no window (llama.cpp's n_ctx)


def _holds(reply: Reply, schema: dict[str, Any]) -> bool:
    """The reply is already what a model that follows its instructions writes under the schema's
    grammar: a JSON object (the stand-in does not fill in the keys the grammar would have made it
    write; a reply that is not JSON is replaced by an instance of the schema, as a grammar forces)."""
    if reply.tool_calls or not reply.content:
        return False
    try:
        obj = json.loads(reply.content)
    except json.JSONDecodeError:
        return False
    return isinstance(obj, dict)


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
    serving: int = 0  # requests generating now (a single-slot server: at most one)
    max_serving: int = 0

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens


MAX_BODY = 64 * 1024 * 1024


class _Handler(BaseHTTPRequestHandler):
    """One client connection (keep-alive: its requests are answered in order, one at a time)."""

    protocol_version = "HTTP/1.1"
    wbufsize = 1 << 16  # an answer's head and body leave in one write, flushed after each request
    server: _HTTPServer

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def send_error(self, code: int, message: str | None = None, explain: str | None = None) -> None:
        """The standard library's error answers (a malformed request line, ...) as JSON too."""
        self.close_connection = True
        self._json(code, {"error": {"message": message or HTTPStatus(code).phrase, "type": "invalid_request_error"}})

    def _json(self, status: int, payload: Any, headers: dict[str, str] | None = None) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        for name, value in {"Content-Type": "application/json", "Content-Length": str(len(data)),
                            **(headers or {})}.items():
            self.send_header(name, value)
        if self.close_connection:
            self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        if self.path.split("?", 1)[0].rstrip("/") in ("/v1/models", "/models"):
            self._json(200, {"object": "list", "data": [{"id": self.server.standin.model_name, "object": "model",
                                                         "created": 0, "owned_by": "physlab-standin"}]})
        else:
            self._json(404, {"error": {"message": f"no route {self.path}", "type": "not_found"}})

    def do_POST(self) -> None:
        if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
            return self.send_error(411, "send a Content-Length body (chunked bodies are not supported by the stand-in)")
        try:
            length = int(self.headers.get("Content-Length") or 0)
        except ValueError:
            length = -1
        if not 0 <= length <= MAX_BODY:
            return self.send_error(400, "bad Content-Length")
        raw = self.rfile.read(length)
        path = self.path.split("?", 1)[0].rstrip("/")
        tokenizer = self.server.standin.habits.tokenize_path
        if tokenizer is not None and path in (tokenizer, tokenizer + "/count"):
            return self._tokenize(raw, count_only=path.endswith("/count"))
        if path not in ("/v1/chat/completions", "/chat/completions"):
            return self._json(404, {"error": {"message": f"no route {path}", "type": "not_found"}})
        try:
            body = json.loads(raw or b"{}")
        except (json.JSONDecodeError, UnicodeDecodeError):
            return self._json(400, {"error": {"message": "body is not JSON", "type": "invalid_request_error"}})
        srv = self.server.standin
        key = srv.habits.api_key
        if key is not None and self.headers.get("Authorization", "") != f"Bearer {key}":
            srv.stats.faults["unauthorized"] += 1
            return self._json(401, {"error": {"message": "Authentication Error, invalid or missing API key (stand-in)",
                                              "type": "auth_error", "param": "None", "code": "401"}})
        arrived = time.time()
        fault, latency, delay = srv.admit(body)
        try:
            with srv.slot():  # a single-slot server: the others wait here, and a left request runs on
                self._answer(srv, body, fault, latency, delay, arrived)
        finally:
            srv.done()

    def _tokenize(self, raw: bytes, *, count_only: bool) -> None:
        """llama-cpp-python's ``{"input"}``, llama.cpp's ``{"content"}`` or vLLM's ``{"prompt"}``:
        the tokens the server would count for the text (one id per token)."""
        try:
            body = json.loads(raw or b"{}")
            text = next(str(body[k]) for k in ("input", "content", "prompt") if k in body)
        except (json.JSONDecodeError, UnicodeDecodeError, StopIteration, TypeError):
            return self._json(422, {"detail": "expected a JSON body with 'input'"})
        n = count_tokens(text)
        self._json(200, {"count": n} if count_only else {"tokens": list(range(n)), "count": n})

    def _answer(self, srv: StandinServer, body: dict[str, Any], fault: Any, latency: float, delay: float,
                arrived: float) -> None:
        with srv.serving():
            if self.server.stopping.wait(delay):  # stopped meanwhile: dropped, as by a stopped server
                self.close_connection = True
                return
            t0 = time.perf_counter()
            answer = srv.answer(body, fault)
        if answer.kind == "drop":
            self.close_connection = True
            return
        try:
            if answer.kind == "stream":  # the events, then the connection closes (no chunked encoding)
                self.close_connection = True
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Cache-Control", "no-cache")
                self.send_header("Connection", "close")
                self.end_headers()
                self.wfile.write(b"".join(answer.payload))
            else:
                self._json(answer.status, answer.payload, answer.headers)
            self.wfile.flush()
        except OSError:  # the client left before its answer
            self.close_connection = True
            return
        srv.answered(answer, time.perf_counter() - t0, arrived, latency)


class _HTTPServer(ThreadingHTTPServer):
    request_queue_size = 1024  # a sweep's cells connect all at once
    stopping: threading.Event
    standin: StandinServer

    def __init__(self, standin: StandinServer, address: tuple[str, int]) -> None:
        self.standin = standin
        self.stopping = threading.Event()
        self.connections: set[socket.socket] = set()
        super().__init__(address, _Handler)

    def process_request(self, request: Any, client_address: Any) -> None:
        self.connections.add(request)
        super().process_request(request, client_address)

    def shutdown_request(self, request: Any) -> None:
        self.connections.discard(request)
        super().shutdown_request(request)

    def handle_error(self, request: Any, client_address: Any) -> None:
        if not isinstance(sys.exc_info()[1], OSError):  # a client that went away is no error here
            super().handle_error(request, client_address)


class StandinServer:
    def __init__(self, responder: Responder | None = None, *,
                 latency_s: float | Callable[[dict[str, Any]], float] = 0.0,
                 model_name: str = "standin", host: str = "127.0.0.1", port: int = 0,
                 habits: Habits | None = None) -> None:
        self.responder: Responder = responder or EchoResponder()
        self.habits = habits or Habits()
        self.costs: list[float] = []  # the cost stated for each answer (usd_per_mtok habit)
        self.usages: list[dict[str, Any]] = []  # the usage block of each answer sent, in order
        self.latency_s = latency_s
        self.model_name = model_name
        self.host = host
        self._port = port
        self.stats = StandinStats()
        self._habits = HabitState(self.habits, prompt_tokens, self.stats.faults)
        self.requests: list[dict[str, Any]] = []
        self.served: dict[str, tuple[float, float]] = {}  # completion id -> (arrival time, latency given)
        self._faults: deque[Fault] = deque()
        self._lock = threading.Condition()
        self._ids = itertools.count(1)
        self._http: _HTTPServer | None = None
        self._slot = threading.Lock() if self.habits.single_slot else None
        self.seen: list[str] = []  # each request's prompt as the model saw it (after the chat format)

    # ---- lifecycle -------------------------------------------------------------------------
    @property
    def port(self) -> int:
        assert self._http is not None, "server not started"
        return self._http.server_address[1]

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}/v1"

    def start(self) -> StandinServer:
        self._http = _HTTPServer(self, (self.host, self._port))
        threading.Thread(target=self._http.serve_forever, name="physlab-standin", daemon=True).start()
        return self

    def stop(self) -> None:
        """Stop serving: answers still pending are dropped, open connections closed; returns once
        every request is over."""
        http, self._http = self._http, None
        if http is None:
            return
        http.shutdown()
        http.stopping.set()
        for conn in list(http.connections):  # wakes the threads waiting for a connection's next request
            try:
                conn.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        http.server_close()
        with self._lock:
            self._lock.wait_for(lambda: self.stats.in_flight == 0, timeout=10)

    def __enter__(self) -> StandinServer:
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

    # ---- answering (the HTTP handler above sends it) -------------------------------------------
    def admit(self, body: dict[str, Any]) -> tuple[Fault | None, float, float]:
        """Count a received request; the fault it gets, its latency and the delay before its answer
        (the latency, plus a `slow` fault's)."""
        fault = self._next_fault()
        latency = self.latency_s(body) if callable(self.latency_s) else self.latency_s
        with self._lock:
            self.stats.requests += 1
            self.requests.append(body)
            self.stats.in_flight += 1
            self.stats.max_in_flight = max(self.stats.max_in_flight, self.stats.in_flight)
            if fault:
                self.stats.faults[fault.kind] += 1
        delay = latency + (float(fault.opts.get("delay_s", 2.0)) if fault and fault.kind == "slow" else 0)
        return fault, latency, delay

    def answer(self, body: dict[str, Any], fault: Fault | None) -> Answer:
        """What to send back for ``body`` (after its delay)."""
        if fault and fault.kind == "drop":
            return Answer("drop")
        if fault and fault.kind == "rate_limit":
            ra = float(fault.opts.get("retry_after", 1))
            return Answer("json", 429, {"error": {"message": "rate limited (stand-in)", "type": "rate_limit_error",
                                                  "code": "rate_limit_exceeded"}},
                          rate_limit_headers(ra, fault.opts.get("style", "openai")))
        body = self._habits.as_seen(body)  # what reaches the model through the chat format
        with self._lock:
            self.seen.append("\n".join(str(m.get("content") or "") for m in body.get("messages", [])))
        if (refused := self._habits.refusal(body)) is not None:
            status, payload, headers = refused
            return Answer("json", status, payload, headers)
        if fault and fault.kind == "server_error":
            return Answer("json", 500, {"error": {"message": "internal error (stand-in)", "type": "server_error"}})
        try:
            completion, _, n_prompt, n_completion = self.build(body, fault)
        except Exception as exc:  # noqa: BLE001 - responder failed (e.g. script exhausted): a clear 500
            return Answer("json", 500, {"error": {"message": f"stand-in responder failed: {exc}",
                                                  "type": "server_error"}})
        counted = (1 if "usage" in completion else 0, n_prompt, n_completion)
        headers = {}
        if self.habits.usd_per_mtok is not None and "usage" in completion:
            usd_in, usd_out = self.habits.usd_per_mtok
            cost = (n_prompt * usd_in + n_completion * usd_out) / 1e6
            with self._lock:
                self.costs.append(cost)
            headers["x-litellm-response-cost"] = repr(cost)
        if body.get("stream"):
            include_usage = self.habits.stream_usage and bool((body.get("stream_options") or {}).get("include_usage"))
            return Answer("stream", 200, sse_events(completion, include_usage), counted=counted)
        return Answer("json", 200, completion, headers, counted=counted)

    def answered(self, answer: Answer, handling_s: float, arrived: float, latency: float) -> None:
        """An answer went out: add the tokens it reported, and note when its request arrived."""
        if answer.counted is None:
            return
        answered, n_prompt, n_completion = answer.counted
        completion = answer.payload if answer.kind == "json" else None
        with self._lock:
            if completion is not None and "id" in completion:
                self.served[completion["id"]] = (arrived, latency)
            if completion is not None and "usage" in completion:
                self.usages.append(completion["usage"])
            self.stats.answered += answered
            self.stats.prompt_tokens += n_prompt
            self.stats.completion_tokens += n_completion
            self.stats.handling_s += handling_s

    def slot(self) -> Any:
        """Held while a request is served: one at a time on a single-slot server (llama-cpp-python),
        which keeps generating for a client that left while the next ones wait."""
        return self._slot if self._slot is not None else nullcontext()

    @contextmanager
    def serving(self) -> Iterator[None]:
        """Counts a request as generating (``stats.max_serving``)."""
        with self._lock:
            self.stats.serving += 1
            self.stats.max_serving = max(self.stats.max_serving, self.stats.serving)
        try:
            yield
        finally:
            with self._lock:
                self.stats.serving -= 1

    def done(self) -> None:
        """A request admitted by :meth:`admit` is over (answered, dropped, or its client left)."""
        with self._lock:
            self.stats.in_flight -= 1
            self._lock.notify_all()

    # ---- building replies ------------------------------------------------------------------
    def _constraint(self, body: dict[str, Any]) -> dict[str, Any] | None:
        """The schema a ``json_object`` response format holds the reply to (llama.cpp's grammar)."""
        fmt = body.get("response_format") or {}
        schema = fmt.get("schema")
        if self.habits.constrains_json_object and fmt.get("type") == "json_object" and isinstance(schema, dict):
            return schema
        return None

    def build(self, body: dict[str, Any], fault: Fault | None) -> tuple[dict[str, Any], Reply, int, int]:
        """The completion (non-streamed shape), the reply, and the tokens it reports."""
        kind = fault.kind if fault else None
        if kind == "empty_choices":  # nothing usable served: the responder is not consulted
            empty: dict[str, Any] = {"id": f"chatcmpl-{next(self._ids)}", "object": "chat.completion",
                                     "created": int(time.time()), "model": body.get("model", self.model_name),
                                     "choices": []}
            if not fault.opts.get("usage"):
                return empty, Reply(), 0, 0
            n_prompt, n_completion = prompt_tokens(body), int(fault.opts.get("completion_tokens", 7))
            empty["usage"] = {"prompt_tokens": n_prompt, "completion_tokens": n_completion,
                              "total_tokens": n_prompt + n_completion}
            return empty, Reply(), n_prompt, n_completion
        head, rest = self._habits.continuing(body)
        schema = self._constraint(body)
        if rest is not None:
            reply = Reply(content=rest)
        elif not self.habits.follows_instructions:  # a small model: what it writes is not what was asked
            reply = Reply(content=SMALL_MODEL_TEXT)
        else:
            reply = as_reply(self.responder(body))
        if schema is not None and not _holds(reply, schema):  # a grammar: nothing else can be written
            seed = len(self.requests)
            reply = Reply(content=json.dumps(schema_instance(schema, random.Random(seed))))
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
        cap = self._habits.cap(body)
        room = (self.habits.context_window - prompt_tokens(body)) if self.habits.context_window else None
        if not cap:  # the server's own limit: its default, or what the context window leaves
            limits = [x for x in (self.habits.default_max_tokens, room) if x]
            cap = min(limits) if limits else None
        elif room is not None and not self.habits.window_counts_cap:  # the reply stops where the window ends
            cap = min(cap, room)
        if self.habits.rambles and content and not calls and schema is None:  # it never stops on its own
            goal = cap or RAMBLE_TOKENS
            content = (content + " " + " ".join(["and so on"] * (goal * 4 // 10 + 1)))[: goal * 4 + 4]
        full = count_tokens(content or "") + sum(count_tokens(n + a) for n, a in calls)
        if kind == "length" or (cap and full > cap):
            budget_chars = (cap * 4) if (cap and full > cap) else max(1, len(content or "") // 2)
            if content and not calls:
                self._habits.remember_cut(head + content)  # asked to go on, it continues where it stopped
            if content:
                content = content[:budget_chars]
                budget_chars -= len(content)
            if calls:  # a cap cuts the arguments where its tokens run out; a `length` fault halves them
                keep = (lambda n, a: budget_chars - len(n)) if (cap and full > cap) else (lambda n, a: len(a) // 2)
                calls = [(n, a[: max(1, min(len(a) - 1, keep(n, a)))]) for n, a in calls]
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
        if self.habits.prefix_cache:
            completion["usage"]["prompt_tokens_details"] = {"cached_tokens": self._habits.cached_tokens(body, n_prompt)}
        if not self.habits.report_usage:
            del completion["usage"]
        return completion, reply, n_prompt, n_completion

