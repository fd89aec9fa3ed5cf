"""The results database's schema: its tables as they are now (``_SCHEMA``), and the named
migrations that bring a file written by any earlier PhysLab to them, each recorded by name in the
file's ``migrations`` table when it has run (simonw/llm's pattern: a list of named migration
functions, a table of the ones that ran).

The migrations so far only add (a table made if it is not there, a column added if it is missing):
each is idempotent, since files written before migrations were recorded hold some of what they add,
and each runs at every open (a few cheap checks under the write lock the open takes anyway), so a
file missing a column it should have -- edited by hand, or by an older tool -- is made whole again.
A migration that must run once (``once=True``: one that changes data) runs only when the file has
not recorded it. A new file runs them all: ``001_tables`` makes every table as it is now, and the
later ones find their columns there. A file that ran a migration this PhysLab does not know is a
newer PhysLab's (:func:`unknown_migrations`): the store refuses it before writing anything. A new
column or table is a new migration at the end of :data:`MIGRATIONS` (and its definition in
``_SCHEMA``).
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable
from dataclasses import dataclass

# The results schema's version, in the file's meta table: a PhysLab from before migrations were
# recorded refuses a file whose version is above its own.
SCHEMA_VERSION = 4

_RESULT_COLUMNS = {  # how a cell's result was made: a cap made it something else; the answer key seen
    "ran_as": "TEXT",
    "reference_conditioned": "INTEGER NOT NULL DEFAULT 0 CHECK (reference_conditioned IN (0, 1))",
}
_JUDGE_COLUMNS = {  # SCALAR: the turns its Judge and the grader both decided, and how many they agreed on
    "judge_checks": "INTEGER",
    "judge_agreed": "INTEGER CHECK (judge_agreed <= judge_checks)",
}
# The --protocol the cell's strategy was set by. No version bump: a PhysLab that does not know the
# column still keeps protocols apart, by the cell key (@protocol among its parameters).
_PROTOCOL_COLUMNS = {"protocol": "TEXT NOT NULL DEFAULT 'physlab'"}
# Where a Ray sweep ran the cell (the node's id; NULL on this machine) and the sandbox backend that
# ran its code there. No version bump either: a PhysLab that does not know them leaves them empty,
# and the lost_attempts table beside the cells, untouched.
_NODE_COLUMNS = {"node": "TEXT", "sandbox_backend": "TEXT"}
# Version 4: who decided the verdict when a judge model did (--judge, a prose reference), and what
# its calls cost (apart from the cell's own usage).
_GRADED_BY_COLUMNS = {"graded_by": "TEXT", "grading_calls": "INTEGER", "grading_cost_usd": "REAL"}
# Version 3: the prompt-cache tokens of each role and call (of their input tokens).
_CACHE_COLUMNS = {"cache_read_tokens": "INTEGER NOT NULL DEFAULT 0", "cache_write_tokens": "INTEGER NOT NULL DEFAULT 0"}
# Every column the cells table gained since version 1, in the order they were added.
_ADDED_CELL_COLUMNS = {**_RESULT_COLUMNS, **_JUDGE_COLUMNS, **_PROTOCOL_COLUMNS, **_NODE_COLUMNS, **_GRADED_BY_COLUMNS}

# One definition, in _SCHEMA and in the migration that adds the table to an older file.
_LOST_ATTEMPTS = """
CREATE TABLE IF NOT EXISTS lost_attempts (
    cell_key TEXT NOT NULL REFERENCES cells(key) ON DELETE CASCADE,
    attempt TEXT NOT NULL,
    node TEXT,
    reason TEXT NOT NULL DEFAULT '',
    started_at REAL,
    lost_at REAL NOT NULL,
    calls INTEGER NOT NULL DEFAULT 0,
    input_tokens INTEGER NOT NULL DEFAULT 0,
    output_tokens INTEGER NOT NULL DEFAULT 0,
    cost_usd REAL NOT NULL DEFAULT 0,
    PRIMARY KEY (cell_key, attempt)
);
"""

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT);
CREATE TABLE IF NOT EXISTS problems (
    problem_id TEXT PRIMARY KEY,
    suite TEXT,
    gradable INTEGER NOT NULL DEFAULT 0,
    public_json TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS cells (
    key TEXT PRIMARY KEY,
    sweep TEXT NOT NULL DEFAULT '',
    suite TEXT NOT NULL DEFAULT '',
    problem_id TEXT NOT NULL,
    strategy TEXT NOT NULL,
    model TEXT NOT NULL,
    repeat INTEGER NOT NULL,
    budget_json TEXT NOT NULL DEFAULT '{}',
    gradable INTEGER NOT NULL DEFAULT 0,
    state TEXT NOT NULL DEFAULT 'pending'
        CHECK (state IN ('pending', 'running', 'done', 'failed')),
    worker TEXT,
    lease_until REAL,
    runs INTEGER NOT NULL DEFAULT 0,
    status TEXT,
    stop_reason TEXT,
    verdict TEXT,
    verdict_reason TEXT,
    answer_code TEXT,
    answer_text TEXT,
    calls INTEGER NOT NULL DEFAULT 0,
    input_tokens INTEGER NOT NULL DEFAULT 0,
    output_tokens INTEGER NOT NULL DEFAULT 0,
    cost_usd REAL NOT NULL DEFAULT 0,
    wall_s REAL NOT NULL DEFAULT 0,
    workspace TEXT,
    error TEXT,
    created_at REAL,
    started_at REAL,
    finished_at REAL,
    ran_as TEXT,
    reference_conditioned INTEGER NOT NULL DEFAULT 0 CHECK (reference_conditioned IN (0, 1)),
    judge_checks INTEGER,
    judge_agreed INTEGER CHECK (judge_agreed <= judge_checks),
    graded_by TEXT,
    grading_calls INTEGER,
    grading_cost_usd REAL,
    protocol TEXT NOT NULL DEFAULT 'physlab',
    node TEXT,
    sandbox_backend TEXT
);
CREATE INDEX IF NOT EXISTS cells_state ON cells(state);
CREATE INDEX IF NOT EXISTS cells_group ON cells(strategy, model);
CREATE TABLE IF NOT EXISTS cell_roles (
    cell_key TEXT NOT NULL,
    role TEXT NOT NULL,
    calls INTEGER NOT NULL DEFAULT 0,
    input_tokens INTEGER NOT NULL DEFAULT 0,
    output_tokens INTEGER NOT NULL DEFAULT 0,
    cost_usd REAL NOT NULL DEFAULT 0,
    wall_s REAL NOT NULL DEFAULT 0,
    cache_read_tokens INTEGER NOT NULL DEFAULT 0,
    cache_write_tokens INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (cell_key, role)
);
CREATE TABLE IF NOT EXISTS checkpoints (
    cell_key TEXT NOT NULL REFERENCES cells(key) ON DELETE CASCADE,
    idx INTEGER NOT NULL CHECK (idx >= 0),
    step TEXT NOT NULL DEFAULT '',
    calls INTEGER NOT NULL DEFAULT 0,
    input_tokens INTEGER NOT NULL DEFAULT 0,
    output_tokens INTEGER NOT NULL DEFAULT 0,
    cost_usd REAL NOT NULL DEFAULT 0,
    answer_code TEXT,
    answer_text TEXT,
    verdict TEXT CHECK (verdict IN ('correct', 'incorrect', 'invalid')),
    verdict_reason TEXT,
    PRIMARY KEY (cell_key, idx)
);
CREATE TABLE IF NOT EXISTS calls (
    cell_key TEXT NOT NULL,
    idx INTEGER NOT NULL,
    role TEXT,
    model TEXT,
    input_tokens INTEGER NOT NULL DEFAULT 0,
    output_tokens INTEGER NOT NULL DEFAULT 0,
    cost_usd REAL NOT NULL DEFAULT 0,
    latency_s REAL NOT NULL DEFAULT 0,
    finish_reason TEXT,
    error TEXT,
    retries INTEGER NOT NULL DEFAULT 0,
    ts REAL,
    cache_read_tokens INTEGER NOT NULL DEFAULT 0,
    cache_write_tokens INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (cell_key, idx)
);
""" + _LOST_ATTEMPTS.lstrip("\n") + """CREATE TABLE IF NOT EXISTS worker_runs (
    worker TEXT NOT NULL,
    sweep TEXT NOT NULL DEFAULT '',
    started_at REAL NOT NULL,
    finished_at REAL NOT NULL,
    cells_ran INTEGER NOT NULL DEFAULT 0,
    cells_failed INTEGER NOT NULL DEFAULT 0,
    cpu_s REAL NOT NULL DEFAULT 0,
    PRIMARY KEY (worker, started_at)
);
CREATE TABLE IF NOT EXISTS critpt_submissions (
    id INTEGER PRIMARY KEY,
    submitted_at REAL NOT NULL,
    url TEXT NOT NULL,
    key_id TEXT NOT NULL,
    strategy TEXT NOT NULL,
    model TEXT NOT NULL,
    config TEXT NOT NULL,
    repeat INTEGER NOT NULL CHECK (repeat >= 0),
    entries INTEGER NOT NULL CHECK (entries >= 0),
    state TEXT NOT NULL DEFAULT 'sending'
        CHECK (state IN ('sending', 'scored', 'rejected', 'error')),
    http_status INTEGER,
    accuracy REAL CHECK (accuracy BETWEEN 0 AND 1),
    timeout_rate REAL CHECK (timeout_rate BETWEEN 0 AND 1),
    server_timeout_count INTEGER,
    judge_error_count INTEGER,
    response_json TEXT,
    error TEXT,
    counted INTEGER NOT NULL DEFAULT 1 CHECK (counted IN (0, 1)),
    CHECK ((state = 'scored') = (accuracy IS NOT NULL))
);
CREATE INDEX IF NOT EXISTS critpt_submissions_time ON critpt_submissions(key_id, submitted_at);
CREATE TABLE IF NOT EXISTS critpt_results (
    submission_id INTEGER NOT NULL REFERENCES critpt_submissions(id) ON DELETE CASCADE,
    problem_id TEXT NOT NULL,
    cell_key TEXT REFERENCES cells(key) ON DELETE SET NULL,
    score REAL CHECK (score BETWEEN 0 AND 1),
    detail_json TEXT,
    PRIMARY KEY (submission_id, problem_id)
);
CREATE INDEX IF NOT EXISTS critpt_results_cell ON critpt_results(cell_key);
"""


Migration = Callable[[sqlite3.Connection], None]


@dataclass(frozen=True)
class Step:
    """One named migration: ``run`` brings a file to it; ``once``: only when the file has not recorded it."""

    name: str
    run: Migration
    once: bool = False


MIGRATIONS: list[Step] = []


def migration(name: str, *, once: bool = False) -> Callable[[Migration], Migration]:
    """Add the decorated function to :data:`MIGRATIONS` under ``name`` (run in the order added)."""

    def add(fn: Migration) -> Migration:
        MIGRATIONS.append(Step(name, fn, once))
        return fn

    return add


def _statements(script: str) -> list[str]:
    """The statements of an SQL script, one each (run one by one inside the migrations' transaction:
    ``executescript`` would commit)."""
    out, part = [], ""
    for line in script.splitlines(keepends=True):
        part += line
        if sqlite3.complete_statement(part):
            out.append(part.strip())
            part = ""
    return [s for s in out if s]


def _add_columns(c: sqlite3.Connection, table: str, columns: dict[str, str]) -> None:
    have = {r[1] for r in c.execute(f"PRAGMA table_info({table})")}
    for name, definition in columns.items():
        if name not in have:
            c.execute(f"ALTER TABLE {table} ADD COLUMN {name} {definition}")


@migration("001_tables")
def _tables(c: sqlite3.Connection) -> None:
    """Every table and index as it is now (a file from before has them already, some without the
    columns the next migrations add)."""
    for statement in _statements(_SCHEMA):
        c.execute(statement)


@migration("002_cells_ran_as_reference_conditioned")
def _ran_as(c: sqlite3.Connection) -> None:
    _add_columns(c, "cells", _RESULT_COLUMNS)


@migration("003_cells_judge_agreement")
def _judge(c: sqlite3.Connection) -> None:
    _add_columns(c, "cells", _JUDGE_COLUMNS)


@migration("004_cache_tokens")
def _cache(c: sqlite3.Connection) -> None:
    _add_columns(c, "cell_roles", _CACHE_COLUMNS)
    _add_columns(c, "calls", _CACHE_COLUMNS)


@migration("005_cells_protocol")
def _protocol(c: sqlite3.Connection) -> None:
    _add_columns(c, "cells", _PROTOCOL_COLUMNS)


@migration("006_ray_node_and_lost_attempts")
def _ray(c: sqlite3.Connection) -> None:
    _add_columns(c, "cells", _NODE_COLUMNS)
    c.execute(_LOST_ATTEMPTS)


@migration("007_cells_graded_by_judge")
def _graded_by(c: sqlite3.Connection) -> None:
    _add_columns(c, "cells", _GRADED_BY_COLUMNS)


_MIGRATIONS_TABLE = "CREATE TABLE IF NOT EXISTS migrations (name TEXT PRIMARY KEY, applied_at REAL NOT NULL)"


def _applied(c: sqlite3.Connection) -> list[str]:
    if c.execute("SELECT 1 FROM sqlite_master WHERE type='table' AND name='migrations'").fetchone() is None:
        return []
    return [r[0] for r in c.execute("SELECT name FROM migrations ORDER BY rowid")]


def unknown_migrations(c: sqlite3.Connection) -> list[str]:
    """The migrations a file ran that this PhysLab does not know (a newer PhysLab ran them)."""
    known = {step.name for step in MIGRATIONS}
    return [name for name in _applied(c) if name not in known]


def migrate(c: sqlite3.Connection) -> list[str]:
    """Bring the file to the schema, in one write transaction (two processes opening one file: the
    second finds it done): every migration in order (a ``once`` one only if not recorded), each
    recorded by name the first time; returns the names recorded now. The write lock is taken at
    every open: a file another program holds locked is said at once, not at a sweep's first write."""
    c.execute("BEGIN IMMEDIATE")
    try:
        c.execute(_MIGRATIONS_TABLE)
        done = set(_applied(c))
        new = []
        for step in MIGRATIONS:
            if step.once and step.name in done:
                continue
            step.run(c)
            if step.name not in done:
                c.execute("INSERT INTO migrations(name, applied_at) VALUES (?, ?)", (step.name, time.time()))
                new.append(step.name)
        c.execute("INSERT INTO meta(key, value) VALUES ('schema_version', ?) ON CONFLICT(key) DO UPDATE "
                  "SET value=excluded.value WHERE CAST(meta.value AS INTEGER) < CAST(excluded.value AS INTEGER)",
                  (str(SCHEMA_VERSION),))
    except BaseException:
        c.execute("ROLLBACK")
        raise
    c.execute("COMMIT")
    return new


def _columns_of(table: str) -> frozenset[str]:
    """The columns ``_SCHEMA`` gives ``table`` (the first word of each line of its definition)."""
    body = _SCHEMA.split(f"CREATE TABLE IF NOT EXISTS {table} (", 1)[1].split("\n);", 1)[0]
    words = (line.strip().split(" ", 1)[0] for line in body.splitlines())
    return frozenset(w for w in words if w and w.isidentifier() and w.upper() not in ("PRIMARY", "CHECK", "UNIQUE"))


# The cells table's columns: the only names a query may put into its SQL (physlab.bench.store).
CELL_COLUMNS = _columns_of("cells")
