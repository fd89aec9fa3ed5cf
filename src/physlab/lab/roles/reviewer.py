"""Reviewer: adversarial check of one working hypothesis from its claim, evidence, code and
output (not the reasoning behind earlier established results). Verdict VERIFIED/REFUTED/INCONCLUSIVE,
with every check it made marked PASS, FAIL or N/A; a VERIFIED beside a failing check goes back to
it as a correction (on its last try the verdict becomes INCONCLUSIVE)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from pydantic import BaseModel, Field
from pydantic_ai import RunContext

from physlab.lab.roles._base import LabEnv, PromptSource, correct_or_drop, run_python, run_role

ROLE = "reviewer"


class CheckOutcome(BaseModel):
    check: str = Field(description="What was checked: a sanity check by id (SC-n), a pitfall, a limit, a definition.")
    outcome: Literal["PASS", "FAIL", "N/A"]
    note: str = Field(default="", description="What you tested and what you found (N/A: why it does not apply).")


class ReviewReport(BaseModel):
    verdict: Literal["VERIFIED", "REFUTED", "INCONCLUSIVE"]
    reasoning: str = Field(description="What you checked independently, how, and what you found; for REFUTED the "
                                       "flaw, for INCONCLUSIVE what evidence would decide it.")
    checks: list[CheckOutcome] = Field(default_factory=list, description="Every check you made: each sanity check "
                                                                         "that concerns the claim, the pitfalls, "
                                                                         "your own limits and definitions.")
    failed_checks: list[str] = Field(default_factory=list, description="Sanity checks (SC-n) or steps that fail.")


@dataclass
class ReviewDesk:
    env: LabEnv
    runs: list[tuple[str, ...]] = field(default_factory=list)


async def execute_python(ctx: RunContext[ReviewDesk], code: str) -> str:
    """Run your own self-contained check script in a fresh sandboxed process (numpy, scipy, sympy, mpmath).

    Args:
        code: The whole script; print every number your verdict relies on.
    """
    shown, raw = await run_python(ctx.deps.env, code)
    ctx.deps.runs.append((code, raw))
    return shown


def _validate(ctx: RunContext[ReviewDesk], r: ReviewReport) -> ReviewReport:
    failed = [c.check for c in r.checks if c.outcome == "FAIL"] + list(r.failed_checks)
    problems = []
    if r.verdict == "VERIFIED" and failed:
        problems.append(f"VERIFIED while checks fail ({'; '.join(failed)[:300]}): a failing check is a definite "
                        "error (REFUTED) or an open question (INCONCLUSIVE), unless it does not apply (then N/A, "
                        "saying why)")
    if correct_or_drop(ctx, problems, "Submit the review again."):
        r = r.model_copy(update={"verdict": "INCONCLUSIVE", "reasoning": r.reasoning + "\n(The lab recorded "
                                 "INCONCLUSIVE: the review said VERIFIED while checks failed.)"})
    return r


def report_text(r: ReviewReport) -> str:
    """The review as the state keeps it: the reasoning, then the checks with their outcomes."""
    lines = [r.reasoning.strip()]
    if r.checks:
        lines.append("Checks: " + "; ".join(f"{c.check}: {c.outcome}"
                                           + (f" ({c.note.strip()})" if c.note.strip() else "") for c in r.checks))
    if r.failed_checks:
        lines.append(f"Failed checks: {'; '.join(r.failed_checks)}")
    return "\n".join(x for x in lines if x)


async def run(env: LabEnv, user_prompt: PromptSource) -> ReviewReport:
    """With ``env.judges_compute`` off the reviewer has no tools (physics-intern's reviewer)."""
    return await run_role(env, ROLE, user_prompt, ReviewReport, tools=[execute_python] if env.judges_compute else [],
                          deps=ReviewDesk(env), output_name="submit_review", output_validator=_validate)
