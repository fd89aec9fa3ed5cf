"""RecordingModel: the pydantic-ai WrapperModel every strategy's requests go through.

Per role, it
- reserves the request's share of the run's Budget before sending it (its ``max_tokens`` is no
  larger than what the token and cost caps leave; nothing is sent when less than a useful reply is
  left: BudgetExceeded),
- holds a slot of each of the run's in-flight limiters (pydantic-ai ``ConcurrencyLimiter``s: the
  run's own cap, then the one a sweep shares) while a request is out,
- sends the request in the model's output mode (physlab.llm.output); in ``native`` and
  ``prompted`` mode the tools travel in the text (physlab.llm.text_tools), and ``auto`` falls back to
  ``prompted`` when the server refuses tools or its model ignores them,
- waits out rate limits (the server's Retry-After, or LiteLLM's ``llm_provider-retry-after``, up to
  the retry policy's total wait, jittered) and retries 5xx, timeouts, dropped connections and
  unusable replies a bounded number of times (the SDK's own retries are off: ``max_retries=0``, so
  every attempt is visible and recorded here),
- recovers from the server's limits: a reply cut by ``length`` is re-asked with a higher cap (never
  above the model's declared or discovered maximum), then continued; a 400 saying the cap is too
  large lowers it; one saying the context is too large lowers the cap when that fits, and otherwise
  raises ContextTooLong so the caller assembles a shorter context,
- appends one CallRecord per request (success or failure) to calls.jsonl: tokens as the server
  counted them (cache reads and writes too, and those of an unusable reply), the cost and where it
  came from, and the request and response as sent and received, so ``replay:`` can re-serve the run.

Malformed tool-call JSON and unknown tool names need nothing special here: pydantic-ai's agent
answers them with a corrective message on the next request, which goes through this wrapper (and is
recorded) like any other.
"""

from __future__ import annotations

import asyncio
import random
import time
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field, replace
from typing import Any, AsyncIterator, Callable, Sequence

from pydantic_ai.concurrency import AbstractConcurrencyLimiter
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    UserPromptPart,
)
from pydantic_ai.models import Model, ModelRequestParameters
from pydantic_ai.models.wrapper import WrapperModel
from pydantic_ai.settings import ModelSettings
from pydantic_ai.usage import RequestUsage

from physlab.llm import failures as F
from physlab.llm.defaults import ModelDefaults, RetryPolicy
from physlab.llm.errors import BudgetExceeded, ContextTooLong, ModelFailure, ReplayError
from physlab.llm.http_capture import Capture, capture
from physlab.llm.meter import Grant, RunMeter
from physlab.llm.output import OutputModeState
from physlab.llm.pricing import Pricer
from physlab.llm.server_limits import estimate_tokens, limit_refusal, refuses_tools, retry_after_s
from physlab.llm.text_tools import TextToolsRequest, encode, needs_translation
from physlab.llm.usage import CallRecord
from physlab.llm.wire import dump_request, dump_response

__all__ = ["ModelLimits", "RecordingModel", "RetryPolicy"]

CONTINUE_PROMPT = ("Your previous reply was cut off by the output limit. Continue it exactly where it stopped: "
                   "no repetition, no preamble.")


@dataclass
class ModelLimits:
    """What is known in this run of one model's limits: declared in the registry, or discovered from
    its server's refusals (shared by the roles that use the model)."""

    declared_max_output: int | None = None
    discovered_max_output: int | None = None
    window: int | None = None

    @property
    def max_output(self) -> int | None:
        known = [x for x in (self.declared_max_output, self.discovered_max_output) if x]
        return min(known) if known else None


@dataclass
class _Sent:
    """One answered request, not yet recorded (its reservation still held)."""

    raw: ModelResponse  # as the server answered (recorded and replayed)
    request: dict[str, Any]
    latency: float
    cap: int | None
    budget_capped: bool  # the budget, not the model's limits, set that cap
    grant: Grant
    http: Capture
    prior: int
    tools: TextToolsRequest | None
    wire_messages: list[ModelMessage] = field(default_factory=list)
    window_capped: bool = False  # the context window, not the model's limits, set that cap


class RecordingModel(WrapperModel):
    """Wraps one provider/scripted/replay model for one role of one run."""

    def __init__(self, wrapped: Model, *, role: str, spec: str, meter: RunMeter,
                 limiters: Sequence[AbstractConcurrencyLimiter] = (), defaults: ModelDefaults | None = None,
                 retry: RetryPolicy | None = None, cost: Pricer | Callable[[ModelResponse], float] | None = None,
                 model_label: Callable[[ModelResponse], str] | None = None,
                 output_state: OutputModeState | None = None, limits: ModelLimits | None = None,
                 events: Callable[..., None] | None = None, endpoint: str | None = None,
                 key_note: str | None = None, rng: random.Random | None = None) -> None:
        super().__init__(wrapped)
        self.role = role
        self.spec = spec
        self.meter = meter
        self.limiters = tuple(limiters)
        self.defaults = defaults or ModelDefaults()
        self.retry = retry or self.defaults.retry or RetryPolicy()
        self._pricer = cost if isinstance(cost, Pricer) else None
        self._cost_fn = None if isinstance(cost, Pricer) else cost
        self._label = model_label or (lambda r: spec)
        self.output_state = output_state or OutputModeState()
        self.limits = limits or ModelLimits(declared_max_output=self.defaults.truncation_max_output_tokens,
                                            window=self.defaults.context_window)
        self._events = events or (lambda *a, **k: None)
        self.endpoint = endpoint
        self.key_note = key_note
        self._rng = rng or random.Random()
        self.output_misses = 0  # replies that ignored a required tool call (for the error's hint)

    # ---- plumbing -------------------------------------------------------------------------
    def emit(self, kind: str, **data: Any) -> None:
        try:
            self._events(kind, role=self.role, model=self.spec, **data)
        except Exception:  # noqa: BLE001 - a broken display must not stop a request
            pass

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
        inner = self.wrapped
        if getattr(inner, "system", None) != "openai":
            return False
        profile = inner.profile
        return not (profile.get("supports_thinking", False) or profile.get("thinking_always_enabled", False))

    def _price(self, resp: ModelResponse | None, http: Capture) -> tuple[float, str | None]:
        try:
            if self._pricer is not None:
                return self._pricer.price(resp, http.headers, input_tokens=http.input_tokens,
                                          output_tokens=http.output_tokens, cache_read=http.cache_read_tokens,
                                          cache_write=http.cache_write_tokens)
            if self._cost_fn is not None and resp is not None:
                return float(self._cost_fn(resp)), "replay"
        except Exception:  # noqa: BLE001 - pricing must never break a run
            pass
        return 0.0, None

    def _record(self, *, request: dict[str, Any], resp: ModelResponse | None, latency: float, retries: int,
                http: Capture | None = None, cap: int | None = None, error: str | None = None,
                note: str | None = None) -> CallRecord:
        http = http or Capture()
        rec = CallRecord(role=self.role, model=self.spec, latency_s=round(latency, 6), retries=retries,
                         error=error, note=note, request=request, max_tokens=cap)
        if resp is not None:
            rec.model = self._label(resp)
            u = resp.usage
            rec.input_tokens, rec.output_tokens = u.input_tokens, u.output_tokens
            rec.cache_read_tokens, rec.cache_write_tokens = u.cache_read_tokens, u.cache_write_tokens
            rec.finish_reason = resp.finish_reason
            rec.response = dump_response(resp)
        elif http.usage:  # an unusable reply the server still served (and counted)
            rec.input_tokens, rec.output_tokens = http.input_tokens, http.output_tokens
            rec.cache_read_tokens, rec.cache_write_tokens = http.cache_read_tokens, http.cache_write_tokens
        if resp is not None or http.usage:
            rec.cost_usd, rec.price_source = self._price(resp, http)
        return self.meter.record(rec)

    def _finish(self, sent: _Sent, note: str | None = None) -> None:
        """Record an answered request and give its reservation back."""
        try:
            self._record(request=sent.request, resp=sent.raw, latency=sent.latency, retries=sent.prior,
                         http=sent.http, cap=sent.cap, note=note)
        finally:
            self.meter.release()
            self.meter.give_back(sent.grant)

    # ---- one request, as the agent sees it ----------------------------------------------------
    async def request(self, messages: list[ModelMessage], model_settings: ModelSettings | None,
                      model_request_parameters: ModelRequestParameters) -> ModelResponse:
        params = model_request_parameters
        settings: ModelSettings = {**self._base_settings(), **(model_settings or {})}  # type: ignore[misc]
        sent = await self._send(messages, settings, params, model_settings)
        first = sent
        pieces: list[ModelResponse] = []  # the continued parts of a cut text reply
        raised = continued = 0
        prior = sent.prior + 1
        while sent.raw.finish_reason == "length":
            cut_at_cap = bool(sent.cap) and sent.raw.usage.output_tokens >= 0.9 * (sent.cap or 0)
            if sent.budget_capped and cut_at_cap:
                self._finish(sent, "truncated at the budget's cap (finish_reason=length); returned as is")
                break
            if sent.window_capped and cut_at_cap and not pieces:
                # No larger cap fits beside this prompt, and a continuation would only make the
                # prompt longer: the caller has to send a shorter one.
                self._finish(sent, "truncated where the context window ends (finish_reason=length)")
                self.emit("context_too_long", text=f"{self.role}: the reply does not fit the context window")
                raise ContextTooLong(self.role, window=self.limits.window, prompt_tokens=sent.raw.usage.input_tokens,
                                     detail=f"the window leaves {sent.cap} tokens for the reply and it was cut there")
            new_cap = self._raised_cap(sent.cap, sent.raw)
            if raised < self.defaults.truncation_retries and new_cap is not None and not pieces:
                self._finish(sent, f"truncated (finish_reason=length); retrying with max_tokens={new_cap}")
                raised += 1
                settings = {**settings, "max_tokens": new_cap}  # type: ignore[misc]
                sent = first = await self._send(messages, settings, params, model_settings, prior=prior)
                prior = sent.prior + 1
                continue
            if continued < self.defaults.continuations and self._continuable(sent, params):
                self._finish(sent, "truncated at the model's output limit (finish_reason=length); "
                                   "asking for the rest")
                continued += 1
                pieces.append(sent.raw)
                sent = await self._send(self._continuation(first, pieces), settings,
                                        ModelRequestParameters(), model_settings, prior=prior, plain=True)
                prior = sent.prior + 1
                continue
            self._finish(sent, "truncated (finish_reason=length); returned as is")
            break
        else:
            self._finish(sent, "continued: the last part of a reply cut at the output limit" if pieces else None)
        resp = self._joined(first, pieces, sent) if pieces else sent.raw
        if first.tools is not None:
            resp = first.tools.decode(resp)
        return resp

    def _continuable(self, sent: _Sent, params: ModelRequestParameters) -> bool:
        """A cut reply of text only (prose, or JSON in the text) can be continued; a cut tool call cannot."""
        if any(isinstance(p, ToolCallPart) for p in sent.raw.parts):
            return False
        if not any(isinstance(p, TextPart) and p.content for p in sent.raw.parts):
            return False
        return sent.tools is not None or params.allow_text_output or params.output_mode in ("native", "prompted")

    @staticmethod
    def _continuation(first: _Sent, pieces: list[ModelResponse]) -> list[ModelMessage]:
        last_request = next((m for m in reversed(first.wire_messages) if isinstance(m, ModelRequest)), None)
        instructions = last_request.instructions if last_request is not None else None
        text = "".join(p.content for r in pieces for p in r.parts if isinstance(p, TextPart))
        return [*first.wire_messages, ModelResponse(parts=[TextPart(text)]),
                ModelRequest(parts=[UserPromptPart(CONTINUE_PROMPT)], instructions=instructions)]

    @staticmethod
    def _joined(first: _Sent, pieces: list[ModelResponse], last: _Sent) -> ModelResponse:
        """The cut reply and its continuations as one response (usage summed)."""
        texts = [p.content for r in [*pieces, last.raw] for p in r.parts if isinstance(p, TextPart)]
        usage = RequestUsage()
        for r in [*pieces, last.raw]:
            usage.incr(r.usage)
        return replace(first.raw if not pieces else pieces[0], parts=[TextPart("".join(texts))], usage=usage,
                       finish_reason=last.raw.finish_reason)

    def _raised_cap(self, cap: int | None, resp: ModelResponse) -> int | None:
        """Twice the limit the reply was cut at (the cap sent, or the server's own when it cut
        sooner), never above the model's declared or discovered maximum."""
        served = resp.usage.output_tokens
        current = min(cap, served) if (cap and served) else (cap or served)
        if not current:
            return None
        new = 2 * int(current)
        if (ceiling := self.limits.max_output) is not None:
            new = min(new, ceiling)
        return new if new > int(current) else None

    # ---- sending, with retries and the server's limits ----------------------------------------
    async def _send(self, messages: list[ModelMessage], settings: ModelSettings, params: ModelRequestParameters,
                    asked: ModelSettings | None, *, prior: int = 0, plain: bool = False) -> _Sent:
        """Send one request until the server answers it: waits, retries, lowered caps and the
        output-mode fallback happen here (each failed try recorded). The answer is returned
        unrecorded, its reservation held (see :meth:`_finish`)."""
        waiting = F.Waiting(self.retry)
        call_cap: int | None = None  # lowered for this request by a context refusal
        adjustments = 0
        while True:
            mode = self.output_state.mode
            tools = encode(messages, params, mode) if (mode != "tool" and not plain and needs_translation(params)) else None
            wire_messages, wire_params = (tools.messages, tools.params) if tools else (messages, params)
            request = dump_request(wire_messages, asked, wire_params)
            wanted = want = self._wanted_cap(settings, call_cap)
            estimate = estimate_tokens(request["messages"]) + estimate_tokens(
                [t.parameters_json_schema for t in (*wire_params.function_tools, *wire_params.output_tools)]
                + ([wire_params.output_object.json_schema, wire_params.prompted_output_template or ""]
                   if wire_params.output_object is not None else []))
            want = self._fit_window(want, estimate)
            window_capped = want is not None and (wanted is None or want < wanted)
            grant = await self._reserve(estimate, want)
            cap = grant.max_tokens if grant.max_tokens is not None else want
            budget_capped = grant.max_tokens is not None and (want is None or grant.max_tokens < want)
            send = dict(settings)
            if cap:
                send["max_tokens"] = cap
            else:
                send.pop("max_tokens", None)
            start = time.monotonic()
            with capture() as http:
                try:
                    async with self._slot():
                        start = time.monotonic()
                        raw = await self.wrapped.request(wire_messages, send, wire_params)  # type: ignore[arg-type]
                except asyncio.CancelledError:
                    # Its caller no longer wants the answer (an early review set aside): the try is
                    # recorded and its reservation given back, then the cancellation goes on.
                    self.meter.release()
                    try:
                        self._record(request=request, resp=None, latency=time.monotonic() - start, retries=prior,
                                     http=http, cap=cap, error="cancelled: its answer was no longer needed")
                    finally:
                        self.meter.give_back(grant)
                    raise
                except Exception as exc:
                    latency = time.monotonic() - start
                    failed_http = http
                    outcome: Any = exc
                else:
                    latency = time.monotonic() - start
                    outcome = None
            if outcome is None:
                if tools is None and self._ignores_tools(raw, wire_params):
                    reason = "the model answered in text where a tool call was required"
                    if self.output_state.fall_back(reason):
                        self._finish(_Sent(raw, request, latency, cap, budget_capped, grant, http, prior, None),
                                     "tools ignored; output mode auto -> prompted for the rest of the run")
                        prior += 1
                        continue
                    self.output_misses += 1
                return _Sent(raw, request, latency, cap, budget_capped, grant, http, prior, tools, wire_messages,
                             window_capped=window_capped and not budget_capped)

            exc = outcome
            self.meter.release()
            try:
                action, note, delay = self._on_failure(exc, failed_http, waiting, wire_params, cap, tools is not None)
                if action == "lower_cap":
                    adjustments += 1
                    call_cap = delay  # the new cap for this request
                    if adjustments > 6:
                        action, note = "raise", None
                self._record(request=request, resp=None, latency=latency, retries=prior, http=failed_http,
                             cap=cap, error=F.describe(exc), note=note)
            finally:
                self.meter.give_back(grant)
            prior += 1
            if action == "context":
                self.emit("context_too_long", text=f"{self.role}: prompt too long for the context window")
                raise ContextTooLong(self.role, window=delay.window, prompt_tokens=delay.prompt_tokens,
                                     detail=F.describe(exc)) from exc
            if action == "raise":
                raise self._final_error(exc, waiting) from exc
            if action == "wait" and delay:
                await asyncio.sleep(delay)

    def _on_failure(self, exc: BaseException, http: Capture, waiting: F.Waiting, params: ModelRequestParameters,
                    cap: int | None, translated: bool) -> tuple[str, str | None, Any]:
        """(action, note for calls.jsonl, delay or new cap): ``raise``, ``again`` (now), ``wait``
        (delay seconds) or ``lower_cap`` (to the value given)."""
        if isinstance(exc, (BudgetExceeded, ReplayError)):
            return "raise", None, None
        had_tools = bool(params.function_tools or params.output_tools) and not translated
        if had_tools and refuses_tools(exc):
            if self.output_state.fall_back(f"the server refused tool calls: {F.describe(exc)}"):
                return "again", "tools refused by the server; output mode auto -> prompted for the rest of the run", None
            if self.output_state.mode != "tool":  # another request of the run fell back meanwhile
                return "again", "tools refused; sent again in the run's fallback output mode", None
            return "raise", None, None
        refusal = limit_refusal(exc)
        if refusal is not None:
            return self._on_limit(refusal, cap)
        kind = F.transient(exc)
        if kind is None:
            return "raise", None, None
        hint = retry_after_s(exc, http.headers) if kind == "rate_limited" else None
        if kind != "rate_limited":
            waiting.failures += 1
            if waiting.failures >= self.retry.max_attempts:
                return "raise", None, None
        delay = waiting.delay(hint, rng=self._rng)
        if delay is None:
            return "raise", None, None
        budget = self.meter.budget
        if budget.max_wall_s is not None:  # never sleep past the wall budget; reserve() then stops us
            delay = min(delay, max(0.0, budget.max_wall_s - self.meter.elapsed_s))
        if kind == "rate_limited":
            self.emit("rate_limited", wait_s=round(delay, 1), text=f"waiting for rate limit ({delay:.0f}s)")
            said = f" (the server asked for {hint:g}s)" if hint is not None else ""
            return "wait", f"rate_limited: waiting {delay:.1f}s{said}; will retry", delay
        return "wait", f"{kind}: will retry in {delay:.1f}s", delay

    def _on_limit(self, refusal: Any, cap: int | None) -> tuple[str, str | None, Any]:
        minimum = self.defaults.min_reply_tokens
        if refusal.window:
            self.limits.window = refusal.window
        if refusal.kind == "cap":
            new = refusal.max_output or (cap // 2 if cap else None)
            if new and (cap is None or new < cap):
                self.limits.discovered_max_output = min(new, self.limits.discovered_max_output or new)
                return "lower_cap", f"max_tokens={cap} refused; the model allows at most {new}", new
            return "raise", None, None
        room = None
        if refusal.window and refusal.prompt_tokens is not None:
            room = refusal.window - refusal.prompt_tokens
        elif cap:
            room = cap // 2
        if room is not None and room >= min(minimum, cap or minimum) and (cap is None or room < cap):
            return "lower_cap", f"context window exceeded; sent again with max_tokens={room}", room
        return "context", "the prompt does not fit the context window; the caller may shorten it", refusal

    def _final_error(self, exc: BaseException, waiting: F.Waiting) -> BaseException:
        if isinstance(exc, (BudgetExceeded, ReplayError)):
            return exc
        url = self.endpoint or getattr(self.wrapped, "base_url", None)
        if refuses_tools(exc):
            return ModelFailure(f"{self.role}: the server{f' at {url}' if url else ''} refused tool calls "
                                f"({F.describe(exc)}); {F.TOOLS_HINT}")
        kind = F.transient(exc)
        cause = F.named_cause(exc, role=self.role, url=url, key_note=self.key_note, model=self.spec)
        if kind == "rate_limited":
            return ModelFailure(f"{cause} - still rate limited after waiting {waiting.waited:.0f}s in total "
                                f"(the retry policy's max_wait_s)")
        if kind is not None:
            return ModelFailure(f"{cause} - failed after {waiting.failures} attempts ({kind})")
        return ModelFailure(cause)

    def _ignores_tools(self, raw: ModelResponse, params: ModelRequestParameters) -> bool:
        """A reply without the tool call the request required (the output tool, text not allowed)."""
        return (bool(params.output_tools) and not params.allow_text_output and raw.finish_reason != "length"
                and not any(isinstance(p, ToolCallPart) for p in raw.parts))

    def _wanted_cap(self, settings: ModelSettings, call_cap: int | None) -> int | None:
        caps = [x for x in (settings.get("max_tokens"), self.limits.max_output if settings.get("max_tokens") else None,
                            call_cap) if x]
        return int(min(caps)) if caps else None

    def _fit_window(self, want: int | None, estimate: int) -> int | None:
        """Within a known context window, the cap leaves room for the prompt (estimated generously
        here; the server's own count, when it refuses, is exact)."""
        window = self.limits.window
        if not window:
            return want
        # The estimate errs high (for budgets); here it should not. Never below a useful reply: when
        # that does not fit, the server's refusal says exactly by how much.
        room = max(window - int(estimate * 0.75), self.defaults.min_reply_tokens)
        return room if want is None or want > room else want

    async def _reserve(self, estimate: int, want: int | None) -> Grant:
        usd_in = usd_out = 0.0
        if self._pricer is not None and self.meter.budget.max_cost_usd is not None:
            usd_in, usd_out = self._pricer.per_token()
        want_output = want if want is not None else self.limits.max_output
        return await self.meter.reserve(input_tokens=estimate, want_output=want_output,
                                        min_reply=self.defaults.min_reply_tokens,
                                        usd_per_input=usd_in, usd_per_output=usd_out)

    # ---- streaming ----------------------------------------------------------------------------
    @asynccontextmanager
    async def request_stream(self, messages: list[ModelMessage], model_settings: ModelSettings | None,
                             model_request_parameters: ModelRequestParameters,
                             run_context: Any = None) -> AsyncIterator[Any]:
        """Streamed requests are reserved, limited and recorded like the others but not retried,
        continued or translated (a stream that already yielded text cannot be transparently
        restarted)."""
        settings: ModelSettings = {**self._base_settings(), **(model_settings or {})}  # type: ignore[misc]
        request = dump_request(messages, model_settings, model_request_parameters)
        want = self._wanted_cap(settings, None)
        grant = await self._reserve(estimate_tokens(request["messages"]), want)
        if grant.max_tokens is not None:
            settings = {**settings, "max_tokens": grant.max_tokens}  # type: ignore[misc]
        start = time.monotonic()
        try:
            with capture() as http:
                async with self._slot():
                    async with self.wrapped.request_stream(messages, settings, model_request_parameters,
                                                           run_context) as stream:
                        yield stream
                    resp = stream.get()
        except BaseException as exc:
            self.meter.release()
            try:
                self._record(request=request, resp=None, latency=time.monotonic() - start, retries=0,
                             error=F.describe(exc))
            finally:
                self.meter.give_back(grant)
            raise
        self.meter.release()
        try:
            self._record(request=request, resp=resp, latency=time.monotonic() - start, retries=0, http=http,
                         cap=settings.get("max_tokens"))
        finally:
            self.meter.give_back(grant)

