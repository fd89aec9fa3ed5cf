"""BudgetModel: reserves each try's share of the run's Budget before it is sent.

The try goes out with a ``max_tokens`` no larger than what the token and cost caps leave after the
requests in flight set aside theirs (:meth:`physlab.llm.meter.RunMeter.reserve`); nothing is sent
when less than a useful reply is left (BudgetExceeded). The reservation is held until the try's
calls.jsonl line is written (so the run's totals already hold what it used), then given back -
also when the try failed or was cancelled.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from pydantic_ai.messages import ModelMessage, ModelResponse
from pydantic_ai.models import Model, ModelRequestParameters, StreamedResponse
from pydantic_ai.models.wrapper import WrapperModel
from pydantic_ai.settings import ModelSettings

from physlab.llm.meter import Grant, RunMeter
from physlab.llm.pricing import Pricer
from physlab.llm.seam.attempts import Call, current_call
from physlab.llm.seam.limits import ModelLimits


class BudgetModel(WrapperModel):
    def __init__(self, wrapped: Model, *, meter: RunMeter, limits: ModelLimits, min_reply_tokens: int,
                 pricer: Pricer | None = None) -> None:
        super().__init__(wrapped)
        self.meter = meter
        self.limits = limits
        self.min_reply_tokens = min_reply_tokens
        self.pricer = pricer

    async def _reserved(self, call: Call, messages: list[ModelMessage], settings: ModelSettings | None,
                        params: ModelRequestParameters) -> dict[str, Any]:
        """Reserve for the next try of ``call``; the settings to send it with."""
        attempt = call.this_try()  # an earlier try is settled (its reservation given back) first
        _, estimate = call.wire(messages, params)
        send: dict[str, Any] = dict(settings or {})
        want = send.get("max_tokens")
        usd_in = usd_out = 0.0
        if self.pricer is not None and self.meter.budget.max_cost_usd is not None:
            usd_in, usd_out = self.pricer.per_token()
        grant = await self.meter.reserve(input_tokens=estimate,
                                         want_output=want if want is not None else self.limits.max_output,
                                         min_reply=self.min_reply_tokens, usd_per_input=usd_in,
                                         usd_per_output=usd_out)
        attempt.on_settle(lambda _: self._give_back(grant))
        attempt.budget_capped = grant.max_tokens is not None and (want is None or grant.max_tokens < want)
        cap = grant.max_tokens if grant.max_tokens is not None else want
        if cap:
            send["max_tokens"] = cap
        else:
            send.pop("max_tokens", None)
        return send

    def _give_back(self, grant: Grant) -> None:
        self.meter.release()
        self.meter.give_back(grant)

    async def request(self, messages: list[ModelMessage], model_settings: ModelSettings | None,
                      model_request_parameters: ModelRequestParameters) -> ModelResponse:
        send = await self._reserved(current_call(), messages, model_settings, model_request_parameters)
        return await self.wrapped.request(messages, send, model_request_parameters)  # type: ignore[arg-type]

    @asynccontextmanager
    async def request_stream(self, messages: list[ModelMessage], model_settings: ModelSettings | None,
                             model_request_parameters: ModelRequestParameters,
                             run_context: Any = None) -> AsyncIterator[StreamedResponse]:
        send = await self._reserved(current_call(), messages, model_settings, model_request_parameters)
        async with self.wrapped.request_stream(messages, send, model_request_parameters,  # type: ignore[arg-type]
                                               run_context) as stream:
            yield stream
