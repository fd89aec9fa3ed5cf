"""The lab's live panel: its state, fed by the events the engine sends through ``ctx.events``
(:mod:`physlab.run.events`).

The panel is shown by :func:`physlab.run.console.make_console` (``--console live``, the default on
a terminal); the same module gives the line, JSON and quiet modes.
"""

from __future__ import annotations

from collections import deque
from typing import Any

from physlab.run.events import (
    SEAM_EVENTS,
    CompletionRefused,
    CritiqueFiled,
    CritiqueResolved,
    EvidenceAdded,
    ForcedFormatter,
    FormatterBounce,
    Iteration,
    IterationEnd,
    RateLimited,
    ReviewDone,
    RoleEnd,
    RoleStart,
    RunEvent,
    RunFinished,
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
        if isinstance(e, Iteration):
            self.iteration, self.status = e.iteration, "running"
        elif isinstance(e, RoleStart):
            self.role, self.waiting = e.role, None
        elif isinstance(e, RoleEnd):
            self.role, self.waiting = None, None
        elif isinstance(e, ReviewDone):
            self.verdicts.append(f"{e.wh}: {e.verdict}" + (f" → {', '.join(e.promoted)}" if e.promoted else ""))
        elif isinstance(e, CritiqueFiled):
            self.critiques.append(f"{e.id} on {e.target}: filed")
        elif isinstance(e, CritiqueResolved):
            self.critiques.append(f"{e.id}: {e.status} ({e.by})")
        elif isinstance(e, System):
            self.events.append(f"[{e.kind}] {e.text}")
        elif isinstance(e, (FormatterBounce, ForcedFormatter)):
            self.events.append(f"[{e.kind}] {e.reason}")
        elif isinstance(e, EvidenceAdded):
            self.events.append(f"[{e.kind}] {e.id}")
        elif isinstance(e, RateLimited):  # the model seam: a request waits out the server's rate limit
            self.waiting = e.text or "waiting for rate limit"
        elif isinstance(e, SEAM_EVENTS):
            self.events.append(f"[{e.kind}] {e.text}")
        elif isinstance(e, CompletionRefused):
            self.events.append("[completion refused] " + "; ".join(e.blockers))
        elif isinstance(e, IterationEnd):  # one row per thing the iteration did (whole, not cut at a width)
            for item in e.items or [e.summary or "no progress"]:
                self.events.append(f"it. {e.iteration}: {item}")
        elif isinstance(e, RunFinished):
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

