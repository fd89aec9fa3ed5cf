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

UNLIMITED = Budget()


def _specs(n=4, budget=UNLIMITED):
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


# -- batched claims and writes (the sweep claims and writes several cells per transaction) --------


def _result(tag: int) -> CellResult:
    """A finished cell with two roles and three calls whose figures depend on ``tag``."""
    calls = [CallRecord(role="solver", model="m", input_tokens=10 * tag + i, output_tokens=tag + i,
                        cost_usd=0.001 * i, latency_s=0.1 * i, finish_reason="stop", ts=1000.0 + i)
             for i in range(2)]
    calls.append(CallRecord(role="formatter", model="m", input_tokens=tag, output_tokens=1, ts=1002.0))
    by_role: dict[str, Usage] = {}
    for c in calls:
        by_role[c.role] = by_role.get(c.role, Usage()).add(c.usage())
    return CellResult(status="complete", stop_reason="answered", verdict="correct", verdict_reason="ok",
                      answer_code=f"def answer():\n    return {tag}\n", answer_text=str(tag),
                      usage_by_role=by_role, wall_s=1.5 * tag, workspace=f"/w/{tag}", calls=calls)


def _store_with_cells(tmp_path, n: int) -> tuple[ResultsStore, list[str], str, str]:
    """A store holding ``n`` pending cells, their keys, and two worker ids."""
    st = ResultsStore(tmp_path / "r.sqlite")
    specs = _specs(n)
    st.add_cells(specs)
    return st, [s.key for s in specs], worker_id(), worker_id()


def test_claim_many_takes_at_most_limit_in_order_and_skips_what_it_cannot_take(tmp_path):
    st, keys, a, b = _store_with_cells(tmp_path, 7)
    assert st.claim(keys[1], a) and st.finish(keys[1], a, CellResult(status="complete"))  # done
    assert st.claim(keys[2], b)  # held by another worker
    assert st.claim(keys[3], a) and st.fail(keys[3], a, "boom")  # failed

    taken, looked = st.claim_many(keys, a, limit=2, retry_failed=False)
    assert taken == [keys[0], keys[4]]  # done, held elsewhere and (not retried) failed cells skipped
    assert looked == 5  # it stopped at the limit: keys[5:] were not looked at
    # a caller drops what was looked at; the rest is still claimable, in order
    rest = keys[looked:]
    assert st.claim_many(rest, a, limit=10, retry_failed=False) == ([keys[5], keys[6]], 2)
    # nothing left but the failed cell, which is taken only when retrying failed cells
    assert st.claim_many(keys, a, limit=10, retry_failed=False) == ([], len(keys))
    assert st.claim_many(keys, a, limit=10, retry_failed=True) == ([keys[3]], len(keys))

    rows = {r["key"]: r for r in st.cells()}
    assert rows[keys[2]]["worker"] == b and rows[keys[2]]["state"] == "running"  # untouched
    assert rows[keys[1]]["state"] == "done" and rows[keys[1]]["runs"] == 1
    for k in (keys[0], keys[4], keys[5], keys[6]):
        assert (rows[k]["state"], rows[k]["worker"], rows[k]["runs"]) == ("running", a, 1)
        assert rows[k]["lease_until"] > time.time()
    assert (rows[keys[3]]["state"], rows[keys[3]]["runs"], rows[keys[3]]["error"]) == ("running", 2, None)


def test_claim_many_lease_expires_like_a_single_claim(tmp_path):
    st = ResultsStore(tmp_path / "r.sqlite")
    specs = _specs(3)
    st.add_cells(specs)
    taken, _ = st.claim_many([s.key for s in specs], "otherhost:1:x", limit=3, lease_s=0.01)
    assert len(taken) == 3
    time.sleep(0.05)
    assert st.reap() == 3
    assert set(st.cell_states().values()) == {"pending"}


def _comparable_cell(st: ResultsStore, key: str) -> dict:
    row = dict(st.conn.execute("SELECT * FROM cells WHERE key=?", (key,)).fetchone())
    for k in ("key", "problem_id", "created_at", "started_at", "finished_at"):
        row.pop(k)
    roles = [dict(r) for r in st.conn.execute(
        "SELECT role, calls, input_tokens, output_tokens, cost_usd, wall_s FROM cell_roles WHERE cell_key=? "
        "ORDER BY role", (key,))]
    calls = [{k: v for k, v in c.items() if k != "cell_key"} for c in st.iter_calls(key)]
    return {"cell": row, "roles": roles, "calls": calls}


def test_finish_many_writes_what_finish_writes_and_only_for_the_claim_holder(tmp_path):
    st, k, a, b = _store_with_cells(tmp_path, 5)
    for key in (k[0], k[1], k[3], k[4]):
        assert st.claim(key, a)
    assert st.claim(k[2], b)

    # the reference: one cell written by finish()
    assert st.finish(k[3], a, _result(1))
    oks = st.finish_many([(k[0], a, _result(1)), (k[2], a, _result(2)), (k[1], a, _result(2)),
                          (k[4], b, _result(3))])
    assert oks == [True, False, True, False]  # k2 is b's cell, k4 is a's

    assert _comparable_cell(st, k[0]) == _comparable_cell(st, k[3])
    one = _comparable_cell(st, k[0])
    assert one["cell"]["state"] == "done" and one["cell"]["calls"] == 3
    assert one["cell"]["input_tokens"] == sum(c.input_tokens for c in _result(1).calls)
    assert [c["input_tokens"] for c in one["calls"]] == [c.input_tokens for c in _result(1).calls]
    assert _comparable_cell(st, k[1])["cell"]["answer_text"] == "2"
    # the cells finish_many refused are exactly as their claim left them
    for key, holder in ((k[2], b), (k[4], a)):
        row = st.cells("key=?", (key,))[0]
        assert (row["state"], row["worker"], row["status"], row["calls"]) == ("running", holder, None, 0)
        assert list(st.iter_calls(key)) == []
        assert st.conn.execute("SELECT COUNT(*) FROM cell_roles WHERE cell_key=?", (key,)).fetchone()[0] == 0
    assert st.finish_many([]) == []


def test_finish_many_is_one_transaction(tmp_path):
    """A write that breaks half-way through a batch leaves none of the batch written (the cells
    stay claimed and can be written again), never a cell without its calls."""
    st = ResultsStore(tmp_path / "r.sqlite")
    specs = _specs(2)
    st.add_cells(specs)
    a = worker_id()
    for s in specs:
        assert st.claim(s.key, a)
    broken = _result(2)
    broken.calls = [object()]  # fails after the cell's UPDATE, while writing its calls
    with pytest.raises(AttributeError):
        st.finish_many([(specs[0].key, a, _result(1)), (specs[1].key, a, broken)])
    assert st.cell_states() == {s.key: "running" for s in specs}
    assert st.conn.execute("SELECT COUNT(*) FROM calls").fetchone()[0] == 0
    assert st.conn.execute("SELECT COUNT(*) FROM cell_roles").fetchone()[0] == 0
    assert st.finish_many([(s.key, a, _result(i)) for i, s in enumerate(specs)]) == [True, True]


def test_record_worker_run_keeps_one_row_per_worker_run(tmp_path):
    path = tmp_path / "r.sqlite"
    st = ResultsStore(path)
    a, b = worker_id(), worker_id()
    st.record_worker_run(a, sweep="s", started_at=100.0, finished_at=160.5, cells_ran=7, cells_failed=1,
                         cpu_s=12.25)
    st.record_worker_run(b, sweep="s", started_at=101.0, finished_at=150.0, cells_ran=5, cells_failed=0,
                         cpu_s=8.0)
    st.record_worker_run(a, sweep="s", started_at=200.0, finished_at=210.0, cells_ran=0, cells_failed=0,
                         cpu_s=0.5)  # the same worker id, a later run
    st.close()
    con = sqlite3.connect(path)  # what another process reading the file sees
    rows = con.execute("SELECT worker, sweep, started_at, finished_at, cells_ran, cells_failed, cpu_s "
                       "FROM worker_runs ORDER BY started_at").fetchall()
    assert rows == [(a, "s", 100.0, 160.5, 7, 1, 12.25), (b, "s", 101.0, 150.0, 5, 0, 8.0),
                    (a, "s", 200.0, 210.0, 0, 0, 0.5)]


def test_grid_progress_counts_the_whole_grid_and_other_workers_spend(tmp_path):
    """The live display's figures: done/failed over the grid's cells whoever ran them; tokens and
    cost only of cells other workers finished since this worker started."""
    st = ResultsStore(tmp_path / "r.sqlite")
    specs = _specs(5)
    st.add_cells(specs + _specs(2, budget=Budget(max_tokens=10)))  # cells outside the grid
    me, other = worker_id(), worker_id()

    def run(spec, worker, tokens, cost):
        assert st.claim(spec.key, worker)
        st.finish(spec.key, worker, CellResult(status="complete", usage_by_role={
            "solver": Usage(calls=1, input_tokens=tokens, output_tokens=1, cost_usd=cost)}))

    run(specs[0], other, 100, 0.5)  # before this worker started: not this run's spend
    time.sleep(0.01)
    since = time.time()
    run(specs[1], me, 10, 0.1)
    run(specs[2], other, 20, 0.2)
    assert st.claim(specs[3].key, other) and st.fail(specs[3].key, other, "boom")
    outside = _specs(2, budget=Budget(max_tokens=10))[0]
    run(outside, other, 1000, 9.0)
    done, failed, tokens, cost = st.grid_progress([s.key for s in specs], worker=me, since=since)
    assert (done, failed) == (3, 1)
    assert tokens == 21 and cost == pytest.approx(0.2)


def test_a_database_from_before_checkpoints_gains_their_columns_on_open(tmp_path):
    from physlab.bench import store as store_mod

    db = tmp_path / "old.sqlite"
    con = sqlite3.connect(db)
    v1_cells = store_mod._SCHEMA.split("CREATE TABLE IF NOT EXISTS cells (", 1)[1].split(");", 1)[0]
    for col in store_mod._ADDED_CELL_COLUMNS:  # the cells table as version 1 wrote it
        v1_cells = "\n".join(line for line in v1_cells.splitlines() if not line.strip().startswith(col))
    v1_roles = ("cell_key TEXT NOT NULL, role TEXT NOT NULL, calls INTEGER NOT NULL DEFAULT 0, input_tokens INTEGER "
                "NOT NULL DEFAULT 0, output_tokens INTEGER NOT NULL DEFAULT 0, cost_usd REAL NOT NULL DEFAULT 0, "
                "wall_s REAL NOT NULL DEFAULT 0, PRIMARY KEY (cell_key, role)")
    con.executescript("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT);"
                      "INSERT INTO meta VALUES ('schema_version', '1');"
                      f"CREATE TABLE cells ({v1_cells.rstrip().rstrip(',')});"
                      f"CREATE TABLE cell_roles ({v1_roles});"
                      "INSERT INTO cell_roles(cell_key, role, calls, input_tokens) VALUES ('s/p|x|m|r0|-', 'solver', 1, 10);")
    con.execute("INSERT INTO cells(key, problem_id, strategy, model, repeat, state, verdict) "
                "VALUES ('s/p|x|m|r0|-', 'p', 'x', 'm', 0, 'done', 'correct')")
    con.commit()
    con.close()
    st = ResultsStore(db)
    (row,) = st.cells()
    assert (row["verdict"], row["ran_as"], row["reference_conditioned"]) == ("correct", None, 0)
    assert st.checkpoints() == []
    # the prompt-cache columns (version 3) are there, zero for what was stored before
    assert [(r["role"], r["input_tokens"], r["cache_read_tokens"]) for r in st.roles()] == [("solver", 10, 0)]
    assert st.conn.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()[0] == "4"
    assert row["graded_by"] is None  # version 4: a judge model's verdicts are marked (none before)
    ResultsStore(db).close()  # a second open finds the columns there and adds nothing


def test_checkpoints_are_stored_with_the_cell_and_regraded_with_it(tmp_path):
    from physlab.grading.verdict import Verdict
    from physlab.run.checkpoints import Checkpoint

    st = ResultsStore(tmp_path / "r.sqlite")
    spec = _specs(1)[0]
    st.add_cells([spec])
    w = worker_id()
    st.claim(spec.key, w)
    cps = [Checkpoint(step="round 1", answer_code="a", input_tokens=10, output_tokens=5, cost_usd=0.1,
                      verdict=Verdict(verdict="incorrect", reason="differs")),
           Checkpoint(step="round 2", answer_code="b", input_tokens=30, output_tokens=9)]
    st.finish(spec.key, w, CellResult(status="complete", answer_code="b", checkpoints=cps, ran_as="rsa round 1 only",
                                      reference_conditioned=True, judge_checks=3, judge_agreed=2))
    got = st.checkpoints()
    assert [(c["idx"], c["step"], c["input_tokens"] + c["output_tokens"], c["verdict"]) for c in got] == \
        [(0, "round 1", 15, "incorrect"), (1, "round 2", 39, None)]
    row = st.cells()[0]
    assert (row["ran_as"], row["reference_conditioned"], row["judge_checks"], row["judge_agreed"]) == \
        ("rsa round 1 only", 1, 3, 2)
    st.set_verdict(spec.key, "correct", "ok", {0: ("incorrect", "x"), 1: ("correct", "ok")})
    assert [c["verdict"] for c in st.checkpoints()] == ["incorrect", "correct"]


def test_an_ungraded_checkpoint_is_stored_without_a_verdict(tmp_path):
    """A checkpoint's verdict column takes correct/incorrect/invalid (a CHECK): an answer to a prose
    reference, ungraded, is stored as not graded, the cell itself keeps "ungraded"."""
    from physlab.grading.verdict import Verdict
    from physlab.run.checkpoints import Checkpoint

    st = ResultsStore(tmp_path / "r.sqlite")
    spec = CellSpec(problem_id="p", strategy="s", model="m", repeat=0, suite="t", gradable=True)
    st.add_cells([spec])
    w = worker_id()
    assert st.claim(spec.key, w)
    cp = Checkpoint(step="final", calls=1, answer_text="the wire melts",
                    verdict=Verdict(verdict="ungraded", reason="prose"))
    assert st.finish(spec.key, w, CellResult(status="complete", verdict="ungraded", answer_text="x", checkpoints=[cp]))
    assert st.cells()[0]["verdict"] == "ungraded" and st.checkpoints()[0]["verdict"] is None
