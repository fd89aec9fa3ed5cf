"""Review Studio: Physics-Verifier first (units, dimensions, constants, limits, conservation);
only when it passes, the General-Verifier (logic, calculations, completeness). A failure at either
stage becomes the bug report sent back to the Logic Studio."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, Field

from physlab.run.environment import RunEnvironment
from physlab.strategies.minions.common import NO_REVIEW, Review, render, review

ROLE_PHYSICS = "physics_verifier"
ROLE_GENERAL = "general_verifier"


class ReviewOutcome(BaseModel):
    passed: bool
    stage: str  # "physics" (failed there) | "general" (failed there, or passed both)
    issues: list[str] = Field(default_factory=list)
    parsed: bool = True

    def bug_report(self) -> str:
        title = {"physics": "Physics check (units, dimensions, constants, limits, conservation)",
                 "general": "General check (logic, calculations, completeness)"}[self.stage]
        lines = [f"{title} failed:"] + [f"- {i}" for i in self.issues or ["(no details given)"]]
        return "\n".join(lines)


@dataclass
class ReviewStudio:
    ctx: RunEnvironment
    problem_text: str
    figures: str
    images: list[Any]
    settings: dict[str, Any] | None = None

    def _content(self, prompt: str) -> Any:
        return [prompt, *self.images] if self.images else prompt

    async def review(self, solution: str) -> ReviewOutcome:
        values = dict(problem=self.problem_text, figures=self.figures, solution=solution)
        for stage, role in (("physics", ROLE_PHYSICS), ("general", ROLE_GENERAL)):
            prompt = render(f"{stage}_verifier", **values)
            verdict = await review(self.ctx, role, self._content(prompt), self.settings)
            outcome = _outcome(stage, verdict)
            if not outcome.passed:  # the General-Verifier only sees what passed the physics check
                return outcome
        return outcome


def _outcome(stage: str, verdict: Review | None) -> ReviewOutcome:
    if verdict is None:
        return ReviewOutcome(passed=False, stage=stage, issues=[NO_REVIEW], parsed=False)
    return ReviewOutcome(passed=verdict.passed, stage=stage, issues=verdict.issues)
