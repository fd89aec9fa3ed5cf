"""RetryModel: waits out rate limits and retries transient failures.

A 429 is waited out for as long as the server says (``Retry-After``, ``retry-after-ms``, or the
``llm_provider-retry-after(-ms)`` a LiteLLM proxy passes on), up to the retry policy's total wait,
jittered, and said on the console; 5xx, timeouts, dropped connections and unusable replies are
retried a bounded number of times with backoff. The SDK's own retries are off (``max_retries=0``),
so every try is visible and recorded. A failure that is not transient is left to the layers above.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Mapping

from pydantic_ai.messages import ModelMessage, ModelResponse
from pydantic_ai.models import Model, ModelRequestParameters
from pydantic_ai.models.wrapper import WrapperModel
from pydantic_ai.settings import ModelSettings

from physlab.llm import failures as F
from physlab.llm.defaults import RetryPolicy
from physlab.llm.meter import RunMeter
from physlab.llm.seam.attempts import current_call
from physlab.llm.seam.decisions import GiveUp, SendAgain
from physlab.llm.seam.role import SeamRole
from physlab.llm.server_limits import refuses_tools, retry_after_s, silent_500


def decide_retry(exc: BaseException, headers: Mapping[str, str], waiting: F.Waiting, *, who: SeamRole,
                 url: str | None, params: ModelRequestParameters, rng: random.Random,
                 wall_left_s: float | None, slots: int | None = None) -> SendAgain | GiveUp:
    """Wait and send again, or give up (with a ModelFailure once the policy is spent; with the
    original error when the failure is not transient). A timed-out try is not sent again to a
    server that generates one request at a time (``slots: 1``): it goes on generating for the
    client that left, and the retry would only queue behind it."""
    kind = F.transient(exc)
    carries_tools = bool(params.function_tools or params.output_tools)
    if kind is None or (carries_tools and (refuses_tools(exc) or silent_500(exc))):
        return GiveUp()  # not transient (a refusal of tools is the output mode's, even as a 5xx)
    if slots == 1 and F.timed_out(exc):
        return GiveUp(who.failure(exc, url, " - not sent again: the server generates one request at a time "
                                            "(slots: 1 in the model registry) and goes on with this one for a "
                                            "while; raise timeout_s, or lower max_output_tokens"))
    hint = retry_after_s(exc, headers) if kind == "rate_limited" else None
    if kind != "rate_limited":
        waiting.failures += 1
        if waiting.failures >= waiting.policy.max_attempts:
            return GiveUp(who.failure(exc, url, f" - failed after {waiting.failures} attempts ({kind})"))
    delay = waiting.delay(hint, rng=rng)
    if delay is None:
        if kind == "rate_limited":
            return GiveUp(who.failure(exc, url, f" - still rate limited after waiting {waiting.waited:.0f}s in "
                                                f"total (the retry policy's max_wait_s)"))
        return GiveUp(who.failure(exc, url, f" - failed after {waiting.failures} attempts ({kind})"))
    if wall_left_s is not None:  # never sleep past the wall budget; the budget layer then stops us
        delay = min(delay, max(0.0, wall_left_s))
    if kind == "rate_limited":
        said = f" (the server asked for {hint:g}s)" if hint is not None else ""
        return SendAgain(f"rate_limited: waiting {delay:.1f}s{said}; will retry", wait_s=delay, rate_limited=True)
    return SendAgain(f"{kind}: will retry in {delay:.1f}s", wait_s=delay)


class RetryModel(WrapperModel):
    def __init__(self, wrapped: Model, *, who: SeamRole, policy: RetryPolicy, meter: RunMeter,
                 rng: random.Random | None = None, slots: int | None = None) -> None:
        super().__init__(wrapped)
        self.who = who
        self.policy = policy
        self.meter = meter
        self.rng = rng or random.Random()
        self.slots = slots

    async def request(self, messages: list[ModelMessage], model_settings: ModelSettings | None,
                      model_request_parameters: ModelRequestParameters) -> ModelResponse:
        call = current_call()
        waiting = F.Waiting(self.policy)
        while True:
            try:
                return await self.wrapped.request(messages, model_settings, model_request_parameters)
            except Exception as exc:
                last = call.last
                decision = decide_retry(exc, last.http.headers if last else {}, waiting, who=self.who,
                                        url=self.who.endpoint or self.wrapped.base_url,
                                        params=model_request_parameters, rng=self.rng,
                                        wall_left_s=self._wall_left(), slots=self.slots)
                if isinstance(decision, GiveUp):
                    if decision.error is None:
                        raise
                    call.settle()
                    raise decision.error from exc
                if decision.rate_limited:
                    self.who.emit("rate_limited", wait_s=round(decision.wait_s, 1),
                                  text=f"waiting for rate limit ({decision.wait_s:.0f}s)")
                call.settle(decision.note)
                if decision.wait_s:
                    await asyncio.sleep(decision.wait_s)

    def _wall_left(self) -> float | None:
        budget = self.meter.budget
        return None if budget.max_wall_s is None else budget.max_wall_s - self.meter.elapsed_s
