"""The lab's live panel: its state, fed by the events the engine sends through ``ctx.events``
(:mod:`physlab.run.events`).

The panel is shown by :func:`physlab.run.console.make_console` (``--console live``, the default on
a terminal); the same module gives the line, JSON and quiet modes.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from typing import Any

from physlab.run.events import (
    SEAM_EVENTS,
    CompletionRefused,
    ContextTooLong,
    CritiqueFiled,
    CritiqueResolved,
    EvidenceAdded,
    ForcedFormatter,
    FormatterBounce,
    Iteration,
    IterationEnd,
    Notice,
    OutputModeChanged,
    RateLimited,
    ReviewDone,
    RoleEnd,
    RoleStart,
    RunEvent,
    RunFinished,
    StillWaiting,
    System,
    as_event,
)
from physlab.run.progress import Usage, finished_text, one_line_rows


class LabView:
    """The state the live panel shows; ``feed`` is pure bookkeeping (tested without a terminal)."""

    def __init__(self) -> None:
        self.iteration = 0
        self.role: str | None = None
        self.verdicts: deque[str] = deque(maxlen=5)
        self.critiques: deque[str] = deque(maxlen=5)
        self.events: deque[str] = deque(maxlen=6)
        self.usage = Usage()
        self.status = "starting"
        self.waiting: str | None = None  # "waiting for rate limit (Ns)" while a request waits

    # the usage as the panel shows it (calls, tokens and cost are the run's running totals)
    calls = property(lambda self: self.usage.calls)
    tokens = property(lambda self: self.usage.tokens)
    cost = property(lambda self: self.usage.cost)

    def feed(self, event: RunEvent | str, data: dict[str, Any] | None = None) -> None:
        e = as_event(event, data)  # (a kind and its data: the older form)
        self.usage.take(e)
        for kind, show in _SHOWN:
            if isinstance(e, kind):
                show(self, e)
                return

    def _iteration(self, e: Iteration) -> None:
        self.iteration, self.status = e.iteration, "running"

    def _role_start(self, e: RoleStart) -> None:
        self.role, self.waiting = e.role, None

    def _role_end(self, e: RoleEnd) -> None:
        self.role, self.waiting = None, None

    def _review(self, e: ReviewDone) -> None:
        self.verdicts.append(f"{e.wh}: {e.verdict}" + (f" → {', '.join(e.promoted)}" if e.promoted else ""))

    def _critique(self, e: CritiqueFiled) -> None:
        self.critiques.append(f"{e.id} on {e.target}: filed")

    def _ruling(self, e: CritiqueResolved) -> None:
        self.critiques.append(f"{e.id}: {e.status} ({e.by})")

    def _system(self, e: System) -> None:
        self.events.append(f"[{e.kind}] {e.text}")

    def _formatter(self, e: FormatterBounce | ForcedFormatter) -> None:
        self.events.append(f"[{e.kind}] {e.reason}")

    def _evidence(self, e: EvidenceAdded) -> None:
        self.events.append(f"[{e.kind}] {e.id}")

    def _waiting(self, e: RateLimited | StillWaiting) -> None:  # the model seam: a rate limit waited out, a slow server
        self.waiting = e.text or "waiting for rate limit"

    def _seam(self, e: OutputModeChanged | Notice | ContextTooLong) -> None:
        self.events.append(f"[{e.kind}] {e.text}")

    def _refused(self, e: CompletionRefused) -> None:
        self.events.append("[completion refused] " + "; ".join(e.blockers))

    def _iteration_end(self, e: IterationEnd) -> None:  # one row per thing the iteration did (whole, not cut)
        for item in e.items or [e.summary or "no progress"]:
            self.events.append(f"it. {e.iteration}: {item}")

    def _finished(self, e: RunFinished) -> None:
        self.status = finished_text(e)

    def renderable(self):
        from rich.panel import Panel
        from rich.table import Table

        t = Table.grid(padding=(0, 2))
        t.add_column(style="bold")
        t.add_column()
        t.add_row("iteration", f"{self.iteration}   status: {self.status}")
        t.add_row("at work", (self.role or "—") + (f" — {self.waiting}" if self.waiting else ""))
        t.add_row("usage", self.usage.line())
        t.add_row("verdicts", one_line_rows(self.verdicts))
        t.add_row("critiques", one_line_rows(self.critiques))
        t.add_row("recent", one_line_rows(self.events))
        return Panel(t, title="PhysLab research lab")


# What the panel does with each kind of event, the first that matches (a rate limit before the
# other words of the model seam); any other event only moves the usage line.
_SHOWN: tuple[tuple[Any, Callable[[LabView, Any], None]], ...] = (
    (Iteration, LabView._iteration), (RoleStart, LabView._role_start), (RoleEnd, LabView._role_end),
    (ReviewDone, LabView._review), (CritiqueFiled, LabView._critique), (CritiqueResolved, LabView._ruling),
    (System, LabView._system), ((FormatterBounce, ForcedFormatter), LabView._formatter),
    (EvidenceAdded, LabView._evidence), ((RateLimited, StillWaiting), LabView._waiting), (SEAM_EVENTS, LabView._seam),
    (CompletionRefused, LabView._refused), (IterationEnd, LabView._iteration_end), (RunFinished, LabView._finished),
)
