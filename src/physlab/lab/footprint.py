"""What the lab's prompts weigh for one problem before any research: each role's first request (the
problem, the role's instructions, its context with every section still empty) as it is sent, and
at the deepest level a context-window refusal shrinks it to. The preflight (``physlab models check``)
holds the model's context window against them; tool definitions are not counted."""

from __future__ import annotations

from physlab.lab.context import problem_sections, render
from physlab.lab.roles import ROLES
from physlab.lab.roles._base import NO_STANDARDS_LEVEL, system_prompt
from physlab.llm.preflight import LabPrompts
from physlab.problems.model import Problem


def first_request_chars(role: str, problem: Problem, level: int = 0) -> int:
    """Characters of ``role``'s first request for ``problem`` at shrink ``level``."""
    prompt = render(role, problem_sections(problem))
    return len(system_prompt(role, prompt.head, level)) + len(prompt.stable) + len(prompt.volatile)


def lab_prompts(problem: Problem, label: str) -> LabPrompts:
    """The largest first request of the lab for ``problem``, and the largest of the shortest ones
    (below that no role of the lab fits, however much the lab shrinks its context)."""
    full = {role: first_request_chars(role, problem) for role in ROLES}
    floor = {role: first_request_chars(role, problem, NO_STANDARDS_LEVEL) for role in ROLES}
    largest, tightest = max(full, key=full.__getitem__), max(floor, key=floor.__getitem__)
    return LabPrompts(problem=label, largest_role=largest, largest_chars=full[largest], floor_role=tightest,
                      floor_chars=floor[tightest])
