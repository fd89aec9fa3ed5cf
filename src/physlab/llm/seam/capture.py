"""HttpCaptureModel: keeps what the HTTP layer saw of each try (physlab.llm.http_capture): the
response headers (a proxy's stated cost, LiteLLM's ``llm_provider-retry-after``) and the usage
block of a reply the SDK could not use. For a stream, the capture is open only while the stream is
opened (its headers arrive then; its usage comes in the events the SDK reads)."""

from __future__ import annotations

from contextlib import AsyncExitStack, asynccontextmanager
from typing import Any, AsyncIterator

from pydantic_ai.messages import ModelMessage, ModelResponse
from pydantic_ai.models import ModelRequestParameters, StreamedResponse
from pydantic_ai.models.wrapper import WrapperModel
from pydantic_ai.settings import ModelSettings

from physlab.llm.http_capture import capture
from physlab.llm.seam.attempts import current_call


class HttpCaptureModel(WrapperModel):
    async def request(self, messages: list[ModelMessage], model_settings: ModelSettings | None,
                      model_request_parameters: ModelRequestParameters) -> ModelResponse:
        attempt = current_call().last
        with capture() as http:
            if attempt is not None:
                attempt.http = http
            return await self.wrapped.request(messages, model_settings, model_request_parameters)

    @asynccontextmanager
    async def request_stream(self, messages: list[ModelMessage], model_settings: ModelSettings | None,
                             model_request_parameters: ModelRequestParameters,
                             run_context: Any = None) -> AsyncIterator[StreamedResponse]:
        attempt = current_call().last
        async with AsyncExitStack() as stack:
            with capture() as http:  # never across the yield: the stream may be closed from another context
                if attempt is not None:
                    attempt.http = http
                stream = await stack.enter_async_context(self.wrapped.request_stream(
                    messages, model_settings, model_request_parameters, run_context))
            yield stream
