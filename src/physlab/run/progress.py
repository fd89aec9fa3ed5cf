"""What a run's progress looks like while it goes: the views a live panel draws, fed by the events
the runner and the strategy send through ``env.events`` (:mod:`physlab.run.events`).

A strategy supplies its own view (``Strategy.live_view()``): :class:`RunView` by default (its steps
and rounds, calls per role), the lab its own (:class:`physlab.lab.console.LabView`). A view's
``feed`` is bookkeeping only (tested without a terminal); ``renderable`` draws it with rich.
The sinks that show a view, or print lines or JSON, are :mod:`physlab.run.console`'s.
"""

from __future__ import annotations

import time
from collections import Counter, deque
from typing import Any, Protocol

from physlab.run.events import (
    SEAM_EVENTS,
    CallDone,
    RateLimited,
    RunEvent,
    RunFinished,
    RunStarted,
    StillWaiting,
    as_event,
)

_QUIET_KEYS = {"strategy", "step", "calls", "tokens", "cost_usd"}


class ProgressView(Protocol):
    """What a live panel shows: fed every event, drawn after each."""

    def feed(self, event: RunEvent | str, data: dict[str, Any] | None = None) -> None: ...

    def renderable(self) -> Any: ...


def describe(event: RunEvent) -> str:
    """One line for a strategy's progress event: ``step`` names what it does, the other fields
    follow (``round 2 · population 6``; SCALAR's ``turn 1 · score 62 · passed False``)."""
    kind, data = event.kind, event.data()
    if kind == "step":
        head = str(data.get("step") or "")
    else:  # ``round``: "round 2"; ``candidates``: "candidates"
        head = f"{kind} {data[kind]}" if kind in data else kind
    rest = []
    for key, value in data.items():
        if key in _QUIET_KEYS or key == kind:
            continue
        if isinstance(value, list):
            value = ", ".join(map(str, value)) or "none"
        rest.append(f"{key} {value}")
    return " · ".join(x for x in (head, *rest) if x)


def one_line_rows(lines: Any) -> Any:
    """Rows that each stay on one line: a row too long for the panel ends in an ellipsis instead
    of being wrapped into fragments."""
    from rich.text import Text

    return Text("\n".join(lines) or "—", no_wrap=True, overflow="ellipsis")


class Usage:
    """Calls, tokens and cost as the events report them (the run's running totals)."""

    def __init__(self) -> None:
        self.calls = self.tokens = 0
        self.cost = 0.0
        self.started = time.monotonic()
        self.wall_s: float | None = None  # the run's own clock once it has finished

    def take(self, event: RunEvent) -> None:
        data = event.data()
        if isinstance(data.get("wall_s"), (int, float)):
            self.wall_s = float(data["wall_s"])
        for key in ("calls", "tokens"):
            if isinstance(data.get(key), int):
                setattr(self, key, data[key])
        if isinstance(data.get("cost_usd"), (int, float)):
            self.cost = float(data["cost_usd"])

    def line(self) -> str:
        wall = self.wall_s if self.wall_s is not None else time.monotonic() - self.started
        return f"{self.calls} calls · {self.tokens:,} tokens · ${self.cost:.4f} · {wall:.1f}s"


def finished_text(event: RunFinished) -> str:
    return event.status + (f" (verdict {event.verdict})" if event.verdict else "")


class RunView:
    """Any strategy but the lab: what it is doing (its steps, rounds, candidates), its calls per
    role and its usage. ``feed`` is bookkeeping only (tested without a terminal)."""

    def __init__(self, strategy: str = "") -> None:
        self.strategy, self.problem, self.model = strategy, "", ""
        self.status = "starting"
        self.usage = Usage()
        self.roles: Counter[str] = Counter()
        self.failed = 0  # requests that got no response (retried or not)
        self.waiting: str | None = None  # "waiting for rate limit (Ns)" until the next call is back
        self.steps: deque[str] = deque(maxlen=6)

    def feed(self, event: RunEvent | str, data: dict[str, Any] | None = None) -> None:
        e = as_event(event, data)  # (a kind and its data: the older form)
        self.usage.take(e)
        if isinstance(e, RunStarted):
            self.strategy = e.strategy or self.strategy
            self.problem, self.model = e.problem_id, e.model
            self.status = "running"
        elif isinstance(e, CallDone) and e.failed:
            self.failed += 1
        elif isinstance(e, CallDone):
            self.roles[e.role or "?"] += 1
            self.waiting = None
        elif isinstance(e, RateLimited | StillWaiting):  # a request waits out a rate limit, or a slow server
            self.waiting = e.text or "waiting for rate limit"
        elif isinstance(e, SEAM_EVENTS):
            self.steps.append(f"[{e.kind}] {e.text or ''}")
        elif isinstance(e, RunFinished):
            self.status = finished_text(e)
        elif getattr(e, "strategy", None) is not None:  # the strategy's own progress (step, round, candidates, ...)
            self.steps.append(describe(e))

    def renderable(self) -> Any:
        from rich.panel import Panel
        from rich.table import Table

        t = Table.grid(padding=(0, 2))
        t.add_column(style="bold")
        t.add_column()
        t.add_row("problem", one_line_rows([f"{self.problem} · {self.model}"]))
        t.add_row("status", self.status + (f" — {self.waiting}" if self.waiting else ""))
        t.add_row("usage", self.usage.line())
        per_role = " · ".join(f"{r} {n}" for r, n in sorted(self.roles.items()))
        failed = f"{self.failed} failed requests" if self.failed else ""
        t.add_row("calls", one_line_rows([" · ".join(x for x in (per_role, failed) if x)] if per_role or failed else []))
        t.add_row("progress", one_line_rows(self.steps))
        return Panel(t, title=f"PhysLab · {self.strategy or 'run'}")


