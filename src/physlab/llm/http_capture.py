"""What the HTTP layer saw of one model request, for what the provider SDKs drop: the response
headers (a proxy's stated cost, LiteLLM's ``llm_provider-retry-after``) and the usage block of a
reply the SDK could not turn into a response (a 200 with empty ``choices`` still served tokens).

The model seam (:mod:`physlab.llm.seam.capture`) opens a :func:`capture` around each request, and
around the opening of each stream (never across its ``yield``: a stream may be closed from another
context); the provider's HTTP client (an ``httpx2.AsyncClient`` built by :func:`http_client`) fills
it from a response hook. The hook runs in the task that sent the request, so a context variable
ties the two together without any shared state between concurrent requests.

The client's transport also bounds each reply, which no timeout of the SDK's does: a server that
sends its body a byte at a time (each byte resets a read timeout) or streams without end is cut at
the try's deadline (the capture's: the registry's ``timeout_s``, or the run's wall budget when it
ends sooner), and a body larger than ``max_body_bytes`` is cut there (:class:`ReplyOverflow`)
instead of being read whole before the seam refuses it.
"""

from __future__ import annotations

import asyncio
import contextvars
import json
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import httpx2


@dataclass
class Capture:
    status: int | None = None
    headers: dict[str, str] = field(default_factory=dict)
    usage: dict[str, Any] | None = None  # the body's `usage` block (JSON answers only)
    url: str | None = None
    deadline: float | None = None  # time.monotonic() by which the whole reply must have arrived
    deadline_says: str = "timeout_s"  # what set it, for the error

    @property
    def input_tokens(self) -> int:
        u = self.usage or {}
        return int(u.get("prompt_tokens") or u.get("input_tokens") or 0)

    @property
    def output_tokens(self) -> int:
        u = self.usage or {}
        return int(u.get("completion_tokens") or u.get("output_tokens") or 0)

    @property
    def cache_read_tokens(self) -> int:
        u = self.usage or {}
        details = u.get("prompt_tokens_details") or {}
        return int(details.get("cached_tokens") or u.get("cache_read_input_tokens") or 0)

    @property
    def cache_write_tokens(self) -> int:
        return int((self.usage or {}).get("cache_creation_input_tokens") or 0)


_CURRENT: contextvars.ContextVar[Capture | None] = contextvars.ContextVar("physlab_http_capture", default=None)


class ReplyOverflow(httpx2.ReadError):
    """A reply's body grew past the client's ``max_body_bytes``: cut there, never read whole."""


class ReplyDeadline(httpx2.ReadTimeout):
    """A reply did not arrive whole by its try's deadline (a body sent a byte at a time, a stream
    without end, a server that never answers)."""


@contextmanager
def capture(deadline: float | None = None, deadline_says: str = "timeout_s") -> Iterator[Capture]:
    """Collect what the HTTP client sees while this block sends a request; the reply must have
    arrived whole by ``deadline`` (``time.monotonic()``)."""
    cap = Capture(deadline=deadline, deadline_says=deadline_says)
    token = _CURRENT.set(cap)
    try:
        yield cap
    finally:
        _CURRENT.reset(token)


async def _on_response(response: Any) -> None:
    cap = _CURRENT.get()
    if cap is None:
        return
    cap.status = response.status_code
    cap.url = str(response.request.url)
    cap.headers = {k.lower(): v for k, v in response.headers.items()}
    if "json" not in response.headers.get("content-type", ""):
        return  # a stream (its usage arrives in the events the SDK reads) or not a completion
    try:
        await response.aread()  # the SDK reads the same, now buffered, body
        body = json.loads(response.content or b"null")
    except (ReplyOverflow, ReplyDeadline):
        raise  # the reply is cut: the request fails here
    except Exception:  # noqa: BLE001 - what the SDK makes of a bad body is its own business
        return
    if isinstance(body, dict) and isinstance(body.get("usage"), dict):
        cap.usage = body["usage"]


class _BoundedBody(httpx2.AsyncByteStream):
    """A response body read within its try's deadline and up to ``limit`` bytes."""

    def __init__(self, inner: Any, request: Any, deadline: float | None, says: str, limit: int | None) -> None:
        self.inner, self.request, self.deadline, self.says, self.limit = inner, request, deadline, says, limit

    async def __aiter__(self) -> AsyncIterator[bytes]:
        got = 0
        chunks = self.inner.__aiter__()
        while True:
            try:
                # asyncio.timeout, not wait_for: the read stays in this task (anyio's cancel scopes)
                async with asyncio.timeout(_left(self.deadline)):
                    chunk = await chunks.__anext__()
            except StopAsyncIteration:
                return
            except TimeoutError:
                raise ReplyDeadline(f"the reply did not arrive whole within its {self.says}",
                                    request=self.request) from None
            got += len(chunk)
            if self.limit is not None and got > self.limit:
                raise ReplyOverflow(f"the reply's body passed {self.limit:,} bytes (max_reply_bytes in the model "
                                    "registry sets the bound); cut there", request=self.request)
            yield chunk

    async def aclose(self) -> None:
        await self.inner.aclose()


def _left(deadline: float | None) -> float | None:
    return None if deadline is None else max(0.0, deadline - time.monotonic())


class BoundedTransport(httpx2.AsyncBaseTransport):
    """The HTTP transport, with each reply held to the current capture's deadline (its head and every
    chunk of its body) and to ``max_body_bytes``."""

    def __init__(self, inner: httpx2.AsyncBaseTransport, max_body_bytes: int | None) -> None:
        self.inner = inner
        self.max_body_bytes = max_body_bytes

    async def handle_async_request(self, request: Any) -> Any:
        cap = _CURRENT.get()
        deadline, says = (cap.deadline, cap.deadline_says) if cap is not None else (None, "timeout_s")
        try:
            async with asyncio.timeout(_left(deadline)):
                response = await self.inner.handle_async_request(request)
        except TimeoutError:
            raise ReplyDeadline(f"no answer within its {says}", request=request) from None
        response.stream = _BoundedBody(response.stream, request, deadline, says, self.max_body_bytes)
        return response

    async def aclose(self) -> None:
        await self.inner.aclose()


def http_client(timeout_s: float = 600.0, max_body_bytes: int | None = None) -> Any:
    """An ``httpx2.AsyncClient`` (the client the provider SDKs use) that fills the current capture
    and bounds each reply (see the module doc). Its owner closes it (``await client.aclose()``)."""
    transport = httpx2.AsyncHTTPTransport(limits=httpx2.Limits(max_connections=1000, max_keepalive_connections=100))
    return httpx2.AsyncClient(timeout=httpx2.Timeout(timeout_s, connect=10.0),
                              transport=BoundedTransport(transport, max_body_bytes),
                              event_hooks={"response": [_on_response]})


def wire_bytes(max_reply_bytes: int) -> int:
    """The most a reply's body may bring on the wire for a reply of ``max_reply_bytes``: a streamed
    reply sends each token in an event of its own (~200 bytes of JSON around a few characters), and
    JSON escapes grow text; beyond this only a broken or hostile server sends."""
    return 64 * max_reply_bytes
