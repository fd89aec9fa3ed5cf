"""LimitsModel: recovers from the server's limits on a reply's length and on the context.

- Within a known context window, a request's output cap leaves room for its prompt.
- A 400 saying the cap is too large lowers it (the model's largest cap is kept for the rest of the
  run); one saying the context is too large lowers the cap when a useful reply still fits, and
  otherwise raises ContextTooLong so the caller assembles a shorter context.
- A reply cut by ``length`` is asked again with a higher cap (never above the model's declared or
  discovered maximum), then a text reply is continued (the model asked for the rest, the parts
  joined); one cut by the budget's cap is returned as it is; one that ran to the end of a known
  window (a server that holds only the prompt against it stops the reply there, below the cap) asks
  the caller for a shorter prompt.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, replace
from typing import Any

from pydantic_ai.messages import ModelMessage, ModelRequest, ModelResponse, TextPart, ToolCallPart, UserPromptPart
from pydantic_ai.models import Model, ModelRequestParameters, StreamedResponse
from pydantic_ai.models.wrapper import WrapperModel
from pydantic_ai.settings import ModelSettings
from pydantic_ai.usage import RequestUsage

from physlab.llm import failures as F
from physlab.llm.defaults import ModelDefaults
from physlab.llm.errors import ContextTooLong
from physlab.llm.output import is_constrained
from physlab.llm.seam.attempts import Attempt, Call, current_call
from physlab.llm.seam.decisions import AskRest, GiveUp, Keep, LowerCap, OnCutReply, RaiseCap, Shorten
from physlab.llm.seam.role import SeamRole
from physlab.llm.server_limits import LimitRefusal, limit_refusal

CONTINUE_PROMPT = ("Your previous reply was cut off by the output limit. Continue it exactly where it stopped: "
                   "no repetition, no preamble.")
MAX_ADJUSTMENTS = 6  # lowered caps for one request before its refusal is final
WINDOW_SLACK = 8  # tokens a server's count of prompt + reply may fall short of a window it filled


@dataclass
class ModelLimits:
    """What is known in this run of one model's limits: declared in the registry, or discovered from
    its server's refusals (shared by the roles that use the model)."""

    declared_max_output: int | None = None
    discovered_max_output: int | None = None
    window: int | None = None
    # The server's prompt tokens per token of PhysLab's estimate (which errs high, for budgets):
    # learned from each answered try, so a cap fitted into the window is not cut for nothing.
    scale: float = 0.75

    def learn_scale(self, prompt_tokens: int, estimate: int) -> None:
        if prompt_tokens > 0 and estimate > 0:
            self.scale = min(1.0, max(0.2, prompt_tokens / estimate))

    @property
    def max_output(self) -> int | None:
        known = [x for x in (self.declared_max_output, self.discovered_max_output) if x]
        return min(known) if known else None


@dataclass
class Answered:
    """One answered try and what set the cap it was sent with."""

    response: ModelResponse
    attempt: Attempt | None
    window_capped: bool  # the context window, not the model's limits or the budget, set that cap


# ---- decisions ------------------------------------------------------------------------------------

def decide_refusal(refusal: LimitRefusal, cap: int | None, min_reply: int) -> LowerCap | Shorten | GiveUp:
    """A 400 saying the request is too large, sent with ``cap``."""
    if refusal.kind == "cap":
        new = refusal.max_output or (cap // 2 if cap else None)
        if new and (cap is None or new < cap):
            return LowerCap(new, f"max_tokens={cap} refused; the model allows at most {new}", max_output=new)
        return GiveUp()
    room = None
    if refusal.window and refusal.prompt_tokens is not None:
        room = refusal.window - refusal.prompt_tokens
    elif cap:
        room = cap // 2
    if room is not None and room >= min(min_reply, cap or min_reply) and (cap is None or room < cap):
        return LowerCap(room, f"context window exceeded; sent again with max_tokens={room}")
    return Shorten("the prompt does not fit the context window; the caller may shorten it",
                   notice="prompt too long for the context window", detail="",
                   window=refusal.window, prompt_tokens=refusal.prompt_tokens)


def decide_cut(reply: Answered, *, joined: bool, raised: int, continued: int, defaults: ModelDefaults,
               limits: ModelLimits, params: ModelRequestParameters, held: bool = False) -> OnCutReply:
    """A reply cut by ``length``: ``joined`` when it is already a continuation; ``held`` when the
    server held it to a schema (a grammar starts again from the top: such a reply is not continued)."""
    resp, attempt = reply.response, reply.attempt
    cap = attempt.max_tokens if attempt else None
    cut_at_cap = bool(cap) and resp.usage.output_tokens >= 0.9 * (cap or 0)
    if attempt is not None and attempt.budget_capped and cut_at_cap:
        return Keep("truncated at the budget's cap (finish_reason=length); returned as is")
    used = resp.usage.input_tokens + resp.usage.output_tokens
    ran_to_window = bool(limits.window and resp.usage.input_tokens and used >= limits.window - WINDOW_SLACK)
    if (reply.window_capped and cut_at_cap or ran_to_window) and not joined:
        # No larger cap fits beside this prompt, and a continuation would only make the prompt
        # longer: the caller has to send a shorter one.
        return Shorten("truncated where the context window ends (finish_reason=length)",
                       notice="the reply does not fit the context window",
                       detail=f"the window leaves {cap} tokens for the reply and it was cut there",
                       window=limits.window, prompt_tokens=resp.usage.input_tokens)
    new_cap = raised_cap(cap, resp, limits.max_output)
    if raised < defaults.truncation_retries and new_cap is not None and not joined:
        return RaiseCap(new_cap, f"truncated (finish_reason=length); retrying with max_tokens={new_cap}")
    if continued < defaults.continuations and not held and continuable(resp, params):
        return AskRest("truncated at the model's output limit (finish_reason=length); asking for the rest")
    return Keep("truncated (finish_reason=length); returned as is")


def raised_cap(cap: int | None, resp: ModelResponse, ceiling: int | None) -> int | None:
    """Twice the limit the reply was cut at (the cap sent, or the server's own when it cut
    sooner), never above the model's declared or discovered maximum."""
    served = resp.usage.output_tokens
    current = min(cap, served) if (cap and served) else (cap or served)
    if not current:
        return None
    new = 2 * int(current)
    if ceiling is not None:
        new = min(new, ceiling)
    return new if new > int(current) else None


def continuable(resp: ModelResponse, params: ModelRequestParameters) -> bool:
    """A cut reply of text only (prose, or JSON in the text) can be continued; a cut tool call cannot."""
    if any(isinstance(p, ToolCallPart) for p in resp.parts):
        return False
    if not any(isinstance(p, TextPart) and p.content for p in resp.parts):
        return False
    return params.allow_text_output or params.output_mode in ("native", "prompted")


def wanted_cap(settings: ModelSettings, call_cap: int | None, limits: ModelLimits) -> int | None:
    asked = settings.get("max_tokens")
    caps = [x for x in (asked, limits.max_output if asked else None, call_cap) if x]
    return int(min(caps)) if caps else None


def fit_window(want: int | None, estimate: int, window: int | None, min_reply: int,
               scale: float = 0.75) -> int | None:
    """Within a known context window, the cap leaves room for the prompt (``estimate`` scaled to the
    server's own count as learned from its replies; the server's count, when it refuses, is exact)."""
    if not window:
        return want
    # The estimate errs high (for budgets); here it should not. Never below a useful reply: when
    # that does not fit, the server's refusal says exactly by how much.
    room = max(window - int(estimate * scale), min_reply)
    return room if want is None or want > room else want


# ---- the layer ------------------------------------------------------------------------------------

class LimitsModel(WrapperModel):
    def __init__(self, wrapped: Model, *, who: SeamRole, defaults: ModelDefaults, limits: ModelLimits) -> None:
        super().__init__(wrapped)
        self.who = who
        self.defaults = defaults
        self.limits = limits

    async def request(self, messages: list[ModelMessage], model_settings: ModelSettings | None,
                      model_request_parameters: ModelRequestParameters) -> ModelResponse:
        call = current_call()
        params = model_request_parameters
        settings: ModelSettings = dict(model_settings or {})  # type: ignore[assignment]
        sent = await self._send(call, messages, settings, params)
        pieces: list[ModelResponse] = []  # the continued parts of a cut text reply
        raised = continued = 0
        while sent.response.finish_reason == "length":
            decision = decide_cut(sent, joined=bool(pieces), raised=raised, continued=continued,
                                  defaults=self.defaults, limits=self.limits, params=params,
                                  held=is_constrained(settings))
            _settle(sent, decision.note)
            if isinstance(decision, Keep):
                break
            if isinstance(decision, Shorten):
                self.who.emit("context_too_long", text=f"{self.who.role}: {decision.notice}")
                raise ContextTooLong(self.who.role, window=decision.window, prompt_tokens=decision.prompt_tokens,
                                     detail=decision.detail)
            if isinstance(decision, RaiseCap):
                raised += 1
                settings = {**settings, "max_tokens": decision.cap}
                sent = await self._send(call, messages, settings, params)
                continue
            continued += 1
            pieces.append(sent.response)
            sent = await self._send(call, _continuation(messages, pieces), settings, ModelRequestParameters())
        else:
            if pieces:
                _settle(sent, "continued: the last part of a reply cut at the output limit")
        return _joined(pieces, sent.response) if pieces else sent.response

    @asynccontextmanager
    async def request_stream(self, messages: list[ModelMessage], model_settings: ModelSettings | None,
                             model_request_parameters: ModelRequestParameters,
                             run_context: Any = None) -> AsyncIterator[StreamedResponse]:
        """A stream is sent with the cap a request would start with (it is not re-asked or continued)."""
        send: dict[str, Any] = dict(model_settings or {})
        if want := wanted_cap(send, None, self.limits):  # type: ignore[arg-type]
            send["max_tokens"] = want
        async with self.wrapped.request_stream(messages, send, model_request_parameters,  # type: ignore[arg-type]
                                               run_context) as stream:
            yield stream

    async def _send(self, call: Call, messages: list[ModelMessage], settings: ModelSettings,
                    params: ModelRequestParameters) -> Answered:
        """Send until the server takes the request's size: a refused cap or context is lowered."""
        call_cap: int | None = None  # lowered for this request by a refusal
        adjustments = 0
        while True:
            wanted = wanted_cap(settings, call_cap, self.limits)
            want = wanted
            estimate = call.wire(messages, params)[1]
            if self.limits.window:
                want = fit_window(wanted, estimate, self.limits.window, self.defaults.min_reply_tokens,
                                  self.limits.scale)
            send = dict(settings)
            if want:
                send["max_tokens"] = want
            else:
                send.pop("max_tokens", None)
            try:
                resp = await self.wrapped.request(messages, send, params)  # type: ignore[arg-type]
            except Exception as exc:
                refusal = limit_refusal(exc)
                if refusal is None:
                    raise
                attempt = call.last
                decision = decide_refusal(refusal, attempt.max_tokens if attempt else want,
                                          self.defaults.min_reply_tokens)
                if refusal.window:
                    self.limits.window = refusal.window
                if isinstance(decision, LowerCap):
                    adjustments += 1
                    if adjustments > MAX_ADJUSTMENTS:
                        raise
                    if (learned := decision.max_output) is not None:
                        known = self.limits.discovered_max_output
                        self.limits.discovered_max_output = min(learned, known or learned)
                    call.settle(decision.note)
                    call_cap = decision.cap
                    continue
                if isinstance(decision, Shorten):
                    call.settle(decision.note)
                    self.who.emit("context_too_long", text=f"{self.who.role}: {decision.notice}")
                    raise ContextTooLong(self.who.role, window=decision.window, prompt_tokens=decision.prompt_tokens,
                                         detail=F.describe(exc, self.who.secrets)) from exc
                raise
            attempt = call.last
            self.limits.learn_scale(resp.usage.input_tokens, estimate)
            window_capped = want is not None and (wanted is None or want < wanted)
            return Answered(resp, attempt, window_capped and not (attempt is not None and attempt.budget_capped))


def _settle(reply: Answered, note: str | None) -> None:
    if reply.attempt is not None:
        reply.attempt.settle(note)


def _continuation(messages: list[ModelMessage], pieces: list[ModelResponse]) -> list[ModelMessage]:
    last_request = next((m for m in reversed(messages) if isinstance(m, ModelRequest)), None)
    instructions = last_request.instructions if last_request is not None else None
    text = "".join(p.content for r in pieces for p in r.parts if isinstance(p, TextPart))
    return [*messages, ModelResponse(parts=[TextPart(text)]),
            ModelRequest(parts=[UserPromptPart(CONTINUE_PROMPT)], instructions=instructions)]


def _joined(pieces: list[ModelResponse], last: ModelResponse) -> ModelResponse:
    """The cut reply and its continuations as one response (usage summed)."""
    texts = [p.content for r in [*pieces, last] for p in r.parts if isinstance(p, TextPart)]
    usage = RequestUsage()
    for r in [*pieces, last]:
        usage.incr(r.usage)
    return replace(pieces[0], parts=[TextPart("".join(texts))], usage=usage, finish_reason=last.finish_reason)
