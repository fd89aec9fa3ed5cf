"""BatchWriter: finished cells are written in batches (whatever finished while the previous write
was going on), each cell still learns its own outcome, errors and cancellation lose nothing."""

from __future__ import annotations

import asyncio

import pytest

from physlab.bench.batch_writer import BatchWriter
from physlab.bench.store import CellResult


class FakeDb:
    """A stand-in for the sweep's database thread and ResultsStore.finish_many: each write takes
    a little while; every batch is recorded; a key in ``refused`` is not held by its worker."""

    def __init__(self, refused=(), broken=()):
        self.batches: list[list[str]] = []
        self.refused = set(refused)
        self.broken = set(broken)
        self.writing = asyncio.Event()  # set when a write has started

    async def run_in_db(self, fn, *args):
        self.writing.set()
        await asyncio.sleep(0.01)
        return fn(*args)

    def finish_many(self, items):
        keys = [key for key, _, _ in items]
        self.batches.append(keys)
        if self.broken & set(keys):
            raise RuntimeError("database is locked")
        return [key not in self.refused for key in keys]


def _res() -> CellResult:
    return CellResult(status="complete")


async def _first_write_in_flight(w: BatchWriter, db: FakeDb, key: str = "k0") -> asyncio.Task:
    task = asyncio.create_task(w.finish(key, "w", _res()))
    await asyncio.wait_for(db.writing.wait(), 5)
    return task


async def test_concurrent_finishes_share_a_batch_and_each_gets_its_own_answer():
    db = FakeDb(refused={"k3", "k6"})
    w = BatchWriter(db.run_in_db, db.finish_many)
    first = await _first_write_in_flight(w, db)
    rest = [asyncio.create_task(w.finish(f"k{i}", "w", _res())) for i in range(1, 10)]
    results = [await first, *await asyncio.gather(*rest)]
    assert db.batches == [["k0"], [f"k{i}" for i in range(1, 10)]]  # 10 cells, 2 transactions
    assert results == [f"k{i}" not in db.refused for i in range(10)]
    await w.drain()
    assert len(db.batches) == 2  # nothing written twice


async def test_a_failed_write_reaches_every_cell_of_its_batch_and_the_next_batch_still_works():
    db = FakeDb(broken={"bad"})
    w = BatchWriter(db.run_in_db, db.finish_many)
    first = await _first_write_in_flight(w, db)
    victims = [asyncio.create_task(w.finish(k, "w", _res())) for k in ("bad", "k2")]
    assert await first is True
    outcomes = await asyncio.gather(*victims, return_exceptions=True)
    assert db.batches == [["k0"], ["bad", "k2"]]
    assert all(isinstance(o, RuntimeError) and "locked" in str(o) for o in outcomes)
    assert await w.finish("k3", "w", _res()) is True
    assert db.batches[-1] == ["k3"]


async def test_a_cell_cancelled_while_queued_still_has_its_result_written():
    db = FakeDb()
    w = BatchWriter(db.run_in_db, db.finish_many)
    first = await _first_write_in_flight(w, db)
    queued = asyncio.create_task(w.finish("k1", "w", _res()))  # waits behind k0's write
    await asyncio.sleep(0)
    queued.cancel()
    with pytest.raises(asyncio.CancelledError):
        await queued
    assert db.batches == []  # cancelled before anything was written
    await w.drain()
    assert await first is True
    assert db.batches == [["k0"], ["k1"]]


async def test_a_cell_cancelled_while_its_write_is_in_flight_is_still_written():
    db = FakeDb()
    w = BatchWriter(db.run_in_db, db.finish_many)
    task = await _first_write_in_flight(w, db)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    await w.drain()
    assert db.batches == [["k0"]]
    assert await w.finish("k1", "w", _res()) is True  # the writer carries on


async def test_drain_with_nothing_queued_returns():
    db = FakeDb()
    w = BatchWriter(db.run_in_db, db.finish_many)
    await asyncio.wait_for(w.drain(), 1)
    assert db.batches == []
