"""Ray is optional: a sweep without `--ray` never imports it, `--ray` without it installed is one
line naming the extra, and a database written before Ray sweeps gains their columns on open."""

from __future__ import annotations

import sqlite3
import subprocess
import sys

from physlab.bench.store import ResultsStore

_LOCAL_SWEEP = """
import asyncio, sys
from pathlib import Path
from physlab.bench.sweep import Sweep, SweepConfig
from physlab.problems import load_suite
cfg = SweepConfig(suite="examples", strategies=["oneshot"], models=["scripted:oneshot-wrong"],
                  db=Path(sys.argv[1]))
s = asyncio.run(Sweep(cfg, problems=load_suite("examples")[:1], progress=False).run())
assert s.ran == 1, s
print("ray" in sys.modules)
"""


def test_a_sweep_without_ray_never_imports_it(tmp_path):
    p = subprocess.run([sys.executable, "-c", _LOCAL_SWEEP, str(tmp_path / "r.sqlite")],
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip() == "False"
    con = sqlite3.connect(tmp_path / "r.sqlite")
    node, backend = con.execute("SELECT node, sandbox_backend FROM cells").fetchone()
    assert node is None and backend in ("bwrap", "rlimit")  # the local sandbox's backend, recorded too


def test_ray_flag_without_ray_installed_is_one_line(tmp_path):
    code = ("import sys; sys.modules['ray'] = None\n"  # as if the extra were not installed
            "from physlab.__main__ import main\n"
            f"sys.argv = ['physlab', 'bench', 'run', 'examples', '--models', 'scripted:oneshot-wrong', "
            f"'--db', {str(tmp_path / 'r.sqlite')!r}, '--no-progress', '--ray', 'auto']\n"
            "main()\n")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert p.returncode == 2, p.stderr
    lines = [x for x in p.stderr.splitlines() if x.strip()]
    assert len(lines) == 1 and "physlab[ray]" in lines[0] and "Traceback" not in p.stderr, p.stderr


def test_an_older_database_gains_the_ray_columns_on_open(tmp_path):
    db = tmp_path / "old.sqlite"
    ResultsStore(db).close()
    con = sqlite3.connect(db)
    con.executescript("ALTER TABLE cells DROP COLUMN node; ALTER TABLE cells DROP COLUMN sandbox_backend;"
                      "DROP TABLE lost_attempts; UPDATE meta SET value='3' WHERE key='schema_version';")
    con.close()
    st = ResultsStore(db)
    cols = {r[1] for r in st.conn.execute("PRAGMA table_info(cells)")}
    assert {"node", "sandbox_backend"} <= cols
    assert st.conn.execute("SELECT COUNT(*) FROM lost_attempts").fetchone()[0] == 0
    st.close()


async def test_the_cluster_limit_frees_a_dead_nodes_slots_and_a_cancelled_ask():
    """The coordinator's slots (plain Python, no Ray needed): a node that dies holding slots gives
    them back; an ask cancelled before its answer arrives never holds one."""
    import asyncio

    from physlab.bench.ray_coordinator import Coordinator

    c = Coordinator(max_inflight=2)
    assert await c.acquire("a", "t1") and await c.acquire("b", "t2")
    waiting = asyncio.create_task(c.acquire("b", "t3"))
    await asyncio.sleep(0)
    assert not waiting.done() and await c.slots() == (2, 2)
    await c.forget("a")  # node a died holding t1: b's waiting ask gets the slot
    assert await waiting is True and await c.slots() == (2, 2)
    await c.give_up("b", "t4")  # cancelled before its ask arrived: refused when it comes
    assert await c.acquire("b", "t4") is False
    await c.release("b", "t2")
    await c.release("b", "t3")
    assert await c.slots() == (0, 2)
    assert await c.acquire("a", "t5") is False  # a forgotten node gets no slot
