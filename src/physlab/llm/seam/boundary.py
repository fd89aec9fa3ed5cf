"""SeamModel: the outermost layer of a role's model seam, the model a strategy is given.

It opens each request's :class:`~physlab.llm.seam.attempts.Call` (the ledger the layers below share)
and closes it when the request is over, so every try is recorded; applies the settings the seam
always sends under the strategy's own (the SDK's retries off: the seam retries and records every
try; the registry's timeout, output cap (else, at an OpenAI-compatible server, the role's default
one), prompt cache and reasoning effort); and turns a failure no
layer recovered from into one ModelFailure line naming the cause, the server and what to try.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from typing import Any

from pydantic_ai.messages import ModelMessage, ModelResponse
from pydantic_ai.models import Model, ModelRequestParameters, StreamedResponse
from pydantic_ai.models.wrapper import WrapperModel
from pydantic_ai.settings import ModelSettings

from physlab.llm.defaults import ModelDefaults
from physlab.llm.output_caps import default_output_cap
from physlab.llm.seam.attempts import Call, calling
from physlab.llm.seam.role import SeamRole, is_named


class SeamModel(WrapperModel):
    """One role's model: the layers of the seam around the provider's (or a scripted or replayed) model."""

    def __init__(self, wrapped: Model, *, who: SeamRole, defaults: ModelDefaults) -> None:
        super().__init__(wrapped)
        self.who = who
        self.defaults = defaults

    @property
    def role(self) -> str:
        return self.who.role

    @property
    def spec(self) -> str:
        return self.who.spec

    # Settings the seam always applies underneath what the strategy asked for.
    def base_settings(self) -> ModelSettings:
        s: ModelSettings = {"max_retries": 0, "timeout": self.defaults.timeout_s}
        if self.defaults.max_output_tokens:
            s["max_tokens"] = self.defaults.max_output_tokens
        elif self.who.endpoint is not None and self.wrapped.system == "openai":
            # An OpenAI-compatible server may have no cap of its own and let a model that does not stop
            # run to the end of its window (physlab.llm.output_caps); a provider's own API caps by model.
            s["max_tokens"] = default_output_cap(self.who.role)
        if self.defaults.prompt_cache is not None:
            s["cache"] = self.defaults.prompt_cache  # type: ignore[typeddict-item]
        if (effort := self.defaults.reasoning_effort) is not None:
            s["thinking"] = effort  # type: ignore[typeddict-item]
            if isinstance(effort, str) and self._effort_not_mapped():
                # pydantic-ai drops `thinking` for a model its profiles do not know to reason (every
                # name served by vLLM or another OpenAI-compatible server: qwen3-32b, gpt-oss-120b,
                # ...); the registry asked for this level, so the request carries it as the
                # OpenAI API's own field and the server decides.
                s["openai_reasoning_effort"] = effort  # type: ignore[typeddict-unknown-key]
        return s

    def _effort_not_mapped(self) -> bool:
        if self.wrapped.system != "openai":
            return False
        profile = self.wrapped.profile
        return not (profile.get("supports_thinking", False) or profile.get("thinking_always_enabled", False))

    def _named(self, exc: Exception) -> Exception:
        return exc if is_named(exc) else self.who.failure(exc, url=self.who.endpoint or self.wrapped.base_url)

    async def request(self, messages: list[ModelMessage], model_settings: ModelSettings | None,
                      model_request_parameters: ModelRequestParameters) -> ModelResponse:
        settings: ModelSettings = {**self.base_settings(), **(model_settings or {})}
        call = Call(asked=model_settings)
        try:
            with calling(call):
                return await self.wrapped.request(messages, settings, model_request_parameters)
        except Exception as exc:
            named = self._named(exc)
            if named is exc:
                raise
            raise named from exc
        finally:
            call.close()

    @asynccontextmanager
    async def request_stream(self, messages: list[ModelMessage], model_settings: ModelSettings | None,
                             model_request_parameters: ModelRequestParameters,
                             run_context: Any = None) -> AsyncIterator[StreamedResponse]:
        """A streamed request goes through the same layers (budget, slots, recording) but is not
        retried, re-asked, continued or translated: a stream that already gave text cannot be
        transparently restarted."""
        settings: ModelSettings = {**self.base_settings(), **(model_settings or {})}
        call = Call(asked=model_settings)
        try:
            async with AsyncExitStack() as stack:
                try:
                    with calling(call):  # only while the layers open the stream (see seam.attempts)
                        stream = await stack.enter_async_context(self.wrapped.request_stream(
                            messages, settings, model_request_parameters, run_context))
                except Exception as exc:
                    named = self._named(exc)
                    if named is exc:
                        raise
                    raise named from exc
                yield stream
        finally:
            call.close()
