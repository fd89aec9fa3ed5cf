"""DirectOpenAIModel: a lean pydantic-ai Model for OpenAI-compatible chat-completions servers.

pydantic-ai's OpenAIChatModel goes through the openai SDK and its HTTP stack; on the development VM
that costs ~6.6 ms of CPU per request, most of it in the SDK (params transform, request building,
httpx2/httpcore2/anyio). A sweep of hundreds of concurrent cells needs ~2 ms all-in. This model
builds the same JSON body (physlab.llm.direct_openai_messages), POSTs it -- with
physlab.llm.http1 to an ``http://`` server (vLLM, Ollama, a LiteLLM proxy on the LAN), with aiohttp
to an ``https://`` one -- and maps the reply to the same ModelResponse. Opt in per model with
``client: direct`` in the model registry; the SDK path stays the default.

Errors are the ones RecordingModel retries: HTTP >= 400 -> ModelHTTPError (with ``retry_after`` from
``retry-after-ms`` / ``Retry-After``, seconds or an HTTP date), connection failures ->
ModelConnectionError, a transport timeout (the ``timeout`` setting) -> ModelTimeoutError (a
ModelConnectionError, as on the SDK path: ModelRequestTimeout is pydantic-ai's error for its own
``request_timeout`` deadline), a body that is not JSON or has no choices -> UnexpectedModelBehavior.

Streaming is delegated to an OpenAIChatModel built lazily for the same server: it is not on the
sweep's hot path, and an SSE parser is not worth owning.
"""

from __future__ import annotations

import asyncio
import json
import math
import socket
from contextlib import asynccontextmanager, suppress
from datetime import datetime, timezone
from email.utils import parsedate_to_datetime
from typing import Any, AsyncIterator, Awaitable, Callable, Mapping

import aiohttp
import pydantic_core
from pydantic_ai._model_errors import openai_compatible_category  # the SDK path's HTTP error categories
from pydantic_ai.exceptions import (
    ModelConnectionError,
    ModelHTTPError,
    ModelTimeoutError,
    UnexpectedModelBehavior,
)
from pydantic_ai.messages import ModelMessage, ModelResponse
from pydantic_ai.models import Model, ModelRequestParameters, check_allow_model_requests
from pydantic_ai.profiles import ModelProfile, merge_profile
from pydantic_ai.settings import ModelSettings

from physlab.llm.direct_openai_messages import build_body, parse_completion
from physlab.llm.http1 import Http1Pool

# status, headers, body: what a transport returns for one POST (url, headers, body, timeout seconds).
Reply = tuple[int, Mapping[str, str], bytes]
Transport = Callable[[str, Mapping[str, str], bytes, float], Awaitable[Reply]]


def parse_retry_after(headers: Mapping[str, str]) -> float | None:
    """Seconds to wait from ``retry-after-ms`` (OpenAI's, exact) or ``Retry-After`` (seconds or an HTTP date)."""
    h = {k.lower(): v for k, v in headers.items()}
    for key, scale in (("retry-after-ms", 1000.0), ("retry-after", 1.0)):
        raw = (h.get(key) or "").strip()
        try:
            value = float(raw) / scale
        except ValueError:
            continue
        if 0 <= value < math.inf:
            return value
    raw = (h.get("retry-after") or "").strip()
    try:
        when = parsedate_to_datetime(raw)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=timezone.utc)
    return max(0.0, (when - datetime.now(timezone.utc)).total_seconds())


async def _close_on(loop: asyncio.AbstractEventLoop | None, close: Callable[[], Awaitable[None]],
                   sockets: Callable[[], list]) -> bool:
    """Run ``close()`` on ``loop``, the event loop that made what it closes (perhaps not the running
    one). False when that loop is closed: nothing can run there, so the sockets are shut down instead
    (their file descriptors are freed when collected)."""
    if loop is None or loop is asyncio.get_running_loop():
        await close()
    elif loop.is_running():  # still serving in another thread: close it there
        asyncio.run_coroutine_threadsafe(close(), loop)
    elif not loop.is_closed():  # stopped but open: run the close on it, from a helper thread
        await asyncio.to_thread(loop.run_until_complete, close())
    else:
        for sock in sockets():
            with suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
        return False
    return True


async def _retire(session: aiohttp.ClientSession, loop: asyncio.AbstractEventLoop | None) -> None:
    """Close ``session``, made on ``loop``, without leaking its connections."""
    def sockets() -> list:
        conns = getattr(session.connector, "_conns", {})  # aiohttp's pool, only read
        return [proto.transport.get_extra_info("socket") for pooled in list(conns.values())
                for proto, _ in pooled if proto.transport]

    if not await _close_on(loop, session.close, sockets) and session.connector is not None:
        await session.connector.close()  # on a closed loop this only marks it (and the session) closed


class DirectOpenAIModel(Model):
    """OpenAI chat completions with OpenAIChatModel's request/response semantics, over
    physlab.llm.http1 for ``http://`` servers and aiohttp for ``https://`` ones."""

    # As OpenAIChatModel declares them (they shape the profile and prepare_messages).
    _unsupported_file_inputs = frozenset({"video"})
    _relocates_tool_files = True
    unsupported_settings = frozenset({"top_k"})

    def __init__(self, model_name: str, *, base_url: str, api_key: str | None, timeout_s: float = 600.0,
                 transport: Transport | None = None, settings: ModelSettings | None = None,
                 profile: Any = None, http1: bool | None = None) -> None:
        """``transport``, for tests and the warm-up, replaces the HTTP client (no socket is opened).
        ``http1=False`` sends ``http://`` requests with aiohttp too (by default physlab.llm.http1 does)."""
        super().__init__(settings=settings, profile=profile)
        self._model_name = model_name
        self._base_url = base_url.rstrip("/") + "/"  # like the SDK's: ".../v1/"
        self._url = self._base_url + "chat/completions"
        self._api_key = api_key or "api-key-not-set"
        self.timeout_s = timeout_s
        self._transport = transport
        self._headers = {"Authorization": f"Bearer {self._api_key}", "Content-Type": "application/json",
                         "Accept": "application/json"}
        self._session: aiohttp.ClientSession | None = None  # https://
        self._session_loop: asyncio.AbstractEventLoop | None = None
        self._plain = self._url.startswith("http://") and http1 is not False
        self._pool: Http1Pool | None = None  # http://
        self._stream_model: Any = None
        self._stream_loop: asyncio.AbstractEventLoop | None = None
        self._timeouts: dict[float, aiohttp.ClientTimeout] = {}

    @property
    def model_name(self) -> str:
        return self._model_name

    @property
    def system(self) -> str:
        return "openai"

    @property
    def base_url(self) -> str:
        return self._base_url

    def _provider_model_profile(self) -> ModelProfile:
        from pydantic_ai.providers.openai import OpenAIProvider

        return OpenAIProvider.model_profile(self.model_name) or {}

    def _instance_profile_defaults(self, profile: ModelProfile) -> ModelProfile:
        # As OpenAIChatModel: chat completions rejects the 12h cache retention.
        tiers = profile.get("supported_cache_retentions", ())
        if "12h" not in tiers:
            return profile
        return merge_profile(profile, ModelProfile(supported_cache_retentions=tuple(t for t in tiers if t != "12h")))

    def _unsupported_settings(self) -> frozenset[str]:
        return self.unsupported_settings | frozenset(self.profile.get("openai_unsupported_model_settings", ()))

    # ---- the request ------------------------------------------------------------------------
    async def request(self, messages: list[ModelMessage], model_settings: ModelSettings | None,
                      model_request_parameters: ModelRequestParameters) -> ModelResponse:
        check_allow_model_requests()
        prepared, params = self.prepare_request(model_settings, model_request_parameters)
        settings: dict[str, Any] = dict(prepared or {})
        body = build_body(self, messages, settings, params)
        headers = self._headers
        if extra := settings.get("extra_headers"):
            headers = {**headers, **extra}
        timeout = settings.get("timeout")
        timeout_s = float(timeout) if isinstance(timeout, (int, float)) else self.timeout_s
        data = pydantic_core.to_json(body)  # ~4x faster than json.dumps for a 6 KB prompt (8 vs 32 us)
        status, resp_headers, raw = await self._post(headers, data, timeout_s)
        if status >= 400:
            raise self._http_error(status, resp_headers, raw)
        try:
            reply = pydantic_core.from_json(raw)
        except ValueError:  # includes a body that is not UTF-8
            raise UnexpectedModelBehavior(f"Invalid response from openai chat completions endpoint, expected JSON "
                                          f"data (HTTP {status})", raw[:2000].decode(errors="replace")) from None
        return parse_completion(reply, self.profile, self._base_url, self.model_name)

    async def _post(self, headers: Mapping[str, str], data: bytes, timeout_s: float) -> Reply:
        try:
            if self._transport is not None:
                return await self._transport(self._url, headers, data, timeout_s)
            if self._plain:
                pool = self._pool
                if pool is None or pool.loop is not asyncio.get_running_loop():
                    pool = await self._new_pool()
                return await pool.post(self._url, headers, data, timeout_s)
            session = self._session
            if session is None or session.closed or self._session_loop is not asyncio.get_running_loop():
                session = await self._new_session()
            if (timeout := self._timeouts.get(timeout_s)) is None:
                timeout = self._timeouts[timeout_s] = aiohttp.ClientTimeout(total=timeout_s)
            async with session.post(self._url, data=data, headers=headers, timeout=timeout) as resp:
                return resp.status, resp.headers, await resp.read()
        except TimeoutError as exc:  # aiohttp's timeouts are TimeoutErrors (some also connection errors)
            raise ModelTimeoutError(self.model_name, f"Request timed out after {timeout_s:g} s") from exc
        except (aiohttp.ClientError, OSError) as exc:  # refused, reset, server disconnected, bad HTTP (both clients)
            raise ModelConnectionError(self.model_name, f"Connection error: {exc or type(exc).__name__}") from exc

    async def _new_session(self) -> aiohttp.ClientSession:
        """One session per model and event loop; one made on another loop is closed. The new one is
        in place before the first await, so concurrent first requests on a new loop share it."""
        old, old_loop = self._session, self._session_loop
        # No per-host cap (limit=0): PhysLab's in-flight limiter is what bounds concurrent requests.
        session = self._session = aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0, limit_per_host=0))
        self._session_loop = asyncio.get_running_loop()
        if old is not None and not old.closed:
            await _retire(old, old_loop)
        return session

    async def _new_pool(self) -> Http1Pool:
        """As _new_session, for http:// servers."""
        old = self._pool
        pool = self._pool = Http1Pool()
        if old is not None:
            await _close_on(old.loop, old.aclose, old.sockets)
        return pool

    def _http_error(self, status: int, headers: Mapping[str, str], raw: bytes) -> ModelHTTPError:
        text = raw.decode(errors="replace").strip()
        try:
            parsed: Any = json.loads(text)
        except ValueError:
            parsed = text or None
        body = parsed.get("error", parsed) if isinstance(parsed, dict) else parsed  # as the SDK unwraps it
        code = body.get("code") if isinstance(body, dict) else None
        kind = body.get("type") if isinstance(body, dict) else None
        code, kind = (str(code) if code is not None else None), (str(kind) if kind is not None else None)
        return ModelHTTPError.for_category(
            openai_compatible_category(status, code, kind, text), status_code=status, model_name=self.model_name,
            body=body, headers=dict(headers), provider_error_code=code, provider_error_type=kind,
            retry_after=parse_retry_after(headers))

    # ---- streaming and lifetime ---------------------------------------------------------------
    @asynccontextmanager
    async def request_stream(self, messages: list[ModelMessage], model_settings: ModelSettings | None,
                             model_request_parameters: ModelRequestParameters,
                             run_context: Any = None) -> AsyncIterator[Any]:
        # Streaming is not on the sweep's hot path: the SDK model does it (same server, key, timeout).
        model = await self._streaming_model()
        async with model.request_stream(messages, model_settings, model_request_parameters, run_context) as stream:
            yield stream

    async def _streaming_model(self) -> Any:
        loop = asyncio.get_running_loop()
        if self._stream_model is not None and self._stream_loop is loop:
            return self._stream_model
        from openai import AsyncOpenAI
        from pydantic_ai.models.openai import OpenAIChatModel
        from pydantic_ai.providers.openai import OpenAIProvider

        from physlab.llm.models import _http_client

        old = self._stream_model  # made on another event loop: its connections are unusable here
        client = AsyncOpenAI(base_url=self._base_url, api_key=self._api_key, max_retries=0, timeout=self.timeout_s,
                             http_client=_http_client(self.timeout_s))
        model = self._stream_model = OpenAIChatModel(self.model_name, provider=OpenAIProvider(openai_client=client),
                                                     settings=self._settings, profile=self._profile)
        self._stream_loop = loop
        await _close_quietly(old)
        return model

    async def _close_streaming_model(self) -> None:
        model, self._stream_model = self._stream_model, None
        await _close_quietly(model)

    async def aclose(self) -> None:
        """Close the HTTP connections and the streaming fallback's client."""
        session, self._session = self._session, None
        if session is not None and not session.closed:
            await _retire(session, self._session_loop)
        pool, self._pool = self._pool, None
        if pool is not None:
            await _close_on(pool.loop, pool.aclose, pool.sockets)
        await self._close_streaming_model()


async def _close_quietly(model: Any) -> None:
    if model is not None:
        with suppress(Exception):  # its loop may be gone; closing must not mask anything
            await model.client.close()
