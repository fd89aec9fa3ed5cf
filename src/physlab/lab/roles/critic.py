"""Senior Critic: periodic, on-demand and pre-completion audit of coherence, strategy staleness,
missing validation, scope and termination readiness; files typed critiques.

A critique of an ER must name an active ER; more than ``max_critiques`` is too many. Either goes
back to the critic as a corrective message; on its last try the valid critiques (the first
``max_critiques``) are kept and the rest dropped and reported (``Desk.dropped``)."""

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
    kind: Literal["coherence", "staleness", "missing_validation", "scope", "sanity_check", "termination", "other"] = "other"
    text: str = Field(description="What is wrong or missing, the evidence for it, and (for a repeat of an earlier "
                                  "critique) the new grounds.")


class Audit(BaseModel):
    critiques: list[CritiqueDraft] = Field(default_factory=list)
    assessment: str = Field(default="", description="One paragraph on the state of the research.")


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
