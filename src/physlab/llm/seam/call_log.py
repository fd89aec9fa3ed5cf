"""CallLogModel: one calls.jsonl line for every try of a request (answered, failed, refused or
cancelled): tokens as the server counted them (cache reads and writes too, and those of an unusable
reply), the cost and where it came from, the latency (from when the try had its slots), and the
request and response as sent and received, so ``replay:`` can re-serve the run.

A reply leaves this layer with the keys in use redacted (:func:`physlab.llm.redact.redact_reply`):
what is recorded and what every layer and caller above gets (state.json, LOG.md, the run's git
history) never holds the key a careless proxy wrote into it. A stream's chunks reach its caller as
sent (a key split across chunks cannot be redacted without holding the text back); its record is
redacted, and so is each recorded request.

The line is written when the try is settled (see :mod:`physlab.llm.seam.attempts`), so it carries
what the seam decided about it. No line grows past ``max_record_bytes``: a longer one leaves out the
request's messages (then the response), keeps every number, and says so in its note.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

from pydantic_ai.messages import ModelMessage, ModelResponse
from pydantic_ai.models import Model, ModelRequestParameters, StreamedResponse
from pydantic_ai.models.wrapper import WrapperModel
from pydantic_ai.settings import ModelSettings

from physlab.llm import failures as F
from physlab.llm.meter import RunMeter
from physlab.llm.output import is_constrained
from physlab.llm.pricing import Pricer
from physlab.llm.redact import redact_keys_in, redact_reply
from physlab.llm.seam.attempts import Attempt, Call, current_call
from physlab.llm.seam.role import SeamRole
from physlab.llm.usage import CallRecord
from physlab.llm.wire import dump_response, dump_settings

CANCELLED = "cancelled: its answer was no longer needed"
WAIT_NOTICE_S = 60.0  # a request out longer than this says so on the console, and again each time this passes


class CallLogModel(WrapperModel):
    def __init__(self, wrapped: Model, *, who: SeamRole, meter: RunMeter,
                 cost: Pricer | Callable[[ModelResponse], float] | None = None,
                 model_label: Callable[[ModelResponse], str] | None = None,
                 max_record_bytes: int | None = None) -> None:
        super().__init__(wrapped)
        self.who = who
        self.meter = meter
        self._pricer = cost if isinstance(cost, Pricer) else None
        self._cost_fn = None if isinstance(cost, Pricer) else cost
        self._label = model_label
        self.max_record_bytes = max_record_bytes

    # ---- one try --------------------------------------------------------------------------
    def _sending(self, call: Call, messages: list[ModelMessage], settings: ModelSettings | None,
                 params: ModelRequestParameters) -> Attempt:
        attempt = call.this_try()
        attempt.sent = True
        dumped, attempt.prompt_estimate = call.wire(messages, params)
        request = {"messages": dumped["messages"]}
        if call.asked:
            request["settings"] = dump_settings(call.asked)
        request.update((k, v) for k, v in dumped.items() if k != "messages")
        if is_constrained(settings):  # the prompted request, which the server held to the schema
            request["output_mode"] = "constrained"
        attempt.request = request
        attempt.max_tokens = (settings or {}).get("max_tokens")
        attempt.on_settle(self._write)
        return attempt

    async def request(self, messages: list[ModelMessage], model_settings: ModelSettings | None,
                      model_request_parameters: ModelRequestParameters) -> ModelResponse:
        attempt = self._sending(current_call(), messages, model_settings, model_request_parameters)
        start = time.monotonic()
        beat = asyncio.create_task(self._still_waiting(start, attempt.max_tokens))
        try:
            resp = await self.wrapped.request(messages, model_settings, model_request_parameters)
        except asyncio.CancelledError:
            # Its caller no longer wants the answer (an early review set aside): the try is
            # recorded and its reservation given back, then the cancellation goes on.
            self._cancelled(attempt, start)
            raise
        except Exception as exc:
            attempt.latency, attempt.error = time.monotonic() - start, exc
            raise
        finally:
            beat.cancel()
        resp = redact_reply(resp, self.who.secrets)
        attempt.latency, attempt.response = time.monotonic() - start, resp
        return resp

    async def _still_waiting(self, start: float, cap: int | None) -> None:
        """A long request shows it is still under way (a small model on a CPU takes minutes for a long
        prompt): the console's ``waiting`` event, every WAIT_NOTICE_S."""
        while True:
            await asyncio.sleep(WAIT_NOTICE_S)
            waited = time.monotonic() - start
            said = f", up to {cap:,} tokens" if cap else ""
            self.who.emit("waiting", wait_s=round(waited), text=f"{self.who.role}: waiting for the model "
                                                                f"({waited:.0f} s so far{said})")

    @asynccontextmanager
    async def request_stream(self, messages: list[ModelMessage], model_settings: ModelSettings | None,
                             model_request_parameters: ModelRequestParameters,
                             run_context: Any = None) -> AsyncIterator[StreamedResponse]:
        attempt = self._sending(current_call(), messages, model_settings, model_request_parameters)
        start = time.monotonic()
        stream: StreamedResponse | None = None
        try:
            async with self.wrapped.request_stream(messages, model_settings, model_request_parameters,
                                                   run_context) as stream:
                yield stream
        except asyncio.CancelledError:
            self._cancelled(attempt, start, stream)
            raise
        except Exception as exc:
            attempt.error = exc
            raise
        finally:
            attempt.latency = time.monotonic() - start
            if stream is not None and attempt.response is None:
                attempt.response = redact_reply(stream.get(), self.who.secrets)
                if attempt.error is None and attempt.response.state != "complete":
                    attempt.note = f"the stream was closed before its end ({attempt.response.state})"

    def _cancelled(self, attempt: Attempt, start: float, stream: StreamedResponse | None = None) -> None:
        attempt.latency, attempt.error = time.monotonic() - start, CANCELLED
        if stream is not None:
            attempt.response = redact_reply(stream.get(), self.who.secrets)
        attempt.settle()

    # ---- the line -------------------------------------------------------------------------
    def _write(self, attempt: Attempt) -> None:
        if not attempt.sent:
            return
        self.meter.record(self.record(attempt))

    def record(self, attempt: Attempt) -> CallRecord:
        """The calls.jsonl line of a settled try."""
        err = attempt.error
        error = F.describe(err, self.who.secrets) if isinstance(err, BaseException) else err
        rec = CallRecord(role=self.who.role, model=self.who.spec, latency_s=round(attempt.latency, 6),
                         retries=attempt.retries, error=error, note=attempt.note,
                         request=redact_keys_in(attempt.request, self.who.secrets),
                         max_tokens=attempt.max_tokens)
        resp, http = attempt.response, attempt.http
        if resp is not None:
            if self._label is not None:
                rec.model = self._label(resp)
            u = resp.usage
            rec.input_tokens, rec.output_tokens = u.input_tokens, u.output_tokens
            rec.cache_read_tokens, rec.cache_write_tokens = u.cache_read_tokens, u.cache_write_tokens
            rec.finish_reason = resp.finish_reason
            if attempt.refused is None:
                rec.response = dump_response(resp)
        elif http.usage:  # an unusable reply the server still served (and counted)
            rec.input_tokens, rec.output_tokens = http.input_tokens, http.output_tokens
            rec.cache_read_tokens, rec.cache_write_tokens = http.cache_read_tokens, http.cache_write_tokens
        elif F.timed_out(err):
            # No reply and no usage, but the server read the prompt and (a local server goes on
            # generating for a client that left) may spend the whole cap: counted as estimated.
            rec.input_tokens, rec.output_tokens = attempt.prompt_estimate, attempt.max_tokens or 0
            rec.tokens_estimated = True
            said = "tokens estimated: no reply in time (the prompt as estimated, the output cap it was sent with)"
            rec.note = f"{rec.note}; {said}" if rec.note else said
        if resp is not None or http.usage or rec.tokens_estimated:
            rec.cost_usd, rec.price_source = self._price(resp, attempt, rec)
        if self.max_record_bytes:
            fit_line(rec, self.max_record_bytes)
        return rec

    def _price(self, resp: ModelResponse | None, attempt: Attempt, rec: CallRecord) -> tuple[float, str | None]:
        http = attempt.http
        try:
            if self._pricer is not None:
                return self._pricer.price(resp, http.headers, input_tokens=rec.input_tokens,
                                          output_tokens=rec.output_tokens, cache_read=rec.cache_read_tokens,
                                          cache_write=rec.cache_write_tokens)
            if self._cost_fn is not None and resp is not None:
                return float(self._cost_fn(resp)), "replay"
        except Exception:  # noqa: BLE001 - pricing must never break a run
            pass
        return 0.0, None


def fit_line(rec: CallRecord, limit: int) -> None:
    """Keep ``rec``'s JSON line within ``limit`` bytes: leave out the request's messages, then the
    response, saying so in the note (every number stays)."""
    whole = size = len(rec.model_dump_json().encode())
    if size <= limit:
        return
    left_out = []
    if isinstance(rec.request, dict) and "messages" in rec.request:
        rec.request = {k: v for k, v in rec.request.items() if k != "messages"}
        left_out.append("the request's messages")
        size = len(rec.model_dump_json().encode())
    if size > limit and rec.response is not None:
        rec.response = None
        left_out.append("the response")
    what = " and ".join(left_out) or "nothing"
    said = (f"{what} left out of calls.jsonl: the line would have been {whole:,} bytes, "
            f"over max_record_bytes ({limit:,})")
    rec.note = f"{rec.note}; {said}" if rec.note else said
