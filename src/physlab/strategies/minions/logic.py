"""Logic Studio: the Solver writes a structured solution (Summary + Detailed Solution); the
Introspector self-improves it and later refines it from the Review Studio's bug reports."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from physlab.run.environment import RunEnvironment
from physlab.strategies.minions.common import render
from physlab.strategies.sampling import ask

ROLE_SOLVER = "solver"
ROLE_INTROSPECTOR = "introspector"


@dataclass
class LogicStudio:
    ctx: RunEnvironment
    problem_text: str
    figures: str
    requirements: str
    images: list[Any]
    settings: dict[str, Any] | None = None

    async def _ask(self, role: str, prompt: str) -> str:
        # the studio's own images (none when the figures are withheld), not every problem figure
        content = [prompt, *self.images] if self.images else prompt
        text, _ = await ask(self.ctx, role, content, settings=self.settings, images=False)
        return text

    async def solve(self) -> str:
        prompt = render("solver", requirements=self.requirements, problem=self.problem_text,
                        figures=self.figures)
        return await self._ask(ROLE_SOLVER, prompt)

    async def improve(self, solution: str) -> str:
        prompt = render("introspector_improve", requirements=self.requirements, problem=self.problem_text,
                        figures=self.figures, solution=solution)
        return await self._ask(ROLE_INTROSPECTOR, prompt)

    async def refine(self, solution: str, bug_report: str) -> str:
        prompt = render("introspector_fix", requirements=self.requirements, problem=self.problem_text,
                        figures=self.figures, solution=solution, bug_report=bug_report)
        return await self._ask(ROLE_INTROSPECTOR, prompt)
