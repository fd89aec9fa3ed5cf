"""Adjudicator: independent ruling on a critique filed against an established result:
uphold (the ER is demoted back to a working hypothesis) or dismiss."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from physlab.lab.roles._base import LabEnv, PromptSource, run_role
from physlab.lab.roles.reviewer import ReviewDesk, execute_python

ROLE = "adjudicator"


class Ruling(BaseModel):
    decision: Literal["uphold", "dismiss"]
    reasoning: str = Field(description="The independent check you made and what it showed.")


async def run(env: LabEnv, user_prompt: PromptSource) -> Ruling:
    return await run_role(env, ROLE, user_prompt, Ruling, tools=[execute_python], deps=ReviewDesk(env),
                          output_name="submit_ruling")
