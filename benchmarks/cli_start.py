"""How much CPU the `physlab` command spends before it does anything: help texts and a cold grade.

    python benchmarks/cli_start.py [--runs 7]

Each command runs in a fresh process, several times; the figure is the median CPU time (user +
system), printed as a ratio to `python -c pass` on the same machine (the machine is shared and
noisy; CPU time and the ratio travel, wall time does not). Goals (issues 38 and 44, measured on a
virtual environment made by `pip install -e .`, the README's install): `physlab --help` ≤ 12×
`python -c pass`; a cold `physlab grade` of a LaTeX answer ≤ 1.5 s of CPU in total, the `physlab`
process and the two sandbox workers it starts together. The last line is `physlab sandbox run`
of a `print(1 + 1)`, its worker included. The workers' CPU is read
from /proc while the command runs: they are killed when it ends, not waited for, so their time
never reaches this process's rusage.

The commands run as a user's would: with Python's bytecode cache (a `PYTHONDONTWRITEBYTECODE` in
this shell is not passed on, and each command runs once before it is measured).
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

# A correct answer to the built-in example, written as a model writes one: prose, then a box.
LATEX_ANSWER = ("Energy and momentum conservation for the photon scattering off an electron at rest give\n\n"
                "$$\\boxed{E' = \\frac{E}{1 + \\frac{E}{m c^2}(1-\\cos\\theta)}}$$\n")
PROBLEM = "examples/qft_compton_scattering"


def _physlab() -> list[str]:
    """The console script pip installed beside this interpreter (what a user runs), else `-m`."""
    script = Path(sys.executable).with_name("physlab")
    return [str(script)] if script.exists() else [sys.executable, "-m", "physlab"]


def _children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


_TICK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def _descendants_cpu(root: int) -> dict[int, float]:
    """CPU seconds so far of every process under ``root`` (Linux /proc; empty elsewhere)."""
    parent, cpu = {}, {}
    for entry in Path("/proc").iterdir() if Path("/proc/self/stat").exists() else ():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except (OSError, ValueError):
            continue
        fields = stat[stat.rindex(")") + 2:].split()  # after "pid (comm) "
        pid = int(entry.name)
        parent[pid], cpu[pid] = int(fields[1]), (int(fields[11]) + int(fields[12])) / _TICK
    under = {}
    for pid in cpu:
        p, seen = pid, 0
        while p in parent and seen < 64:
            p, seen = parent[p], seen + 1
            if p == root:
                under[pid] = cpu[pid]
                break
    return under


def run_once(argv: list[str], *, sample: bool) -> tuple[float, float, float, subprocess.CompletedProcess[str]]:
    """(CPU of the process, CPU of the processes it started, wall seconds, the result).

    With ``sample``, /proc is read every 20 ms while the command runs: the sandbox workers are
    killed, not waited for, so their time never reaches this process's rusage."""
    before = _children_cpu()
    start = time.monotonic()
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_ENV)
    seen: dict[int, float] = {}
    done = threading.Event()

    def sample_tree() -> None:
        while not done.wait(0.02):
            seen.update(_descendants_cpu(proc.pid))

    sampler = threading.Thread(target=sample_tree, daemon=True)
    if sample:
        sampler.start()
    out, err = proc.communicate()  # and reaped: its own time counts below
    done.set()
    if sample:
        sampler.join()
    wall = time.monotonic() - start
    own = _children_cpu() - before
    return own, sum(seen.values()), wall, subprocess.CompletedProcess(argv, proc.returncode, out, err)


# A user's Python writes and reads its bytecode cache; a development shell may have turned that off.
_ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def measure(argv: list[str], runs: int, *, sample: bool = False) -> tuple[float, float, float, float]:
    """Medians over ``runs`` fresh processes (after one unmeasured run that leaves the bytecode
    cache as a user's first run would): CPU of the process, of what it started, of both, wall."""
    run_once(argv, sample=False)
    own: list[float] = []
    tree: list[float] = []
    wall: list[float] = []
    for _ in range(runs):
        o, t, w, res = run_once(argv, sample=sample)
        if res.returncode not in (0, 1):
            sys.exit(f"{' '.join(argv)} failed ({res.returncode}): {res.stderr.strip()[-500:]}")
        own.append(o)
        tree.append(t)
        wall.append(w)
    total = [o + t for o, t in zip(own, tree)]
    return statistics.median(own), statistics.median(tree), statistics.median(total), statistics.median(wall)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=7, help="Runs of each command (the median is printed).")
    ap.add_argument("--grade-runs", type=int, default=3, help="Runs of the cold grade (it starts the sandbox).")
    args = ap.parse_args()
    base, _, _, _ = measure([sys.executable, "-c", "pass"], args.runs)
    print(f"python -c pass                     {base * 1000:6.0f} ms CPU")
    for label, argv in (("import typer", [sys.executable, "-c", "import typer"]),
                        ("physlab --help", [*_physlab(), "--help"]),
                        ("physlab grade --help", [*_physlab(), "grade", "--help"])):
        cpu, _, _, wall = measure(argv, args.runs)
        print(f"{label:34s} {cpu * 1000:6.0f} ms CPU  {cpu / base:5.1f}x  (wall {wall:.2f} s)")
    work = Path(tempfile.mkdtemp(prefix="physlab-cli-start-"))
    try:
        (work / "candidate.md").write_text(LATEX_ANSWER, encoding="utf-8")
        argv = [*_physlab(), "grade", PROBLEM, str(work / "candidate.md")]
        own, workers, total, wall = measure(argv, args.grade_runs, sample=True)
        print(f"physlab grade {PROBLEM} (a LaTeX answer, cold)\n{'':34s} {own:6.2f} s CPU in physlab, "
              f"+{workers:.2f} s in its sandbox workers  (wall {wall:.2f} s)\n"
              f"{'cold grade, CPU in total':34s} {total:6.2f} s  (goal 1.5 s)")
        (work / "two.py").write_text("print(1 + 1)\n", encoding="utf-8")
        own, workers, total, wall = measure([*_physlab(), "sandbox", "run", str(work / "two.py")], args.grade_runs,
                                            sample=True)
        print(f"{'physlab sandbox run print(1+1)':34s} {total:6.2f} s CPU in total ({own:.2f} s in physlab)  "
              f"(wall {wall:.2f} s)")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
