"""How long grading takes with a warm sandbox, on both answer paths.

    python benchmarks/grading_speed.py [--n 10]

Prints the median and p90 wall time of ``Grader.grade`` (both stages) for the CritPt QEC example
(code: the reference, an equivalent rewrite, a wrong answer; written: the same rational function
as a boxed LaTeX answer) and for a HiPhO sample item answered in boxes with units, after warming
the sandbox workers. The CritPt data is read from ``$PHYSLAB_SHARED_DATA`` (default: the
``shared/data`` directory beside the repository)."""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import time
from pathlib import Path

from physlab.grading import Grader
from physlab.problems import load_suite
from physlab.problems.model import Problem
from physlab.sandbox import Sandbox

SHARED = Path(os.environ.get("PHYSLAB_SHARED_DATA", Path(__file__).resolve().parents[1].parent / "shared" / "data"))
DATA = SHARED / "critpt/example_challenges/quantum_error_correction.json"
QEC_LATEX = (r"\boxed{F = 1 - \frac{\frac{16}{25}p^2 - \frac{128}{125}p^3 + \frac{2048}{3375}p^4 - \frac{32768}{253125}p^5}"
             r"{1 - \frac{68}{15}p + \frac{704}{75}p^2 - \frac{32768}{3375}p^3 + \frac{253952}{50625}p^4"
             r" - \frac{262144}{253125}p^5}}")
HIPHO = (r"The radius is \boxed{a_c = \frac{2\sigma c_0}{P_0 (c_\ell - c_0)}} and numerically "
         r"\boxed{a_c = 0.31\,\mu\mathrm{m}}")


async def main(n: int) -> None:
    item = json.loads(DATA.read_text())["problems"][0]
    qec = Problem(id=item["problem_id"], statement="", answer_template=item["code_template"],
                  reference=item["answer_only_code"], reference_format="python")
    hipho = next(p for p in load_suite("hipho_sample") if p.id == "IPhO_2025_3_A_2")
    expr = item["answer_only_code"].split("=", 1)[1]
    cands = {
        "reference": (qec, item["code_template"].replace("F_logical = ...", item["answer_only_code"])),
        "factored": (qec, item["code_template"].replace("F_logical = ...", f"F_logical = sp.factor({expr})")),
        "wrong": (qec, item["code_template"].replace("F_logical = ...", f"F_logical = 2*({expr})")),
        "latex": (qec, "We find\n\n" + QEC_LATEX),
        "hipho": (hipho, HIPHO),
    }
    sb = Sandbox()
    sb.warm()
    grader = Grader(sb)
    for prob, text in cands.values():  # warm-up
        await grader.grade(prob, text)
    for name, (prob, text) in cands.items():
        times = []
        for i in range(n):
            grader._cache.clear()  # measure both stages every time
            grader._verdicts.clear()
            t = time.monotonic()
            v = await grader.grade(prob, text + f"\n\n<!-- {i} -->\n" if prob is hipho or name == "latex"
                                   else text + f"\n# {i}\n")
            times.append(time.monotonic() - t)
        times.sort()
        print(f"{name:10s} {v.details.get('path', ''):6s} {v.verdict:9s} median {statistics.median(times):.2f} s  "
              f"p90 {times[int(0.9 * (len(times) - 1))]:.2f} s  (n={n})")
    sb.close()


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=10)
    asyncio.run(main(ap.parse_args().n))
