"""OneStringModel: the innermost layer of the seam, between the recording and the provider's model.
A user turn made of text parts and cache points (the lab splits its context at the point a prompt
cache would store, ``lab.roles._base.user_content``) reaches an OpenAI-compatible server as one
string: there the cache point buys nothing (those servers cache a repeated prefix by themselves,
or not at all), and a list of parts is what local chat templates mangle (issue #47:
llama-cpp-python's ``chatml-function-calling`` renders it as an HTML-escaped Python list, its
``gemma`` format drops it). A provider that places cache points (Anthropic) gets the parts as they
are. Below the recording, so calls.jsonl and ``replay:`` keep the request as the strategy made it.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import replace
from typing import Any

from pydantic_ai.messages import CachePoint, ModelMessage, ModelRequest, UserPromptPart
from pydantic_ai.models import Model, ModelRequestParameters, StreamedResponse
from pydantic_ai.models.wrapper import WrapperModel
from pydantic_ai.settings import ModelSettings


def places_cache_points(model: Model) -> bool:
    """The provider makes something of a cache point in a user turn (Anthropic's, an OpenAI-compatible
    API whose profile says it takes breakpoints); a model outside the seam's providers is left alone."""
    if model.system != "openai":
        return True
    return bool(model.profile.get("openai_supports_prompt_cache_breakpoints", False))


def one_string(messages: list[ModelMessage]) -> list[ModelMessage]:
    """``messages`` with each user turn of text parts and cache points joined into one string (a turn
    with anything else in it, an image, is left as it is)."""
    out: list[ModelMessage] = []
    for msg in messages:
        if isinstance(msg, ModelRequest) and any(isinstance(p, UserPromptPart) and not isinstance(p.content, str)
                                                 for p in msg.parts):
            msg = replace(msg, parts=[_joined(p) if isinstance(p, UserPromptPart) else p for p in msg.parts])
        out.append(msg)
    return out


def _joined(part: UserPromptPart) -> UserPromptPart:
    content = part.content
    if isinstance(content, str) or not all(isinstance(c, (str, CachePoint)) for c in content):
        return part
    return replace(part, content="".join(c for c in content if isinstance(c, str)))


class OneStringModel(WrapperModel):
    def _form(self, messages: list[ModelMessage]) -> list[ModelMessage]:
        return messages if places_cache_points(self.wrapped) else one_string(messages)

    async def request(self, messages: list[ModelMessage], model_settings: ModelSettings | None,
                      model_request_parameters: ModelRequestParameters) -> Any:
        return await self.wrapped.request(self._form(messages), model_settings, model_request_parameters)

    @asynccontextmanager
    async def request_stream(self, messages: list[ModelMessage], model_settings: ModelSettings | None,
                             model_request_parameters: ModelRequestParameters,
                             run_context: Any = None) -> AsyncIterator[StreamedResponse]:
        async with self.wrapped.request_stream(self._form(messages), model_settings, model_request_parameters,
                                               run_context) as stream:
            yield stream
