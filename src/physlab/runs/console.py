"""A run's progress on the terminal, driven by the events the runner and the strategy send through
``ctx.events`` (``events(kind, **data)``).

``make_console(mode, strategy)`` returns an event sink (call it with events; ``close()`` it when the
run is over, whatever happened):
- live: a rich live panel — the lab's (:class:`physlab.lab.console.LabView`: iteration, role at work,
  verdicts, critiques) or, for every other strategy, :class:`RunView` (its steps and rounds);
  both show calls, tokens, cost and time, updated at every model call;
- lines: one line per step of the strategy on stderr (what a log file or CI wants);
- json: one JSON object per event on stderr (for scripts);
- quiet: nothing.

Events every run sends (``physlab.strategies.runner``): ``run_started`` (strategy, model,
problem_id, workspace), ``usage`` after each model call (role and the run's totals: calls, tokens,
cost_usd) and ``run_finished`` (status, stop_reason, verdict and the final totals), so the last
frame shows what the summary printed after it says. The model seam's own (``SEAM_EVENTS``: a
request waiting out a rate limit, an output-mode fallback, a notice, a prompt too long) are shown
by every mode.
"""

from __future__ import annotations

import json
import sys
import time
from collections import Counter, deque
from typing import Any, TextIO

from physlab.errors import UserError

MODES = ("live", "lines", "json", "quiet")
SEAM_EVENTS = ("rate_limited", "output_mode", "notice", "context_too_long")  # physlab.llm.recording's
_QUIET_KEYS = {"strategy", "step", "calls", "tokens", "cost_usd"}


def describe(kind: str, data: dict[str, Any]) -> str:
    """One line for a strategy's progress event: ``step`` names what it does, the other fields
    follow (``round 2 · population 6``; SCALAR's ``turn 1 · score 62 · passed False``)."""
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

    def take(self, data: dict[str, Any]) -> None:
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


def finished_text(data: dict[str, Any]) -> str:
    return f"{data.get('status')}" + (f" (verdict {data['verdict']})" if data.get("verdict") else "")


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

    def feed(self, kind: str, data: dict[str, Any]) -> None:
        self.usage.take(data)
        if kind == "run_started":
            self.strategy = str(data.get("strategy") or self.strategy)
            self.problem, self.model = str(data.get("problem_id") or ""), str(data.get("model") or "")
            self.status = "running"
        elif kind == "usage" and data.get("failed"):
            self.failed += 1
        elif kind == "usage":
            self.roles[str(data.get("role") or "?")] += 1
            self.waiting = None
        elif kind == "rate_limited":
            self.waiting = str(data.get("text") or "waiting for rate limit")
        elif kind in SEAM_EVENTS:
            self.steps.append(f"[{kind}] {data.get('text') or ''}")
        elif kind == "run_finished":
            self.status = finished_text(data)
        elif "strategy" in data:  # the strategy's own progress (step, round, candidates, ...)
            self.steps.append(describe(kind, data))

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


class Console:
    """An event sink; ``close()`` ends a live panel (also when the run raised)."""

    def __call__(self, kind: str, **data: Any) -> None:
        pass

    def close(self) -> None:
        pass


class JsonConsole(Console):
    def __init__(self, stream: TextIO | None = None) -> None:
        self.out = stream or sys.stderr

    def __call__(self, kind: str, **data: Any) -> None:
        self.out.write(json.dumps({"event": kind, **data}, default=str) + "\n")
        self.out.flush()


class LinesConsole(Console):
    """One line when the run starts, one per step of the strategy (the lab: per iteration), and
    one per notice of the model seam; model calls are left to the summary."""

    def __init__(self, stream: TextIO | None = None) -> None:
        from rich.console import Console as RichConsole

        self.con = RichConsole(file=stream or sys.stderr, highlight=False, soft_wrap=True)  # a log line stays one line

    def __call__(self, kind: str, **data: Any) -> None:
        from rich.markup import escape

        if kind == "run_started":
            self.con.print(f"[bold]{escape(str(data['strategy']))}[/] on [bold]{escape(str(data['problem_id']))}[/] "
                           f"with {escape(str(data['model']))} -> {escape(str(data['workspace']))}")
        elif kind == "step" and data.get("strategy") == "lab":
            self.con.print(f"  [dim]lab: {escape(str(data.get('step', '')))}[/]")
        elif "strategy" in data and data.get("strategy") != "lab":
            self.con.print(f"  [dim]{escape(str(data['strategy']))}: {escape(describe(kind, data))}[/]")
        elif kind in SEAM_EVENTS:
            self.con.print(f"  [yellow]{escape(str(data.get('text') or kind))}[/]")


class LiveConsole(Console):
    """A rich ``Live`` panel redrawn at every event (and a few times a second for the clock)."""

    def __init__(self, view: Any, stream: TextIO | None = None) -> None:
        from rich.console import Console as RichConsole
        from rich.live import Live

        self.view = view
        self.live = Live(view.renderable(), console=RichConsole(file=stream or sys.stderr),
                         refresh_per_second=4, transient=False)
        self.started = self.stopped = False

    def __call__(self, kind: str, **data: Any) -> None:
        if self.stopped:
            return
        if not self.started:
            self.live.start()
            self.started = True
        self.view.feed(kind, data)
        self.live.update(self.view.renderable(), refresh=True)
        if kind == "run_finished":
            self.close()

    def close(self) -> None:
        if self.started and not self.stopped:
            self.live.stop()
        self.stopped = True


def make_console(mode: str = "live", strategy: str = "", stream: TextIO | None = None) -> Console:
    if mode == "quiet":
        return Console()
    if mode == "json":
        return JsonConsole(stream)
    if mode == "lines":
        return LinesConsole(stream)
    if mode == "live":
        if strategy == "lab":
            from physlab.lab.console import LabView

            return LiveConsole(LabView(), stream)
        return LiveConsole(RunView(strategy), stream)
    raise UserError(f"console mode must be one of {', '.join(MODES)}", field="--console")
