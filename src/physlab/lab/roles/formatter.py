"""Formatter: writes the final answer in the problem's template from the established results,
or bounces back to the orchestrator when they cannot fill it."""

from __future__ import annotations

import ast
import re

from pydantic import BaseModel, Field
from pydantic_ai import ModelRetry, RunContext

from physlab.lab.roles._base import LabEnv, run_role

ROLE = "formatter"


class FinalAnswer(BaseModel):
    ready: bool = Field(description="False when the established results cannot fill the answer.")
    answer_code: str = Field(default="", description="The filled template (complete Python source).")
    answer_markdown: str = Field(default="", description="ANSWER.md: the answer and the results it rests on.")
    missing: str = Field(default="", description="When not ready: what is missing.")


def template_function(template: str | None) -> str | None:
    m = re.search(r"^def\s+(\w+)\s*\(", template or "", flags=re.M)
    return m.group(1) if m else None


def check_answer_code(code: str, template: str | None) -> str | None:
    """A reason the code cannot be the filled template, or None."""
    code = strip_fence(code)
    try:
        tree = ast.parse(code)
    except SyntaxError as exc:
        return f"answer_code is not valid Python ({exc.msg}, line {exc.lineno})"
    fn = template_function(template)
    if fn and not any(isinstance(n, ast.FunctionDef) and n.name == fn for n in tree.body):
        return f"answer_code must define the template's function `{fn}`"
    if any(isinstance(n, ast.Constant) and n.value is Ellipsis for n in ast.walk(tree)):
        return "answer_code still contains a `...` placeholder"
    return None


def strip_fence(code: str) -> str:
    m = re.search(r"```(?:python)?\n(.*?)```", code, flags=re.S)
    return (m.group(1) if m else code).strip() + "\n"


def _validator(template: str | None):
    def validate(ctx: RunContext[None], a: FinalAnswer) -> FinalAnswer:
        if a.ready and template:
            why = check_answer_code(a.answer_code, template)
            if why:
                raise ModelRetry(why + ". Return the complete template with every placeholder filled.")
            a = a.model_copy(update={"answer_code": strip_fence(a.answer_code)})
        if a.ready and not template and not a.answer_markdown.strip():
            raise ModelRetry("Write the answer in answer_markdown.")
        return a
    return validate


async def run(env: LabEnv, user_prompt: str) -> FinalAnswer:
    return await run_role(env, ROLE, user_prompt, FinalAnswer, output_name="submit_answer",
                          output_validator=_validator(env.ctx.problem.answer_template))
