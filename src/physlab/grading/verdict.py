"""The verdict every grading path returns (JSON contract of `physlab grade --json`)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

# "ungraded" (added by issue #43): the reference is in words, no rule reads it and no judge model was
# named; the answer is not wrong. Every consumer counts it apart (docs/grading.md, "Verdicts").
VerdictKind = Literal["correct", "incorrect", "invalid", "ungraded"]


class Verdict(BaseModel):
    verdict: VerdictKind
    reason: str
    details: dict[str, Any] = Field(default_factory=dict)

    @property
    def correct(self) -> bool:
        return self.verdict == "correct"

    @property
    def graded(self) -> bool:
        """A verdict on the answer (correct, incorrect or invalid), not "ungraded"."""
        return self.verdict != "ungraded"

    def contract_json(self) -> dict[str, Any]:
        return {"verdict": self.verdict, "reason": self.reason, **self.details}
