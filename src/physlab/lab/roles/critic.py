"""Senior Critic: periodic, on-demand and pre-completion audit of coherence, strategy staleness,
missing validation, scope, loops and termination readiness; files typed critiques, each graded
by severity, with what is wrong, why it matters and how to test it.

A critique of an ER must name an active ER; more than ``max_critiques`` is too many; an empty audit
must say what was checked (silence is a claim that everything holds). Each goes back to the critic
as a corrective message; on its last try the valid critiques (the first ``max_critiques``) are kept
and the rest dropped and reported (``Desk.dropped``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from pydantic import BaseModel, Field
from pydantic_ai import RunContext

from physlab.lab.roles._base import LabEnv, PromptSource, correct_or_drop, run_role
from physlab.lab.state.models import ResearchState

ROLE = "critic"


class CritiqueDraft(BaseModel):
    target_type: Literal["ER", "strategy", "coordination", "sanity_check"]
    target: str | None = Field(default=None, description="The ER-n id when target_type is ER; for the other types, "
                                                         "optionally the id of what the critique is about.")
    kind: Literal["coherence", "staleness", "missing_validation", "scope", "sanity_check", "termination", "loop",
                  "premise", "other"] = "other"
    severity: Literal["HIGH", "MEDIUM", "LOW"] = Field(
        default="MEDIUM", description="HIGH: could make the final answer wrong; MEDIUM: a real concern that may not; "
                                      "LOW: minor. MEDIUM and LOW expire when left unresolved for a few iterations.")
    text: str = Field(description="What is wrong and why it matters, with the evidence for it (self-contained), and "
                                  "for a repeat of an earlier critique the new grounds.")
    test: str = Field(default="", description="How to test whether the objection holds: the computation, limit or "
                                              "check that would settle it.")


class Audit(BaseModel):
    critiques: list[CritiqueDraft] = Field(default_factory=list)
    assessment: str = Field(default="", description="The audit trail: what you checked, area by area, and your "
                                                    "conclusion on each. Required when you file nothing.")


@dataclass
class Desk:
    state: ResearchState
    max_critiques: int
    dropped: list[str] = field(default_factory=list)


def _validate(ctx: RunContext[Desk], audit: Audit) -> Audit:
    s = ctx.deps.state
    active = [e.id for e in s.active_ers()]

    def ok(d: CritiqueDraft) -> bool:
        return d.target_type != "ER" or d.target in active

    bad = [d.target or "(none)" for d in audit.critiques if not ok(d)]
    problems = []
    if bad:
        problems.append(f"critiques of an ER must name an active established result; {bad} "
                        f"{'is' if len(bad) == 1 else 'are'} not one (active: {active or 'none'})")
    if not audit.critiques and not audit.assessment.strip():
        problems.append("an empty audit with no assessment: silence is a claim that everything holds. Say in the "
                        "assessment what you checked, area by area, and why it holds — or file the concern")
    if len(audit.critiques) > ctx.deps.max_critiques:
        problems.append(f"{len(audit.critiques)} critiques filed; at most {ctx.deps.max_critiques} per audit "
                        "(keep the most important)")
    if correct_or_drop(ctx, problems, "Submit the audit again with these fixed."):
        ctx.deps.dropped = problems
        audit = audit.model_copy(update={"critiques": [d for d in audit.critiques if ok(d)][: ctx.deps.max_critiques]})
    return audit


async def run(env: LabEnv, desk: Desk, user_prompt: PromptSource) -> Audit:
    return await run_role(env, ROLE, user_prompt, Audit, deps=desk, output_name="submit_audit",
                          output_validator=_validate)
