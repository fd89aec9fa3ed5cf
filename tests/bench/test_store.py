"""The results store: schema, claim protocol, exactly-once writes across processes."""

from __future__ import annotations

import multiprocessing as mp
import sqlite3
import subprocess
import sys
import time

import pytest

from physlab.bench.store import CellResult, CellSpec, ResultsStore, worker_id
from physlab.errors import UserError
from physlab.llm.usage import Budget, CallRecord, Usage


def _specs(n=4, budget=Budget()):
    return [CellSpec(problem_id=f"p{i}", strategy="oneshot", model="scripted:x", repeat=0,
                     budget=budget, suite="s") for i in range(n)]


def test_cells_are_unique_per_key_and_budget(tmp_path):
    st = ResultsStore(tmp_path / "r.sqlite")
    assert st.add_cells(_specs()) == 4
    assert st.add_cells(_specs()) == 0  # same command again: nothing new
    assert st.add_cells(_specs(budget=Budget(max_tokens=1000))) == 4  # another budget, other cells
    assert st.conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_claim_is_exclusive_and_finish_needs_the_claim(tmp_path):
    st = ResultsStore(tmp_path / "r.sqlite")
    spec = _specs(1)[0]
    st.add_cells([spec])
    a, b = worker_id(), worker_id()
    assert st.claim(spec.key, a)
    assert not st.claim(spec.key, b)
    res = CellResult(status="complete", verdict="correct", verdict_reason="ok", answer_code="x=1",
                     usage_by_role={"solver": Usage(calls=2, input_tokens=10, output_tokens=5, cost_usd=0.01)},
                     calls=[CallRecord(role="solver", model="m", input_tokens=4, output_tokens=2),
                            CallRecord(role="solver", model="m", input_tokens=6, output_tokens=3)])
    assert not st.finish(spec.key, b, res)  # not b's cell
    assert st.finish(spec.key, a, res)
    row = st.cells()[0]
    assert (row["state"], row["runs"], row["input_tokens"], row["calls"]) == ("done", 1, 10, 2)
    assert [c["input_tokens"] for c in st.iter_calls(spec.key)] == [4, 6]
    assert not st.claim(spec.key, b)  # done cells are never claimed again


def test_reap_returns_cells_of_dead_workers_and_expired_leases(tmp_path):
    st = ResultsStore(tmp_path / "r.sqlite")
    s1, s2, s3 = _specs(3)
    st.add_cells([s1, s2, s3])
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    import socket

    dead = f"{socket.gethostname()}:{proc.pid}:dead"
    alive = worker_id()
    assert st.claim(s1.key, dead, lease_s=600)
    assert st.claim(s2.key, alive, lease_s=600)
    assert st.claim(s3.key, "otherhost:1:x", lease_s=0.01)
    time.sleep(0.05)
    assert st.reap() == 2
    states = st.cell_states()
    assert states == {s1.key: "pending", s2.key: "running", s3.key: "pending"}
    st.renew([s2.key], alive, lease_s=0.01)
    time.sleep(0.05)
    assert st.reap() == 1


def test_failed_cells_are_retried_only_when_asked(tmp_path):
    st = ResultsStore(tmp_path / "r.sqlite")
    spec = _specs(1)[0]
    st.add_cells([spec])
    w = worker_id()
    assert st.claim(spec.key, w)
    assert st.fail(spec.key, w, "Traceback...\nRuntimeError: boom")
    assert not st.claim(spec.key, w, retry_failed=False)
    assert st.claim(spec.key, w, retry_failed=True)
    assert st.cells()[0]["runs"] == 2


def _claim_all(path, keys, out):
    st = ResultsStore(path)
    w = worker_id()
    got = []
    for k in keys:
        if st.claim(k, w):
            st.finish(k, w, CellResult(status="complete"))
            got.append(k)
    out.put(got)


def test_concurrent_processes_claim_each_cell_once(tmp_path):
    path = tmp_path / "r.sqlite"
    st = ResultsStore(path)
    specs = [CellSpec(problem_id=f"p{i}", strategy="s", model="m", repeat=0) for i in range(200)]
    st.add_cells(specs)
    keys = [s.key for s in specs]
    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    procs = [ctx.Process(target=_claim_all, args=(path, keys, q)) for _ in range(4)]
    for p in procs:
        p.start()
    results = [q.get(timeout=60) for _ in procs]
    for p in procs:
        p.join(30)
    claimed = [k for r in results for k in r]
    assert sorted(claimed) == sorted(keys)  # every cell once, none twice
    rows = sqlite3.connect(path).execute("SELECT COUNT(*), SUM(runs) FROM cells WHERE state='done'").fetchone()
    assert rows == (200, 200)


def test_not_a_database_is_a_user_error(tmp_path):
    bad = tmp_path / "x.sqlite"
    bad.write_text("hello, not sqlite" * 100)
    with pytest.raises(UserError, match="x.sqlite"):
        ResultsStore(bad)
    with pytest.raises(UserError, match="not found"):
        ResultsStore(tmp_path / "missing.sqlite", create=False)
