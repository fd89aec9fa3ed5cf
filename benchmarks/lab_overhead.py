"""The lab engine's own overhead per iteration, and the orchestrator's prompt size as a run grows.

Every role is an instant in-process FunctionModel (no network, no sandbox), so the time measured
per iteration is the engine's: state transitions, per-role context assembly, pydantic-ai agent
plumbing, Markdown rendering and the git commit. Each iteration the orchestrator opens a question,
dispatches a researcher, turns the last evidence into a hypothesis (reviewed and promoted) and
keeps a note; the critic files a strategy critique every 3 iterations (the planner answers).

    python benchmarks/lab_overhead.py [--iterations 40]
"""

from __future__ import annotations

import argparse
import asyncio
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path

from pydantic_ai.messages import ModelResponse, ToolCallPart

from physlab.lab.engine import LabEngine, LabSettings
from physlab.lab.scenarios import _parse as P
from physlab.llm.meter import RunMeter
from physlab.llm.scripted import final_answer, tool_call
from physlab.llm.usage import Budget
from physlab.problems.model import Problem
from physlab.run.environment import RunEnvironment
from physlab.sandbox import default_sandbox

PROMPT_SIZES: dict[int, int] = {}


def orchestrator(messages, info):
    prompt = P.prompt(messages)
    it = int(re.search(r"Iteration (\d+)\.", prompt).group(1))
    PROMPT_SIZES[it] = len(prompt)
    if P.turn(messages) == 0:
        parts = [ToolCallPart("create_research_question", {"question": f"sub-question {it}: " + "details " * 12}),
                 ToolCallPart("add_research_note", {"text": f"note {it}: " + "observation " * 10})]
        ev = [P.ids(item, "EV")[0] for item in P.new_evidence(prompt)]
        if ev:
            parts.append(ToolCallPart("propose_hypothesis", {"claim": f"claim from {ev[0]}: " + "words " * 10,
                                                              "value": str(it), "evidence_ids": [ev[0]]}))
        return ModelResponse(parts=parts)
    rq = re.findall(r"Created (RQ-\d+)", " ".join(P.tool_returns(messages)))
    return tool_call(info.output_tools[0].name, {"dispatches": [{"worker": "researcher", "target": rq[-1],
                                                                 "instructions": "derive"}]})


def fixed(payload):
    return lambda messages, info: final_answer(info, payload)


def critic(messages, info):
    return final_answer(info, {"critiques": [{"target_type": "strategy", "kind": "staleness", "text": "revisit the plan"}]})


def planner(messages, info):
    crits = P.ids(P.block(P.prompt(messages), "critiques-to-answer"), "CR")
    return final_answer(info, {"strategy": "keep going " * 10, "add_sanity_checks": [] if crits else ["bounded"],
                               "critique_responses": [{"critique_id": c, "accept": False, "response": "no"} for c in crits]})


ROLES = {
    "surveyor": fixed({"background": "b " * 200, "key_insights": ["k"] * 5, "known_methods": ["m"] * 5,
                       "known_pitfalls": ["p"] * 5}),
    "planner": planner, "orchestrator": orchestrator, "critic": critic,
    "researcher": fixed({"findings": "a result " * 40, "derivation_markdown": "steps " * 200, "confidence": "exact"}),
    "reviewer": fixed({"verdict": "VERIFIED", "reasoning": "checked " * 30}),
    "adjudicator": fixed({"decision": "dismiss", "reasoning": "r"}),
    "computer": fixed({"findings": "f", "method": "m", "confidence": "exact"}),
    "formatter": fixed({"ready": True, "answer_code": "def answer():\n    return 1\n", "answer_markdown": "1"}),
}


CALLS = {"n": 0}


class Source:
    name = "function:bench"

    def for_role(self, role):
        from pydantic_ai.models.function import FunctionModel

        def counted(messages, info):
            CALLS["n"] += 1
            return ROLES[role](messages, info)
        return FunctionModel(counted, model_name=f"bench-{role}")


async def main(iterations: int) -> None:
    problem = Problem(id="bench", statement="A benchmark problem. " * 50,
                      answer_template="def answer():\n    x = ...\n    return x\n")
    with tempfile.TemporaryDirectory() as tmp:
        ws = Path(tmp) / "run"
        meter = RunMeter(Budget(), ws / "calls.jsonl")
        ctx = RunEnvironment(problem=problem, workspace=ws, models=Source(), usage=meter, budget=Budget(),
                         sandbox=default_sandbox(), grader=None, equivalence=None)
        engine = LabEngine(ctx, LabSettings(max_iterations=iterations, critic_every=3))
        t0 = time.perf_counter()
        out = await engine.run()
        wall = time.perf_counter() - t0
        meter.close()
    rows = engine.timings
    print(f"{'iter':>4} {'total ms':>9} {'git ms':>7} {'orch prompt chars':>18}")
    for r in rows:
        it = int(r["iteration"])
        if it <= 5 or it % 5 == 0:
            print(f"{it:>4} {r['total_s'] * 1000:9.1f} {r['commit_s'] * 1000:7.1f} {PROMPT_SIZES.get(it, 0):>18,}")
    per_iter = [r["total_s"] for r in rows]
    s = out.state
    print(f"\nrun: {len(rows)} iterations, {CALLS['n']} model calls, {len(s.ers)} ERs, "
          f"{len(s.notes)} notes, {len(s.critiques)} critiques, wall {wall:.2f}s")
    print(f"engine overhead per iteration: median {statistics.median(per_iter) * 1000:.1f} ms, "
          f"max {max(per_iter) * 1000:.1f} ms (of which git commit median "
          f"{statistics.median(r['commit_s'] for r in rows) * 1000:.1f} ms)")
    first, last = PROMPT_SIZES[min(PROMPT_SIZES)], PROMPT_SIZES[max(PROMPT_SIZES)]
    mid = PROMPT_SIZES.get(10, first)
    print(f"orchestrator prompt: {first:,} chars at iteration 1, {mid:,} at 10, {last:,} at {max(PROMPT_SIZES)} "
          f"(growth from 10 to {max(PROMPT_SIZES)}: {last / mid:.2f}x while the state grew "
          f"{len(s.rqs)} questions / {len(s.notes)} notes)")


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--iterations", type=int, default=40)
    args = ap.parse_args()
    sys.exit(asyncio.run(main(args.iterations)))
