"""What the nodes of a Ray sweep share, held by one actor beside the driver: the sweep's one limit on
model requests in flight (``--max-inflight`` for the whole cluster, so a proxy's limit holds however
many nodes there are) and the ledger of what each attempt of a cell has spent, call by call.

The ledger feeds the driver's live progress, and it is the only record of an attempt whose node
died: its run directory died with the node, its calls were reported here as they were made.
``ClusterLimiter`` is the node side: a pydantic-ai concurrency limiter whose slots are this actor's.
"""

from __future__ import annotations

import asyncio
import uuid
from collections import deque
from typing import Any

from pydantic_ai.concurrency import AbstractConcurrencyLimiter

from physlab.llm.usage import CallRecord, Usage


class Coordinator:
    """The in-flight slots (granted in order of asking) and the attempts' spend. Made a Ray actor
    by the driver (``physlab.bench.ray_sweep``); every method runs on the actor's one event loop,
    so none needs a lock. A slot is held by a ticket of a runner (one per node): a runner whose
    node died is forgotten, and its slots are free again."""

    def __init__(self, max_inflight: int) -> None:
        self.max_inflight = max_inflight
        self.in_use = 0
        self.peak = 0
        self.held: dict[str, set[str]] = {}  # runner -> tickets it holds
        self.waiting: deque[tuple[str, str, asyncio.Future[bool]]] = deque()
        self.given_up: set[str] = set()  # tickets whose asker left before its ask arrived
        self.forgotten: set[str] = set()  # runners whose node died
        self.spend: dict[str, Usage] = {}  # attempt -> what its calls cost so far
        self.feed: list[tuple[str, CallRecord]] = []  # calls not yet taken by the driver

    # -- in-flight slots -----------------------------------------------------------------------

    async def acquire(self, runner: str, ticket: str) -> bool:
        """Wait for a slot; False when the runner was forgotten or the ticket given up."""
        if runner in self.forgotten or ticket in self.given_up:
            self.given_up.discard(ticket)
            return False
        if self.in_use < self.max_inflight and not self.waiting:
            self._grant(runner, ticket)
            return True
        fut: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
        self.waiting.append((runner, ticket, fut))
        return await fut

    def _grant(self, runner: str, ticket: str) -> None:
        self.in_use += 1
        self.peak = max(self.peak, self.in_use)
        self.held.setdefault(runner, set()).add(ticket)

    def _wake(self) -> None:
        while self.waiting and self.in_use < self.max_inflight:
            runner, ticket, fut = self.waiting.popleft()
            if not fut.done():
                self._grant(runner, ticket)
                fut.set_result(True)

    async def release(self, runner: str, ticket: str) -> None:
        tickets = self.held.get(runner)
        if tickets is not None and ticket in tickets:
            tickets.discard(ticket)
            self.in_use -= 1
            self._wake()

    async def give_up(self, runner: str, ticket: str) -> None:
        """The asker was cancelled: its ticket leaves the queue, or its slot (granted meanwhile,
        never used) is freed; a ticket not seen yet is refused when it arrives."""
        for i, (_, waiting_ticket, fut) in enumerate(self.waiting):
            if waiting_ticket == ticket:
                del self.waiting[i]
                if not fut.done():
                    fut.set_result(False)
                return
        if ticket in self.held.get(runner, set()):
            await self.release(runner, ticket)
        else:
            self.given_up.add(ticket)

    async def forget(self, runner: str) -> None:
        """The runner's node died: its slots are free, its waiting asks refused."""
        self.forgotten.add(runner)
        self.in_use -= len(self.held.pop(runner, set()))
        for item in [w for w in self.waiting if w[0] == runner]:
            self.waiting.remove(item)
            if not item[2].done():
                item[2].set_result(False)
        self._wake()

    async def slots(self) -> tuple[int, int]:
        """(slots in use now, the most ever in use at once)."""
        return self.in_use, self.peak

    # -- the attempts' spend -------------------------------------------------------------------

    async def spent(self, attempt: str, record: CallRecord) -> None:
        self.spend[attempt] = self.spend.get(attempt, Usage()).add(record.usage())
        self.feed.append((attempt, record))

    async def take_feed(self) -> list[tuple[str, CallRecord]]:
        """The calls reported since the last take (for the driver's live progress)."""
        feed, self.feed = self.feed, []
        return feed

    async def close_attempt(self, attempt: str) -> Usage:
        """What the attempt spent, as its calls were reported; the attempt is then forgotten."""
        return self.spend.pop(attempt, Usage())


class ClusterLimiter(AbstractConcurrencyLimiter):
    """A node's view of the sweep's in-flight limit: each slot is asked of the coordinator actor
    (one round trip per model request, small beside a request's seconds) and given back to it."""

    def __init__(self, coordinator: Any, runner: str) -> None:
        self._coordinator = coordinator
        self._runner = runner
        self._tickets: list[str] = []  # slots this node holds (not owned by tasks: any may go back)

    async def acquire(self, source: str) -> None:
        ticket = uuid.uuid4().hex
        try:
            granted = await self._coordinator.acquire.remote(self._runner, ticket)
        except asyncio.CancelledError:
            self._coordinator.give_up.remote(self._runner, ticket)
            raise
        if not granted:
            raise RuntimeError("the sweep's driver has given this node's in-flight slots up (it counts the "
                               "node as lost)")
        self._tickets.append(ticket)

    def release(self) -> None:
        if self._tickets:
            self._coordinator.release.remote(self._runner, self._tickets.pop())
