"""Adjudicator: independent ruling on a critique filed against an established result: uphold (the
ER is demoted back to a working hypothesis), dismiss, or needs_evidence (a soft demotion until the
evidence it names is in).

Checked in code (upstream's sanity-check rule): a critique that invokes a sanity check is not
dismissed on theory alone. The dismissal must rest on a check the adjudicator ran in this call, or
explain step by step why the check does not apply to this claim; otherwise it goes back as a
correction, and on the last try the ruling becomes needs_evidence, naming the check to evaluate."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

from pydantic import BaseModel, Field
from pydantic_ai import RunContext

from physlab.lab.roles._base import LabEnv, PromptSource, correct_or_drop, run_role
from physlab.lab.roles.reviewer import execute_python

ROLE = "adjudicator"


class Ruling(BaseModel):
    decision: Literal["uphold", "dismiss", "needs_evidence"] = Field(
        description="uphold: the critique is right; dismiss: it is wrong or does not affect the result; "
                    "needs_evidence: the record cannot settle it.")
    reasoning: str = Field(description="The independent check you made and what it showed; for dismiss, why the "
                                       "critique fails.")
    investigation_scope: str = Field(default="", description="needs_evidence: the specific evidence that would "
                                                             "settle the dispute (which computation, case, limit).")
    check_not_applicable: str = Field(default="", description="Dismissing a critique that invokes a sanity check "
                                                              "without running a check: the step-by-step argument "
                                                              "why that check does not apply to this claim.")


@dataclass
class AdjudicationDesk:
    env: LabEnv
    cites_checks: list[str] = field(default_factory=list)    # the sanity checks the critique invokes
    runs: list[tuple[str, ...]] = field(default_factory=list)
    dropped: list[str] = field(default_factory=list)


def _validate(ctx: RunContext[AdjudicationDesk], r: Ruling) -> Ruling:
    d = ctx.deps
    problems = []
    on_theory = (r.decision == "dismiss" and d.cites_checks and not d.runs and not r.check_not_applicable.strip())
    if on_theory:
        problems.append(f"the critique invokes {', '.join(d.cites_checks)}: it may not be dismissed on theory alone. "
                        "Run a check (execute_python) that settles it, or explain step by step in "
                        "check_not_applicable why the check does not apply to this claim, or rule needs_evidence")
    if r.decision == "needs_evidence" and not r.investigation_scope.strip():
        problems.append("a needs_evidence ruling must say in investigation_scope which evidence would settle it")
    if correct_or_drop(ctx, problems, "Submit the ruling again."):
        d.dropped = problems
        if on_theory:
            r = r.model_copy(update={"decision": "needs_evidence", "investigation_scope": (
                f"Evaluate {', '.join(d.cites_checks)} on the result by an explicit computation; the critique "
                "invokes it and was not settled by one.")})
        elif r.decision == "needs_evidence":
            r = r.model_copy(update={"investigation_scope": r.reasoning.strip() or "Independent evidence on the "
                                                                                  "disputed point."})
    return r


async def run(env: LabEnv, user_prompt: PromptSource, *, cites_checks: Sequence[str] = ()) -> Ruling:
    """``cites_checks``: the sanity checks (SC-n) the critique invokes (``gates.cites_sanity_checks``).
    With ``env.judges_compute`` off it has no tools (physics-intern's adjudicator): a dismissal of a
    cited check then rests on ``check_not_applicable``, upstream's step-by-step rule."""
    desk = AdjudicationDesk(env, list(cites_checks))
    return await run_role(env, ROLE, user_prompt, Ruling, tools=[execute_python] if env.judges_compute else [],
                          deps=desk, output_name="submit_ruling", output_validator=_validate)
