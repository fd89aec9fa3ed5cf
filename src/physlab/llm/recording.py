"""RecordingModel: the pydantic-ai WrapperModel every strategy's requests go through.

Per role, it
- enforces the run's Budget before each request (BudgetExceeded, nothing sent),
- holds a slot of each of the run's in-flight limiters (pydantic-ai ``ConcurrencyLimiter``s: the
  run's own cap, then the one a sweep shares) while a request is out,
- retries 429 (honouring Retry-After), 5xx, timeouts, connection errors and empty/invalid replies a
  bounded number of times (the provider SDK's own retries are switched off: ``max_retries=0``, so
  every attempt is visible and recorded here),
- re-asks a reply truncated at the token cap (finish_reason ``length``) with a larger cap, per the
  model registry, and records that it did,
- appends one CallRecord per request (success or failure) to calls.jsonl, with the full request and
  response so ``replay:`` can re-serve the run.

Malformed tool-call JSON and unknown tool names need nothing special here: pydantic-ai's agent
answers them with a RetryPromptPart on the next request, which goes through this wrapper (and is
recorded) like any other.
"""

from __future__ import annotations

import asyncio
import json
import time
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from typing import Any, AsyncIterator, Callable, Sequence

from pydantic_ai.concurrency import AbstractConcurrencyLimiter
from pydantic_ai.exceptions import (
    ContentFilterError,
    ModelAPIError,
    ModelConnectionError,
    ModelHTTPError,
    ModelRequestTimeout,
    UnexpectedModelBehavior,
)
from pydantic_ai.messages import ModelMessage, ModelMessagesTypeAdapter, ModelResponse
from pydantic_ai.models import Model, ModelRequestParameters
from pydantic_ai.models.wrapper import WrapperModel
from pydantic_ai.settings import ModelSettings

from physlab.llm.defaults import ModelDefaults
from physlab.llm.errors import BudgetExceeded, ModelFailure, ReplayError
from physlab.llm.meter import RunMeter
from physlab.llm.usage import CallRecord


@dataclass
class RetryPolicy:
    """Bounded retries for transient failures. ``max_attempts`` counts the first try."""

    max_attempts: int = 4
    backoff_s: float = 1.0  # first delay when the server gave no Retry-After; doubles each time
    max_backoff_s: float = 30.0
    max_retry_after_s: float = 120.0  # a longer Retry-After is capped to this


def dump_response(resp: ModelResponse) -> dict[str, Any]:
    return ModelMessagesTypeAdapter.dump_python([resp], mode="json")[0]


def load_response(data: dict[str, Any]) -> ModelResponse:
    msg = ModelMessagesTypeAdapter.validate_python([data])[0]
    assert isinstance(msg, ModelResponse)
    return msg


def dump_request(messages: list[ModelMessage], settings: ModelSettings | None,
                 params: ModelRequestParameters | None) -> dict[str, Any]:
    out: dict[str, Any] = {"messages": ModelMessagesTypeAdapter.dump_python(messages, mode="json")}
    if settings:
        out["settings"] = json.loads(json.dumps(dict(settings), default=str))
    if params is not None:
        out["tools"] = [t.name for t in params.function_tools]
        out["output_tools"] = [t.name for t in params.output_tools]
    return out


_VOLATILE_KEYS = frozenset({"timestamp", "run_id", "conversation_id", "model_id"})


def normalize_messages(dumped: Any) -> Any:
    """A dumped message list without the fields that differ between two runs of the same
    conversation (timestamps, run ids) - what replay compares to detect divergence."""
    if isinstance(dumped, dict):
        return {k: normalize_messages(v) for k, v in dumped.items() if k not in _VOLATILE_KEYS}
    if isinstance(dumped, list):
        return [normalize_messages(v) for v in dumped]
    return dumped


def _transient(exc: BaseException) -> str | None:
    """A short kind for a failure worth retrying, None for one that is not."""
    if isinstance(exc, (BudgetExceeded, ReplayError, ContentFilterError)):
        return None
    if isinstance(exc, ModelHTTPError):
        if exc.status_code == 429:
            return "rate_limited"
        if exc.status_code >= 500 or exc.status_code in (408, 409):
            return f"http_{exc.status_code}"
        return None
    if isinstance(exc, (ModelConnectionError, ModelRequestTimeout)):
        return "connection"
    if isinstance(exc, ModelAPIError):
        return "api_error"
    if isinstance(exc, (UnexpectedModelBehavior, IndexError)):  # e.g. empty `choices`
        return "invalid_reply"
    return None


def _describe(exc: BaseException) -> str:
    text = str(exc).splitlines()[0] if str(exc) else ""
    return f"{type(exc).__name__}: {text}"[:500]


CostFn = Callable[[ModelResponse], float]


class RecordingModel(WrapperModel):
    """Wraps one provider/scripted/replay model for one role of one run."""

    def __init__(self, wrapped: Model, *, role: str, spec: str, meter: RunMeter,
                 limiters: Sequence[AbstractConcurrencyLimiter] = (), defaults: ModelDefaults | None = None,
                 retry: RetryPolicy | None = None, cost: CostFn | None = None,
                 model_label: Callable[[ModelResponse], str] | None = None) -> None:
        super().__init__(wrapped)
        self.role = role
        self.spec = spec
        self.meter = meter
        self.limiters = tuple(limiters)
        self.defaults = defaults or ModelDefaults()
        self.retry = retry or RetryPolicy()
        self._cost = cost or (lambda r: 0.0)
        self._label = model_label or (lambda r: spec)

    @asynccontextmanager
    async def _slot(self) -> AsyncIterator[None]:
        """One request's hold on every limiter, the run's own first (a run waiting on its own cap
        holds none of the shared slots). Taken here rather than by wrapping the model in pydantic-ai's
        ConcurrencyLimitedModel so that the recorded latency leaves out the wait for a slot."""
        async with AsyncExitStack() as stack:
            for limiter in self.limiters:
                await limiter.acquire(f"model:{self.spec}")
                stack.callback(limiter.release)
            with self.meter.sending():
                yield

    # Settings the seam always applies underneath what the strategy asked for.
    def _base_settings(self) -> ModelSettings:
        s: ModelSettings = {"max_retries": 0, "timeout": self.defaults.timeout_s}
        if self.defaults.max_output_tokens:
            s["max_tokens"] = self.defaults.max_output_tokens
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
        inner = self.wrapped
        if getattr(inner, "system", None) != "openai":
            return False
        profile = inner.profile
        return not (profile.get("supports_thinking", False) or profile.get("thinking_always_enabled", False))

    def _record(self, *, request: dict[str, Any], resp: ModelResponse | None, latency: float,
                retries: int, error: str | None = None, note: str | None = None) -> CallRecord:
        rec = CallRecord(role=self.role, model=self.spec, latency_s=round(latency, 6), retries=retries,
                         error=error, note=note, request=request)
        if resp is not None:
            rec.model = self._label(resp)
            rec.input_tokens = resp.usage.input_tokens
            rec.output_tokens = resp.usage.output_tokens
            rec.finish_reason = resp.finish_reason
            rec.response = dump_response(resp)
            try:
                rec.cost_usd = float(self._cost(resp))
            except Exception:  # pricing must never break a run
                rec.cost_usd = 0.0
        return self.meter.record(rec)

    def _delay(self, exc: BaseException, attempt: int) -> float:
        ra = getattr(exc, "retry_after", None)
        if ra is not None:
            delay = min(float(ra), self.retry.max_retry_after_s)
        else:
            delay = min(self.retry.backoff_s * (2 ** (attempt - 1)), self.retry.max_backoff_s)
        b = self.meter.budget
        if b.max_wall_s is not None:  # never sleep past the wall budget; admit() then stops us
            delay = min(delay, max(0.0, b.max_wall_s - self.meter.elapsed_s))
        return max(0.0, delay)

    async def request(self, messages: list[ModelMessage], model_settings: ModelSettings | None,
                      model_request_parameters: ModelRequestParameters) -> ModelResponse:
        settings: ModelSettings = {**self._base_settings(), **(model_settings or {})}  # type: ignore[misc]
        request = dump_request(messages, model_settings, model_request_parameters)
        failures = 0
        length_retries = 0
        prior = 0  # attempts before this one (failed or truncated), recorded as `retries`
        while True:
            self.meter.admit()
            start = time.monotonic()
            try:
                async with self._slot():
                    start = time.monotonic()
                    resp = await self.wrapped.request(messages, settings, model_request_parameters)
            except Exception as exc:
                latency = time.monotonic() - start
                self.meter.release()
                kind = _transient(exc)
                failures += 1
                last = kind is None or failures >= self.retry.max_attempts
                self._record(request=request, resp=None, latency=latency, retries=prior,
                             error=_describe(exc), note=None if last else f"{kind}: will retry")
                prior += 1
                if isinstance(exc, (BudgetExceeded, ReplayError)):
                    raise
                if kind is None:
                    raise ModelFailure(f"{self.role}: model request failed: {_describe(exc)}") from exc
                if last:
                    raise ModelFailure(f"{self.role}: model request failed after {failures} attempts "
                                       f"({kind}): {_describe(exc)}") from exc
                await asyncio.sleep(self._delay(exc, failures))
                continue
            latency = time.monotonic() - start
            try:
                if resp.finish_reason == "length" and length_retries < self.defaults.truncation_retries:
                    new_cap = self._raised_cap(settings, resp)
                    if new_cap is not None:
                        self._record(request=request, resp=resp, latency=latency, retries=prior,
                                     note=f"truncated (finish_reason=length); retrying with max_tokens={new_cap}")
                        settings = {**settings, "max_tokens": new_cap}  # type: ignore[misc]
                        length_retries += 1
                        prior += 1
                        continue
                note = "truncated (finish_reason=length); returned as is" if resp.finish_reason == "length" else None
                self._record(request=request, resp=resp, latency=latency, retries=prior, note=note)
                return resp
            finally:
                self.meter.release()

    def _raised_cap(self, settings: ModelSettings, resp: ModelResponse) -> int | None:
        current = settings.get("max_tokens") or self.defaults.max_output_tokens or resp.usage.output_tokens
        if not current:
            return None
        new = 2 * int(current)
        ceiling = self.defaults.truncation_max_output_tokens
        if ceiling is not None:
            new = min(new, ceiling)
        return new if new > int(current) else None

    @asynccontextmanager
    async def request_stream(self, messages: list[ModelMessage], model_settings: ModelSettings | None,
                             model_request_parameters: ModelRequestParameters,
                             run_context: Any = None) -> AsyncIterator[Any]:
        """Streamed requests are recorded and limited like the others but not retried (a stream
        that already yielded text cannot be transparently restarted)."""
        settings: ModelSettings = {**self._base_settings(), **(model_settings or {})}  # type: ignore[misc]
        request = dump_request(messages, model_settings, model_request_parameters)
        self.meter.admit()
        start = time.monotonic()
        try:
            async with self._slot():
                async with self.wrapped.request_stream(messages, settings, model_request_parameters,
                                                       run_context) as stream:
                    yield stream
                resp = stream.get()
        except BaseException as exc:
            self.meter.release()
            self._record(request=request, resp=None, latency=time.monotonic() - start, retries=0,
                         error=_describe(exc))
            raise
        self.meter.release()
        self._record(request=request, resp=resp, latency=time.monotonic() - start, retries=0)
