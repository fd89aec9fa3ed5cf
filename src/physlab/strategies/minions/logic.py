"""Logic Studio: the Solver writes a structured solution (Summary + Detailed Solution); the
Introspector self-improves it and later refines it from the Review Studio's bug reports."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from physlab.runs.context import RunContext
from physlab.strategies.minions.common import ask, render

ROLE_SOLVER = "solver"
ROLE_INTROSPECTOR = "introspector"


@dataclass
class LogicStudio:
    ctx: RunContext
    problem_text: str
    figures: str
    requirements: str
    images: list[Any]
    settings: dict[str, Any] | None = None

    def _content(self, prompt: str) -> Any:
        return [prompt, *self.images] if self.images else prompt

    async def solve(self) -> str:
        prompt = render("solver", requirements=self.requirements, problem=self.problem_text,
                        figures=self.figures)
        text, _ = await ask(self.ctx, ROLE_SOLVER, self._content(prompt), settings=self.settings)
        return text

    async def improve(self, solution: str) -> str:
        prompt = render("introspector_improve", requirements=self.requirements, problem=self.problem_text,
                        figures=self.figures, solution=solution)
        text, _ = await ask(self.ctx, ROLE_INTROSPECTOR, self._content(prompt), settings=self.settings)
        return text

    async def refine(self, solution: str, bug_report: str) -> str:
        prompt = render("introspector_fix", requirements=self.requirements, problem=self.problem_text,
                        figures=self.figures, solution=solution, bug_report=bug_report)
        text, _ = await ask(self.ctx, ROLE_INTROSPECTOR, self._content(prompt), settings=self.settings)
        return text
