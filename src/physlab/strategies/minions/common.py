"""Helpers shared by the PhysicsMinions studios: prompt files, the verifiers' review, answer format."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field
from pydantic_ai.exceptions import UnexpectedModelBehavior

from physlab.problems.model import Problem
from physlab.run.environment import RunEnvironment
from physlab.strategies.prompt_files import PromptFolder
from physlab.strategies.sampling import answer_requirements, ask_structured

PROMPTS = Path(__file__).with_name("prompts")


_PROMPTS = PromptFolder(PROMPTS, "minions prompt")
render = _PROMPTS.render

NO_REVIEW = "The verifier gave no valid review; re-check the whole solution."


class Review(BaseModel):
    """One verifier's decision, given through its `submit_review` tool."""

    verdict: Literal["pass", "fail"]
    issues: list[str] = Field(default_factory=list,
                              description="One precise sentence per error: where it is and what is wrong.")

    @property
    def passed(self) -> bool:
        return self.verdict == "pass"


async def review(ctx: RunEnvironment, role: str, content: Any, settings: dict[str, Any] | None) -> Review | None:
    """A verifier's Review of ``content`` (its prompt, and the images it is to look at); None when
    it gave no valid review after its retries (the caller fails the check: never an accidental pass)."""
    try:
        return await ask_structured(ctx, role, content, Review, tool="submit_review", settings=settings,
                                    images=False)
    except UnexpectedModelBehavior:
        return None


def requirements(problem: Problem) -> str:
    """How to give the final answer: fill the template, else boxed answers (with the public
    answer types and units of a HiPhO item, when the problem lists them)."""
    if problem.answer_template:
        return answer_requirements(problem)
    types = problem.extra.get("answer_types") or []
    units = problem.extra.get("units") or []
    parts = ""
    if types:
        lines = []
        for i, t in enumerate(types):
            u = units[i] if i < len(units) else None
            lines.append(f"{i + 1}. {t}" + (f" (unit: {u})" if u not in (None, "", "None") else ""))
        parts = "\nThe expected answers, in order:\n" + "\n".join(lines)
    return render("boxed_requirements", parts=parts)
