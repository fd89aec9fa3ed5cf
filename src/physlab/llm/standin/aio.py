"""The stand-in's HTTP front-end: one event loop in a background thread.

The stand-in plays a remote endpoint but runs on the cores of the code it measures, so what it
spends there comes out of the measurement (benchmarks/sweep_efficiency.py). Its first front-end
(``ThreadingHTTPServer``, a thread per connection) cost ~0.9 ms of CPU per request on this
project's 2-core machines and fell ~40 ms behind when 70 connections arrived at once: every accept
waited for a new thread to take the GIL. This one answers from one event loop (the latency is a
timer, not a sleeping thread) for ~0.35 ms. aiohttp.web, tried too, cost ~0.66 ms: the HTTP needed
here is small (Content-Length bodies, keep-alive, SSE answers that end the connection), so it is
parsed by hand below. What to answer -- faults, token counts, streaming -- is the server's
(``StandinServer.admit/answer``).
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from http import HTTPStatus
from typing import TYPE_CHECKING, Any

from physlab import eventloop

if TYPE_CHECKING:
    from physlab.llm.standin.server import Answer, StandinServer

MAX_HEAD = 64 * 1024
MAX_BODY = 64 * 1024 * 1024


def _head(status: int, headers: dict[str, str]) -> bytes:
    lines = [f"HTTP/1.1 {status} {HTTPStatus(status).phrase}"] + [f"{k}: {v}" for k, v in headers.items()]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


def json_response(status: int, payload: Any, headers: dict[str, str] | None = None, close: bool = False) -> bytes:
    data = json.dumps(payload).encode()
    head = {"Content-Type": "application/json", "Content-Length": str(len(data)), **(headers or {})}
    if close:
        head["Connection"] = "close"
    return _head(status, head) + data


class _Connection(asyncio.Protocol):
    """One client connection: requests are answered in order, one at a time."""

    def __init__(self, srv: "StandinServer", open_connections: set["_Connection"]) -> None:
        self.srv = srv
        self.open_connections = open_connections
        self.buf = bytearray()
        self.busy = False  # a request is waiting for its answer
        self.transport: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]
        self.open_connections.add(self)

    def connection_lost(self, exc: Exception | None) -> None:
        self.transport = None
        self.open_connections.discard(self)

    def data_received(self, data: bytes) -> None:
        self.buf += data
        self._next()

    def _next(self) -> None:
        """Take the next complete request from the buffer, if no answer is pending."""
        if self.busy or self.transport is None:
            return
        end = self.buf.find(b"\r\n\r\n")
        if end < 0:
            if len(self.buf) > MAX_HEAD:
                self._finish(json_response(431, {"error": {"message": "request head too large"}}, close=True), True)
            return
        lines = bytes(self.buf[:end]).decode("latin-1").split("\r\n")
        method, _, rest = lines[0].partition(" ")
        path, _, version = rest.rpartition(" ")
        headers = {}
        for line in lines[1:]:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
        close = headers.get("connection", "").lower() == "close" or version != "HTTP/1.1"
        if "chunked" in headers.get("transfer-encoding", "").lower():
            self._finish(json_response(411, {"error": {"message": "send a Content-Length body (chunked bodies are "
                                                                  "not supported by the stand-in)"}}, close=True), True)
            return
        try:
            length = int(headers.get("content-length") or 0)
        except ValueError:
            length = -1
        if not 0 <= length <= MAX_BODY:
            self._finish(json_response(400, {"error": {"message": "bad Content-Length"}}, close=True), True)
            return
        if len(self.buf) < end + 4 + length:
            return
        raw = bytes(self.buf[end + 4:end + 4 + length])
        del self.buf[:end + 4 + length]
        self.busy = True
        self._route(method, path.split("?", 1)[0].rstrip("/"), raw, close)

    def _route(self, method: str, path: str, raw: bytes, close: bool) -> None:
        srv = self.srv
        if method == "GET" and path in ("/v1/models", "/models"):
            self._finish(json_response(200, {"object": "list", "data": [
                {"id": srv.model_name, "object": "model", "created": 0, "owned_by": "physlab-standin"}]},
                close=close), close)
            return
        if method != "POST" or path not in ("/v1/chat/completions", "/chat/completions"):
            self._finish(json_response(404, {"error": {"message": f"no route {path}", "type": "not_found"}},
                                       close=close), close)
            return
        try:
            body = json.loads(raw or b"{}")
        except (json.JSONDecodeError, UnicodeDecodeError):
            self._finish(json_response(400, {"error": {"message": "body is not JSON",
                                                       "type": "invalid_request_error"}}, close=close), close)
            return
        fault, delay = srv.admit(body)
        asyncio.get_running_loop().call_later(delay, self._answer, body, fault, close)

    def _answer(self, body: dict[str, Any], fault: Any, close: bool) -> None:
        srv = self.srv
        try:
            if self.transport is None:  # the client gave up
                return
            t0 = time.perf_counter()
            answer: Answer = srv.answer(body, fault)
            if answer.kind == "drop":
                self.transport.abort()
                return
            if answer.kind == "stream":
                self._finish(_head(200, {"Content-Type": "text/event-stream", "Cache-Control": "no-cache",
                                         "Connection": "close"}) + b"".join(answer.payload), True)
            else:
                self._finish(json_response(answer.status, answer.payload, answer.headers, close=close), close)
            srv.answered(answer, time.perf_counter() - t0)
        finally:
            srv.done()

    def _finish(self, data: bytes, close: bool) -> None:
        if self.transport is None:
            return
        self.transport.write(data)
        if close:
            self.transport.close()
            return
        self.busy = False
        if self.buf:
            self._next()


class LoopFrontend:
    """Serves a StandinServer from an event loop in a background thread."""

    def __init__(self, srv: "StandinServer", host: str, port: int) -> None:
        self.srv = srv
        self._loop = eventloop.new_event_loop()  # uvloop where installed, like the sweep's workers
        self._ready = threading.Event()
        self._error: BaseException | None = None
        self._server: asyncio.AbstractServer | None = None
        self._connections: set[_Connection] = set()
        self._thread = threading.Thread(target=self._serve, args=(host, port), name="physlab-standin", daemon=True)
        self._thread.start()
        self._ready.wait()
        if self._error is not None:
            raise self._error

    def _serve(self, host: str, port: int) -> None:
        asyncio.set_event_loop(self._loop)
        try:
            self._server = self._loop.run_until_complete(self._loop.create_server(
                lambda: _Connection(self.srv, self._connections), host, port, backlog=1024, reuse_address=True))
        except BaseException as exc:  # noqa: BLE001 - e.g. the port is taken: raised in start()
            self._error = exc
            self._loop.close()
            self._ready.set()
            return
        self._ready.set()
        self._loop.run_forever()
        self._server.close()
        for conn in list(self._connections):  # answers still pending are dropped, as a stopped server would
            if conn.transport is not None:
                conn.transport.abort()
        self._loop.run_until_complete(asyncio.sleep(0))  # let the aborted transports close
        self._loop.close()

    @property
    def server_address(self) -> tuple[str, int]:
        assert self._server is not None
        return self._server.sockets[0].getsockname()[:2]

    def stop(self) -> None:
        if self._loop.is_closed():
            return
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=10)
