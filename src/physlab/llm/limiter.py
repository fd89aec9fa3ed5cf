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
        self._chain: tuple[InFlightLimiter, ...] = (self,) + (parent._chain if parent is not None else ())

    def child(self, max_in_flight: int | None = None) -> "InFlightLimiter":
        """A limiter for one run that also counts against this one."""
        return InFlightLimiter(max_in_flight, parent=self)

    def slot(self) -> "_Slot":
        """``async with limiter.slot():`` holds one request slot here and in every ancestor."""
        return _Slot(self._chain)

    def __repr__(self) -> str:
        return f"InFlightLimiter(max_in_flight={self.max_in_flight}, parent={self.parent!r})"


class _Slot:
    """One request's hold on a chain of limiters (the run's, then its ancestors'), taken in that
    order and given back in reverse. A plain class rather than an ``asynccontextmanager``: every
    model request passes through here, and the generator-based one (with a counter object made per
    call) cost ~0.1 ms per request of a sweep's CPU."""

    __slots__ = ("_chain", "_held")

    def __init__(self, chain: tuple[InFlightLimiter, ...]) -> None:
        self._chain = chain
        self._held = 0  # how many of the chain's semaphores this slot holds

    async def __aenter__(self) -> None:
        try:
            for limiter in self._chain:
                if limiter._sem is not None:
                    await limiter._sem.acquire()
                self._held += 1
        except BaseException:  # cancelled while waiting: give back what was taken
            self._release()
            raise
        for limiter in self._chain:
            limiter.in_flight += 1
            if limiter.in_flight > limiter.max_seen:
                limiter.max_seen = limiter.in_flight

    async def __aexit__(self, *exc: object) -> None:
        for limiter in self._chain:
            limiter.in_flight -= 1
        self._release()

    def _release(self) -> None:
        for limiter in reversed(self._chain[:self._held]):
            if limiter._sem is not None:
                limiter._sem.release()
        self._held = 0
