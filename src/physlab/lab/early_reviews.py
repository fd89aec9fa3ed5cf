"""Reviews begun while the orchestrator is still at work.

A hypothesis the orchestrator proposes in one reply is reviewed after its whole call in a
sequential lab; its next replies (dispatches, notes, more hypotheses) rarely change what that
hypothesis's reviewer reads. So a review starts as soon as the hypothesis exists (before the
orchestrator's next request), on the state of that moment, and its verdict is used only if the
reviewer was shown exactly the prompts it would be shown when its turn comes (every shrink level,
compared as rendered): then the merge is the one a sequential lab makes. Otherwise the early review
is cancelled and the hypothesis is reviewed again where it would have been."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Hashable
from dataclasses import dataclass, field
from typing import Any

from physlab.lab import routing
from physlab.lab.state import transitions as T
from physlab.lab.state.models import ResearchState


@dataclass
class EarlyReviews:
    view: Callable[[ResearchState, str], Hashable]        # everything the reviewer of a WH is shown
    review: Callable[[ResearchState, str], Awaitable[Any]]  # a review on that state
    started: dict[str, tuple[Hashable, asyncio.Task]] = field(default_factory=dict)
    dropped: list[asyncio.Task] = field(default_factory=list)   # cancelled, awaited in discard

    def start(self, state: ResearchState) -> None:
        """Start reviewing what awaits review and builds on nothing else awaiting it (the first
        wave); one already under way on what it would be shown now is left to run."""
        waves = routing.review_waves(state, T.pending_reviews(state))
        for wid in (waves[0] if waves else []):
            seen = self.view(state, wid)
            old = self.started.get(wid)
            if old is not None and old[0] == seen:
                continue
            if old is not None:
                self._drop(old[1])
            self.started[wid] = (seen, asyncio.create_task(self.review(state, wid)))

    def take(self, state: ResearchState, wid: str) -> asyncio.Task | None:
        """The early review of ``wid`` if its reviewer was shown what it would be shown on
        ``state``; None (and the early one cancelled) otherwise."""
        got = self.started.pop(wid, None)
        if got is None:
            return None
        if got[0] == self.view(state, wid):
            return got[1]
        self._drop(got[1])
        return None

    def _drop(self, task: asyncio.Task) -> None:
        task.cancel()
        self.dropped.append(task)

    async def discard(self) -> None:
        """Cancel the early reviews nobody took (and wait for them to end: nothing outlives the
        iteration)."""
        tasks = [t for _, t in self.started.values()] + self.dropped
        self.started.clear()
        self.dropped = []
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
