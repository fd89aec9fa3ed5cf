"""A run's progress on the terminal, driven by the events the runner and the strategy send through
``env.events`` (the typed events of :mod:`physlab.run.events`; the older ``events(kind, **data)``
is read into them).

``make_console(mode, view)`` returns an event sink (call it with events; ``close()`` it when the
run is over, whatever happened):
- live: a rich live panel drawing ``view``, the strategy's own (``Strategy.live_view()``; a
  :class:`~physlab.run.progress.RunView` when none is given), updated at every event;
- lines: one line per step of the strategy on stderr (what a log file or CI wants);
- json: one JSON object per event on stderr (for scripts);
- quiet: nothing.

Events every run sends (``physlab.run.runner``): ``run_started`` (strategy, model,
problem_id, workspace), ``usage`` after each model call (role and the run's totals: calls, tokens,
cost_usd) and ``run_finished`` (status, stop_reason, verdict and the final totals), so the last
frame shows what the summary printed after it says. The model seam's own (``SEAM_EVENTS``: a
request waiting out a rate limit or out a minute and more, an output-mode fallback, a notice, a prompt too long) are shown
by every mode.
"""

from __future__ import annotations

import json
import sys
from typing import Any, TextIO

from physlab.errors import UserError
from physlab.run.events import SEAM_EVENTS, RunEvent, RunFinished, RunStarted, as_event
from physlab.run.progress import ProgressView, RunView, describe

MODES = ("live", "lines", "json", "quiet")


class Console:
    """An event sink; ``close()`` ends a live panel (also when the run raised)."""

    def __call__(self, event: RunEvent | str, /, **data: Any) -> None:
        self.show(as_event(event, data))

    def show(self, event: RunEvent) -> None:
        pass

    def close(self) -> None:
        pass


class JsonConsole(Console):
    def __init__(self, stream: TextIO | None = None) -> None:
        self.out = stream or sys.stderr

    def show(self, event: RunEvent) -> None:
        self.out.write(json.dumps({"event": event.kind, **event.data()}, default=str) + "\n")
        self.out.flush()


class LinesConsole(Console):
    """One line when the run starts, one per step of the strategy (the lab: per iteration), and
    one per notice of the model seam; model calls are left to the summary."""

    def __init__(self, stream: TextIO | None = None) -> None:
        from rich.console import Console as RichConsole

        self.con = RichConsole(file=stream or sys.stderr, highlight=False, soft_wrap=True)  # a log line stays one line

    def show(self, event: RunEvent) -> None:
        from rich.markup import escape

        strategy = getattr(event, "strategy", None)
        if isinstance(event, RunStarted):
            self.con.print(f"[bold]{escape(event.strategy)}[/] on [bold]{escape(event.problem_id)}[/] "
                           f"with {escape(event.model)} -> {escape(event.workspace)}")
        elif strategy is not None:  # the strategy's own progress: its steps, rounds, candidates
            self.con.print(f"  [dim]{escape(str(strategy))}: {escape(describe(event))}[/]")
        elif isinstance(event, SEAM_EVENTS):
            self.con.print(f"  [yellow]{escape(event.text or event.kind)}[/]")


class LiveConsole(Console):
    """A rich ``Live`` panel redrawn at every event (and a few times a second for the clock)."""

    def __init__(self, view: Any, stream: TextIO | None = None) -> None:
        from rich.console import Console as RichConsole
        from rich.live import Live

        self.view = view
        self.live = Live(view.renderable(), console=RichConsole(file=stream or sys.stderr),
                         refresh_per_second=4, transient=False)
        self.started = self.stopped = False

    def show(self, event: RunEvent) -> None:
        if self.stopped:
            return
        if not self.started:
            self.live.start()
            self.started = True
        self.view.feed(event)
        self.live.update(self.view.renderable(), refresh=True)
        if isinstance(event, RunFinished):
            self.close()

    def close(self) -> None:
        if self.started and not self.stopped:
            self.live.stop()
        self.stopped = True


def make_console(mode: str = "live", view: ProgressView | None = None, stream: TextIO | None = None) -> Console:
    """The sink for ``--console MODE``; ``view`` is what a live panel draws (the strategy's own)."""
    if mode == "quiet":
        return Console()
    if mode == "json":
        return JsonConsole(stream)
    if mode == "lines":
        return LinesConsole(stream)
    if mode == "live":
        return LiveConsole(view if view is not None else RunView(), stream)
    raise UserError(f"console mode must be one of {', '.join(MODES)}", field="--console")
