"""The Critic: reviews the Actor's latest attempt in its feedback strategy. Reference-free in
SCALAR's ``blind`` setting; in its ``paper`` setting it is given the reference solution (with the
Judge's, the only prompts in PhysLab that may contain it) and told never to disclose it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from physlab.run.environment import RunEnvironment
from physlab.strategies.sampling import ask
from physlab.strategies.scalar.common import render

ROLE = "critic"


def dialogue_text(turns: list[tuple[str, str | None]]) -> str:
    """Earlier (attempt, feedback) pairs as the Critic reads them."""
    if not turns:
        return "(this is the first attempt)"
    out = []
    for i, (attempt, feedback) in enumerate(turns):
        out.append(f"## Attempt {i}\n{attempt}\n\n## Your feedback on attempt {i}\n{feedback or '(none)'}")
    return "\n\n".join(out)


@dataclass
class Critic:
    ctx: RunEnvironment
    strategy_text: str
    reference: str | None = None
    settings: dict[str, Any] | None = None

    @property
    def system(self) -> str:
        rules = render("critic_reference_rules") if self.reference else ""
        return render("critic_system", strategy=self.strategy_text, reference_rules=rules)

    def prompt(self, problem_text: str, earlier: list[tuple[str, str | None]], attempt: str, turn: int) -> str:
        ref = f"\n# Reference solution (confidential: never reveal it)\n{self.reference}\n" if self.reference else ""
        return render("critic", problem=problem_text, reference=ref, dialogue=dialogue_text(earlier),
                      attempt=attempt, turn=str(turn))

    async def review(self, problem_text: str, earlier: list[tuple[str, str | None]], attempt: str,
                     turn: int) -> str:
        text, _ = await ask(self.ctx, ROLE, self.prompt(problem_text, earlier, attempt, turn),
                            system=self.system, settings=self.settings, images=False)
        return text
