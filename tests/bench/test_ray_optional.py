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


def _sweep_asked(monkeypatch, capsys, *args: str):
    """What `physlab bench run ARGS` would sweep: its SweepConfig (Ray stands in: the command is
    only parsed and checked here; the Ray tests run it on a cluster)."""
    import pytest

    from physlab.bench import ray_sweep, sweep
    from physlab.bench.sweep import SweepSummary
    from physlab.cli import main

    asked = []

    async def run_sweep(config, **kwargs):
        asked.append(config)
        return SweepSummary(cells=1, grid_done=1)

    monkeypatch.setattr(sweep, "run_sweep", run_sweep)
    monkeypatch.setattr(ray_sweep, "import_ray", lambda: None)  # (this test process never imports Ray)
    with pytest.raises(SystemExit) as done:
        main(["bench", "run", *args])
    out = capsys.readouterr()
    assert done.value.code == 0, out.err
    return asked[0]


def test_a_bare_ray_flag_joins_the_running_cluster_and_leaves_the_suite_alone(tmp_path, monkeypatch, capsys):
    """`--ray [ADDRESS]`: bare, it means `auto` (the cluster RAY_ADDRESS names or `ray start` started
    here), before the suite's name or after it; a value is taken only when it is an address."""
    db = ["--db", str(tmp_path / "r.sqlite"), "--no-progress", "--models", "scripted:oneshot-wrong"]
    for args, address in (
        (["--ray", "examples", *db], "auto"),               # the suite is not taken for an address
        (["examples", *db, "--ray"], "auto"),
        (["examples", "--ray", "--seed", "3", *db], "auto"),
        (["--ray", "10.0.0.5:6379", "examples", *db], "10.0.0.5:6379"),
        (["examples", "--ray", "ray://head.cluster:10001", *db], "ray://head.cluster:10001"),
        (["examples", "--ray", "local", *db], "local"),
        (["examples", "--ray=auto", *db], "auto"),
    ):
        cfg = _sweep_asked(monkeypatch, capsys, *args)
        assert (cfg.suite, cfg.executor, cfg.ray_address) == ("examples", "ray", address), args
    cfg = _sweep_asked(monkeypatch, capsys, "examples", *db)
    assert (cfg.executor, cfg.ray_address) == ("local", None)
    # a value that follows another option's name is that option's
    cfg = _sweep_asked(monkeypatch, capsys, "examples", "--name", "--ray", *db)
    assert (cfg.name, cfg.executor) == ("--ray", "local")


def test_bench_run_help_says_what_a_bare_ray_flag_does(capsys):
    import pytest

    from physlab.cli import main

    with pytest.raises(SystemExit):
        main(["bench", "run", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "--ray [ADDRESS]" in text and "alone: auto" in text, text
