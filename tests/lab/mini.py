"""A small, fast scripted lab scenario on a toy problem, for the machinery tests (resume, inbox,
budgets, parallel dispatch, robustness). Decisions come from the prompts it is shown; hooks let
a test act at a given iteration (post to the inbox, block, ...)."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from pydantic_ai.messages import ModelResponse, ToolCallPart

from physlab.lab.scenarios import _parse as P
from physlab.llm.scripted import final_answer, register_scenario, tool_call
from physlab.problems.model import Problem

TEMPLATE = "def answer():\n    value = ...\n    return value\n"


def mini_problem(reference: str | None = None) -> Problem:
    return Problem(id="mini", statement="Compute 6 times 7 exactly.", answer_template=TEMPLATE,
                   reference=reference, reference_format="python" if reference else None)


def calls(*pairs):
    return ModelResponse(parts=[ToolCallPart(n, a) for n, a in pairs])


def iteration_of(prompt: str) -> int:
    return P.iteration(prompt)


class Mini:
    hooks: dict[int, Callable[[], Any]] = {}
    seen: dict[str, list[str]] = {}

    def __init__(self) -> None:
        self.seen = type(self).seen
        self.done_hooks: set[int] = set()

    def __call__(self, role, messages, info):
        prompt = P.prompt(messages)
        self.seen.setdefault(role, []).append(prompt)
        return getattr(self, role)(messages, info, prompt)

    def surveyor(self, messages, info, prompt):
        return final_answer(info, {"background": "arithmetic", "key_insights": ["multiply"],
                                   "known_methods": ["python"], "known_pitfalls": ["off by one"]})

    def planner(self, messages, info, prompt):
        crits = P.ids(P.block(prompt, "critiques-to-answer"), "CR")
        return final_answer(info, {"strategy": "Compute the product in the sandbox, review it, answer.",
                                   "add_sanity_checks": [] if crits else ["the answer is a positive integer"],
                                   "critique_responses": [{"critique_id": c, "verdict": "accept", "response": "ok"}
                                                          for c in crits]})

    def orchestrator(self, messages, info, prompt):
        it = iteration_of(prompt)
        hook = type(self).hooks.get(it)
        if hook and it not in self.done_hooks and P.turn(messages) == 0:
            self.done_hooks.add(it)
            hook()
        out = info.output_tools[0].name
        done = P.tool_returns(messages)
        whs = P.hypotheses(prompt)
        ers = P.established(prompt)
        if "RQ-" not in P.block(prompt, "research-questions"):
            if not done:
                return calls(("create_research_question", {"question": "What is 6*7?"}))
            rq = re.findall(r"Created (RQ-\d+)", " ".join(done))[0]
            return tool_call(out, {"dispatches": [{"worker": "computer", "target": rq, "instructions": "compute"}]})
        evidence = P.new_evidence(prompt)
        demoted = [w for w, st in whs.items() if st == "demoted"]
        if evidence and not done and (not whs or demoted):
            ev = P.ids(evidence[-1], "EV")[0]
            value = re.search(r"value = (\S+)", P.block(evidence[-1], "findings")).group(1)
            if demoted:
                return calls(("revise_hypothesis", {"hypothesis_id": demoted[0], "add_evidence_ids": [ev]}))
            opened = re.findall(r"^(RQ-\d+) \[open\]", P.block(prompt, "research-questions"), flags=re.M)
            return calls(*[("close_question", {"question_id": r}) for r in opened],
                         ("propose_hypothesis", {"claim": f"6*7 = {value}", "value": value, "evidence_ids": [ev]}))
        if done:
            return tool_call(out, {"summary": "hypothesis updated"})
        if demoted:
            return tool_call(out, {"dispatches": [{"worker": "computer", "target": demoted[0], "instructions": "recompute"}]})
        if ers and not any(st == "proposed" for st in whs.values()):
            return tool_call(out, {"complete": True})
        return tool_call(out, {"summary": "waiting"})

    def computer(self, messages, info, prompt):
        if P.turn(messages) == 0:
            return calls(("document_approach", {"approach": "multiply in python"}))
        runs = P.tool_returns(messages, "execute_python")
        if not runs:
            return calls(("execute_python", {"code": "print(6*7)"}))
        printed = runs[-1].split("STDOUT:\n")[1].split()[0]
        return tool_call(info.output_tools[0].name, {"findings": f"value = {printed}", "method": "python",
                                                     "confidence": "exact"})

    def researcher(self, messages, info, prompt):
        return final_answer(info, {"findings": "value = 42", "derivation_markdown": "$6 \\times 7 = 42$",
                                   "confidence": "exact"})

    def reviewer(self, messages, info, prompt):
        return final_answer(info, {"verdict": "VERIFIED", "reasoning": "recomputed"})

    def critic(self, messages, info, prompt):
        return final_answer(info, {"critiques": []})

    def adjudicator(self, messages, info, prompt):
        crit = P.block(prompt, "critique")
        return final_answer(info, {"decision": "uphold" if "UPHOLD" in crit else "dismiss", "reasoning": "checked"})

    def formatter(self, messages, info, prompt):
        ers = [e for e in P.established(prompt) if e[3]]
        if not ers:
            return final_answer(info, {"ready": False, "missing": "no value"})
        return final_answer(info, {"ready": True, "answer_code": TEMPLATE.replace("...", ers[-1][3]),
                                   "answer_markdown": f"value {ers[-1][3]}",
                                   "sources": [{"part": "value", "source": ers[-1][0]}]})


def register(name: str, cls: type = Mini) -> str:
    register_scenario(name, cls)
    return f"scripted:{name}"
