"""What the HTTP layer saw of one model request, for what the provider SDKs drop: the response
headers (a proxy's stated cost, LiteLLM's ``llm_provider-retry-after``) and the usage block of a
reply the SDK could not turn into a response (a 200 with empty ``choices`` still served tokens).

The model seam (:mod:`physlab.llm.seam.capture`) opens a :func:`capture` around each request, and
around the opening of each stream (never across its ``yield``: a stream may be closed from another
context); the provider's HTTP client (an ``httpx2.AsyncClient`` built by :func:`http_client`) fills
it from a response hook. The hook runs in the task that sent the request, so a context variable
ties the two together without any shared state between concurrent requests.
"""

from __future__ import annotations

import contextvars
import json
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Iterator


@dataclass
class Capture:
    status: int | None = None
    headers: dict[str, str] = field(default_factory=dict)
    usage: dict[str, Any] | None = None  # the body's `usage` block (JSON answers only)
    url: str | None = None

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


@contextmanager
def capture() -> Iterator[Capture]:
    """Collect what the HTTP client sees while this block sends a request."""
    cap = Capture()
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
    except Exception:  # noqa: BLE001 - what the SDK makes of a bad body is its own business
        return
    if isinstance(body, dict) and isinstance(body.get("usage"), dict):
        cap.usage = body["usage"]


def http_client(timeout_s: float = 600.0) -> Any:
    """An ``httpx2.AsyncClient`` (the client the provider SDKs use) that fills the current capture.
    Its owner closes it (``await client.aclose()``)."""
    import httpx2

    return httpx2.AsyncClient(timeout=httpx2.Timeout(timeout_s, connect=10.0),
                              limits=httpx2.Limits(max_connections=1000, max_keepalive_connections=100),
                              event_hooks={"response": [_on_response]})
