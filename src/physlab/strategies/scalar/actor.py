"""The Actor: proposes a solution, then revises it from the Critic's feedback. It keeps its own
conversation (the dialogue is its Markov state), shaped by its persona."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from physlab.run.environment import RunEnvironment
from physlab.strategies.sampling import ask
from physlab.strategies.scalar.common import render

ROLE = "actor"


@dataclass
class Actor:
    ctx: RunEnvironment
    persona: str
    requirements: str
    settings: dict[str, Any] | None = None
    history: list[Any] = field(default_factory=list)

    @property
    def system(self) -> str:
        return render("actor_system", persona=self.persona)

    async def first(self, problem_text: str, images: list[Any]) -> str:
        prompt = render("actor_first", problem=problem_text, requirements=self.requirements)
        content: Any = [prompt, *images] if images else prompt
        text, self.history = await ask(self.ctx, ROLE, content, system=self.system, settings=self.settings,
                                       images=False)
        return text

    async def revise(self, feedback: str) -> str:
        prompt = render("actor_revise", feedback=feedback, requirements=self.requirements)
        text, self.history = await ask(self.ctx, ROLE, prompt, system=self.system, settings=self.settings,
                                       history=self.history)
        return text
