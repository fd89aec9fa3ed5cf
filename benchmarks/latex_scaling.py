"""How the literature's LaTeX extraction scales with a hostile paper's length (issue #45).

    python benchmarks/latex_scaling.py

``latex_main`` and ``latex_body`` read every e-print a role opens and every .tex file of a corpus,
so their time must grow linearly with the paper. For each attack (unclosed ``\\begin{figure}``,
``\\label{`` and ``\\title[`` openings, a file that ``\\input``s itself) this prints the time for a
paper of 10 K and 40 K repetitions and their ratio: about 4 is linear, 16 quadratic. (Before the fix,
40,000 unclosed figure openings took 58 s, and 120 self-inputs asked for gigabytes.)"""

from __future__ import annotations

import time

from physlab.tools.literature.text import latex_body, latex_main

ATTACKS = {
    "unclosed \\begin{figure}": "\\begin{figure}\n",
    "unclosed \\label{": "\\label{",
    "unclosed \\title[": "\\title[",
    "\\input of itself": "\\input{main}\n",
}


def _time(unit: str, n: int) -> float:
    files = {"main.tex": "\\documentclass{article}\\begin{document}Text.\n" + unit * n + "\\end{document}\n"
             + "x" * 2000}
    best = float("inf")
    for _ in range(3):
        start = time.perf_counter()
        latex_body(latex_main(files))
        best = min(best, time.perf_counter() - start)
    return best


def main() -> None:
    print(f"{'attack':28} {'10 K':>9} {'40 K':>9} {'ratio':>6}")
    for name, unit in ATTACKS.items():
        a, b = _time(unit, 10_000), _time(unit, 40_000)
        print(f"{name:28} {a * 1000:8.1f}ms {b * 1000:8.1f}ms {b / max(a, 1e-9):6.1f}")


if __name__ == "__main__":
    main()
