"""In-flight slots: each try holds a slot of every one of the run's in-flight limiters while it is
out (pydantic-ai ``ConcurrencyLimitedModel`` around ``ConcurrencyLimiter``\\ s: the run's own cap
first, then the one a sweep shares, so a run waiting on its own cap holds none of the shared
slots), and is counted as in flight in the run's meter (``max_in_flight_seen`` in metrics.json).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from typing import Any

from pydantic_ai.concurrency import AbstractConcurrencyLimiter
from pydantic_ai.messages import ModelMessage, ModelResponse
from pydantic_ai.models import Model, ModelRequestParameters, StreamedResponse
from pydantic_ai.models.concurrency import ConcurrencyLimitedModel
from pydantic_ai.models.wrapper import WrapperModel
from pydantic_ai.settings import ModelSettings

from physlab.llm.meter import RunMeter


class InFlightModel(WrapperModel):
    """Counts the run's tries out at the server (inside every limiter's slot)."""

    def __init__(self, wrapped: Model, *, meter: RunMeter) -> None:
        super().__init__(wrapped)
        self.meter = meter

    async def request(self, messages: list[ModelMessage], model_settings: ModelSettings | None,
                      model_request_parameters: ModelRequestParameters) -> ModelResponse:
        with self.meter.sending():
            return await self.wrapped.request(messages, model_settings, model_request_parameters)

    @asynccontextmanager
    async def request_stream(self, messages: list[ModelMessage], model_settings: ModelSettings | None,
                             model_request_parameters: ModelRequestParameters,
                             run_context: Any = None) -> AsyncIterator[StreamedResponse]:
        with self.meter.sending():
            async with self.wrapped.request_stream(messages, model_settings, model_request_parameters,
                                                   run_context) as stream:
                yield stream


def in_flight_slots(model: Model, limiters: Sequence[AbstractConcurrencyLimiter], meter: RunMeter) -> Model:
    """``model`` behind every limiter (the first listed is taken first), counted in ``meter``."""
    out: Model = InFlightModel(model, meter=meter)
    for limiter in reversed(limiters):
        out = ConcurrencyLimitedModel(out, limiter)
    return out
