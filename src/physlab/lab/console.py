"""Live view of a lab run, driven by the events the engine sends through ``ctx.events``.

``make_console("rich" | "json" | "quiet")`` returns an event sink ``(kind, **data) -> None``:
- rich: a live panel (iteration, role at work, last verdicts and critiques, calls/tokens/cost);
- json: one JSON object per event on stderr (for scripts);
- quiet: nothing.
Use it as the ``events=`` of ``physlab.strategies.runner.run_solve`` (the CLI does for ``lab``).
"""

from __future__ import annotations

import json
import sys
import time
from collections import deque
from typing import Any, Callable, TextIO

EventSink = Callable[..., None]


class LabView:
    """The state the live panel shows; ``feed`` is pure bookkeeping (tested without a terminal)."""

    def __init__(self) -> None:
        self.iteration = 0
        self.role: str | None = None
        self.verdicts: deque[str] = deque(maxlen=5)
        self.critiques: deque[str] = deque(maxlen=5)
        self.events: deque[str] = deque(maxlen=6)
        self.calls = self.tokens = 0
        self.cost = 0.0
        self.status = "starting"
        self.waiting: str | None = None  # "waiting for rate limit (Ns)" while a request waits
        self.started = time.monotonic()

    def feed(self, kind: str, data: dict[str, Any]) -> None:
        for key in ("calls", "tokens"):
            if isinstance(data.get(key), int):
                setattr(self, key, data[key])
        if isinstance(data.get("cost_usd"), (int, float)):
            self.cost = float(data["cost_usd"])
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
        elif kind == "rate_limited":  # the model seam: a request waits out the server's rate limit
            self.waiting = str(data.get("text") or "waiting for rate limit")
        elif kind in ("output_mode", "notice", "context_too_long"):
            self.events.append(f"[{kind}] " + str(data.get("text") or ""))
        elif kind == "completion_refused":
            self.events.append("[completion refused] " + "; ".join(map(str, data.get("blockers") or [])))
        elif kind == "iteration_end":
            self.events.append(f"it. {data.get('iteration')}: {str(data.get('summary', ''))[:140]}")
        elif kind == "run_finished":
            self.status = f"{data.get('status')} (verdict {data.get('verdict')})"

    def renderable(self):
        from rich.panel import Panel
        from rich.table import Table

        t = Table.grid(padding=(0, 2))
        t.add_column(style="bold"); t.add_column()
        t.add_row("iteration", f"{self.iteration}   status: {self.status}")
        t.add_row("at work", (self.role or "—") + (f" — {self.waiting}" if self.waiting else ""))
        t.add_row("usage", f"{self.calls} calls · {self.tokens:,} tokens · ${self.cost:.4f} · "
                           f"{time.monotonic() - self.started:.0f}s")
        t.add_row("verdicts", "\n".join(self.verdicts) or "—")
        t.add_row("critiques", "\n".join(self.critiques) or "—")
        t.add_row("recent", "\n".join(self.events) or "—")
        return Panel(t, title="PhysLab research lab")


def make_console(mode: str = "rich", stream: TextIO | None = None) -> EventSink:
    if mode == "quiet":
        return lambda *a, **k: None
    if mode == "json":
        out = stream or sys.stderr

        def emit_json(kind: str, **data: Any) -> None:
            out.write(json.dumps({"event": kind, **data}, default=str) + "\n")
            out.flush()
        return emit_json
    if mode != "rich":
        from physlab.errors import UserError
        raise UserError("console mode must be rich, json or quiet", field="--console")
    from rich.console import Console
    from rich.live import Live

    view = LabView()
    live = Live(view.renderable(), console=Console(file=stream or sys.stderr), refresh_per_second=4, transient=False)
    started = False

    def emit_rich(kind: str, **data: Any) -> None:
        nonlocal started
        if not started:
            live.start()
            started = True
        view.feed(kind, data)
        live.update(view.renderable())
        if kind == "run_finished":
            live.stop()
    return emit_rich
