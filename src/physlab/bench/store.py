"""The SQLite results store of sweeps.

One row per cell (problem, strategy, model, repeat, budget) in ``cells``, its usage per role in
``cell_roles``, its best answers so far with what they had cost and their verdicts in
``checkpoints`` (what the report's accuracy-against-budget curves are read from), every model
request in ``calls`` (from the cell's calls.jsonl), and the public
view of every problem a sweep saw in ``problems`` (for later grading and the CritPt export; the
reference answer is never stored here). A Ray sweep adds each cell's node and, in ``lost_attempts``,
the spend of runs a dying node took with it.

Several processes may share one file: WAL journal, a busy timeout, short transactions, and a
claim protocol on the cell's unique key. A worker claims a cell with one conditional UPDATE
(pending -> running, stamped with its worker id and a lease); it keeps the lease alive while the
cell runs; it writes the result only while it still holds the claim. A claim whose lease expired,
or whose worker process is gone (same host), goes back to pending, so an interrupted sweep
restarts exactly the cells that had not finished.

Batches sent to CritPt's grading server go to ``critpt_submissions`` (one row per POST, written
before the request leaves, so one that dies in flight still counts toward the day's limit) and
``critpt_results`` (one row per challenge, next to the cell it came from, with the server's
per-challenge score when it returns one).
"""

from __future__ import annotations

import functools
import json
import os
import socket
import sqlite3
import time
import uuid
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from physlab.bench.schema import (  # noqa: F401 - the schema's names, as the store always had them
    _ADDED_CELL_COLUMNS,
    _SCHEMA,
    CELL_COLUMNS,
    SCHEMA_VERSION,
    migrate,
    unknown_migrations,
)
from physlab.errors import UserError
from physlab.llm.usage import Budget, CallRecord, Usage
from physlab.tools.choice import ToolChoice

if TYPE_CHECKING:
    from physlab.run.checkpoints import Checkpoint
    from physlab.run.record import RunRecord


def params_tag(params: dict[str, Any] | None) -> str:
    """A short, stable text for strategy parameters (part of a cell's key when there are any):
    ``k=<json>`` pairs sorted by key, '' when none."""
    return ",".join(f"{k}={json.dumps(v, sort_keys=True, separators=(',', ':'))}"
                    for k, v in sorted((params or {}).items()))


def budget_tag(budget: Budget) -> str:
    """A short, stable text for a budget (part of a cell's key): '-' when unlimited."""
    items = [f"{k}={v:g}" if isinstance(v, float) else f"{k}={v}"
             for k, v in sorted(budget.model_dump(exclude_none=True).items())]
    return ",".join(items) or "-"


@dataclass(frozen=True)
class CellSpec:
    """One cell of a sweep: which problem, strategy, model, repeat and budget."""

    problem_id: str
    strategy: str
    model: str
    repeat: int
    budget: Budget = field(default_factory=Budget)
    suite: str = ""
    sweep: str = ""
    gradable: bool = False
    params: str = ""  # params_tag() of the sweep's --param values (and its --tools arm, as @tools)
    tools: ToolChoice | None = None  # the cell's tools (an arm of the sweep); None: the problem's default
    protocol: str = "physlab"  # --protocol (another than physlab is also in params, as @protocol, for the key)

    @functools.cached_property  # asked for ~7 times per cell; the budget tag dumps the Budget model
    def config(self) -> str:
        """What else, besides problem/strategy/model/repeat, makes two cells different runs: the
        budget tag, then the parameters when there are any (a sweep without --param keeps the
        keys it always had)."""
        tag = budget_tag(self.budget)
        return f"{tag}|{self.params}" if self.params else tag

    @functools.cached_property
    def key(self) -> str:
        return f"{self.suite}/{self.problem_id}|{self.strategy}|{self.model}|r{self.repeat}|{self.config}"


def cell_config(row: dict[str, Any]) -> str:
    """The config part of a stored cell's key (see :attr:`CellSpec.config`): budget tag and
    parameters. Read from the key, since the cell's columns give everything before it."""
    head = f"{row['suite']}/{row['problem_id']}|{row['strategy']}|{row['model']}|r{row['repeat']}|"
    key = row["key"]
    return key[len(head):] if key.startswith(head) else "-"


@dataclass
class CellResult:
    """What a finished cell writes back."""

    status: str
    stop_reason: str = ""
    verdict: str | None = None
    verdict_reason: str | None = None
    answer_code: str | None = None
    answer_text: str | None = None
    usage_by_role: dict[str, Usage] | None = None
    wall_s: float = 0.0
    workspace: str | None = None
    calls: list[CallRecord] | None = None
    error: str | None = None
    checkpoints: list[Checkpoint] | None = None
    ran_as: str | None = None
    reference_conditioned: bool = False
    judge_checks: int | None = None  # SCALAR: turns the Judge and the grader both decided
    judge_agreed: int | None = None
    graded_by: str | None = None  # "judge:MODEL" when a judge model decided the verdict (else the rules)
    grading_calls: int | None = None  # the judge's calls and cost: apart from the cell's usage
    grading_cost_usd: float | None = None
    node: str | None = None  # the Ray node that ran it (None: this machine)
    sandbox_backend: str | None = None

    @classmethod
    def from_record(cls, record: RunRecord, *, workspace: str, calls: list[CallRecord] | None = None,
                    wall_s: float = 0.0, sandbox_backend: str | None = None) -> CellResult:
        """The row of a cell whose run ended with ``record``: its outcome and verdict (none on a
        gradable problem with an answer: the grader was unavailable, left for `physlab bench grade`,
        never counted as wrong), its answer as written, its usage per role as the record counts it
        (a record without it: counted from ``calls``), its checkpoints, SCALAR's judge agreement.
        ``wall_s``: the cell's own clock, for a record that kept none. A verdict a judge model
        decided (--judge) names it, with its calls and cost (apart from the cell's usage)."""
        from physlab.run.summary import usage_by_role

        verdict = record.verdict
        agreement = record.details.get("judge_agreement") or {}
        checked = bool(agreement.get("checked"))
        judged = verdict.details.get("judge") if verdict is not None else None
        judged = judged if isinstance(judged, dict) and judged.get("verdict") else None
        return cls(
            status=record.status, stop_reason=record.stop_reason,
            verdict=verdict.verdict if verdict is not None else None,
            verdict_reason=verdict.reason if verdict is not None else None,
            answer_code=record.answer_code, answer_text=record.answer_text,
            usage_by_role=dict(record.usage_by_role) or usage_by_role(calls or []),
            wall_s=record.wall_s or wall_s, workspace=workspace, calls=calls, checkpoints=record.checkpoints,
            ran_as=record.ran_as, reference_conditioned=record.reference_conditioned,
            judge_checks=int(agreement["checked"]) if checked else None,
            judge_agreed=int(agreement["agreed"]) if checked else None, sandbox_backend=sandbox_backend,
            graded_by=f"judge:{judged.get('model')}" if judged else None,
            grading_calls=int(judged.get("calls") or 0) if judged else None,
            grading_cost_usd=float(judged.get("cost_usd") or 0.0) if judged else None)

    def usage(self) -> Usage:
        """The cell's totals: its roles' usage added up."""
        total = Usage()
        for u in (self.usage_by_role or {}).values():
            total = total.add(u)
        return total


def checkpoint_verdict(verdict: str | None) -> str | None:
    """A checkpoint's verdict as its column holds it: an ``ungraded`` answer (a prose reference) has
    none, like one not graded yet (checkpoints are graded by the rules only, never by a judge)."""
    return verdict if verdict in ("correct", "incorrect", "invalid") else None


@dataclass
class LostAttempt:
    """A run of a cell that ended with its node (a Ray node died under it): what it had spent by
    then, as its model calls were reported. The cell runs again; this spend is kept beside it."""

    attempt: str
    node: str | None
    reason: str
    started_at: float | None
    lost_at: float
    usage: Usage


def _check_cell_column(column: str) -> None:
    if column not in CELL_COLUMNS:
        raise ValueError(f"the cells table has no column {column!r}")


def _cell_filter(state: str | Iterable[str] | None, filters: Mapping[str, str] | None,
                 table: str | None = None) -> tuple[str, tuple[Any, ...]]:
    """The WHERE clause (and its parameters) of cells in ``state`` whose columns equal ``filters``
    (``table``: the cells' name in a join)."""
    at = f"{table}." if table else ""
    parts, args = ["1=1"], []
    if state is not None:
        states = [state] if isinstance(state, str) else list(state)
        parts.append(f"{at}state IN ({','.join('?' * len(states))})")
        args += states
    for column, value in (filters or {}).items():
        _check_cell_column(column)  # a column name goes into the SQL: only the table's own
        parts.append(f"{at}{column} = ?")
        args.append(value)
    return " AND ".join(parts), tuple(args)


def worker_id() -> str:
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _what_went_wrong(exc: sqlite3.Error, busy_timeout_s: float) -> str:
    """What opening the database ran into, as the user can act on it (SQLite's error code, not a
    guess that the file is someone else's)."""
    code = getattr(exc, "sqlite_errorname", "") or ""
    if code.startswith(("SQLITE_BUSY", "SQLITE_LOCKED")):
        return (f"the results database is locked by another process (a sweep still writing, or a program holding "
                f"it open) and stayed locked for {busy_timeout_s:g} s; try again when it is done ({exc})")
    if code == "SQLITE_FULL":
        return f"the disk holding the results database is full; free some space and try again ({exc})"
    if code.startswith("SQLITE_READONLY"):
        return f"the results database cannot be written here (read-only file or directory: {exc})"
    if code.startswith("SQLITE_CANTOPEN"):
        return f"cannot open the results database ({exc}; does its directory exist and may you write it?)"
    if code.startswith("SQLITE_IOERR"):
        return f"cannot read or write the results database ({exc}; is the disk full or failing?)"
    if code.startswith("SQLITE_CORRUPT"):
        return f"the results database is damaged ({exc})"
    if code == "SQLITE_NOTADB":
        return f"not a PhysLab results database ({exc})"
    return f"cannot use the results database ({exc})"


class ResultsStore:
    """A results database. Safe to share between threads of one process (one connection, used
    under SQLite's serialized mode from one executor thread by the async sweep) and between
    processes (WAL + busy timeout + claim protocol)."""

    def __init__(self, path: str | Path, *, busy_timeout_s: float = 60.0, create: bool = True):
        self.path = Path(path)
        if self.path.is_dir():
            raise UserError("is a directory; expected a results database file (e.g. results.sqlite)",
                            path=self.path, field="--db")
        if not create and not self.path.is_file():
            raise UserError("results database not found (run `physlab bench run` first)",
                            path=self.path)
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            if not self.path.exists():
                self.path.touch()
        except OSError as exc:
            raise UserError(f"cannot create the results database here ({exc.strerror})",
                            path=self.path, field="--db") from None
        try:
            self.conn = sqlite3.connect(self.path, timeout=busy_timeout_s, isolation_level=None,
                                        check_same_thread=False)
        except sqlite3.Error as exc:
            raise UserError(_what_went_wrong(exc, busy_timeout_s), path=self.path, field="--db") from None
        try:
            self.conn.row_factory = sqlite3.Row
            self._refuse_foreign()
            self.conn.execute(f"PRAGMA busy_timeout = {int(busy_timeout_s * 1000)}")
            self.conn.execute("PRAGMA journal_mode = WAL")
            self.conn.execute("PRAGMA synchronous = NORMAL")
            self.conn.execute("PRAGMA foreign_keys = ON")
            self._init_schema()
        except sqlite3.Error as exc:
            self.conn.close()
            raise UserError(_what_went_wrong(exc, busy_timeout_s), path=self.path, field="--db") from None
        except UserError:
            self.conn.close()
            raise

    def _refuse_foreign(self) -> None:
        """Another program's SQLite file is not ours to add tables to (or to switch to WAL): a
        mistyped --db names it, one line, before anything is written. Nor is a newer PhysLab's:
        its tables have what this one does not know (a cell this one added would lose them)."""
        tables = [r[0] for r in self.conn.execute("SELECT name FROM sqlite_master WHERE type='table'")]
        if tables and "meta" not in tables:
            shown = ", ".join(sorted(tables)[:5]) + (", ..." if len(tables) > 5 else "")
            raise UserError(f"not a PhysLab results database (an SQLite file with other tables: {shown}); "
                            "choose another file", path=self.path, field="--db")
        if "meta" in tables:
            row = self.conn.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()
            version = str(row[0]) if row else "0"
            if not version.isdigit() or int(version) > SCHEMA_VERSION:
                raise UserError(f"written by a newer PhysLab (results schema {version}; this PhysLab reads schemas "
                                f"up to {SCHEMA_VERSION}): upgrade PhysLab to use it, or choose another --db",
                                path=self.path, field="--db")
            unknown = unknown_migrations(self.conn)
            if unknown:
                raise UserError(f"written by a newer PhysLab (it ran migrations this PhysLab does not know: "
                                f"{', '.join(unknown)}): upgrade PhysLab to use it, or choose another --db",
                                path=self.path, field="--db")

    def _init_schema(self) -> None:
        migrate(self.conn)  # the named migrations it has not run (physlab.bench.schema)

    def close(self) -> None:
        self.conn.close()

    # -- transactions -------------------------------------------------------------------------

    class _Tx:
        def __init__(self, conn: sqlite3.Connection):
            self.conn = conn

        def __enter__(self):
            self.conn.execute("BEGIN IMMEDIATE")
            return self.conn

        def __exit__(self, exc_type, exc, tb):
            self.conn.execute("ROLLBACK" if exc_type else "COMMIT")
            return False

    def tx(self) -> _Tx:
        """A short write transaction (BEGIN IMMEDIATE takes the write lock up front, so two
        writers queue on the busy timeout instead of deadlocking on a lock upgrade)."""
        return self._Tx(self.conn)

    # -- sweep setup --------------------------------------------------------------------------

    def add_problems(self, problems: Iterable[Any], suite: str = "") -> None:
        """Record the public view of each problem (never the reference)."""
        rows = []
        for p in problems:
            pub = p.public()
            rows.append((p.id, suite or (p.suite or ""), int(p.gradable), pub.model_dump_json()))
        with self.tx() as c:
            c.executemany(
                "INSERT INTO problems(problem_id, suite, gradable, public_json) VALUES (?,?,?,?) "
                "ON CONFLICT(problem_id) DO UPDATE SET suite=excluded.suite, "
                "gradable=MAX(problems.gradable, excluded.gradable), public_json=excluded.public_json",
                rows)

    def add_cells(self, cells: Iterable[CellSpec]) -> int:
        """Insert cells not yet known (a cell's key is unique; re-adding is a no-op)."""
        now = time.time()
        rows = [(c.key, c.sweep, c.suite, c.problem_id, c.strategy, c.model, c.repeat,
                 c.budget.model_dump_json(exclude_none=True), int(c.gradable), now, c.protocol) for c in cells]
        with self.tx() as conn:
            before = conn.total_changes
            conn.executemany(
                "INSERT OR IGNORE INTO cells(key, sweep, suite, problem_id, strategy, model, repeat,"
                " budget_json, gradable, created_at, protocol) VALUES (?,?,?,?,?,?,?,?,?,?,?)", rows)
            return conn.total_changes - before

    # -- claim protocol -----------------------------------------------------------------------

    def reap(self, *, now: float | None = None) -> int:
        """Put back to pending the cells whose claim is dead: the lease expired, or the worker
        ran on this host and its process no longer exists. Returns how many."""
        now = time.time() if now is None else now
        host = socket.gethostname()
        dead: list[tuple[str, str]] = []
        for row in self.conn.execute("SELECT key, worker, lease_until FROM cells WHERE state='running'"):
            worker = row["worker"] or ""
            parts = worker.split(":")
            expired = row["lease_until"] is None or row["lease_until"] < now
            gone = len(parts) >= 2 and parts[0] == host and parts[1].isdigit() and not _pid_alive(int(parts[1]))
            if expired or gone:
                dead.append((row["key"], worker))
        n = 0
        for key, worker in dead:
            with self.tx() as c:
                cur = c.execute("UPDATE cells SET state='pending', worker=NULL, lease_until=NULL "
                                "WHERE key=? AND state='running' AND worker IS ?", (key, worker))
                n += cur.rowcount
        return n

    def claim(self, key: str, worker: str, *, lease_s: float = 120.0, retry_failed: bool = True) -> bool:
        """Atomically take a pending (or failed, when ``retry_failed``) cell. True when this
        worker now owns it."""
        return bool(self.claim_many([key], worker, limit=1, lease_s=lease_s, retry_failed=retry_failed)[0])

    def claim_many(self, keys: list[str], worker: str, *, limit: int, lease_s: float = 120.0,
                   retry_failed: bool = True) -> tuple[list[str], int]:
        """Take up to ``limit`` of ``keys``, in order, in one transaction (one lock round trip for
        a batch instead of one per cell). Returns (the keys this worker now owns, how many of
        ``keys`` were looked at): a key looked at but not taken is done or owned elsewhere."""
        states = ("pending", "failed") if retry_failed else ("pending",)
        sql = (f"UPDATE cells SET state='running', worker=?, lease_until=?, runs=runs+1, started_at=?, "
               f"error=NULL WHERE key=? AND state IN ({','.join('?' * len(states))})")
        now = time.time()
        taken: list[str] = []
        looked = 0
        with self.tx() as c:
            for key in keys:
                if len(taken) >= limit:
                    break
                looked += 1
                if c.execute(sql, (worker, now + lease_s, now, key, *states)).rowcount == 1:
                    taken.append(key)
        return taken, looked

    def renew(self, keys: Iterable[str], worker: str, *, lease_s: float = 120.0) -> None:
        keys = list(keys)
        if not keys:
            return
        until = time.time() + lease_s
        with self.tx() as c:
            c.executemany("UPDATE cells SET lease_until=? WHERE key=? AND worker=? AND state='running'",
                          [(until, k, worker) for k in keys])

    def record_worker_run(self, worker: str, *, sweep: str, started_at: float, finished_at: float,
                          cells_ran: int, cells_failed: int, cpu_s: float) -> None:
        """One row per worker process per `bench run`: when it ran cells (epoch seconds, from the
        first claim to the end), how many, and the CPU the process used meanwhile."""
        with self.tx() as c:
            c.execute("INSERT OR REPLACE INTO worker_runs(worker, sweep, started_at, finished_at, cells_ran,"
                      " cells_failed, cpu_s) VALUES (?,?,?,?,?,?,?)",
                      (worker, sweep, started_at, finished_at, cells_ran, cells_failed, cpu_s))

    def release(self, key: str, worker: str) -> None:
        """Give a claimed cell back unfinished (the sweep was interrupted)."""
        with self.tx() as c:
            c.execute("UPDATE cells SET state='pending', worker=NULL, lease_until=NULL "
                      "WHERE key=? AND worker=? AND state='running'", (key, worker))

    def finish(self, key: str, worker: str, result: CellResult) -> bool:
        """Write a finished cell, its roles and its calls in one transaction, only while this
        worker still holds the claim (False otherwise: someone else took it over)."""
        return self.finish_many([(key, worker, result)])[0]

    def finish_many(self, items: list[tuple[str, str, CellResult]]) -> list[bool]:
        """:meth:`finish` for several cells in one transaction (the sweep writes whatever finished
        while its previous write was going on)."""
        with self.tx() as c:
            return [self._finish(c, key, worker, result) for key, worker, result in items]

    @staticmethod
    def _finish(c: sqlite3.Connection, key: str, worker: str, result: CellResult) -> bool:
        roles = result.usage_by_role or {}
        total = result.usage()
        cur = c.execute(
            "UPDATE cells SET state='done', status=?, stop_reason=?, verdict=?, verdict_reason=?,"
            " answer_code=?, answer_text=?, calls=?, input_tokens=?, output_tokens=?, cost_usd=?,"
            " wall_s=?, workspace=?, error=?, finished_at=?, lease_until=NULL, ran_as=?,"
            " reference_conditioned=?, judge_checks=?, judge_agreed=?, node=?, sandbox_backend=?, graded_by=?,"
            " grading_calls=?, grading_cost_usd=? WHERE key=? AND worker=? AND state='running'",
            (result.status, result.stop_reason, result.verdict, result.verdict_reason,
             result.answer_code, result.answer_text, total.calls, total.input_tokens,
             total.output_tokens, total.cost_usd, result.wall_s, result.workspace, result.error,
             time.time(), result.ran_as, int(result.reference_conditioned), result.judge_checks,
             result.judge_agreed, result.node, result.sandbox_backend, result.graded_by, result.grading_calls,
             result.grading_cost_usd, key, worker))
        if cur.rowcount != 1:
            return False
        c.execute("DELETE FROM checkpoints WHERE cell_key=?", (key,))
        c.executemany(
            "INSERT INTO checkpoints(cell_key, idx, step, calls, input_tokens, output_tokens, cost_usd,"
            " answer_code, answer_text, verdict, verdict_reason) VALUES (?,?,?,?,?,?,?,?,?,?,?)",
            [(key, i, cp.step, cp.calls, cp.input_tokens, cp.output_tokens, cp.cost_usd, cp.answer_code,
              cp.answer_text, checkpoint_verdict(cp.verdict.verdict if cp.verdict else None),
              cp.verdict.reason if cp.verdict else None)
             for i, cp in enumerate(result.checkpoints or [])])
        c.execute("DELETE FROM cell_roles WHERE cell_key=?", (key,))
        c.executemany(
            "INSERT INTO cell_roles(cell_key, role, calls, input_tokens, output_tokens, cost_usd,"
            " wall_s, cache_read_tokens, cache_write_tokens) VALUES (?,?,?,?,?,?,?,?,?)",
            [(key, r, u.calls, u.input_tokens, u.output_tokens, u.cost_usd, u.wall_s, u.cache_read_tokens,
              u.cache_write_tokens) for r, u in roles.items()])
        c.execute("DELETE FROM calls WHERE cell_key=?", (key,))
        c.executemany(
            "INSERT INTO calls(cell_key, idx, role, model, input_tokens, output_tokens, cost_usd,"
            " latency_s, finish_reason, error, retries, ts, cache_read_tokens, cache_write_tokens)"
            " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
            [(key, i, r.role, r.model, r.input_tokens, r.output_tokens, r.cost_usd, r.latency_s,
              r.finish_reason, r.error, r.retries, r.ts, r.cache_read_tokens, r.cache_write_tokens)
             for i, r in enumerate(result.calls or [])])
        return True

    def record_lost(self, key: str, worker: str, lost: LostAttempt) -> bool:
        """Keep the spend of a run of ``key`` that its node took down with it (the cell is still
        this worker's and runs again). Once per attempt: a second report of it changes nothing."""
        u = lost.usage
        with self.tx() as c:
            if c.execute("SELECT 1 FROM cells WHERE key=? AND worker=? AND state='running'",
                         (key, worker)).fetchone() is None:
                return False
            c.execute("INSERT OR IGNORE INTO lost_attempts(cell_key, attempt, node, reason, started_at, lost_at,"
                      " calls, input_tokens, output_tokens, cost_usd) VALUES (?,?,?,?,?,?,?,?,?,?)",
                      (key, lost.attempt, lost.node, lost.reason, lost.started_at, lost.lost_at, u.calls,
                       u.input_tokens, u.output_tokens, u.cost_usd))
            # the cell's run count says how many times it was started, the lost ones included
            c.execute("UPDATE cells SET runs=runs+1 WHERE key=?", (key,))
            return True

    def lost_attempts(self, where: str = "1=1", params: tuple = (), *,
                      filters: Mapping[str, str] | None = None) -> list[dict[str, Any]]:
        """The lost attempts of the cells whose columns equal ``filters`` (as :meth:`cells` takes
        them), each with its cell's strategy, model, problem and suite. ``where``: raw SQL on the
        cells' columns (as ``c.``), for inspection by hand."""
        clause, args = _cell_filter(None, filters, table="c")
        return [dict(r) for r in self.conn.execute(
            "SELECT l.*, c.strategy, c.model, c.problem_id, c.suite FROM lost_attempts l "
            f"JOIN cells c ON c.key = l.cell_key WHERE ({where}) AND {clause} ORDER BY l.lost_at", (*params, *args))]

    def fail(self, key: str, worker: str, error: str, workspace: str | None = None) -> bool:
        """Record that the cell's run crashed (not a model failure: those are results). Failed
        cells are retried by the next sweep unless it says otherwise."""
        with self.tx() as c:
            cur = c.execute(
                "UPDATE cells SET state='failed', error=?, workspace=?, finished_at=?, lease_until=NULL"
                " WHERE key=? AND worker=? AND state='running'",
                (error[-4000:], workspace, time.time(), key, worker))
            return cur.rowcount == 1

    # -- grading later ------------------------------------------------------------------------

    def set_verdict(self, key: str, verdict: str, reason: str,
                    checkpoints: dict[int, tuple[str, str]] | None = None, *, graded_by: str | None = None,
                    grading_calls: int | None = None, grading_cost_usd: float | None = None) -> None:
        """The cell's verdict (``graded_by`` a judge model, with its calls and cost, when one decided it)
        and, by checkpoint index, its checkpoints' (verdict, reason)."""
        with self.tx() as c:
            c.execute("UPDATE cells SET verdict=?, verdict_reason=?, gradable=1, graded_by=?, grading_calls=?,"
                      " grading_cost_usd=? WHERE key=?", (verdict, reason, graded_by, grading_calls, grading_cost_usd,
                                                         key))
            c.executemany("UPDATE checkpoints SET verdict=?, verdict_reason=? WHERE cell_key=? AND idx=?",
                          [(checkpoint_verdict(v), r, key, i) for i, (v, r) in (checkpoints or {}).items()])

    # -- CritPt submissions -------------------------------------------------------------------

    def start_critpt_submission(self, *, url: str, key_id: str, strategy: str, model: str, config: str,
                                repeat: int, entries: list[tuple[str, str | None]]) -> int:
        """Record a batch about to be posted: the submission, and one row per (CritPt problem id,
        cell key) it holds. Returns the submission's id."""
        with self.tx() as c:
            sid = c.execute(
                "INSERT INTO critpt_submissions(submitted_at, url, key_id, strategy, model, config, repeat,"
                " entries) VALUES (?,?,?,?,?,?,?,?)",
                (time.time(), url, key_id, strategy, model, config, repeat, len(entries))).lastrowid
            c.executemany("INSERT INTO critpt_results(submission_id, problem_id, cell_key) VALUES (?,?,?)",
                          [(sid, pid, key) for pid, key in entries])
        return sid

    def finish_critpt_submission(self, sid: int, *, state: str, http_status: int | None = None,
                                 metrics: dict[str, Any] | None = None, response: Any = None,
                                 error: str | None = None, counted: bool = True,
                                 results: dict[str, tuple[float | None, Any]] | None = None) -> None:
        """What the server answered: ``metrics`` (accuracy, timeout_rate, server_timeout_count,
        judge_error_count) when it graded the batch, ``results`` per CritPt problem id (score,
        detail) when it returned them; ``counted`` False when the attempt cannot have counted
        toward the day's limit (never arrived, or refused for the key or the limit itself)."""
        m = metrics or {}
        with self.tx() as c:
            c.execute(
                "UPDATE critpt_submissions SET state=?, http_status=?, accuracy=?, timeout_rate=?,"
                " server_timeout_count=?, judge_error_count=?, response_json=?, error=?, counted=? WHERE id=?",
                (state, http_status, m.get("accuracy"), m.get("timeout_rate"), m.get("server_timeout_count"),
                 m.get("judge_error_count"), None if response is None else json.dumps(response),
                 error, int(counted), sid))
            c.executemany("UPDATE critpt_results SET score=?, detail_json=? WHERE submission_id=? AND problem_id=?",
                          [(score, json.dumps(detail), sid, pid) for pid, (score, detail) in (results or {}).items()])

    def critpt_submissions(self, where: str = "1=1", params: tuple = (), *,
                           state: str | None = None) -> list[dict[str, Any]]:
        """The CritPt submissions (``state``: only those in it), oldest first. ``where``: raw SQL on
        the table's columns, for inspection by hand; PhysLab's own code asks by ``state``."""
        if state is not None:
            where, params = f"({where}) AND state = ?", (*params, state)
        return [dict(r) for r in self.conn.execute(
            f"SELECT * FROM critpt_submissions WHERE {where} ORDER BY id", params)]

    def critpt_results(self, submission_id: int) -> list[dict[str, Any]]:
        return [dict(r) for r in self.conn.execute(
            "SELECT * FROM critpt_results WHERE submission_id=? ORDER BY problem_id", (submission_id,))]

    def critpt_counted_since(self, key_id: str, since: float) -> list[float]:
        """When this key's submissions that may count toward CritPt's daily limit were sent."""
        return [r[0] for r in self.conn.execute(
            "SELECT submitted_at FROM critpt_submissions WHERE key_id=? AND submitted_at>=? AND counted=1"
            " ORDER BY submitted_at", (key_id, since))]

    # -- reading ------------------------------------------------------------------------------

    def cell_states(self, keys: Iterable[str] | None = None) -> dict[str, str]:
        rows = self.conn.execute("SELECT key, state FROM cells").fetchall()
        out = {r["key"]: r["state"] for r in rows}
        if keys is not None:
            wanted = set(keys)
            out = {k: v for k, v in out.items() if k in wanted}
        return out

    def grid_progress(self, keys: Iterable[str], *, worker: str, since: float) -> tuple[int, int, int, float]:
        """For a live display of the grid ``keys``: (cells done, cells failed, tokens and cost of
        the cells other workers finished since ``since``)."""
        wanted = set(keys)
        done = failed = tokens = 0
        cost = 0.0
        for r in self.conn.execute("SELECT key, state, worker, input_tokens, output_tokens, cost_usd, finished_at "
                                   "FROM cells WHERE state IN ('done', 'failed')"):
            if r["key"] not in wanted:
                continue
            done += r["state"] == "done"
            failed += r["state"] == "failed"
            if r["worker"] != worker and (r["finished_at"] or 0) >= since:
                tokens += (r["input_tokens"] or 0) + (r["output_tokens"] or 0)
                cost += r["cost_usd"] or 0.0
        return done, failed, tokens, cost

    def cells(self, where: str = "1=1", params: tuple = (), *, state: str | Iterable[str] | None = None,
              filters: Mapping[str, str] | None = None) -> list[dict[str, Any]]:
        """The cells (every column), by key: those in ``state`` (one or several), whose columns
        equal ``filters`` (``{"strategy": "rsa"}``; a column the cells table does not have is a
        ValueError). ``where``: raw SQL on the columns, for inspection by hand; PhysLab's own code
        asks by ``state`` and ``filters``."""
        clause, args = _cell_filter(state, filters)
        return [dict(r) for r in self.conn.execute(
            f"SELECT * FROM cells WHERE ({where}) AND {clause} ORDER BY key", (*params, *args))]

    def cell_listing(self, filters: Mapping[str, str] | None = None) -> list[dict[str, Any]]:
        """The cells ``filters`` keep as a sweep's page lists them: ``n`` (the cell's row, its
        ``~cell/N``), what it ran, how it ended, what it spent, its workspace, its node."""
        clause, args = _cell_filter(None, filters)
        return [dict(r) for r in self.conn.execute(
            "SELECT rowid AS n, suite, problem_id, strategy, model, repeat, state, status, verdict, input_tokens, "
            f"output_tokens, cost_usd, wall_s, workspace, error, node FROM cells WHERE {clause} "
            "ORDER BY suite, problem_id, strategy, model, repeat", args)]

    def cell_workspace(self, n: int) -> str | None:
        """The workspace cell ``n`` (its row) recorded, or None."""
        row = self.conn.execute("SELECT workspace FROM cells WHERE rowid = ?", (n,)).fetchone()
        return row[0] if row else None

    def distinct(self, columns: Iterable[str]) -> dict[str, list[str]]:
        """Each column's values among the cells, sorted (what a filter can choose)."""
        out: dict[str, list[str]] = {}
        for column in columns:
            _check_cell_column(column)
            out[column] = [r[0] for r in self.conn.execute(f"SELECT DISTINCT {column} FROM cells ORDER BY {column}")]
        return out

    def roles(self, *, done: bool = True) -> list[dict[str, Any]]:
        """Every cell's usage per role, with the cell's key and what it ran (``done``: finished cells only)."""
        return [dict(r) for r in self.conn.execute(
            "SELECT r.*, c.key, c.suite, c.problem_id, c.repeat, c.strategy, c.model FROM cell_roles r "
            "JOIN cells c ON c.key = r.cell_key" + (" WHERE c.state='done'" if done else ""))]

    def checkpoints(self, where: str = "1=1", params: tuple = ()) -> list[dict[str, Any]]:
        """Checkpoints of finished cells (``where`` on the cells' columns as ``c.``), in order."""
        return [dict(r) for r in self.conn.execute(
            "SELECT k.* FROM checkpoints k JOIN cells c ON c.key = k.cell_key "
            f"WHERE c.state='done' AND ({where}) ORDER BY k.cell_key, k.idx", params)]

    def problem_public(self, problem_id: str) -> dict[str, Any] | None:
        row = self.conn.execute("SELECT public_json FROM problems WHERE problem_id=?", (problem_id,)).fetchone()
        return json.loads(row["public_json"]) if row else None

    def problems_public(self) -> dict[str, dict[str, Any]]:
        """The public view of every problem the database holds, by id."""
        return {r["problem_id"]: json.loads(r["public_json"])
                for r in self.conn.execute("SELECT problem_id, public_json FROM problems")}

    def iter_calls(self, key: str) -> Iterator[dict[str, Any]]:
        for r in self.conn.execute("SELECT * FROM calls WHERE cell_key=? ORDER BY idx", (key,)):
            yield dict(r)
