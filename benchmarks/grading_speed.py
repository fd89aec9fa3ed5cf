"""How long grading the CritPt QEC example takes with a warm sandbox.

    python benchmarks/grading_speed.py [--n 10]

Prints the median and p90 wall time of ``Grader.grade`` (both stages) for the reference answer,
an equivalent rewrite and a wrong answer, after warming the sandbox workers."""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import time
from pathlib import Path

from physlab.grading import Grader
from physlab.problems.model import Problem
from physlab.sandbox import Sandbox

DATA = Path(__file__).resolve().parents[1].parent / "shared/data/critpt/example_challenges/quantum_error_correction.json"


async def main(n: int) -> None:
    item = json.loads(DATA.read_text())["problems"][0]
    prob = Problem(id=item["problem_id"], statement="", answer_template=item["code_template"],
                   reference=item["answer_only_code"], reference_format="python")
    expr = item["answer_only_code"].split("=", 1)[1]
    cands = {
        "reference": item["code_template"].replace("F_logical = ...", item["answer_only_code"]),
        "factored": item["code_template"].replace("F_logical = ...", f"F_logical = sp.factor({expr})"),
        "wrong": item["code_template"].replace("F_logical = ...", f"F_logical = 2*({expr})"),
    }
    sb = Sandbox()
    sb.warm()
    grader = Grader(sb)
    await grader.grade(prob, cands["reference"])  # warm-up
    for name, code in cands.items():
        times = []
        for i in range(n):
            grader._cache.clear()  # measure both stages every time
            grader._verdicts.clear()
            t = time.monotonic()
            v = await grader.grade(prob, code + f"\n# {i}\n")
            times.append(time.monotonic() - t)
        times.sort()
        print(f"{name:10s} {v.verdict:9s} median {statistics.median(times):.2f} s  "
              f"p90 {times[int(0.9 * (len(times) - 1))]:.2f} s  (n={n})")
    sb.close()


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=10)
    asyncio.run(main(ap.parse_args().n))
