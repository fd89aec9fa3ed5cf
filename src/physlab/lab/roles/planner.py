"""Planner: the strategy and the sanity checks (testable pass/fail predicates); answers
strategy/coordination/sanity-check critiques, free to accept or reject each."""

from __future__ import annotations

from pydantic import BaseModel, Field

from physlab.lab import context as C
from physlab.lab.roles._base import LabEnv, run_role
from physlab.lab.state.models import Critique, ResearchState

ROLE = "planner"


class CritiqueResponse(BaseModel):
    critique_id: str = Field(description="The CR-n id being answered.")
    accept: bool
    response: str = Field(description="Why the critique is accepted or rejected, and what changes.")


class Plan(BaseModel):
    strategy: str = Field(description="The research strategy: ordered steps, each checkable.")
    conventions: list[str] = Field(default_factory=list, description="Notation and conventions all agents follow.")
    add_sanity_checks: list[str] = Field(default_factory=list,
                                         description="New pass/fail predicates the final answer must satisfy.")
    retire_sanity_checks: list[str] = Field(default_factory=list, description="SC-n ids that no longer apply.")
    critique_responses: list[CritiqueResponse] = Field(default_factory=list)


async def run(env: LabEnv, state: ResearchState, critiques: list[Critique], windows: C.Windows) -> Plan:
    return await run_role(env, ROLE, C.for_planner(env.ctx.problem, state, critiques, windows), Plan,
                          output_name="submit_plan")
