"""Sweep efficiency: 70 cells at once against the stand-in server with 200 ms latency.

    python benchmarks/sweep_efficiency.py [--cells 70] [--latency 0.2] [--strategy two-step]
                                          [--workers N (default 1)] [--concurrency 70]

Runs `physlab bench run` (the real CLI and sweep executor, ``--workers`` processes sharing one
results database) over 70 problems (CritPt's 70 public challenges when ../shared/data is present,
else 70 generated ones), one cell each, every model request going to ``openai:standin`` at the
project's OpenAI-compatible stand-in server with a fixed simulated latency.

Ideals (lower bounds on the wall time of any executor on this machine):
- critical path: the longest cell's chain of sequential model requests x latency (the depth of a
  cell is the largest number of its requests that did not overlap in time: 2 for two-step,
  the number of rounds for a strategy that fans out);
- Brent bound: max(critical path, total CPU used by the sweep / cores) -- a 2-core machine cannot
  finish faster than its CPU work allows.
Efficiency = ideal / measured wall. Target: >= 80 % of the Brent bound on 2 cores. The load average
is printed because other processes on the machine take cores from the sweep.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("PHYSLAB_SHARED_DATA", REPO.parent / "shared" / "data"))
ANSWER = ("The computation gives the result below.\n\n```python\ndef answer(*args, **kwargs):\n"
          "    return 0.0\n```\n")


def _suite(n: int, tmp: Path) -> str:
    critpt = SHARED / "critpt" / "public_test_challenges"
    if critpt.is_dir() and n == 70 and len(list(critpt.glob("*.json"))) == 70:
        return str(critpt)
    d = tmp / "generated"
    d.mkdir()
    for i in range(n):
        (d / f"p{i:03d}.yaml").write_text(
            f"id: p{i:03d}\nproblem: Compute the constant number {i}.\n"
            "answer_template: |\n  def answer():\n      return ...\n")
    return str(d)


def _depth(intervals: list[tuple[float, float]]) -> int:
    """Largest number of pairwise non-overlapping requests (greedy by end time)."""
    n, last_end = 0, float("-inf")
    for start, end in sorted(intervals, key=lambda x: x[1]):
        if start >= last_end - 1e-6:
            n += 1
            last_end = end
    return n


def _cpu_children() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cells", type=int, default=70)
    ap.add_argument("--latency", type=float, default=0.2)
    ap.add_argument("--strategy", default="two-step")
    ap.add_argument("--workers", type=int, default=1,
                    help="Worker processes (pays off only when the sweep lasts much longer than a worker's start-up).")
    ap.add_argument("--concurrency", type=int, default=None, help="Per worker (default: all cells).")
    args = ap.parse_args()

    from physlab.llm.standin import StandinServer

    cores = os.cpu_count() or 1
    with tempfile.TemporaryDirectory(prefix="physlab-bench-") as tmp_s:
        tmp = Path(tmp_s)
        suite = _suite(args.cells, tmp)
        db = tmp / "results.sqlite"
        with StandinServer(lambda body: ANSWER, latency_s=args.latency) as srv:
            cmd = [sys.executable, "-m", "physlab", "bench", "run", suite, "--strategies", args.strategy,
                   "--models", "openai:standin", "--api-base", srv.base_url, "--db", str(db),
                   "--concurrency", str(args.concurrency or args.cells), "--workers", str(args.workers),
                   "--no-progress"]
            # Interpreter start-up and imports are paid once per worker, not per cell: measure them
            # apart (a no-op run of the same command) so the figure is about executing cells.
            c = _cpu_children()
            subprocess.run([sys.executable, "-c", "import physlab.cli, physlab.strategies.runner, "
                            "physlab.bench.sweep, physlab.llm.models, pydantic_ai.models.openai, "
                            f"physlab.strategies.registry as r; r.create({args.strategy!r})"], check=True)
            startup_cpu = _cpu_children() - c
            load = os.getloadavg()[0]
            cpu0 = _cpu_children()
            t0 = time.perf_counter()
            proc = subprocess.run(cmd, capture_output=True, text=True)
            wall_cmd = time.perf_counter() - t0
            cpu = max(0.0, _cpu_children() - cpu0 - args.workers * startup_cpu)
            requests, max_in_flight = srv.stats.requests, srv.stats.max_in_flight
        if proc.returncode != 0:
            print(proc.stdout, proc.stderr, file=sys.stderr)
            return 1
        con = sqlite3.connect(db)
        cells = con.execute("SELECT key, started_at, finished_at FROM cells WHERE state='done'").fetchall()
        depth = {}
        for key, _, _ in cells:
            iv = [(ts - lat, ts) for ts, lat in con.execute(
                "SELECT ts, latency_s FROM calls WHERE cell_key=? AND error IS NULL", (key,))]
            depth[key] = _depth(iv)
        first_start = min(c[1] for c in cells)
        last_end = max(c[2] for c in cells)
        total_cells = con.execute("SELECT COUNT(*) FROM cells").fetchone()[0]

    wall_cells = last_end - first_start  # first cell claimed -> last cell written
    span = max(depth.values()) * args.latency
    brent = max(span, cpu / cores)
    print(f"{len(cells)}/{total_cells} cells ({Path(suite).name}) x {args.strategy} x openai:standin, "
          f"{args.workers} worker process(es), {args.latency * 1000:.0f} ms latency, {cores} cores, "
          f"load average {load:.1f} at start")
    print(f"stand-in: {requests} requests, max {max_in_flight} in flight; deepest cell: "
          f"{max(depth.values())} sequential requests")
    print(f"wall: {wall_cells:.2f} s executing cells ({wall_cmd:.2f} s for the whole command incl. "
          f"interpreter start-up and imports); CPU used executing cells: {cpu:.2f} s "
          f"(start-up {startup_cpu:.2f} s per worker subtracted)")
    print(f"critical-path ideal {span:.2f} s -> efficiency {span / wall_cells:.0%}")
    print(f"Brent bound max(critical path, CPU/cores) {brent:.2f} s -> efficiency {brent / wall_cells:.0%} "
          f"(target >= 80%)")
    print(json.dumps({"wall_s": round(wall_cells, 3), "critical_path_s": round(span, 3),
                      "brent_bound_s": round(brent, 3), "cpu_s": round(cpu, 3),
                      "efficiency_critical_path": round(span / wall_cells, 3),
                      "efficiency_brent": round(brent / wall_cells, 3), "load_avg": round(load, 2)}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
