"""Polite clients: how long to wait before the next request to a service, and one connection at a time.

arXiv's API terms ask for at most one request every three seconds on a single connection; INSPIRE
allows 15 requests per IP in a 5 s window and answers 429 beyond it. :func:`wait_before` is the pure
rule (tested without a clock); :class:`Pacer` applies it to one service's requests, one at a time.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass


class SourceUnavailable(Exception):
    """A service could not be asked or gave no usable answer; ``str(exc)`` is one line for the lab.
    ``transient``: the connection failed (refused, reset, closed without an answer), which asking
    again may mend; a timeout, a reply over its cap or a redirect elsewhere would only repeat."""

    def __init__(self, source: str, why: str, *, transient: bool = False):
        self.source, self.why, self.transient = source, " ".join(str(why).split())[:300], transient
        super().__init__(f"unavailable: {source}: {self.why}")


@dataclass(frozen=True)
class Pace:
    """A service's rule: ``min_interval_s`` between the end of one request and the start of the next,
    and at most ``max_requests`` started in any ``window_s`` (None: no window)."""

    min_interval_s: float = 0.0
    max_requests: int | None = None
    window_s: float = 0.0


def wait_before(pace: Pace, started: Sequence[float], last_done: float | None, now: float) -> float:
    """Seconds to wait at ``now`` before starting a request, given when earlier ones started and when
    the last one finished."""
    wait = 0.0
    if last_done is not None and pace.min_interval_s > 0:
        wait = max(wait, last_done + pace.min_interval_s - now)
    if pace.max_requests and pace.window_s > 0:
        recent = [t for t in started if t > now - pace.window_s]
        if len(recent) >= pace.max_requests:
            wait = max(wait, recent[-pace.max_requests] + pace.window_s - now)
    return max(wait, 0.0)


class Pacer:
    """One service's requests: one at a time (a single connection), each started only when
    :func:`wait_before` allows. Not shared between runs: each run's library has its own."""

    def __init__(self, pace: Pace, clock: Callable[[], float] = time.monotonic):
        self.pace, self._clock = pace, clock
        self._lock = asyncio.Lock()
        self._started: deque[float] = deque(maxlen=max(pace.max_requests or 1, 1))
        self._last_done: float | None = None

    @asynccontextmanager
    async def turn(self) -> AsyncIterator[None]:
        async with self._lock:
            delay = wait_before(self.pace, list(self._started), self._last_done, self._clock())
            if delay > 0:
                await asyncio.sleep(delay)
            self._started.append(self._clock())
            try:
                yield
            finally:
                self._last_done = self._clock()
