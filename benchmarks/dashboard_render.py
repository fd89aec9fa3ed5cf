"""What a hostile run costs the dashboard: one run page through the app, its ANSWER.md 50 KB of a
delimiter flood, against the same page with 50 KB of ordinary prose and formulas.

    python benchmarks/dashboard_render.py [--kb 50]

Prints CPU seconds per page and the ratio hostile / ordinary for each flood (``\\(`` unclosed took
38 s before delimiters were found in one pass). Every ratio should stay within a small factor:
finding formulas is linear in the text, and converting them is capped per text. Exits 1 if a page
takes more than 20 times the ordinary one.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

FLOODS = {
    "unclosed \\(": "\\(",
    "unclosed \\[": "\\[",
    "\\[ on every line": "\\[\n",
    "unclosed $$": "$$a",
    "$ without closers": "$a\\",
    "tiny formulas": "$a$ ",
    "mixed openers": "\\(\\[$$a$",
}


def prose(n: int) -> str:
    """Ordinary Markdown with a formula every ~100 characters, no two alike."""
    out, i = [], 0
    while sum(map(len, out)) < n:
        out.append(f"The fidelity at order {i} is $F_{{{i}}}(p) = 1 - \\frac{{3}}{{2}} p^{{{i}}}$ for the "
                   f"**post-selected** runs, see \\(p_{{{i}}} \\ll 1\\).\n\n")
        i += 1
    return "".join(out)[:n]


def distinct_formulas(n: int) -> str:
    out, i = [], 0
    while sum(map(len, out)) < n:
        out.append(f"$x_{{{i}}}$ ")
        i += 1
    return "".join(out)[:n]


def page_cpu(text: str) -> float:
    from fastapi.testclient import TestClient

    from physlab.web import create_app
    from physlab.web.mathml import tex_to_mathml

    with tempfile.TemporaryDirectory() as tmp:
        run = Path(tmp) / "runs" / "r"
        run.mkdir(parents=True)
        (run / "metrics.json").write_text('{"status": "complete", "has_answer": true}')
        (run / "ANSWER.md").write_text(text)
        client = TestClient(create_app(Path(tmp) / "runs"), base_url="http://127.0.0.1")
        client.get("/runs/r")  # warm: imports, templates
        best = float("inf")
        for _ in range(3):
            tex_to_mathml.cache_clear()  # every formula converted, as on a page's first render
            start = time.process_time()
            assert client.get("/runs/r").status_code == 200
            best = min(best, time.process_time() - start)
        return best


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--kb", type=int, default=50)
    n = ap.parse_args().kb * 1000
    base = page_cpu(prose(n))
    print(f"ordinary prose and formulas: {base:.3f} s CPU per page")
    worst = 0.0
    floods = {name: (unit * (n // len(unit) + 1))[:n] for name, unit in FLOODS.items()}
    floods["distinct tiny formulas"] = distinct_formulas(n)
    for name, text in floods.items():
        cpu = page_cpu(text)
        worst = max(worst, cpu / base)
        print(f"{name:>20}: {cpu:.3f} s CPU per page ({cpu / base:.1f}x)")
    return 0 if worst <= 20 else 1


if __name__ == "__main__":
    sys.exit(main())
