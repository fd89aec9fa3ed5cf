"""Sweep efficiency: 70 cells at once against the stand-in server with 200 ms latency.

    python benchmarks/sweep_efficiency.py [--cells 70] [--latency 0.2] [--strategy two-step]
                                          [--workers N (default: one per core)] [--concurrency 70]

Runs `physlab bench run` (the real CLI and sweep executor; ``--workers`` processes sharing one
results database, warmed up and started together) over 70 problems (CritPt's 70 public challenges
when ../shared/data is present, else 70 generated ones), one cell each, every model request going
to ``openai:standin`` at the project's stand-in server, run as its own process
(``python -m physlab.llm.standin``) with a fixed simulated latency.

Measured: the wall time executing cells (first claim to last cell written; interpreter start-up
and warm-up are printed apart), the CPU the workers used meanwhile (from the database's
``worker_runs``) and the CPU the stand-in server used (it shares the machine's cores).

Ideals (lower bounds on the wall time of any executor on this machine; work-span model):
- critical path (span): the longest cell's chain of sequential model requests x latency (the depth
  of a cell is the largest number of its requests that did not overlap in time: 2 for two-step);
  it leaves out the CPU each cell needs between its requests, so it is a loose lower bound;
- Brent bound on P cores: max(critical path, total CPU work / P), the total being the workers' and
  the stand-in's CPU -- 2 cores cannot finish sooner than their work allows.
Efficiency = ideal / measured wall. Target: >= 80 % against the 2-core (Brent) ideal. The load
average is printed because other processes on the machine take cores from the sweep.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
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


def _start_standin(latency: float, reply_file: Path) -> tuple[subprocess.Popen, str]:
    proc = subprocess.Popen([sys.executable, "-m", "physlab.llm.standin", "--latency", str(latency),
                             "--reply-file", str(reply_file)], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True)
    base = proc.stdout.readline().strip()
    if not base.startswith("http://127.0.0.1:"):
        proc.kill()
        raise SystemExit(f"the stand-in server did not start (said {base!r})")
    return proc, base


def _stop_standin(proc: subprocess.Popen) -> dict:
    out, _ = proc.communicate(input="", timeout=30)
    return json.loads(out.strip().splitlines()[-1])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cells", type=int, default=70)
    ap.add_argument("--latency", type=float, default=0.2)
    ap.add_argument("--strategy", default="two-step")
    ap.add_argument("--workers", type=int, default=os.cpu_count() or 1,
                    help="Worker processes (default: one per core).")
    ap.add_argument("--concurrency", type=int, default=None, help="Cells at once in total (default: all).")
    ap.add_argument("--keep-db", type=Path, default=None, help="Copy the results database here (timelines).")
    args = ap.parse_args()

    cores = os.cpu_count() or 1
    with tempfile.TemporaryDirectory(prefix="physlab-bench-") as tmp_s:
        tmp = Path(tmp_s)
        suite = _suite(args.cells, tmp)
        db = tmp / "results.sqlite"
        (tmp / "reply.md").write_text(ANSWER, encoding="utf-8")
        srv, base = _start_standin(args.latency, tmp / "reply.md")
        try:
            cmd = [sys.executable, "-m", "physlab", "bench", "run", suite, "--strategies", args.strategy,
                   "--models", "openai:standin", "--api-base", base, "--db", str(db),
                   "--concurrency", str(args.concurrency or args.cells), "--workers", str(args.workers),
                   "--no-progress"]
            load = os.getloadavg()[0]
            t0 = time.perf_counter()
            proc = subprocess.run(cmd, capture_output=True, text=True)
            wall_cmd = time.perf_counter() - t0
        finally:
            served = _stop_standin(srv)
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
        runs = con.execute("SELECT started_at, finished_at, cells_ran, cpu_s FROM worker_runs").fetchall()
        total_cells = con.execute("SELECT COUNT(*) FROM cells").fetchone()[0]
        con.close()
        if args.keep_db is not None:
            shutil.copyfile(db, args.keep_db)

    first_start = min(r[0] for r in runs)
    last_end = max(c[2] for c in cells)
    wall = last_end - first_start  # the workers start claiming together -> last cell written
    client_cpu = sum(r[3] for r in runs)
    server_cpu = served["cpu_s"]
    requests = served["requests"]
    span = max(depth.values()) * args.latency
    brent = max(span, (client_cpu + server_cpu) / cores)
    print(f"{len(cells)}/{total_cells} cells ({Path(suite).name}) x {args.strategy} x openai:standin, "
          f"{len(runs)} worker process(es) (cells each: {sorted(r[2] for r in runs)}), "
          f"{args.latency * 1000:.0f} ms latency, {cores} cores, load average {load:.1f} at start")
    print(f"stand-in: {requests} requests, max {served['max_in_flight']} in flight; deepest cell: "
          f"{max(depth.values())} sequential requests")
    print(f"wall: {wall:.2f} s executing cells ({wall_cmd:.2f} s for the whole command incl. interpreter "
          f"start-up, imports and warm-up)")
    print(f"CPU while executing: workers {client_cpu:.2f} s ({1000 * client_cpu / max(requests, 1):.1f} ms per "
          f"request), stand-in {server_cpu:.2f} s ({1000 * server_cpu / max(requests, 1):.1f} ms per request)")
    print(f"critical-path ideal {span:.2f} s -> efficiency {span / wall:.0%}")
    print(f"{cores}-core ideal max(critical path, CPU work/{cores}) {brent:.2f} s -> efficiency "
          f"{brent / wall:.0%} (target >= 80%)")
    print(json.dumps({"wall_s": round(wall, 3), "critical_path_s": round(span, 3),
                      "brent_bound_s": round(brent, 3), "client_cpu_s": round(client_cpu, 3),
                      "server_cpu_s": round(server_cpu, 3), "requests": requests,
                      "efficiency_critical_path": round(span / wall, 3),
                      "efficiency_brent": round(brent / wall, 3), "workers": len(runs),
                      "load_avg": round(load, 2)}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
