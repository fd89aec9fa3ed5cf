"""In-flight request caps: one limiter per run, optionally bounded by a shared (global) one.

Nothing here is a module-level global: the runner (or the sweep) creates the limiters and passes
them explicitly, so two runs share a cap only when they were handed the same parent object.

    shared = InFlightLimiter(16)          # the whole sweep / process: at most 16 requests in flight
    per_run = shared.child(4)             # this run: at most 4, and counted against the 16
    async with per_run.slot():
        ...send one request...
"""

from __future__ import annotations

import asyncio
from contextlib import asynccontextmanager
from typing import AsyncIterator


class InFlightLimiter:
    """Caps concurrent model requests. ``max_in_flight=None`` means no cap of its own (the parent's
    still applies). ``max_seen`` is the highest concurrency this limiter observed."""

    def __init__(self, max_in_flight: int | None = None, *, parent: "InFlightLimiter | None" = None):
        if max_in_flight is not None and max_in_flight < 1:
            raise ValueError("max_in_flight must be >= 1 or None")
        self.max_in_flight = max_in_flight
        self.parent = parent
        self._sem = asyncio.Semaphore(max_in_flight) if max_in_flight else None
        self.in_flight = 0
        self.max_seen = 0

    def child(self, max_in_flight: int | None = None) -> "InFlightLimiter":
        """A limiter for one run that also counts against this one."""
        return InFlightLimiter(max_in_flight, parent=self)

    @asynccontextmanager
    async def slot(self) -> AsyncIterator[None]:
        if self._sem is not None:
            await self._sem.acquire()
        try:
            if self.parent is not None:
                async with self.parent.slot():
                    with self._count():
                        yield
            else:
                with self._count():
                    yield
        finally:
            if self._sem is not None:
                self._sem.release()

    def _count(self):
        limiter = self

        class _Counter:
            def __enter__(self) -> None:
                limiter.in_flight += 1
                limiter.max_seen = max(limiter.max_seen, limiter.in_flight)

            def __exit__(self, *exc) -> None:
                limiter.in_flight -= 1

        return _Counter()

    def __repr__(self) -> str:
        return f"InFlightLimiter(max_in_flight={self.max_in_flight}, parent={self.parent!r})"
