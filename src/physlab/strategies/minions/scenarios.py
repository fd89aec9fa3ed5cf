"""Scripted scenario ``scripted:minions-demo``: plays every PhysicsMinions role offline.

The demo exercises each path once: the figure description passes its checks, the first review
fails at the Physics-Verifier (so the bug report and refinement run), then two consecutive passes
accept the solution. The answer itself is a placeholder (the template filled with zeros, or
``\\boxed{0}``): the demo shows the mechanics, it does not pretend to solve anything. Figure
descriptions and reviews are given through the roles' output tools, as a real model gives them.
"""

from __future__ import annotations

import re
from typing import Any

from physlab.llm.scripted import Reply, Scenario, final_answer, last_user_text, register_scenario

_FIGURE = {"figure_type": "diagram", "summary": "Scripted description of the figure.",
           "axes": [], "curves": [], "labelled_quantities": [{"symbol": "a", "meaning": "radius"}],
           "geometry": ["scripted geometry fact"], "notes": "scripted"}
PASS = {"verdict": "pass", "issues": []}


def _placeholder_answer(prompt: str) -> str:
    m = re.search(r"```python\s*\n(.*?)```", prompt, re.DOTALL)
    if m:
        return "```python\n" + m.group(1).replace("...", "0") + "```"
    n = 1
    if "The expected answers, in order:" in prompt:
        block = prompt.split("The expected answers, in order:")[-1].strip().split("\n\n")[0]
        n = len(re.findall(r"^\d+\. ", block, re.MULTILINE))
    return "\n".join(r"\boxed{0}" for _ in range(max(n, 1)))


def _solution(prompt: str, tag: str) -> str:
    return (f"## Summary\nScripted {tag} solution.\n\n## Detailed Solution\nStep 1 (scripted).\n\n"
            + _placeholder_answer(prompt))


def minions_demo() -> Scenario:
    state = {"physics": 0}

    def respond(role: str, messages: list[Any], info: Any) -> Reply:
        prompt = last_user_text(messages)
        if role in ("visual_inspector", "visual_introspector"):
            return final_answer(info, _FIGURE)
        if role == "visual_verifier":
            return final_answer(info, PASS)
        if role == "solver":
            return _solution(prompt, "initial")
        if role == "introspector":
            return _solution(prompt, "revised")
        if role == "physics_verifier":
            state["physics"] += 1
            if state["physics"] == 1:
                return final_answer(info, {"verdict": "fail", "issues": ["Step 1 has no units (scripted objection)."]})
            return final_answer(info, PASS)
        if role == "general_verifier":
            return final_answer(info, PASS)
        if role == "formatter":
            return _placeholder_answer(prompt)
        return f"[{role}] scripted minions-demo has no reply for this role"

    return respond


register_scenario("minions-demo", minions_demo,
                  description="PhysicsMinions roles: one physics objection, then two passes (placeholder answer)")
