"""A dry run of the model request path, for processes about to make many requests (sweep workers).

The first request through pydantic-ai and the OpenAI SDK builds validators, serializers and
request/response classes lazily (~50 ms of CPU on the development VM); made inside a sweep, that
lands on the first cells while every other cell waits for the event loop. ``warm_openai_path``
sends one plain request and one agent request through the same stack -- RecordingModel,
pydantic-ai's OpenAI chat model, the SDK, the HTTP client -- to an in-memory transport that
answers a fixed completion: nothing leaves the process and nothing is recorded to disk.
``client="direct"`` does the same for physlab.llm.direct_openai (registry ``client: direct``),
through its injectable transport; the default warms both, as the caller may not know which one
its models use.
"""

from __future__ import annotations

import json
import time
from typing import Any, Literal

_COMPLETION = {
    "id": "warmup", "object": "chat.completion", "model": "warmup", "created": 0,
    "choices": [{"index": 0, "finish_reason": "stop",
                 "message": {"role": "assistant", "content": "ok"}}],
    "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
}


def _transport() -> Any:
    try:
        import httpx2 as httpx  # the HTTP client the installed OpenAI SDK is built on
    except ImportError:  # pragma: no cover - older SDKs use httpx
        import httpx  # type: ignore[no-redef]

    def reply(request: Any) -> Any:
        body = dict(_COMPLETION, created=int(time.time()))
        return httpx.Response(200, content=json.dumps(body).encode(),
                              headers={"content-type": "application/json"})

    return httpx.MockTransport(reply)


async def _direct_reply(url: str, headers: Any, body: bytes, timeout_s: float) -> tuple[int, dict[str, str], bytes]:
    return 200, {"content-type": "application/json"}, json.dumps(dict(_COMPLETION, created=int(time.time()))).encode()


async def _exercise(bare: Any) -> None:
    from pydantic_ai import Agent

    from physlab.llm.meter import RunMeter
    from physlab.llm.recording import RecordingModel
    from physlab.llm.text import ask_text

    model = RecordingModel(bare, role="warmup", spec="openai:warmup", meter=RunMeter())

    def note(text: str) -> str:
        """Unused: gives the agent request a tool definition to serialize."""
        return text

    await ask_text(model, "warm-up", system="warm-up")
    await Agent(model, instructions="warm-up", tools=[note]).run("warm-up")


async def warm_openai_path(client: Literal["sdk", "direct", "both"] = "both") -> None:
    if client in ("sdk", "both"):
        from openai import AsyncOpenAI, DefaultAsyncHttpxClient
        from pydantic_ai.models.openai import OpenAIChatModel
        from pydantic_ai.providers.openai import OpenAIProvider

        sdk = AsyncOpenAI(base_url="http://warmup.invalid/v1", api_key="warmup", max_retries=0,
                          http_client=DefaultAsyncHttpxClient(transport=_transport()))
        try:
            await _exercise(OpenAIChatModel("warmup", provider=OpenAIProvider(openai_client=sdk)))
        finally:
            await sdk.close()
    if client in ("direct", "both"):
        from physlab.llm.direct_openai import DirectOpenAIModel

        direct = DirectOpenAIModel("warmup", base_url="http://warmup.invalid/v1", api_key="warmup",
                                   transport=_direct_reply)
        try:
            await _exercise(direct)
        finally:
            await direct.aclose()
