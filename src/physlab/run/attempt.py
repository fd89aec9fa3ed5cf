"""The one Attempt record every strategy returns: its answer, how it ended, its usage per role.

The runner (:mod:`physlab.run.runner`) turns it into the run's record (:mod:`physlab.run.record`,
metrics.json) once the answer is written and graded.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

from physlab.grading.verdict import Verdict
from physlab.llm.usage import Usage
from physlab.run.checkpoints import Checkpoint

AttemptStatus = Literal[
    "complete",  # a final answer was produced the normal way
    "partially_complete",  # a budget ended the run; the best supported answer was written
    "no_answer",  # the run ended without a final answer
    "paused",  # the physicist paused it (the lab): no final answer yet, continue with --resume
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
    checkpoints: list[Checkpoint] = Field(
        default_factory=list, description="Best answer so far, each time it changed (see runs.checkpoints).")
    ran_as: str | None = Field(
        default=None, description="What the run really was when a cap changed the strategy (TPBench's "
                                  "verifiers falling back to a majority vote, RSA stopping after round 1); "
                                  "None when it ran as named. The report never shows such a run under its "
                                  "full name.")
    reference_conditioned: bool = Field(
        default=False, description="A role saw the reference (SCALAR's paper setting): not a solver, never "
                                   "ranked beside solvers.")

    @property
    def usage(self) -> Usage:
        total = Usage()
        for u in self.usage_by_role.values():
            total = total.add(u)
        return total

    @property
    def has_answer(self) -> bool:
        return bool(self.answer_code or self.answer_text)
