"""A lean HTTP/1.1 client for plain ``http://`` endpoints: the direct client's transport there.

The direct client (physlab.llm.direct_openai) makes one JSON POST per model request. Local and LAN
servers -- vLLM, Ollama, a LiteLLM proxy, the stand-in -- speak plain HTTP/1.1, and against them a
sweep's cost is the client's CPU: each worker opens one connection per running cell and then sends
every request of that cell over it. aiohttp, which the direct client used for every URL, spent
~0.6 ms of CPU per POST on an open connection and ~1.3 ms more when it opened the connection (its
connector, happy-eyeballs, request/response objects and timers), measured with 35 concurrent
requests against the stand-in on the 2-core development VM; this transport spends ~0.05 ms and
~0.5 ms (``python benchmarks/client_floor.py --new-connections``). That is the difference between
74-79 % and 80+ % of the latency-only path in benchmarks/sweep_efficiency.py.

What it does is only what such a POST needs, on asyncio's own connections (``create_connection``)
and httptools (uvicorn's C HTTP parser) for the reply: Content-Length, chunked and read-to-close
bodies; gzip/deflate content encoding; keep-alive connections reused most-recent first and dropped
after 15 s idle (as aiohttp's ``keepalive_timeout``) or when the server closes them; one timeout
for the whole exchange. A reused connection the server had already closed when the request went
out is retried once on a new one (nothing of a reply had arrived, so the server never took the
request). ``https://`` endpoints keep aiohttp: TLS, proxies and the rest of HTTP are its job.

Errors: a timeout is TimeoutError; refused, reset or closed connections are OSError
(ConnectionError); a malformed reply is :class:`BadHttpReply` (a ConnectionError).
"""

from __future__ import annotations

import asyncio
import re
import time
import zlib
from collections.abc import Mapping
from urllib.parse import urlsplit

import httptools

Reply = tuple[int, Mapping[str, str], bytes]

KEEPALIVE_S = 15.0
_NO_BODY = (204, 304)


class BadHttpReply(ConnectionError):
    """The server's reply is not HTTP/1.1 this client can read."""


class _Exchange:
    """What one reply has brought so far."""

    __slots__ = ("waiter", "status", "headers", "body", "headers_done")

    def __init__(self, waiter: asyncio.Future) -> None:
        self.waiter = waiter
        self.status = 0
        self.headers: dict[str, str] = {}
        self.body: list[bytes] = []
        self.headers_done = False


class _Connection(asyncio.Protocol):
    """One keep-alive connection; one exchange at a time. httptools calls the ``on_*`` methods."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.reusable = False
        self.replied = False  # a byte of the reply to the last request has arrived
        self.idle_since = 0.0
        self._parser = httptools.HttpResponseParser(self)
        self._ex: _Exchange | None = None

    # -- asyncio ------------------------------------------------------------------------------
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def connection_lost(self, exc: Exception | None) -> None:
        self.transport = None
        self.reusable = False
        ex = self._ex
        if ex is None:
            return
        if exc is None and ex.headers_done and _read_to_close(ex):
            self._complete()  # the body ran to the end of the connection
        else:
            reason = f": {exc}" if exc else ""
            self._fail(ConnectionResetError(f"server disconnected before the reply was complete{reason}"))

    def data_received(self, data: bytes) -> None:
        if self._ex is None:  # nothing asked: a server talking out of turn; the connection is spent
            self.reusable = False
            if self.transport is not None:
                self.transport.close()
            return
        self.replied = True
        try:
            self._parser.feed_data(data)
        except (httptools.HttpParserError, httptools.HttpParserUpgrade) as exc:
            self._fail(BadHttpReply(f"malformed HTTP reply: {exc}"))
            self.close()

    # -- httptools ----------------------------------------------------------------------------
    def on_header(self, name: bytes, value: bytes) -> None:
        if self._ex is None:  # bytes after the reply asked for: see data_received
            return
        key, text = name.decode("latin-1").lower(), value.decode("latin-1")
        headers = self._ex.headers
        headers[key] = f"{headers[key]}, {text}" if key in headers else text

    def on_headers_complete(self) -> None:
        if self._ex is None:
            return
        self._ex.status = self._parser.get_status_code()
        self._ex.headers_done = True

    def on_body(self, body: bytes) -> None:
        if self._ex is None:
            return
        self._ex.body.append(body)

    def on_message_complete(self) -> None:
        ex = self._ex
        if ex is None:  # a second reply in the same bytes: the server talks out of turn
            self.close()
            return
        if 100 <= ex.status < 200:  # an interim reply (100 Continue...): the real one follows
            ex.status, ex.headers, ex.body, ex.headers_done = 0, {}, [], False
            return
        self.reusable = self._parser.should_keep_alive()
        self._complete()

    # -- one exchange -------------------------------------------------------------------------
    def send(self, data: bytes, waiter: asyncio.Future) -> None:
        assert self.transport is not None
        self._ex = _Exchange(waiter)
        self.reusable = self.replied = False
        self.transport.write(data)

    def _complete(self) -> None:
        ex, self._ex = self._ex, None
        if ex is not None and not ex.waiter.done():
            ex.waiter.set_result((ex.status, ex.headers, b"".join(ex.body)))

    def _fail(self, exc: BaseException) -> None:
        ex, self._ex = self._ex, None
        if ex is not None and not ex.waiter.done():
            ex.waiter.set_exception(exc)

    def close(self) -> None:
        self.reusable = False
        if self.transport is not None:
            self.transport.close()

    def abort(self) -> None:
        self.reusable = False
        self._ex = None
        if self.transport is not None:
            self.transport.abort()


def _read_to_close(ex: _Exchange) -> bool:
    """A reply whose body is delimited by the server closing the connection (no length, not chunked)."""
    h = ex.headers
    return ex.status not in _NO_BODY and "content-length" not in h and "chunked" not in h.get("transfer-encoding", "")


def _decoded(headers: Mapping[str, str], body: bytes) -> bytes:
    coding = headers.get("content-encoding", "identity").strip().lower()
    if coding in ("", "identity"):
        return body
    try:
        if coding in ("gzip", "x-gzip"):
            return zlib.decompress(body, wbits=zlib.MAX_WBITS | 16)
        if coding == "deflate":  # zlib-wrapped as the RFC says, or raw as some servers send it
            try:
                return zlib.decompress(body)
            except zlib.error:
                return zlib.decompress(body, wbits=-zlib.MAX_WBITS)
    except zlib.error as exc:
        raise BadHttpReply(f"reply body is not valid {coding}: {exc}") from None
    raise BadHttpReply(f"reply uses Content-Encoding {coding!r}, which this client does not decode")


class Http1Pool:
    """Keep-alive connections for one event loop (:attr:`loop`, by default the running one).
    ``await pool.post(url, headers, body, timeout_s)`` -> (status, headers with lower-case names, body)."""

    def __init__(self, loop: asyncio.AbstractEventLoop | None = None, keepalive_s: float = KEEPALIVE_S) -> None:
        self.keepalive_s = keepalive_s
        self.loop = loop or asyncio.get_running_loop()
        self._idle: dict[tuple[str, int], list[_Connection]] = {}
        self._busy: set[_Connection] = set()
        self._targets: dict[str, tuple[str, int, bytes]] = {}  # url -> host, port, request line + Host
        self._closed = False

    async def post(self, url: str, headers: Mapping[str, str], body: bytes, timeout_s: float) -> Reply:
        loop = asyncio.get_running_loop()
        if self.loop is not loop:
            raise RuntimeError("Http1Pool used from another event loop than the one it was made on")
        host, port, head = self._targets.get(url) or self._target(url)
        data = head + _header_block(headers, len(body)) + body
        async with asyncio.timeout(timeout_s):
            for attempt in (0, 1):
                conn, reused = self._take(host, port), True
                if conn is None:
                    _, conn = await loop.create_connection(_Connection, host, port)
                    reused = False
                waiter = loop.create_future()
                self._busy.add(conn)
                try:
                    conn.send(data, waiter)
                    status, got, raw = await waiter
                except ConnectionResetError:
                    if reused and attempt == 0 and not conn.replied and not self._closed:
                        continue  # the server had closed it while idle: once more on a new connection
                    raise
                except BaseException:  # timeout, cancellation, a bad reply: the connection is spent
                    conn.abort()
                    raise
                finally:
                    self._busy.discard(conn)
                self._give_back(host, port, conn)
                return status, got, _decoded(got, raw)
        raise AssertionError("unreachable")  # pragma: no cover

    def _target(self, url: str) -> tuple[str, int, bytes]:
        u = urlsplit(url)
        if u.scheme != "http" or not u.hostname:
            raise ValueError(f"Http1Pool serves http:// URLs only, not {url!r}")
        port = u.port or 80
        path = (u.path or "/") + (f"?{u.query}" if u.query else "")
        host = f"[{u.hostname}]" if ":" in u.hostname else u.hostname
        head = (f"POST {path} HTTP/1.1\r\nHost: {host}:{port}\r\n"
                "Accept-Encoding: gzip, deflate\r\n").encode("latin-1")
        self._targets[url] = (u.hostname, port, head)
        return self._targets[url]

    def _take(self, host: str, port: int) -> _Connection | None:
        idle = self._idle.get((host, port))
        now = time.monotonic()
        while idle:
            conn = idle.pop()
            if conn.transport is not None and not conn.transport.is_closing() and conn.reusable:
                if now - conn.idle_since <= self.keepalive_s:
                    return conn
            conn.close()
        return None

    def _give_back(self, host: str, port: int, conn: _Connection) -> None:
        if not self._closed and conn.reusable and conn.transport is not None and not conn.transport.is_closing():
            conn.idle_since = time.monotonic()
            self._idle.setdefault((host, port), []).append(conn)
        else:
            conn.close()

    def sockets(self) -> list:
        """The sockets of its open connections (to shut down when its loop is closed, see aclose)."""
        conns = [c for idle in self._idle.values() for c in idle] + list(self._busy)
        return [c.transport.get_extra_info("socket") for c in conns if c.transport is not None]

    async def aclose(self) -> None:
        """Close every connection (on the pool's own loop); a request still under way ends with
        ConnectionResetError and its connection is not kept."""
        self._closed = True
        conns = [c for idle in self._idle.values() for c in idle] + list(self._busy)
        self._idle.clear()
        self._busy.clear()
        for conn in conns:
            conn.abort()
        if conns:
            await asyncio.sleep(0)  # let the transports finish closing


_NAME = re.compile(r"[^:\s\0]+")
_VALUE = re.compile(r"[^\r\n\0]*")


def _header_block(headers: Mapping[str, str], length: int) -> bytes:
    lines = []
    for name, value in headers.items():
        name, value = str(name), str(value)
        if not (_NAME.fullmatch(name) and _VALUE.fullmatch(value)):  # else: a header smuggled into another
            raise ValueError(f"invalid HTTP header {name!r}: a name needs no ':' or spaces and neither a name "
                             "nor a value may hold a line break")
        lines.append(f"{name}: {value}\r\n")
    lines.append(f"Content-Length: {length}\r\n\r\n")
    return "".join(lines).encode("latin-1")
