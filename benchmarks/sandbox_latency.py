"""Sandbox latency: cold (fresh bwrap + python + import sympy) vs warm pool, for a SymPy one-liner.

    python benchmarks/sandbox_latency.py [--runs 30] [--backend bwrap|rlimit]

Prints p50/p95 wall seconds as seen by the caller. The target is a warm SymPy one-liner well
under 150 ms.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import time

from physlab.sandbox import Sandbox, launch

ONE_LINER = "import sympy as sp; x = sp.symbols('x'); print(sp.diff(sp.sin(x) * sp.exp(x), x))"


def pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(q * (len(xs) - 1))))]


def cold_once(backend: str) -> float:
    python = launch.python_executable()
    cmd = [python, "-I", "-c", ONE_LINER]
    argv = launch.bwrap_argv(cmd, launch.run_env(), zygote=False) if backend == "bwrap" else cmd
    t0 = time.perf_counter()
    out = subprocess.run(argv, capture_output=True, env=launch.run_env(), cwd="/tmp")
    dt = time.perf_counter() - t0
    assert out.returncode == 0, out.stderr
    return dt


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=30)
    ap.add_argument("--backend", default="auto")
    args = ap.parse_args()
    backend = launch.resolve_backend(args.backend)

    cold = [cold_once(backend) for _ in range(args.runs)]

    sb = Sandbox(backend, workers=1)
    t0 = time.perf_counter()
    sb.warm()
    start = time.perf_counter() - t0
    sb.run_sync(ONE_LINER)  # first fork of a fresh worker
    warm = []
    for _ in range(args.runs):
        t0 = time.perf_counter()
        res = sb.run_sync(ONE_LINER)
        warm.append(time.perf_counter() - t0)
        assert res.exit_code == 0, res.stderr
    sb.close()

    print(f"backend: {backend}   runs: {args.runs}   one-liner: {ONE_LINER}")
    print(f"cold  (fresh {'bwrap + ' if backend == 'bwrap' else ''}python + import sympy): "
          f"p50 {statistics.median(cold) * 1000:7.1f} ms   p95 {pct(cold, 0.95) * 1000:7.1f} ms")
    print(f"warm  (pool, fork per run):                 "
          f"p50 {statistics.median(warm) * 1000:7.1f} ms   p95 {pct(warm, 0.95) * 1000:7.1f} ms")
    print(f"worker start (imports sympy/numpy/scipy/mpmath/matplotlib): {start:.2f} s")


if __name__ == "__main__":
    main()
