"""Review Studio: Physics-Verifier first (units, dimensions, constants, limits, conservation);
only when it passes, the General-Verifier (logic, calculations, completeness). A failure at either
stage becomes the bug report sent back to the Logic Studio."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, Field

from physlab.strategies.minions.common import ask, parse_review, render

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
    ctx: Any
    problem_text: str
    figures: str
    images: list[Any]
    settings: dict[str, Any] | None = None

    def _content(self, prompt: str) -> Any:
        return [prompt, *self.images] if self.images else prompt

    async def review(self, solution: str) -> ReviewOutcome:
        values = dict(problem=self.problem_text, figures=self.figures, solution=solution)
        reply, _ = await ask(self.ctx, ROLE_PHYSICS, self._content(render("physics_verifier", **values)),
                             settings=self.settings)
        physics = parse_review(reply)
        if not physics.passed:
            return ReviewOutcome(passed=False, stage="physics", issues=physics.issues, parsed=physics.parsed)
        reply, _ = await ask(self.ctx, ROLE_GENERAL, self._content(render("general_verifier", **values)),
                             settings=self.settings)
        general = parse_review(reply)
        return ReviewOutcome(passed=general.passed, stage="general", issues=general.issues,
                             parsed=general.parsed)
