"""The lab's live panel: its state, fed by the events the engine sends through ``ctx.events``.

The panel is shown by :func:`physlab.run.console.make_console` (``--console live``, the default on
a terminal); the same module gives the line, JSON and quiet modes.
"""

from __future__ import annotations

from collections import deque
from typing import Any

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

    def feed(self, kind: str, data: dict[str, Any]) -> None:
        self.usage.take(data)
        if kind == "iteration":
            self.iteration, self.status = int(data.get("iteration", 0)), "running"
        elif kind == "role_start":
            self.role, self.waiting = data.get("role"), None
        elif kind == "role_end":
            self.role, self.waiting = None, None
        elif kind == "verdict":
            promoted = data.get("promoted") or []
            self.verdicts.append(f"{data.get('wh')}: {data.get('verdict')}" + (f" → {', '.join(promoted)}" if promoted else ""))
        elif kind == "critique":
            self.critiques.append(f"{data.get('id')} on {data.get('target')}: filed")
        elif kind == "critique_resolved":
            self.critiques.append(f"{data.get('id')}: {data.get('status')} ({data.get('by')})")
        elif kind in ("system", "evidence", "formatter_bounce", "forced_formatter"):
            self.events.append(f"[{kind}] " + str(data.get("text") or data.get("reason") or data.get("id") or ""))
        elif kind in ("rate_limited", "waiting"):  # the model seam: a rate limit waited out, a slow server
            self.waiting = str(data.get("text") or "waiting for rate limit")
        elif kind in ("output_mode", "notice", "context_too_long"):
            self.events.append(f"[{kind}] " + str(data.get("text") or ""))
        elif kind == "completion_refused":
            self.events.append("[completion refused] " + "; ".join(map(str, data.get("blockers") or [])))
        elif kind == "iteration_end":  # one row per thing the iteration did (whole, not cut at a width)
            for item in data.get("items") or [data.get("summary") or "no progress"]:
                self.events.append(f"it. {data.get('iteration')}: {item}")
        elif kind == "run_finished":
            self.status = finished_text(data)

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

