"""A sweep on a Ray cluster: cells per minute at 1, 2 and 3 one-CPU nodes, and what the Ray path
costs a cell beside the in-process path.

    python benchmarks/sweep_ray.py                 # ~5 minutes on 2 cores
    python benchmarks/sweep_ray.py --repeats 1 --noop-cells 60     # a quicker look

A local cluster (`ray.cluster_utils.Cluster`, every node on 127.0.0.1): a head with no CPU (the
driver's: it runs no cell), then one-CPU worker nodes added one at a time. Printed:

- CPU-bound: the built-in examples x ``--repeats`` cells, each of which runs one script in its node's
  sandbox: the enumeration of the QEC example's 16^5 fault patterns (about a CPU-second; the code
  ``scripted:oneshot-qec-enumerate`` answers with, run here for every cell: the grader would run it
  once per problem and template, then reuse its result), at 1, 2 and 3 nodes: cells per minute from
  the first cell sent to the last one written (the driver's worker_runs row; the nodes' start-up
  apart), and the ratio to one node. Each node's runner holds its one CPU and a one-worker sandbox
  pool. Three one-CPU nodes on a two-core machine share two cores: the third cannot add a core's worth.
- Per-cell overhead: ``--noop-cells`` cells whose run does nothing but make its directory, one at a
  time (--concurrency 1), in this process and through a one-node cluster (sent to the node, its
  directory packed, sent back and unpacked, its result written): seconds per cell each way, and the
  difference. Then the same at --concurrency 8 (cells per second through the pipe).

The machine's load (1-minute average) is printed with each figure, and beside each node count what
as many bare processes doing the same enumeration get at that moment, as a ratio to one: the most any
executor could get from the cores other people's work leaves free (on an idle 2-core machine, 2x at
two). Compare the sweep's ratio with that one.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sqlite3
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

MiB = 1024 * 1024


@dataclass
class _NoRecord:
    """What a run that does nothing hands back (the fields a sweep reads of a RunRecord)."""

    status: str = "complete"
    stop_reason: str = "answered"
    verdict: Any = None
    answer_code: str | None = None
    answer_text: str | None = "nothing"
    usage_by_role: dict = field(default_factory=dict)
    wall_s: float = 0.0
    checkpoints: list = field(default_factory=list)
    ran_as: str | None = None
    reference_conditioned: bool = False
    details: dict = field(default_factory=dict)


async def do_nothing(problem, strategy, options, shared, *, workspace, replace=False, resume=False):
    """A cell's run that makes its directory and one file, and nothing else."""
    ws = Path(workspace)
    ws.mkdir(parents=True, exist_ok=True)
    (ws / "PROBLEM.md").write_text(f"# {problem.id}\n")
    return _NoRecord()


ENUMERATE = """import itertools

for _ in range(ROUNDS):
    weights = [0] * 6  # the QEC example's fault configurations by the number of faulty CNOTs
    for pattern in itertools.product(range(16), repeat=5):
        weights[sum(1 for f in pattern if f)] += 1
print(weights)
"""
ROUNDS = 4  # enumerations per cell (--rounds); the cell function carries it to the nodes


async def enumerate_in_sandbox(problem, strategy, options, shared, *, workspace, replace=False, resume=False):
    """A cell whose run is one CPU-heavy script in the node's sandbox (as model-written code is run)."""
    from physlab.sandbox import SandboxLimits

    res = await shared.sandbox.run(f"ROUNDS = {ROUNDS}\n" + ENUMERATE, limits=SandboxLimits(timeout_s=300))
    assert res.exit_code == 0 and "759375" in res.stdout, (res.stderr, res.error)
    ws = Path(workspace)
    ws.mkdir(parents=True, exist_ok=True)
    (ws / "enumeration.txt").write_text(res.stdout)
    return _NoRecord()


def _enumerate(rounds: int) -> None:
    exec(ENUMERATE, {"print": lambda *a: None, "ROUNDS": rounds})


def _bare(n: int) -> float:
    """A CPU-bound cell's script run by ``n`` bare processes at once: scripts per second."""
    import multiprocessing

    # spawned, not forked: this process has Ray's threads, and a fork copies their locks held
    with multiprocessing.get_context("spawn").Pool(n) as pool:
        pool.map(abs, range(n), chunksize=1)  # every worker up before the clock starts
        t0 = time.perf_counter()
        pool.map(_enumerate, [ROUNDS] * n, chunksize=1)
        return n / (time.perf_counter() - t0)


def _load() -> float:
    return os.getloadavg()[0]


def _executing_s(db: Path) -> float:
    con = sqlite3.connect(db)
    try:
        (s,) = con.execute("SELECT SUM(finished_at - started_at) FROM worker_runs").fetchone()
        return float(s)
    finally:
        con.close()


def _sweep(cfg_kw: dict, db: Path, *, solve=None, problems=None) -> tuple[int, float]:
    from physlab.bench.sweep import Sweep, SweepConfig

    cfg = SweepConfig(db=db, **cfg_kw)
    summary = asyncio.run(Sweep(cfg, progress=False, solve=solve, problems=problems).run())
    assert summary.grid_done == summary.cells and summary.failed == 0, summary
    return summary.ran, _executing_s(db)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeats", type=int, default=2, help="repeats of the examples x the CPU-heavy model")
    ap.add_argument("--nodes", type=int, default=3)
    ap.add_argument("--noop-cells", type=int, default=200)
    ap.add_argument("--rounds", type=int, default=4, help="enumerations per CPU-bound cell (each ~0.5 CPU-s)")
    args = ap.parse_args()
    global ROUNDS
    ROUNDS = args.rounds

    # Ray reads this when it is imported: 127.0.0.1 stays loopback (a one-machine cluster).
    os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"
    import ray
    from ray.cluster_utils import Cluster

    from physlab.problems import load_suite

    examples = load_suite("examples")
    node = {"node_ip_address": "127.0.0.1", "object_store_memory": 80 * MiB}
    print(f"load before: {_load():.2f} (1-min average, {os.cpu_count()} cores)")
    tmp = Path(tempfile.mkdtemp(prefix="physlab-sweep-ray-"))
    cluster = Cluster(initialize_head=True, head_node_args={**node, "num_cpus": 0, "include_dashboard": False})
    try:
        ray.init(address=cluster.address, logging_level="ERROR", log_to_driver=False)
        heavy = dict(suite="examples", strategies=["oneshot"], models=["scripted:oneshot-wrong"],
                     repeats=args.repeats, concurrency=8, executor="ray")
        rates: list[float] = []
        bare: list[float] = []
        for n in range(1, args.nodes + 1):
            cluster.add_node(**node, num_cpus=1)
            cluster.wait_for_nodes()
            bare.append(_bare(n))
            cells, secs = _sweep(heavy, tmp / f"cpu{n}.sqlite", solve=enumerate_in_sandbox, problems=examples)
            rates.append(cells / secs * 60)
            print(f"CPU-bound, {n} one-CPU node{'s' if n > 1 else ''}: {cells} cells in {secs:.1f} s = "
                  f"{rates[-1]:.1f} cells/min, {rates[-1] / rates[0]:.2f}x one node; {n} bare process"
                  f"{'es' if n > 1 else ''} just before: {bare[-1] / bare[0]:.2f}x one (load {_load():.2f})",
                  flush=True)
        for w in list(cluster.worker_nodes)[1:]:  # the overhead on one node
            cluster.remove_node(w)
        reps = max(1, args.noop_cells // len(examples))
        for conc in (1, 8):
            noop = dict(suite="examples", strategies=["oneshot"], models=["scripted:oneshot-wrong"], repeats=reps,
                        concurrency=conc)
            n_local, s_local = _sweep({**noop}, tmp / f"noop_local{conc}.sqlite", solve=do_nothing, problems=examples)
            n_ray, s_ray = _sweep({**noop, "executor": "ray"}, tmp / f"noop_ray{conc}.sqlite", solve=do_nothing,
                                  problems=examples)
            per_local, per_ray = s_local / n_local, s_ray / n_ray
            print(f"a cell that does nothing, --concurrency {conc}: in-process {per_local * 1000:.1f} ms/cell, "
                  f"Ray (one node) {per_ray * 1000:.1f} ms/cell: +{(per_ray - per_local) * 1000:.1f} ms per cell "
                  f"({n_ray} cells, load {_load():.2f})", flush=True)
    finally:
        ray.shutdown()
        cluster.shutdown()
    print(f"load after: {_load():.2f}")


if __name__ == "__main__":
    sys.exit(main())
