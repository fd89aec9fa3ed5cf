"""Finished cells go to the results database in batches.

A sweep's SQLite calls run on one helper thread (a lock wait must never block the event loop).
Each call from that thread needs the GIL, which the event loop holds while it does a cell's CPU
work, so under load every statement waits up to one switch interval (5 ms); one transaction per
cell then delays the last cells of a sweep by the sum of those waits. The writer instead commits
whatever finished while its previous transaction was being written, in one transaction.
"""

from __future__ import annotations

import asyncio
from typing import Any, Awaitable, Callable

from physlab.bench.store import CellResult

RunInDb = Callable[..., Awaitable[Any]]


class BatchWriter:
    def __init__(self, run_in_db: RunInDb, finish_many: Callable[[list], list[bool]]):
        self._run = run_in_db
        self._finish_many = finish_many
        self._pending: list[tuple[tuple[str, str, CellResult], asyncio.Future]] = []
        self._task: asyncio.Task | None = None

    async def finish(self, key: str, worker: str, result: CellResult) -> bool:
        """Queue one finished cell; True once it is committed while this worker held it."""
        fut = asyncio.get_running_loop().create_future()
        self._pending.append(((key, worker, result), fut))
        if self._task is None or self._task.done():
            self._task = asyncio.create_task(self._flush())
        # shield: a cell cancelled now still has its result written (the thread cannot be stopped)
        return await asyncio.shield(fut)

    async def _flush(self) -> None:
        while self._pending:
            batch, self._pending = self._pending, []
            try:
                oks = await self._run(self._finish_many, [item for item, _ in batch])
            except BaseException as exc:  # noqa: BLE001 - handed to every waiting cell
                for _, fut in batch:
                    if not fut.done():
                        fut.set_exception(exc)
                if isinstance(exc, asyncio.CancelledError):
                    raise
                continue
            for i, (_, fut) in enumerate(batch):
                if fut.done():
                    continue
                if i < len(oks):
                    fut.set_result(oks[i])
                else:  # never leave a cell waiting on an answer that will not come
                    fut.set_exception(RuntimeError(f"finish_many answered {len(oks)} of {len(batch)} cells"))

    async def drain(self) -> None:
        """Wait until everything queued is written (errors went to the waiting cells)."""
        if self._task is not None and not self._task.done():
            await asyncio.shield(self._task)
