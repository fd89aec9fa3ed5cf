"""Sweeps on a Ray cluster (docs/sweeps.md, "Across machines: Ray"): one local cluster for this
module (`ray.cluster_utils.Cluster`: a head without CPUs for the driver, three one-CPU worker nodes,
all on 127.0.0.1, small object stores). The driver alone writes the database; cells run on the
nodes; a node killed mid-sweep and a driver killed mid-sweep lose nothing and repeat nothing.

The tests run in this order on the one cluster: the node-kill test removes a node, so the tests
after it have two."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from physlab.bench.report import build_report
from physlab.bench.store import ResultsStore
from physlab.bench.sweep import Sweep, SweepConfig
from physlab.llm.standin import StandinServer
from physlab.problems import load_suite
from physlab.run.record import written_here
from physlab.run.seal import is_sealed

pytestmark = pytest.mark.slow

ANSWER = "Here it is.\n\n```python\ndef answer(*args, **kwargs):\n    return 1\n```\n"
MiB = 1024 * 1024


@pytest.fixture(scope="module")
def cluster():
    """A head (the driver's node, no CPU: it runs no cell) and three one-CPU worker nodes."""
    # Ray takes 127.0.0.1 to mean "this machine's outward address" unless told it is a one-machine
    # cluster, which it reads when it is imported: every socket stays on loopback.
    assert "ray" not in sys.modules, "imported before the cluster's settings"
    saved = os.environ.get("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER")
    os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"
    ray = pytest.importorskip("ray")  # in the test extra: physlab[ray]
    from ray.cluster_utils import Cluster

    node = {"node_ip_address": "127.0.0.1", "object_store_memory": 80 * MiB}
    # A lost node is noticed within a couple of seconds instead of Ray's default half minute.
    fast = {"health_check_initial_delay_ms": 0, "health_check_period_ms": 500, "health_check_failure_threshold": 3}
    c = Cluster(initialize_head=True, head_node_args={**node, "num_cpus": 0, "include_dashboard": False,
                                                      "_system_config": fast})
    workers = [c.add_node(**node, num_cpus=1) for _ in range(3)]
    c.wait_for_nodes()
    ray.init(address=c.address, logging_level="ERROR", log_to_driver=False)
    try:
        yield c, workers
    finally:
        ray.shutdown()
        c.shutdown()
        if saved is None:
            os.environ.pop("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", None)
        else:
            os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = saved


def _alive_worker_ids(cluster) -> set[str]:
    c, workers = cluster
    return {w.node_id for w in workers if w in c.worker_nodes}


def _problem_dir(tmp_path: Path, n: int) -> Path:
    d = tmp_path / "suite"
    d.mkdir()
    for i in range(n):
        (d / f"q{i:02d}.yaml").write_text(
            f"id: q{i:02d}\nproblem: What is {i} times zero plus one?\n"
            "answer_template: |\n  def answer():\n      return ...\n")
    return d


def _rows(db: Path, sql: str, params: tuple = ()) -> list[sqlite3.Row]:
    con = sqlite3.connect(db, timeout=30)
    con.row_factory = sqlite3.Row
    try:
        return con.execute(sql, params).fetchall()
    finally:
        con.close()


def _done(db: Path) -> int:
    """Cells done so far (0 while the sweep has not made its database yet)."""
    try:
        return len(_rows(db, "SELECT 1 FROM cells WHERE state='done'")) if db.exists() else 0
    except sqlite3.OperationalError:
        return 0


def _check_artifacts_on_the_driver(db: Path, root: Path) -> None:
    """Every done cell's run directory is under the driver's --workspace-root, complete, and its
    database rows are its calls.jsonl; it was made elsewhere (on the node) and moved here, and its
    record says so (tests/bench/test_ray_cell_comes_home.py: with two machines' secrets)."""
    for cell in _rows(db, "SELECT * FROM cells WHERE state='done'"):
        ws = Path(cell["workspace"])
        assert ws.is_relative_to(root), ws
        for name in ("PROBLEM.md", "calls.jsonl", "metrics.json", "run.json"):
            assert (ws / name).is_file(), (ws, name)
        lines = [json.loads(x) for x in (ws / "calls.jsonl").read_text().splitlines() if x.strip()]
        calls = _rows(db, "SELECT * FROM calls WHERE cell_key=? ORDER BY idx", (cell["key"],))
        assert [(r["role"], r["input_tokens"], r["output_tokens"]) for r in calls] == \
            [(x["role"], x["input_tokens"], x["output_tokens"]) for x in lines]
        assert cell["input_tokens"] == sum(x["input_tokens"] for x in lines)
        metrics = json.loads((ws / "metrics.json").read_text())
        assert metrics["status"] == cell["status"]
        assert metrics["details"]["workspace"] == str(ws)  # where it is now, not the node's scratch
        assert written_here(ws) and is_sealed((ws / "metrics.json").read_bytes())  # sealed on the driver


def test_cells_spread_over_the_nodes_and_their_run_directories_come_back(cluster, tmp_path):
    """The examples, a CPU-heavy scripted scenario (its answer enumerates the 16^5 fault patterns
    of the QEC example when the grader runs it in the sandbox) beside a light one: every cell once,
    on several nodes, with each cell's node and sandbox backend recorded, its files on the driver."""
    from physlab.sandbox.launch import resolve_backend

    db, root = tmp_path / "r.sqlite", tmp_path / "runs"
    cfg = SweepConfig(suite="examples", strategies=["oneshot"],
                      models=["scripted:oneshot-qec-enumerate", "scripted:oneshot-wrong"],
                      concurrency=6, db=db, workspace_root=root, executor="ray")
    summary = asyncio.run(Sweep(cfg, progress=False).run())
    n = 2 * len(load_suite("examples"))
    assert (summary.cells, summary.ran, summary.grid_done, summary.failed) == (n, n, n, 0)
    rows = _rows(db, "SELECT state, runs, node, sandbox_backend, verdict, problem_id, model FROM cells")
    assert len(rows) == n and all(r["state"] == "done" and r["runs"] == 1 for r in rows)
    nodes = {r["node"] for r in rows}
    assert nodes <= _alive_worker_ids(cluster) and len(nodes) >= 2  # spread, never on the driver's head
    assert {r["sandbox_backend"] for r in rows} == {resolve_backend("auto")}
    # the enumerating answer is graded like the plain one: right on the QEC example, wrong elsewhere
    verdicts = {(r["model"], r["problem_id"]): r["verdict"] for r in rows}
    assert verdicts[("scripted:oneshot-qec-enumerate", "quantum_error_correction_main")] == "correct"
    assert verdicts[("scripted:oneshot-wrong", "quantum_error_correction_main")] == "incorrect"
    _check_artifacts_on_the_driver(db, root)
    assert not _rows(db, "SELECT * FROM lost_attempts")
    # the report reads a Ray sweep like any other
    rep = build_report(ResultsStore(db, create=False))
    assert sum(g.cells for g in rep.groups) == n


def test_max_inflight_holds_across_the_cluster(cluster, tmp_path, monkeypatch):
    """--max-inflight 4 with 12 cells at once on 3 nodes: the stand-in never sees a fifth request."""
    monkeypatch.setenv("STANDIN_KEY", "sk-local")  # forwarded to the nodes by the driver
    d = _problem_dir(tmp_path, 12)
    with StandinServer(lambda body: ANSWER, latency_s=0.3) as srv:
        cfg = SweepConfig(suite=str(d), strategies=["two-step"], models=["openai:standin"], concurrency=12,
                          max_inflight=4, db=tmp_path / "r.sqlite", api_base=srv.base_url,
                          api_key_env="STANDIN_KEY", executor="ray")
        sweep = Sweep(cfg, progress=False)
        summary = asyncio.run(sweep.run())
        assert summary.ran == 12
        assert srv.stats.max_in_flight == 4  # reached, never passed
        assert srv.stats.answered == 24
    rows = _rows(tmp_path / "r.sqlite", "SELECT node, input_tokens + output_tokens AS tokens FROM cells")
    assert len({r["node"] for r in rows}) == 3
    # the live progress counted the nodes' calls as the database did
    assert (sweep.live.done, sweep.live.tokens) == (12, sum(r["tokens"] for r in rows)) == (12, srv.stats.total_tokens)


class _SecondCallGate:
    """The stand-in's responder: a first call is answered at once; a second call of a cell (the
    formatter's, with the solver's reply in its history) is held until the gate opens."""

    def __init__(self) -> None:
        self.cond = threading.Condition()
        self.held = 0
        self.opened = False

    def __call__(self, body: dict) -> str:
        if any(m.get("role") == "assistant" for m in body.get("messages", [])):
            with self.cond:
                self.held += 1
                self.cond.notify_all()
                self.cond.wait_for(lambda: self.opened, timeout=300)
                self.held -= 1
        return ANSWER

    def wait_held(self, n: int, timeout: float) -> bool:
        with self.cond:
            return self.cond.wait_for(lambda: self.held >= n, timeout)

    def open(self) -> None:
        with self.cond:
            self.opened = True
            self.cond.notify_all()


def test_a_node_killed_mid_sweep_loses_no_cell_and_shows_the_lost_spend(cluster, tmp_path, monkeypatch):
    c, _ = cluster
    monkeypatch.setenv("STANDIN_KEY", "sk-local")
    d = _problem_dir(tmp_path, 9)
    db = tmp_path / "r.sqlite"
    gate = _SecondCallGate()
    with StandinServer(gate, latency_s=0.0) as srv:
        cfg = SweepConfig(suite=str(d), strategies=["two-step"], models=["openai:standin"], concurrency=6,
                          db=db, api_base=srv.base_url, api_key_env="STANDIN_KEY", executor="ray")
        done: list = []
        driver = threading.Thread(target=lambda: done.append(asyncio.run(Sweep(cfg, progress=False).run())))
        driver.start()
        try:
            # six cells at once on three nodes, each holding its second request: two on every node
            assert gate.wait_held(6, timeout=180), gate.held
            victim = next(w for w in cluster[1] if w in c.worker_nodes)
            c.remove_node(victim, allow_graceful=False)
            # the driver has recorded the two attempts the node took down before any held request
            # is answered: each lost attempt spent exactly its first call
            deadline = time.monotonic() + 120
            while len(_rows(db, "SELECT 1 FROM lost_attempts")) < 2 and time.monotonic() < deadline:
                time.sleep(0.05)  # polling the database, not ordering events
        finally:
            gate.open()
            driver.join(timeout=600)
    assert done, "the sweep did not finish"
    summary = done[0]
    assert (summary.grid_done, summary.failed) == (9, 0)
    rows = _rows(db, "SELECT key, state, runs, node FROM cells")
    assert all(r["state"] == "done" for r in rows) and len(rows) == 9
    assert victim.node_id not in {r["node"] for r in rows}
    lost = _rows(db, "SELECT * FROM lost_attempts")
    # the cells that were on the dead node: each ran again elsewhere, recorded once, its first
    # (answered) request's tokens kept as the lost attempt's spend
    assert len(lost) == 2 and {r["node"] for r in lost} == {victim.node_id}
    assert all(r["calls"] == 1 and r["input_tokens"] > 0 and r["output_tokens"] > 0 for r in lost), \
        [(r["calls"], r["input_tokens"], r["output_tokens"]) for r in lost]
    runs = {r["key"]: r["runs"] for r in rows}
    assert all(runs[r["cell_key"]] == 2 for r in lost) and sum(runs.values()) == 9 + len(lost)
    _check_artifacts_on_the_driver(db, db.parent / "r_runs")
    # shown, not hidden: by `bench report` and on the dashboard's Sweeps page
    from physlab.web.sweeps import sweeps_page

    spent = sum(r["input_tokens"] + r["output_tokens"] for r in lost)
    table = build_report(ResultsStore(db, create=False)).lost
    assert table.attempts == len(lost) and table.tokens == spent
    cli = subprocess.run([sys.executable, "-m", "physlab", "bench", "report", "--db", str(db)],
                         capture_output=True, text=True, timeout=120)
    assert cli.returncode == 0, cli.stderr
    assert "lost attempts" in cli.stdout.lower() and f"{spent:,}" in cli.stdout
    html = sweeps_page(db, {}, tmp_path)
    assert 'id="lost-attempts"' in html and f"{spent:,}" in html and victim.node_id[:8] in html


def test_a_killed_driver_rerun_does_nothing_twice(cluster, tmp_path):
    """`bench run --ray ADDRESS` killed with SIGKILL mid-sweep, then the same command again."""
    c, _ = cluster
    d = _problem_dir(tmp_path, 12)
    db = tmp_path / "r.sqlite"
    env = {**os.environ, "STANDIN_KEY": "sk-local"}
    with StandinServer(lambda body: ANSWER, latency_s=0.2) as srv:
        args = [sys.executable, "-m", "physlab", "bench", "run", str(d), "--ray", c.address,
                "--strategies", "oneshot,two-step", "--models", "openai:standin", "--concurrency", "4",
                "--db", str(db), "--api-base", srv.base_url, "--api-key-env", "STANDIN_KEY", "--no-progress"]
        proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline and proc.poll() is None:
            if _done(db) >= 6:
                break
            time.sleep(0.05)  # polling the database, not ordering events
        proc.send_signal(signal.SIGKILL)
        proc.communicate()
        before = {r["key"]: r["finished_at"] for r in _rows(db, "SELECT key, finished_at FROM cells WHERE state='done'")}
        assert 0 < len(before) < 24, "the kill must land mid-sweep"
        assert _rows(db, "SELECT 1 FROM cells WHERE state='running'")  # it held cells when it died
        again = subprocess.run(args, capture_output=True, text=True, env=env, timeout=600)
        assert again.returncode == 0, again.stderr
        assert f"{len(before)} already done" in again.stdout and "24 done" in again.stdout
    rows = _rows(db, "SELECT key, state, runs, finished_at FROM cells")
    assert len(rows) == 24 and all(r["state"] == "done" for r in rows)
    for r in rows:
        if r["key"] in before:  # recorded before the kill: never run again
            assert r["runs"] == 1 and r["finished_at"] == before[r["key"]]
    assert max(r["runs"] for r in rows) <= 2
    _check_artifacts_on_the_driver(db, db.parent / "r_runs")


def test_a_file_a_node_cannot_read_stops_the_sweep_before_any_cell_runs(cluster, tmp_path):
    """`bench run --ray SUITE` (--ray alone: the cluster RAY_ADDRESS names) with a `replay:` model
    named relative to where the driver runs: the nodes' runners work in another directory and
    cannot read it, so the sweep stops in one line and no cell runs (files are not shipped)."""
    c, _ = cluster
    d = _problem_dir(tmp_path, 2)
    (tmp_path / "calls.jsonl").write_text(json.dumps({"role": "solver", "model": "scripted:x"}) + "\n")
    db = tmp_path / "r.sqlite"
    env = {**os.environ, "RAY_ADDRESS": c.address}
    p = subprocess.run([sys.executable, "-m", "physlab", "bench", "run", "--ray", str(d), "--models",
                        "replay:calls.jsonl", "--db", str(db), "--no-progress"],
                       cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert p.returncode == 2, p.stderr
    lines = [x for x in p.stderr.splitlines() if x.strip()]
    assert len(lines) == 1 and "calls.jsonl" in lines[0] and "not there" in lines[0], p.stderr
    assert not _rows(db, "SELECT 1 FROM cells WHERE state != 'pending' OR runs > 0")
