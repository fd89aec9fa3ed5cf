"""What a run reports while it goes, as typed events: one pydantic model per kind, and :data:`Event`,
their union (discriminated by ``kind``). The runner, the strategies (the lab included) and the
model seam send them through ``RunEnvironment.events``; the consoles (:mod:`physlab.run.console`),
the live views and the Python API's ``events`` callback take them.

A sink is called with an event (``sink(Step(strategy="rsa", step="aggregate"))``). The older form,
``sink(kind, **data)`` -- what the Python API documents for its callback, and what the model seam
still sends -- is read into the same models by :func:`as_event` (a kind this module does not know
becomes an :class:`Other`), and :func:`legacy` turns an event back into it. An event's fields are
those its sender set (``data()``), so a line of ``--console json`` holds what was said, no defaults.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError


class RunEvent(BaseModel):
    """An event: its ``kind``, and the fields its sender set (what else it said rides along)."""

    model_config = ConfigDict(frozen=True, extra="allow")

    kind: str

    def data(self) -> dict[str, Any]:
        """The fields the sender set, without ``kind`` (what ``events(kind, **data)`` is called with)."""
        return self.model_dump(exclude={"kind"}, exclude_unset=True)


class _Totals(RunEvent):
    """The run's usage so far (its running totals), on the events that carry it."""

    calls: int | None = None
    tokens: int | None = None
    cost_usd: float | None = None


class _Progress(RunEvent):
    """A strategy's own progress; what else it says (``population``, ``passed``, ...) rides along."""

    strategy: str | None = None


# -- the runner's ------------------------------------------------------------------------------

class RunStarted(RunEvent):
    kind: Literal["run_started"] = "run_started"
    strategy: str
    model: str
    problem_id: str
    workspace: str


class CallDone(_Totals):
    """A model request came back (``failed``: with no response); the run's totals after it."""

    kind: Literal["usage"] = "usage"
    role: str | None = None
    failed: bool = False


class RunFinished(_Totals):
    kind: Literal["run_finished"] = "run_finished"
    status: str
    stop_reason: str = ""
    verdict: str | None = None
    wall_s: float | None = None


# -- the model seam's --------------------------------------------------------------------------

class Notice(RunEvent):
    """Something the user should know (a resume's server, a key not sent, a parameter's protocol)."""

    kind: Literal["notice"] = "notice"
    text: str
    role: str | None = None
    model: str | None = None


class RateLimited(RunEvent):
    """A request waits out the server's rate limit."""

    kind: Literal["rate_limited"] = "rate_limited"
    text: str
    wait_s: float | None = None
    role: str | None = None
    model: str | None = None


class StillWaiting(RunEvent):
    """A request has been out a long while (said every minute): the model is still being waited for."""

    kind: Literal["waiting"] = "waiting"
    text: str
    wait_s: float | None = None
    role: str | None = None
    model: str | None = None


class OutputModeChanged(RunEvent):
    """A model's output mode fell back (auto: tools refused -> prompted)."""

    kind: Literal["output_mode"] = "output_mode"
    text: str
    role: str | None = None
    model: str | None = None


class ContextTooLong(RunEvent):
    """A prompt was too long for the model's window; it is sent again shorter."""

    kind: Literal["context_too_long"] = "context_too_long"
    text: str
    role: str | None = None
    model: str | None = None


# -- a strategy's progress ---------------------------------------------------------------------

class Step(_Progress):
    """What the strategy does now (``step``), or a turn of it (SCALAR: ``turn``, ``score``); the
    fields in the order a line of progress shows them."""

    kind: Literal["step"] = "step"
    step: str | None = None
    image: str | None = None            # PhysicsMinions' Visual studio: the figure at hand
    iteration: int | None = None
    turn: int | None = None             # SCALAR
    score: float | None = None
    passed: bool | None = None
    stage: str | None = None
    consecutive: int | None = None      # PhysicsMinions: passes in a row


class Round(_Progress):
    kind: Literal["round"] = "round"
    round: int
    population: int | None = None       # RSA
    has_answer: bool | None = None      # multi-round


class Candidates(_Progress):
    kind: Literal["candidates"] = "candidates"
    generated: int


class Distinct(_Progress):
    """The candidates grouped by the grader's equivalence: each group's size."""

    kind: Literal["distinct"] = "distinct"
    groups: list[int] = Field(default_factory=list)


class Iteration(_Totals):
    """An iteration starts (the lab's, with the run's totals; the manager's, with its ``strategy``)."""

    kind: Literal["iteration"] = "iteration"
    iteration: int
    strategy: str | None = None


# -- the lab's ---------------------------------------------------------------------------------

class IterationEnd(_Totals):
    kind: Literal["iteration_end"] = "iteration_end"
    iteration: int
    summary: str = ""
    items: list[str] = Field(default_factory=list)


class RoleStart(RunEvent):
    kind: Literal["role_start"] = "role_start"
    role: str


class RoleEnd(RunEvent):
    kind: Literal["role_end"] = "role_end"
    role: str


class System(RunEvent):
    """The lab's loop controls did something (a circuit breaker, a prompt shortened, the tools)."""

    kind: Literal["system"] = "system"
    what: str
    text: str


class ReviewDone(RunEvent):
    """A working hypothesis reviewed (``promoted``: the results it established)."""

    kind: Literal["verdict"] = "verdict"
    wh: str
    verdict: str
    promoted: list[str] = Field(default_factory=list)


class CritiqueFiled(RunEvent):
    kind: Literal["critique"] = "critique"
    id: str
    target: str | None = None
    text: str = ""


class CritiqueResolved(RunEvent):
    kind: Literal["critique_resolved"] = "critique_resolved"
    id: str
    status: str
    by: str
    target: str | None = None


class EvidenceAdded(RunEvent):
    kind: Literal["evidence"] = "evidence"
    id: str
    role: str
    target: str


class CompletionRefused(RunEvent):
    kind: Literal["completion_refused"] = "completion_refused"
    blockers: list[str] = Field(default_factory=list)


class FormatterBounce(RunEvent):
    kind: Literal["formatter_bounce"] = "formatter_bounce"
    reason: str


class ForcedFormatter(RunEvent):
    kind: Literal["forced_formatter"] = "forced_formatter"
    reason: str


class Other(RunEvent):
    """A kind none of the models above is (a strategy registered at run time, an older caller)."""


Event = Annotated[RunStarted | CallDone | RunFinished | Notice | RateLimited | StillWaiting | OutputModeChanged | ContextTooLong | Step | Round | Candidates | Distinct | Iteration | IterationEnd | RoleStart | RoleEnd | System | ReviewDone | CritiqueFiled | CritiqueResolved | EvidenceAdded | CompletionRefused | FormatterBounce | ForcedFormatter, Field(discriminator="kind")]
EVENT: TypeAdapter[Event] = TypeAdapter(Event)
SEAM_EVENTS = (RateLimited, StillWaiting, OutputModeChanged, Notice, ContextTooLong)  # what the model seam says


# Where a sender sends its events (RunEnvironment.events, the lab's roles).
Emit = Callable[[RunEvent], None]


class EventSink(Protocol):
    """Where a run's events go: called with an event (or, the older form, ``kind, **data``)."""

    def __call__(self, event: RunEvent | str, /, **data: Any) -> None: ...


def as_event(event: RunEvent | str, data: dict[str, Any] | None = None) -> RunEvent:
    """``event`` itself, or the event ``kind, **data`` names (:class:`Other` for a kind not known
    here, or fields its model does not take)."""
    if isinstance(event, RunEvent):
        return event
    try:
        return EVENT.validate_python({**(data or {}), "kind": event})
    except ValidationError:
        return Other(kind=event, **(data or {}))


def legacy(callback: Callable[..., None]) -> EventSink:
    """A sink that calls ``callback(kind, **data)`` for each event: the Python API's documented form."""

    def sink(event: RunEvent | str, /, **data: Any) -> None:
        e = as_event(event, data)
        callback(e.kind, **e.data())

    return sink


def ignore(event: RunEvent | str, /, **data: Any) -> None:
    """A sink that drops every event (a run nobody watches)."""
