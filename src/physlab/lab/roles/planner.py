"""Planner: the strategy, the conventions and the sanity checks (testable pass/fail predicates);
answers strategy/coordination/sanity-check critiques, free to accept or reject each.

Its output is checked against the state: an unknown sanity-check id, an answer to a critique it
was not given, or a critique left unanswered goes back to it as a corrective message. On its last
try the valid part is kept and the rest is dropped and reported (``Desk.dropped``) — a critique
it never answered stays open; it is never taken as accepted."""

from __future__ import annotations

from dataclasses import dataclass, field

from pydantic import BaseModel, Field
from pydantic_ai import RunContext

from physlab.lab import context as C
from physlab.lab.roles._base import LabEnv, correct_or_drop, run_role
from physlab.lab.state.models import Critique, ResearchState

ROLE = "planner"


class CritiqueResponse(BaseModel):
    critique_id: str = Field(description="The CR-n id of a critique listed in <critiques-to-answer>.")
    accept: bool
    response: str = Field(description="Why the critique is accepted or rejected, and what changes in the plan.")


class Plan(BaseModel):
    strategy: str = Field(description="The research strategy: ordered steps, each yielding a checkable claim.")
    conventions: list[str] = Field(default_factory=list,
                                   description="Units, signs, normalisations and notation every agent follows "
                                               "(the whole list: it replaces the current one).")
    add_sanity_checks: list[str] = Field(default_factory=list,
                                         description="New pass/fail predicates the final answer must satisfy.")
    retire_sanity_checks: list[str] = Field(default_factory=list,
                                            description="SC-n ids of active sanity checks that no longer apply.")
    critique_responses: list[CritiqueResponse] = Field(default_factory=list)


@dataclass
class Desk:
    state: ResearchState
    critiques: list[Critique]
    dropped: list[str] = field(default_factory=list)


def _validate(ctx: RunContext[Desk], plan: Plan) -> Plan:
    s, asked = ctx.deps.state, {c.id for c in ctx.deps.critiques}
    active = {c.id for c in s.sanity_checks if c.status == "active"}
    bad_retire = [i for i in plan.retire_sanity_checks if i not in active]
    answered = [r.critique_id for r in plan.critique_responses]
    stray = [i for i in answered if i not in asked]
    missing = sorted(asked - set(answered))
    problems = []
    if not plan.strategy.strip():
        problems.append("the strategy is empty")
    if bad_retire:
        problems.append(f"retire_sanity_checks names {bad_retire}, which are not active sanity checks "
                        f"(active: {sorted(active) or 'none'})")
    if stray:
        problems.append(f"critique_responses answers {stray}, which were not given to you (answer: {sorted(asked) or 'none'})")
    if missing:
        problems.append(f"critiques {missing} have no response: accept or reject each, with a reason")
    if correct_or_drop(ctx, problems, "Submit the whole plan again with these fixed; everything else may stay."):
        ctx.deps.dropped = problems
        keep = [r for r in plan.critique_responses if r.critique_id in asked]
        plan = plan.model_copy(update={"retire_sanity_checks": [i for i in plan.retire_sanity_checks if i in active],
                                       "critique_responses": list({r.critique_id: r for r in keep}.values())})
    return plan


async def run(env: LabEnv, state: ResearchState, critiques: list[Critique], windows: C.Windows) -> tuple[Plan, Desk]:
    desk = Desk(state, list(critiques))
    plan = await run_role(env, ROLE, lambda level: C.for_planner(env.ctx.problem, state, critiques,
                                                                 windows.shrunk(level)), Plan,
                          deps=desk, output_name="submit_plan", output_validator=_validate)
    return plan, desk
