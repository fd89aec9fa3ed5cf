"""physlab.llm.http1 against a real socket server on 127.0.0.1 that answers each request with raw
bytes chosen by the test: body framings, encodings, keep-alive, servers that close, stall or
answer garbage."""

from __future__ import annotations

import asyncio
import gzip
import json
import zlib

import pytest
from pydantic_ai.direct import model_request
from pydantic_ai.exceptions import ModelConnectionError
from pydantic_ai.messages import ModelRequest, TextPart, UserPromptPart

from physlab.llm.direct_openai import DirectOpenAIModel
from physlab.llm.http1 import BadHttpReply, Http1Pool

COMPLETION = json.dumps({"id": "x", "object": "chat.completion", "created": 0, "model": "m", "choices": [
    {"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": "fine"}}]}).encode()


def reply(body: bytes = b'{"ok": true}', status: str = "200 OK", headers: str = "") -> bytes:
    return (f"HTTP/1.1 {status}\r\nContent-Type: application/json\r\nContent-Length: {len(body)}\r\n"
            f"{headers}\r\n").encode() + body


class RawServer:
    """Answers the n-th request with ``script[n]``: bytes to send, ``"close"`` (close without a
    reply), ``"hang"`` (never answer) or a callable(writer) for anything else."""

    def __init__(self, script: list) -> None:
        self.script = list(script)
        self.requests: list[tuple[int, bytes, bytes]] = []  # (connection number, head, body)
        self.connections = 0
        self.open = 0

    async def __aenter__(self) -> "RawServer":
        self.server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.url = f"http://127.0.0.1:{self.server.sockets[0].getsockname()[1]}/v1/chat/completions"
        return self

    async def __aexit__(self, *exc) -> None:
        self.server.close()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        self.open += 1
        number = self.connections
        try:
            while True:
                try:
                    head = await reader.readuntil(b"\r\n\r\n")
                except (asyncio.IncompleteReadError, ConnectionError):
                    return
                length = int(next(line.split(b":")[1] for line in head.split(b"\r\n")
                                  if line.lower().startswith(b"content-length")))
                body = await reader.readexactly(length)
                self.requests.append((number, head, body))
                action = self.script.pop(0)
                if action == "close":
                    return
                if action == "hang":  # until the client gives up
                    await reader.read()
                    return
                if callable(action):
                    if await action(writer) == "close":
                        return
                    continue
                writer.write(action)
                await writer.drain()
        finally:
            self.open -= 1
            writer.close()


async def until(cond, timeout: float = 5.0) -> bool:
    deadline = asyncio.get_running_loop().time() + timeout
    while not cond() and asyncio.get_running_loop().time() < deadline:
        await asyncio.sleep(0.01)
    return cond()


async def test_a_post_sends_its_headers_and_body_and_reads_the_reply():
    async with RawServer([reply(b'{"a": 1}', headers="X-Thing: one\r\nX-Thing: two\r\n")]) as srv:
        pool = Http1Pool()
        status, headers, body = await pool.post(srv.url + "?q=1", {"Authorization": "Bearer k"}, b'{"x": 2}', 5)
        assert (status, body) == (200, b'{"a": 1}')
        assert headers["x-thing"] == "one, two" and headers["content-type"] == "application/json"
        _, head, sent = srv.requests[0]
        lines = head.decode().split("\r\n")
        assert lines[0] == "POST /v1/chat/completions?q=1 HTTP/1.1"
        assert f"Host: {srv.url.split('/')[2]}" in lines and "Authorization: Bearer k" in lines
        assert "Content-Length: 8" in lines and sent == b'{"x": 2}'
        await pool.aclose()


async def test_chunked_gzip_deflate_and_read_to_close_bodies():
    data = b'{"long": "' + b"x" * 5000 + b'"}'
    chunked = (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
               + b"".join(b"%x\r\n%s\r\n" % (len(data[i:i + 700]), data[i:i + 700]) for i in range(0, len(data), 700))
               + b"0\r\n\r\n")
    gz = gzip.compress(data)
    raw_deflate = zlib.compressobj(wbits=-15)
    raw_deflated = raw_deflate.compress(data) + raw_deflate.flush()

    async def to_close(writer):
        writer.write(b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n" + data[:100])
        await writer.drain()
        await asyncio.sleep(0.05)
        writer.write(data[100:])
        await writer.drain()
        return "close"

    async with RawServer([chunked, reply(gz, headers="Content-Encoding: gzip\r\n"),
                          reply(zlib.compress(data), headers="Content-Encoding: deflate\r\n"),
                          reply(raw_deflated, headers="Content-Encoding: deflate\r\n"), to_close,
                          reply(headers="Content-Encoding: br\r\n")]) as srv:
        pool = Http1Pool()
        for _ in range(5):
            assert (await pool.post(srv.url, {}, b"{}", 5))[2] == data
        assert srv.connections == 1  # kept alive up to the reply that ran to the close
        with pytest.raises(BadHttpReply, match="'br'"):
            await pool.post(srv.url, {}, b"{}", 5)
        await pool.aclose()


async def test_connections_are_kept_alive_reused_and_dropped_when_the_server_says_close():
    async with RawServer([reply(), reply(headers="Connection: close\r\n"), reply(), reply()]) as srv:
        pool = Http1Pool()
        for _ in range(2):
            await pool.post(srv.url, {}, b"{}", 5)
        # concurrent requests: one connection each; the closed one is not reused
        await asyncio.gather(*(pool.post(srv.url, {}, b"{}", 5) for _ in range(2)))
        assert sorted(n for n, _, _ in srv.requests) == [1, 1, 2, 3]
        assert srv.connections == 3 and await until(lambda: srv.open == 2)
        await pool.aclose()
        assert await until(lambda: srv.open == 0)


async def test_an_idle_connection_is_not_reused_after_the_keepalive_time():
    async with RawServer([reply(), reply()]) as srv:
        pool = Http1Pool(keepalive_s=0.0)
        await pool.post(srv.url, {}, b"{}", 5)
        await asyncio.sleep(0.01)
        await pool.post(srv.url, {}, b"{}", 5)
        assert srv.connections == 2 and await until(lambda: srv.open == 1)
        await pool.aclose()


async def test_a_reused_connection_closed_under_the_request_is_retried_once_on_a_new_one():
    async with RawServer([reply(), "close", reply(b'{"second": true}')]) as srv:
        pool = Http1Pool()
        await pool.post(srv.url, {}, b"{}", 5)
        status, _, body = await pool.post(srv.url, {}, b"{}", 5)
        assert (status, body) == (200, b'{"second": true}')
        assert [n for n, _, _ in srv.requests] == [1, 1, 2]
        await pool.aclose()


async def test_a_new_connection_closed_without_a_reply_or_a_reply_cut_short_is_an_error_not_retried():
    async def cut(writer):
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n{\"half")
        await writer.drain()
        return "close"

    async with RawServer(["close", reply(), cut]) as srv:
        pool = Http1Pool()
        with pytest.raises(ConnectionResetError, match="server disconnected"):
            await pool.post(srv.url, {}, b"{}", 5)
        await pool.post(srv.url, {}, b"{}", 5)
        with pytest.raises(ConnectionResetError):  # reused, but the reply had begun: not sent again
            await pool.post(srv.url, {}, b"{}", 5)
        assert len(srv.requests) == 3
        await pool.aclose()


async def test_timeout_and_cancellation_abort_the_connection():
    async with RawServer(["hang", "hang", reply()]) as srv:
        pool = Http1Pool()
        with pytest.raises(TimeoutError):
            await pool.post(srv.url, {}, b"{}", 0.1)
        task = asyncio.create_task(pool.post(srv.url, {}, b"{}", 5))
        await until(lambda: len(srv.requests) == 2)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert await until(lambda: srv.open == 0)  # both given up: neither left open
        assert (await pool.post(srv.url, {}, b"{}", 5))[0] == 200
        assert srv.connections == 3
        await pool.aclose()


async def test_interim_replies_are_skipped_and_garbage_is_a_bad_reply():
    async with RawServer([b"HTTP/1.1 100 Continue\r\n\r\n" + reply(b"[]"), b"SPDY/9 what\r\n\r\n"]) as srv:
        pool = Http1Pool()
        assert (await pool.post(srv.url, {}, b"{}", 5))[2] == b"[]"
        with pytest.raises(BadHttpReply, match="malformed HTTP reply"):
            await pool.post(srv.url, {}, b"{}", 5)
        await pool.aclose()


async def test_refused_connections_bad_headers_and_urls():
    pool = Http1Pool()
    async with RawServer([]) as srv:
        url = srv.url
    with pytest.raises(ConnectionRefusedError):
        await pool.post(url, {}, b"{}", 5)
    for headers in ({"X-A": "b\r\nEvil: 1"}, {"Bad:Name": "v"}, {"": "v"}):
        with pytest.raises(ValueError, match="invalid HTTP header"):
            await pool.post(url, headers, b"{}", 5)
    with pytest.raises(ValueError, match="http:// URLs only"):
        await pool.post("https://example.com/v1", {}, b"{}", 5)


async def test_the_direct_model_maps_transport_failures_to_connection_errors():
    async with RawServer([reply(COMPLETION), b"nonsense\r\n\r\n", "close"]) as srv:
        base = srv.url.rsplit("/chat/completions", 1)[0]
        model = DirectOpenAIModel("m", base_url=base, api_key="k")
        hi = [ModelRequest(parts=[UserPromptPart("hi")])]
        assert (await model_request(model, hi)).parts == [TextPart("fine")]
        with pytest.raises(ModelConnectionError, match="malformed HTTP reply"):
            await model_request(model, hi)
        with pytest.raises(ModelConnectionError, match="server disconnected"):
            await model_request(model, hi)
        await model.aclose()
