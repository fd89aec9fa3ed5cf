"""The results database records its migrations by name (simonw/llm's pattern): a new file runs them
all, an older file (written before a column or a table existed, and before migrations were
recorded) runs what it lacks and keeps its rows, a second open runs nothing, and a file that ran a
migration this PhysLab does not know (a newer PhysLab's) is refused in one line before anything is
written to it."""

from __future__ import annotations

import sqlite3

import pytest

from physlab.bench.store import ResultsStore
from physlab.errors import UserError


def _applied(db) -> list[tuple[str, float]]:
    con = sqlite3.connect(db)
    try:
        return con.execute("SELECT name, applied_at FROM migrations ORDER BY rowid").fetchall()
    finally:
        con.close()


def test_a_new_database_records_each_migration_once_by_name(tmp_path):
    db = tmp_path / "r.sqlite"
    ResultsStore(db).close()
    first = _applied(db)
    names = [n for n, _ in first]
    assert names and names[0] == "001_tables" and len(set(names)) == len(names)
    assert names == sorted(names)                  # in the order they were written
    ResultsStore(db).close()
    assert _applied(db) == first                    # a second open records none of them again


def test_an_older_database_runs_what_it_lacks_and_keeps_its_rows(tmp_path):
    db = tmp_path / "old.sqlite"
    con = sqlite3.connect(db)
    con.executescript(
        "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT); INSERT INTO meta VALUES ('schema_version', '1');"
        "CREATE TABLE cells (key TEXT PRIMARY KEY, sweep TEXT NOT NULL DEFAULT '', suite TEXT NOT NULL DEFAULT '',"
        " problem_id TEXT NOT NULL, strategy TEXT NOT NULL, model TEXT NOT NULL, repeat INTEGER NOT NULL,"
        " budget_json TEXT NOT NULL DEFAULT '{}', gradable INTEGER NOT NULL DEFAULT 0, state TEXT NOT NULL DEFAULT"
        " 'pending', worker TEXT, lease_until REAL, runs INTEGER NOT NULL DEFAULT 0, status TEXT, stop_reason TEXT,"
        " verdict TEXT, verdict_reason TEXT, answer_code TEXT, answer_text TEXT, calls INTEGER NOT NULL DEFAULT 0,"
        " input_tokens INTEGER NOT NULL DEFAULT 0, output_tokens INTEGER NOT NULL DEFAULT 0, cost_usd REAL NOT NULL"
        " DEFAULT 0, wall_s REAL NOT NULL DEFAULT 0, workspace TEXT, error TEXT, created_at REAL, started_at REAL,"
        " finished_at REAL);"
        "INSERT INTO cells(key, problem_id, strategy, model, repeat, state, verdict)"
        " VALUES ('s/p|x|m|r0|-', 'p', 'x', 'm', 0, 'done', 'correct');")
    con.close()
    st = ResultsStore(db)
    try:
        (row,) = st.cells()
        assert row["verdict"] == "correct" and row["protocol"] == "physlab" and row["node"] is None
        assert st.lost_attempts() == []             # a table added since is there, empty
    finally:
        st.close()
    fresh = tmp_path / "new.sqlite"
    ResultsStore(fresh).close()
    assert [n for n, _ in _applied(db)] == [n for n, _ in _applied(fresh)]   # every migration, recorded


def test_a_database_that_ran_an_unknown_migration_is_refused_untouched(tmp_path):
    db = tmp_path / "newer.sqlite"
    ResultsStore(db).close()
    con = sqlite3.connect(db)
    con.execute("INSERT INTO migrations(name, applied_at) VALUES ('999_from_the_future', 0)")
    con.commit()
    con.close()
    before = db.read_bytes()
    with pytest.raises(UserError, match="newer PhysLab.*999_from_the_future"):
        ResultsStore(db)
    assert db.read_bytes() == before
