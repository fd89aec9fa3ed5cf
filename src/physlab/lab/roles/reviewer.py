"""Reviewer: adversarial check of one working hypothesis from its claim, evidence, code and
output (not the reasoning behind earlier established results). Verdict VERIFIED/REFUTED/INCONCLUSIVE."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from pydantic import BaseModel, Field
from pydantic_ai import RunContext

from physlab.lab.roles._base import LabEnv, PromptSource, run_python, run_role

ROLE = "reviewer"


class ReviewReport(BaseModel):
    verdict: Literal["VERIFIED", "REFUTED", "INCONCLUSIVE"]
    reasoning: str = Field(description="What you checked independently, how, and what you found; for REFUTED the "
                                       "flaw, for INCONCLUSIVE what evidence would decide it.")
    failed_checks: list[str] = Field(default_factory=list, description="Sanity checks (SC-n) or steps that fail.")


@dataclass
class ReviewDesk:
    env: LabEnv
    runs: list[tuple[str, str]] = field(default_factory=list)


async def execute_python(ctx: RunContext[ReviewDesk], code: str) -> str:
    """Run your own self-contained check script in a fresh sandboxed process (numpy, scipy, sympy, mpmath).

    Args:
        code: The whole script; print every number your verdict relies on.
    """
    shown, raw = await run_python(ctx.deps.env, code)
    ctx.deps.runs.append((code, raw))
    return shown


async def run(env: LabEnv, user_prompt: PromptSource) -> ReviewReport:
    return await run_role(env, ROLE, user_prompt, ReviewReport, tools=[execute_python], deps=ReviewDesk(env),
                          output_name="submit_review")
