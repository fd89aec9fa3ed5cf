"""The tries of one model request, as the seam's layers see them: what each try sent and got back,
what was decided about it, and when its calls.jsonl line is written.

A request the agent makes once may be sent several times (a rate limit waited out, a cap lowered, a
cut reply re-asked or continued, tools moved into the text). Each try is one :class:`Attempt`; the
layer that decides something about a try's outcome (:mod:`physlab.llm.seam.decisions`) *settles*
it with a note, which writes its line and then gives its budget reservation back. A try nobody
decided about is settled when the next one begins or the request ends, so the line always carries
the decision that followed it and the lines keep the order of the tries.

The layers of one request reach its :class:`Call` through a context variable that is set only
while a request is being sent or a stream is being opened, never across a stream's ``yield``: a
stream may be closed from another task or context (pydantic-ai's own wrappers do the same).
Written here because pydantic-ai's wrapper models share nothing per request but its arguments, and
these layers need what each try was sent with and how it ended.
"""

from __future__ import annotations

import contextvars
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from pydantic_ai.messages import ModelMessage, ModelResponse
from pydantic_ai.models import ModelRequestParameters
from pydantic_ai.settings import ModelSettings

from physlab.llm.http_capture import Capture
from physlab.llm.server_limits import estimate_tokens
from physlab.llm.wire import dump_request


@dataclass(eq=False)
class Attempt:
    """One try of a request: set by the layers that send it, written to calls.jsonl when settled."""

    retries: int  # tries of the same request before this one
    sent: bool = False  # it went past the in-flight slots to the model (only a sent try is recorded)
    request: dict[str, Any] | None = None  # as recorded (the messages on the wire, the settings asked for)
    max_tokens: int | None = None  # the output cap it was sent with
    prompt_estimate: int = 0  # its input tokens as estimated before it was sent (for a try that got no usage)
    budget_capped: bool = False  # the budget, not the model's limits, set that cap
    http: Capture = field(default_factory=Capture)
    latency: float = 0.0
    response: ModelResponse | None = None
    error: BaseException | str | None = None  # a string: what the seam itself says (a cancelled try)
    refused: str | None = None  # why the seam refused a reply it received (its body is not stored)
    note: str | None = None
    settled: bool = False
    _on_settle: list[Callable[[Attempt], None]] = field(default_factory=list, repr=False)

    def on_settle(self, fn: Callable[[Attempt], None]) -> None:
        """Run ``fn`` when the try is settled; the last registered runs first (an inner layer's
        line is written before an outer layer's reservation is given back)."""
        self._on_settle.append(fn)

    def settle(self, note: str | None = None) -> None:
        """The try's outcome is decided: ``note`` says what the seam does about it (calls.jsonl)."""
        if self.settled:
            return
        self.settled = True
        if note:
            self.note = note
        callbacks, self._on_settle = self._on_settle, []
        error: BaseException | None = None
        for fn in reversed(callbacks):  # every one runs: a reservation is given back even if a write failed
            try:
                fn(self)
            except BaseException as exc:  # noqa: BLE001 - raised below, after the others ran
                error = error or exc
        if error is not None:
            raise error


@dataclass(eq=False)
class Call:
    """One request the agent made, and its tries (retries, re-asks, continuations)."""

    asked: ModelSettings | None = None  # the settings the strategy asked for (recorded with each try)
    attempts: list[Attempt] = field(default_factory=list)
    _estimates: list[tuple[Any, Any, dict[str, Any], int]] = field(default_factory=list, repr=False)

    @property
    def last(self) -> Attempt | None:
        return self.attempts[-1] if self.attempts else None

    def this_try(self) -> Attempt:
        """The try being prepared: made by the first layer that asks (earlier tries are settled
        first), the same one for every layer until it is sent."""
        last = self.last
        if last is not None and not last.sent and not last.settled:
            return last
        if last is not None:
            last.settle()
        attempt = Attempt(retries=len(self.attempts))
        self.attempts.append(attempt)
        return attempt

    def settle(self, note: str | None = None) -> None:
        """Settle the latest try with ``note`` (a layer's decision about its outcome)."""
        if self.last is not None:
            self.last.settle(note)

    def close(self) -> None:
        """The request is over: every try not yet settled is."""
        for attempt in self.attempts:
            attempt.settle()

    def wire(self, messages: list[ModelMessage], params: ModelRequestParameters) -> tuple[dict[str, Any], int]:
        """The request's JSON messages (what calls.jsonl stores) and a generous estimate of its input
        tokens, tools included; made once per request body however many layers ask."""
        for m, p, dumped, estimate in self._estimates:
            if m is messages and p is params:
                return dumped, estimate
        dumped = dump_request(messages, None, params)
        estimate = estimate_tokens(dumped["messages"]) + estimate_tokens(
            [t.parameters_json_schema for t in (*params.function_tools, *params.output_tools)]
            + ([params.output_object.json_schema, params.prompted_output_template or ""]
               if params.output_object is not None else []))
        self._estimates.append((messages, params, dumped, estimate))
        return dumped, estimate


_CURRENT: contextvars.ContextVar[Call | None] = contextvars.ContextVar("physlab_seam_call", default=None)


def current_call() -> Call:
    """The call of the request being sent (the seam's outermost layer opened it)."""
    call = _CURRENT.get()
    if call is None:
        raise RuntimeError("a model-seam layer was used outside the seam: compose the layers with "
                           "physlab.llm.seam.seam_model")
    return call


@contextmanager
def calling(call: Call) -> Iterator[Call]:
    """Make ``call`` the current one for this block: the whole of a request, or only the opening of
    a stream (never across its ``yield``: its consumer may close it from another context)."""
    token = _CURRENT.set(call)
    try:
        yield call
    finally:
        _CURRENT.reset(token)
