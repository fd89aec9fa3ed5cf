"""HttpCaptureModel: keeps what the HTTP layer saw of each try (physlab.llm.http_capture): the
response headers (a proxy's stated cost, LiteLLM's ``llm_provider-retry-after``) and the usage
block of a reply the SDK could not use. For a stream, the capture is open only while the stream is
opened (its headers arrive then; its usage comes in the events the SDK reads).

It also sets each try's deadline, which the HTTP client holds the whole reply to: the registry's
``timeout_s``, or the end of the run's wall budget when that comes first (a request in flight
when ``--max-wall`` runs out is cut, so the wall cap binds like the others)."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from typing import Any

from pydantic_ai.messages import ModelMessage, ModelResponse
from pydantic_ai.models import Model, ModelRequestParameters, StreamedResponse
from pydantic_ai.models.wrapper import WrapperModel
from pydantic_ai.settings import ModelSettings

from physlab.llm.http_capture import capture
from physlab.llm.meter import RunMeter
from physlab.llm.seam.attempts import current_call


class HttpCaptureModel(WrapperModel):
    def __init__(self, wrapped: Model, *, timeout_s: float | None = None, meter: RunMeter | None = None) -> None:
        super().__init__(wrapped)
        self.timeout_s = timeout_s
        self.meter = meter

    def _deadline(self) -> tuple[float | None, str]:
        """When this try's reply must have arrived whole, and what set that."""
        now = time.monotonic()
        ends = [(now + self.timeout_s, f"timeout_s ({self.timeout_s:g} s, model registry)")] if self.timeout_s else []
        if self.meter is not None and (wall := self.meter.budget.max_wall_s) is not None:
            ends.append((now + max(0.0, wall - self.meter.elapsed_s), f"run's wall budget (--max-wall {wall:g})"))
        return min(ends) if ends else (None, "timeout_s")

    async def request(self, messages: list[ModelMessage], model_settings: ModelSettings | None,
                      model_request_parameters: ModelRequestParameters) -> ModelResponse:
        attempt = current_call().last
        with capture(*self._deadline()) as http:
            if attempt is not None:
                attempt.http = http
            return await self.wrapped.request(messages, model_settings, model_request_parameters)

    @asynccontextmanager
    async def request_stream(self, messages: list[ModelMessage], model_settings: ModelSettings | None,
                             model_request_parameters: ModelRequestParameters,
                             run_context: Any = None) -> AsyncIterator[StreamedResponse]:
        attempt = current_call().last
        async with AsyncExitStack() as stack:
            with capture(*self._deadline()) as http:  # never across the yield: the stream may be closed from another context
                if attempt is not None:
                    attempt.http = http
                stream = await stack.enter_async_context(self.wrapped.request_stream(
                    messages, model_settings, model_request_parameters, run_context))
            yield stream
