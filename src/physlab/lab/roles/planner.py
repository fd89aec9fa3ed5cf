"""Planner: the strategy, the conventions and the sanity checks (testable pass/fail predicates);
answers strategy/coordination/sanity-check critiques (accept, decline or dismiss each), is consulted
when an established result is demoted, and may abandon hypotheses or mark results obsolete.

Its output is checked against the state: an unknown sanity-check id, an answer to a critique it
was not given, a critique left unanswered, an action on an id it cannot act on (abandoning an
established result, marking a hypothesis obsolete) goes back to it as a corrective message. On its
last try the valid part is kept and the rest is dropped and reported (``Desk.dropped``) — a critique
it never answered stays open; it is never taken as accepted."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

from pydantic import BaseModel, Field
from pydantic_ai import RunContext

from physlab.lab import context as C
from physlab.lab.roles._base import LabEnv, correct_or_drop, run_role
from physlab.lab.state.models import Critique, ResearchState

ROLE = "planner"


class CritiqueResponse(BaseModel):
    critique_id: str = Field(description="The CR-n id of a critique listed in <critiques-to-answer>.")
    verdict: Literal["accept", "decline", "dismiss"] = Field(
        description="accept: it is right and the plan changes; decline: it is right but acting on it adds little "
                    "(say why); dismiss: it is wrong (give the counter-argument).")
    response: str = Field(description="The reason, and for accept what changes in the plan.")


class EntityAction(BaseModel):
    id: str = Field(description="A WH-n (abandon) or an active ER-n (obsolete) from your context.")
    action: Literal["abandon", "obsolete"] = Field(
        description="abandon a hypothesis (WH-n, not established) whose premise the evidence or the revision "
                    "invalidates; obsolete: an established result (ER-n) that is still right but superseded or no "
                    "longer needed (it stays established).")
    reason: str = Field(description="Why, naming the results or critiques that show it.")


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
    entity_actions: list[EntityAction] = Field(default_factory=list,
                                               description="Hypotheses to abandon and results to mark obsolete "
                                                           "(usually none).")


@dataclass
class Desk:
    state: ResearchState
    critiques: list[Critique]
    dropped: list[str] = field(default_factory=list)


def _validate(ctx: RunContext[Desk], plan: Plan) -> Plan:
    s, asked = ctx.deps.state, {c.id for c in ctx.deps.critiques}
    active = {c.id for c in s.sanity_checks if c.status == "active"}
    bad_retire = [i for i in plan.retire_sanity_checks if i not in active]
    bad_actions = [a for a in plan.entity_actions if action_problem(s, a)]
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
        problems.append(f"critiques {missing} have no response: accept, decline or dismiss each, with a reason")
    for a in bad_actions:
        problems.append(f"entity_actions: {action_problem(s, a)}")
    if correct_or_drop(ctx, problems, "Submit the whole plan again with these fixed; everything else may stay."):
        ctx.deps.dropped = problems
        keep = [r for r in plan.critique_responses if r.critique_id in asked]
        plan = plan.model_copy(update={"retire_sanity_checks": [i for i in plan.retire_sanity_checks if i in active],
                                       "critique_responses": list({r.critique_id: r for r in keep}.values()),
                                       "entity_actions": [a for a in plan.entity_actions if a not in bad_actions]})
    return plan


def action_problem(s: ResearchState, a: EntityAction) -> str:
    """Why the planner cannot take action ``a`` on the state (empty when it can)."""
    if a.action == "abandon":
        w = s.wh(a.id)
        if w is None:
            return f"{a.id} is not a hypothesis (WH-n) of this run; only a hypothesis can be abandoned"
        if w.status in ("established", "abandoned"):
            return f"{a.id} is {w.status}; an established result is challenged, never abandoned"
        return ""
    e = s.er(a.id)
    if e is None or e.status != "active":
        return f"{a.id} is not an active established result (ER-n); only those can be marked obsolete"
    return ""


async def run(env: LabEnv, state: ResearchState, critiques: list[Critique], windows: C.Windows,
              demotions: Sequence[Critique] = (), views: str = "physlab") -> tuple[Plan, Desk]:
    """``demotions``: the adjudicator's demoting rulings the planner has not yet been consulted on;
    ``views``: the lab's role_views."""
    desk = Desk(state, list(critiques))
    plan = await run_role(env, ROLE, lambda level: C.for_planner(env.ctx.problem, state, critiques,
                                                                 windows.shrunk(level), list(demotions), views),
                          Plan,
                          deps=desk, output_name="submit_plan", output_validator=_validate)
    return plan, desk
