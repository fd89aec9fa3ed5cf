"""What the lab's prompts weigh for one problem before any research: each role's first request (the
problem, the role's instructions, its context with every section still empty, its tools and its
structured answer) as it goes to the server in an output mode, and at the deepest level a
context-window refusal shrinks it to. The preflight (``physlab models check``) counts them with the
server's tokenizer and holds its window against them.

The request is made as a run makes it: the role's Agent (``lab/roles/_base``'s instructions and
user turn, the output type and tools its ``run_role`` call passes, :data:`ROLE_CALLS`) through the
model seam's output-mode layer (tools and the answer's schema carried in the text in the native,
constrained and prompted modes), caught before it would leave: issue #47 found the sizes counted
from the instructions alone ~40% short of what the server counted.
"""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

from physlab.lab.context import RolePrompt, problem_sections, render
from physlab.lab.roles import (
    ROLES,
    adjudicator,
    computer,
    critic,
    formatter,
    orchestrator,
    planner,
    researcher,
    reviewer,
)
from physlab.lab.roles._base import NO_STANDARDS_LEVEL, system_prompt, user_content
from physlab.lab.state import Survey
from physlab.llm.preflight import LabPrompts
from physlab.problems.model import Problem

# What each role's run_role call asks for (lab/roles/<role>.py): output type, tools, output name.
ROLE_CALLS: dict[str, tuple[type, list[Any], str]] = {
    "surveyor": (Survey, [], "submit_survey"),
    "planner": (planner.Plan, [], "submit_plan"),
    "orchestrator": (orchestrator.Decision, list(orchestrator.TOOLS), "submit_decision"),
    "researcher": (researcher.DerivationReport, [], "submit_derivation"),
    "computer": (computer.ComputerResult, [computer.document_approach, computer.execute_python], "submit_result"),
    "reviewer": (reviewer.ReviewReport, [reviewer.execute_python], "submit_review"),
    "critic": (critic.Audit, [], "submit_audit"),
    "adjudicator": (adjudicator.Ruling, [adjudicator.execute_python], "submit_ruling"),
    "formatter": (formatter.FinalAnswer, [], "submit_answer"),
}


class _Caught(Exception):
    """The request, caught where it would have gone to the server."""

    def __init__(self, text: str) -> None:
        self.text = text


def _wire_text(messages: list[Any], info: Any) -> str:
    """What the server is sent, as text: every message's content, the tools' definitions and the
    answer's schema (the parts a chat template renders; its own few tokens a message aside)."""
    from pydantic_ai.messages import ModelRequest, ModelResponse

    out: list[str] = []
    for msg in messages:
        if isinstance(msg, ModelRequest):
            if msg.instructions:
                out.append(msg.instructions)
            for part in msg.parts:
                content = getattr(part, "content", None)
                if isinstance(content, str):
                    out.append(content)
                elif isinstance(content, list):
                    out.extend(c for c in content if isinstance(c, str))
        elif isinstance(msg, ModelResponse):
            out.extend(str(getattr(p, "content", "")) for p in msg.parts)
    params = info.model_request_parameters
    if params.prompted_output_template is None and params.output_mode in ("prompted", "native") \
            and params.output_object is not None:  # the template the model itself adds (pydantic-ai's default)
        from pydantic_ai.profiles import DEFAULT_PROFILE

        params = replace(params, prompted_output_template=DEFAULT_PROFILE.get("prompted_output_template"))
    if (instr := params.prompted_output_instructions) and params.output_mode == "prompted":
        out.append(instr)  # the answer's schema, in the instructions
    for tool in (*params.function_tools, *params.output_tools):
        out.append(json.dumps({"name": tool.name, "description": tool.description,
                               "parameters": tool.parameters_json_schema}))
    if params.output_object is not None and params.output_mode == "native":
        out.append(json.dumps(params.output_object.json_schema))  # the response format (the text has it otherwise)
    return "\n".join(out)


async def first_request_text(role: str, problem: Problem, mode: str = "tool", level: int = 0) -> str:
    """``role``'s first request for ``problem`` at shrink ``level`` as it goes out in output ``mode``."""
    from pydantic_ai import Agent
    from pydantic_ai.models.function import FunctionModel

    from physlab.llm.meter import RunMeter
    from physlab.llm.output import OutputModeState, structured_output
    from physlab.llm.seam import seam_model

    def catch(messages: list[Any], info: Any) -> Any:
        raise _Caught(_wire_text(messages, info))

    output_type, tools, name = ROLE_CALLS[role]
    prompt: RolePrompt = render(role, problem_sections(problem))
    model = seam_model(FunctionModel(catch), role=role, spec="footprint:lab", meter=RunMeter(),
                       output_state=OutputModeState(configured=mode))
    agent = Agent(model, instructions=system_prompt(role, prompt.head, level), tools=tools,
                  output_type=structured_output(model, output_type, name=name))
    try:
        await agent.run(user_content(prompt, False))
    except Exception as exc:  # the seam names what it wraps: find the request inside
        found: BaseException | None = exc
        while found is not None and not isinstance(found, _Caught):
            found = found.__cause__ or found.__context__
        if isinstance(found, _Caught):
            return found.text
        raise
    raise AssertionError("the footprint's model answered")  # pragma: no cover - it only raises


async def lab_requests(problem: Problem, mode: str = "tool") -> dict[str, tuple[str, str]]:
    """Each role's first request for ``problem`` in ``mode``: (as sent, at its shortest)."""
    return {role: (await first_request_text(role, problem, mode),
                   await first_request_text(role, problem, mode, NO_STANDARDS_LEVEL)) for role in ROLES}


def first_request_chars(role: str, problem: Problem, level: int = 0) -> int:
    """Characters of ``role``'s instructions and context for ``problem`` at shrink ``level`` (its tools
    and answer schema not counted: :func:`first_request_text` has them)."""
    prompt = render(role, problem_sections(problem))
    return len(system_prompt(role, prompt.head, level)) + len(prompt.stable) + len(prompt.volatile)


def lab_prompts(problem: Problem, label: str) -> LabPrompts:
    """The largest first request of the lab for ``problem``, and the largest of the shortest ones
    (below that no role of the lab fits, however much the lab shrinks its context), in characters of
    instructions and context (a quick look; the preflight counts :func:`lab_requests` instead)."""
    full = {role: first_request_chars(role, problem) for role in ROLES}
    floor = {role: first_request_chars(role, problem, NO_STANDARDS_LEVEL) for role in ROLES}
    largest, tightest = max(full, key=full.__getitem__), max(floor, key=floor.__getitem__)
    return LabPrompts(problem=label, largest_role=largest, largest_chars=full[largest], floor_role=tightest,
                      floor_chars=floor[tightest])
