"""Computer: documents its approach first, then writes and runs self-contained Python in the
sandbox, cross-checks by an independent route, and submits result + method + confidence. The
evidence keeps the code that really ran and the output the sandbox really printed."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from pydantic import BaseModel, Field
from pydantic_ai import ModelRetry, RunContext

from physlab.lab.roles._base import LabEnv, PromptSource, run_python, run_role

ROLE = "computer"


class ComputerResult(BaseModel):
    findings: str = Field(description="The result, quoting the values the code printed.")
    method: str = Field(description="What was computed and how, including the independent cross-check.")
    checks: list[str] = Field(default_factory=list,
                              description="Each check the scripts made and what they printed (cross-check, "
                                          "limits, sanity checks SC-n).")
    confidence: Literal["exact", "approximate", "partial"]


@dataclass
class Bench:
    env: LabEnv
    approach: str = ""
    approach_step: int | None = None
    runs: list[tuple[str, ...]] = field(default_factory=list)   # (code, raw output[, language])
    refused: list[str] = field(default_factory=list)


def document_approach(ctx: RunContext[Bench], approach: str) -> str:
    """FIRST call, alone: describe what you will compute, how, and why. No code yet.

    Args:
        approach: What you will compute, by which method, why it answers the task, and the independent
            cross-check you will run.
    """
    if not approach.strip():
        raise ModelRetry("Describe the approach in words (what, how, why).")
    ctx.deps.approach, ctx.deps.approach_step = approach.strip(), ctx.run_step
    return "Approach recorded. Now write a self-contained script and run it with execute_python."


async def execute_python(ctx: RunContext[Bench], code: str) -> str:
    """Run a complete, self-contained Python script in a fresh isolated process (numpy, scipy,
    sympy, mpmath available; no state carries over between calls; print what you need).

    Args:
        code: The whole script: imports, definitions, the computation, and a print of every number you will quote.
    """
    if ctx.deps.approach_step is None or ctx.deps.approach_step >= ctx.run_step:
        ctx.deps.refused.append("execute_python before document_approach")
        raise ModelRetry("Call document_approach first, on its own, before running any code.")
    shown, raw = await run_python(ctx.deps.env, code)
    ctx.deps.runs.append((code, raw))
    return shown


def _validate(ctx: RunContext[Bench], result: ComputerResult) -> ComputerResult:
    if not ctx.deps.runs:
        raise ModelRetry("You have not run any code: run it with execute_python before submitting.")
    return result


async def run(env: LabEnv, bench: Bench, user_prompt: PromptSource) -> ComputerResult:
    return await run_role(env, ROLE, user_prompt, ComputerResult, tools=[document_approach, execute_python],
                          deps=bench, output_name="submit_result", output_validator=_validate)
