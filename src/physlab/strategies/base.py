"""The Strategy protocol and the one Attempt record every strategy returns."""

from __future__ import annotations

from typing import Any, Literal, Protocol, runtime_checkable

from pydantic import BaseModel, Field

from physlab.grading.verdict import Verdict
from physlab.llm.usage import Usage

AttemptStatus = Literal[
    "complete",  # a final answer was produced the normal way
    "partially_complete",  # a budget ended the run; the best supported answer was written
    "no_answer",  # the run ended without a final answer
    "error",  # the run failed (model errors exhausted retries, ...)
]


class Attempt(BaseModel):
    strategy: str
    model: str
    problem_id: str
    status: AttemptStatus
    stop_reason: str = ""
    answer_text: str | None = Field(default=None, description="Contents of ANSWER.md.")
    answer_code: str | None = Field(default=None, description="The filled template (answer.py).")
    verdict: Verdict | None = None
    usage_by_role: dict[str, Usage] = Field(default_factory=dict)
    wall_s: float = 0.0
    details: dict[str, Any] = Field(default_factory=dict)

    @property
    def usage(self) -> Usage:
        total = Usage()
        for u in self.usage_by_role.values():
            total = total.add(u)
        return total

    @property
    def has_answer(self) -> bool:
        return bool(self.answer_code or self.answer_text)


@runtime_checkable
class Strategy(Protocol):
    """A scaffold. ``run`` receives the run context (problem, models, budget, sandbox, grader,
    workspace) built by the runner and returns one Attempt. Prompts must be built from
    ``problem.public()``: the reference answer is never shown to a model."""

    name: str

    async def run(self, ctx: Any) -> Attempt: ...
