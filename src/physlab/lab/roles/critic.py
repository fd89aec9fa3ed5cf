"""Senior Critic: periodic (and on-demand) audit of coherence, strategy staleness, missing
validation and termination readiness; files typed critiques."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from physlab.lab.roles._base import LabEnv, run_role

ROLE = "critic"


class CritiqueDraft(BaseModel):
    target_type: Literal["ER", "strategy", "coordination", "sanity_check"]
    target: str | None = Field(default=None, description="The ER-n id when target_type is ER.")
    kind: Literal["coherence", "staleness", "missing_validation", "scope", "sanity_check", "termination", "other"] = "other"
    text: str = Field(description="The critique: what is wrong or missing, and the evidence for it.")


class Audit(BaseModel):
    critiques: list[CritiqueDraft] = Field(default_factory=list)
    assessment: str = Field(default="", description="One paragraph on the state of the research.")


async def run(env: LabEnv, user_prompt: str) -> Audit:
    return await run_role(env, ROLE, user_prompt, Audit, output_name="submit_audit")
