"""Which asyncio event loop PhysLab's commands run on.

uvloop (libuv under asyncio's API, from the uvicorn/httptools family) when it is installed, which
it is on Linux and macOS; the standard library's loop elsewhere. A sweep's model path is loop
work (sockets, timers, callbacks for hundreds of cells): on the 70-cell sweep benchmark uvloop cut
the workers' CPU and put the sweep closer to its latency-bound ideal (figures in docs/sweeps.md).

``PHYSLAB_EVENT_LOOP=asyncio`` forces the standard loop (to rule the loop out when debugging);
``PHYSLAB_EVENT_LOOP=uvloop`` insists on uvloop.
"""

from __future__ import annotations

import asyncio
import os
from typing import Any, Callable, Coroutine, TypeVar

from physlab.errors import UserError

T = TypeVar("T")

ENV = "PHYSLAB_EVENT_LOOP"
CHOICES = ("auto", "uvloop", "asyncio")


def loop_factory() -> Callable[[], asyncio.AbstractEventLoop]:
    """The constructor of the loop this process should use (raises UserError on a bad setting)."""
    choice = (os.environ.get(ENV) or "auto").strip().lower()
    if choice not in CHOICES:
        raise UserError(f"expected one of {', '.join(CHOICES)}, got {choice!r}", field=ENV)
    if choice == "asyncio":
        return asyncio.new_event_loop
    try:
        import uvloop
    except ImportError:
        if choice == "uvloop":
            raise UserError("uvloop is not installed (pip install uvloop), or unset it", field=ENV) from None
        return asyncio.new_event_loop
    return uvloop.new_event_loop


def new_event_loop() -> asyncio.AbstractEventLoop:
    return loop_factory()()


def run(coro: Coroutine[Any, Any, T]) -> T:
    """``asyncio.run`` on the chosen loop."""
    try:
        factory = loop_factory()
    except UserError:
        coro.close()  # never awaited: no "coroutine was never awaited" warning on top of the error
        raise
    with asyncio.Runner(loop_factory=factory) as runner:
        return runner.run(coro)
