"""A sweep at scale against model-like latency: wall time against the latency-only ideal.

    python benchmarks/sweep_scale.py                      # 500 cells, then 1000 (a few minutes)
    python benchmarks/sweep_scale.py --cells 40 --median 0.2 --no-double   # a quick look

Runs `physlab bench run` (the real CLI, one process, every cell at once) over ``--cells`` cells:
problems x ``--strategies`` (default: the lab, RSA, multi-round and two-step), model
``openai:standin`` through the default path (pydantic-ai's OpenAI model, the openai SDK) with
``--api-base`` at the project's stand-in server, run as its own process. Each request waits a
latency drawn from a log-normal distribution (median ``--median`` s, shape ``--sigma``: at 0.8,
one request in a hundred waits over 6x the median). Replies play scripted tool flows: a request
that offers tools gets a call of one of them on its conversation's first turn, then a call of its
output tool with schema-valid arguments; one without tools gets a text answer with a filled template.

Printed, for the cells and then for twice as many (a new server, database and process):
- wall time executing cells (first claim to last cell written) against the ideal: the longest time
  any one cell had a request at the server (per cell, the union of its requests' arrival-to-reply
  intervals as the server timed them: the latency chain for sequential requests; a little over the
  longest of a batch sent together). Every cell runs at once, so no executor can beat that ideal;
  what it costs beyond it is client-side work and waiting on the path of the last cell;
- where the last cell's time went: waiting to send its first request, gaps between its requests
  (its own CPU work and its turn on the busy event loop), after its last reply;
- client CPU per request: the sweep process's CPU while executing cells / requests served (its
  child processes, git for the lab and the sandbox, apart);
- peak RSS per in-flight cell: (peak RSS of the sweep - peak RSS of the same command with nothing
  left to run) / cells.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import zlib
from pathlib import Path

TEMPLATE = "def answer(x):\n    y = ...\n    return y\n"
ANSWER = ("Working through the problem gives y = 2x.\n\nFinal Answer: y = 2x\n\n"
          "```python\ndef answer(x):\n    return 2 * x\n```\n")


# ---- the server process --------------------------------------------------------------------------

class FlowResponder:
    """Scripted tool flows, the same for the same request: a function tool on a conversation's
    first turn, then the output tool (or a JSON answer for a response format), else text."""

    def __call__(self, body: dict):
        from physlab.llm.standin import Reply, random_instance

        msgs = body.get("messages", [])
        rng = random.Random(zlib.crc32(json.dumps(msgs, sort_keys=True).encode()))
        tools = [t["function"] for t in body.get("tools") or [] if t.get("type") == "function"]
        outputs = [t for t in tools if t["name"].startswith("final_result")]
        functions = [t for t in tools if t not in outputs]
        turns = sum(m.get("role") == "assistant" for m in msgs)

        def call(tool: dict) -> Reply:
            schema = tool.get("parameters") or {"type": "object", "properties": {}}
            defs = schema.get("$defs") or {}
            return Reply(tool_calls=[(tool["name"], random_instance(schema, rng, defs=defs))])

        if functions and turns == 0:
            return call(rng.choice(functions))
        if outputs:
            return call(outputs[0])
        fmt = body.get("response_format") or {}
        if fmt.get("type") == "json_schema":
            schema = fmt["json_schema"].get("schema", {})
            return Reply(content=json.dumps(random_instance(schema, rng, defs=schema.get("$defs") or {})))
        return Reply(content=ANSWER)


def serve(median: float, sigma: float, seed: int, out: Path) -> int:
    """The stand-in in this process: prints its URL, serves until stdin closes, writes what it served."""
    from physlab.llm.standin import StandinServer

    rng = random.Random(seed)
    lock = threading.Lock()

    def latency(body: dict) -> float:
        with lock:
            return rng.lognormvariate(math.log(median), sigma)

    cpu0 = time.process_time()
    with StandinServer(FlowResponder(), latency_s=latency) as srv:
        print(srv.base_url, flush=True)
        sys.stdin.read()
    s = srv.stats
    out.write_text(json.dumps({"served": srv.served, "requests": s.requests, "answered": s.answered,
                               "max_in_flight": s.max_in_flight, "cpu_s": time.process_time() - cpu0}))
    return 0


# ---- one sweep -----------------------------------------------------------------------------------

def _problems(d: Path, n: int) -> None:
    d.mkdir(parents=True)
    for i in range(n):
        (d / f"p{i:04d}.yaml").write_text(
            f"id: p{i:04d}\nproblem: |\n  A particle of mass m moves in a potential V(x) = {i + 1} x^2. "
            "Find y as a function of x.\n" + "answer_template: |\n" + "".join(f"  {line}\n" for line in
                                                                              TEMPLATE.splitlines()))


def _union(intervals: list[tuple[float, float]]) -> float:
    total, end = 0.0, float("-inf")
    for a, b in sorted(intervals):
        if b > end:
            total += b - max(a, end)
            end = b
    return total


def _bench_run(args: argparse.Namespace, suite: Path, base: str, db: Path) -> tuple[int, dict]:
    """`physlab bench run` in a child process: its exit code and resource usage (wait4)."""
    cmd = [sys.executable, "-m", "physlab", "bench", "run", str(suite), "--strategies", args.strategies,
           "--models", "openai:standin", "--api-base", base, "--db", str(db), "--no-progress",
           "--concurrency", str(args.concurrency or 10 ** 6), "--budget-calls", str(args.budget_calls),
           "--param", f"max_iterations={args.iterations}"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    out = err = ""

    def drain() -> None:
        nonlocal out, err
        out, err = proc.stdout.read(), proc.stderr.read()

    reader = threading.Thread(target=drain)
    reader.start()
    _, status, usage = os.wait4(proc.pid, 0)
    reader.join()
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode not in (0, 1):
        raise SystemExit(f"the sweep failed ({proc.returncode}):\n{out}\n{err[-3000:]}")
    return proc.returncode, {"maxrss_mb": usage.ru_maxrss / 1024, "cpu_s": usage.ru_utime + usage.ru_stime}


def sweep(args: argparse.Namespace, cells: int, scratch: Path) -> dict:
    from physlab.llm.meter import read_calls

    n_strategies = len(args.strategies.split(","))
    suite = scratch / f"problems-{cells}"
    _problems(suite, max(1, cells // n_strategies))
    served_file = scratch / f"served-{cells}.json"
    server = subprocess.Popen([sys.executable, __file__, "--serve", "--median", str(args.median),
                               "--sigma", str(args.sigma), "--seed", str(args.seed), "--out", str(served_file)],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        base = server.stdout.readline().strip()
        if not base.startswith("http://"):
            raise SystemExit(f"the stand-in did not start (said {base!r})")
        db = scratch / f"results-{cells}.sqlite"
        code, usage = _bench_run(args, suite, base, db)
        _, idle = _bench_run(args, suite, base, db)  # the same command, nothing left to run
    finally:
        server.communicate(input="", timeout=60)
    stats = json.loads(served_file.read_text())
    served = stats["served"]
    con = sqlite3.connect(db)
    rows = con.execute("SELECT strategy, state, status, stop_reason, workspace, calls, started_at, finished_at "
                       "FROM cells").fetchall()
    run = con.execute("SELECT started_at, finished_at, cpu_s, cells_ran FROM worker_runs "
                      "ORDER BY started_at LIMIT 1").fetchone()
    con.close()
    started, finished, cpu_s, ran = run
    ideal, statuses, calls, first_request = 0.0, {}, {}, {}
    last_end = max(r[7] for r in rows)
    for strategy, _state, status, reason, ws, n_calls, _, cell_end in rows:
        label = f"{status} ({reason})" if status == "error" else status
        statuses[label] = statuses.get(label, 0) + 1
        calls.setdefault(strategy, []).append(n_calls or 0)
        path = Path(ws or "") / "calls.jsonl"
        intervals = []
        for rec in read_calls(path) if path.is_file() else []:
            rid = (rec.response or {}).get("provider_response_id")
            if rid in served:
                arrived, latency = served[rid]
                intervals.append((arrived, arrived + latency))
        if not intervals:
            continue
        ideal = max(ideal, _union(intervals))
        first_request.setdefault(strategy, []).append(min(a for a, _ in intervals) - started)
        if cell_end == last_end:  # the cell that finished last: where its time went
            first, end = min(a for a, _ in intervals), max(b for _, b in intervals)
            path_parts = (strategy, first - started, (end - first) - _union(intervals), cell_end - end,
                          _union(intervals))
    return {"cells": len(rows), "ran": ran, "exit": code, "statuses": statuses, "wall": finished - started,
            "ideal": ideal, "requests": stats["answered"], "cpu_s": cpu_s, "process_cpu_s": usage["cpu_s"],
            "server_cpu_s": stats["cpu_s"], "max_in_flight": stats["max_in_flight"],
            "rss_mb": usage["maxrss_mb"], "idle_rss_mb": idle["maxrss_mb"], "last": path_parts,
            "calls": {k: sum(v) / len(v) for k, v in sorted(calls.items())},
            "first_request": {k: (statistics.median(v), max(v)) for k, v in sorted(first_request.items())}}


def report(r: dict) -> None:
    print(f"{r['cells']} cells ({', '.join(f'{v} {k}' for k, v in sorted(r['statuses'].items()))}), "
          f"{r['requests']} requests, at most {r['max_in_flight']} in flight at the server")
    print("  requests per cell: " + ", ".join(f"{k} {v:.1f}" for k, v in r["calls"].items()))
    print("  first request at the server after the sweep started, median / latest: " + ", ".join(
        f"{k} {a:.1f} / {b:.1f} s" for k, (a, b) in r["first_request"].items()))
    print(f"  wall executing cells {r['wall']:.1f} s, latency-only ideal {r['ideal']:.1f} s "
          f"-> {100 * r['ideal'] / r['wall']:.0f} % of ideal")
    strategy, wait, gaps, tail, busy = r["last"]
    print(f"  the cell that finished last ({strategy}): {wait:.1f} s to its first request, {busy:.1f} s with a request at the "
          f"server, {gaps:.1f} s between its requests, {tail:.1f} s after its last reply")
    print(f"  client CPU {1e3 * r['cpu_s'] / max(1, r['requests']):.1f} ms per request "
          f"({r['cpu_s']:.1f} s while executing cells; {r['process_cpu_s']:.1f} s for the whole command with "
          f"its child processes); stand-in server {1e3 * r['server_cpu_s'] / max(1, r['requests']):.1f} ms "
          "per request")
    print(f"  peak RSS {r['rss_mb']:.0f} MB ({r['idle_rss_mb']:.0f} MB with no cell to run) -> "
          f"{(r['rss_mb'] - r['idle_rss_mb']) / max(1, r['ran']):.2f} MB per in-flight cell")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cells", type=int, default=500)
    ap.add_argument("--no-double", action="store_true", help="Skip the second sweep at twice the cells.")
    ap.add_argument("--strategies", default="lab,rsa,multi-round,two-step")
    ap.add_argument("--median", type=float, default=2.0, help="Median latency per request, seconds.")
    ap.add_argument("--sigma", type=float, default=0.8, help="Log-normal shape (the tail's weight).")
    ap.add_argument("--iterations", type=int, default=2, help="--param max_iterations for every cell.")
    ap.add_argument("--budget-calls", type=int, default=40, help="--budget-calls for every cell.")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--concurrency", type=int, default=None, help="Cells at once (default: all of them).")
    ap.add_argument("--scratch", type=Path, default=None, help="Where databases and workspaces go.")
    ap.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--out", type=Path, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.serve:
        return serve(args.median, args.sigma, args.seed, args.out)
    print(f"latency log-normal: median {args.median} s, sigma {args.sigma}; strategies {args.strategies}; "
          f"{os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}")
    with tempfile.TemporaryDirectory(dir=args.scratch) as tmp:
        for cells in (args.cells,) if args.no_double else (args.cells, 2 * args.cells):
            report(sweep(args, cells, Path(tmp)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
