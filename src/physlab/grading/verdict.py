"""The verdict every grading path returns (JSON contract of `physlab grade --json`)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

VerdictKind = Literal["correct", "incorrect", "invalid"]


class Verdict(BaseModel):
    verdict: VerdictKind
    reason: str
    details: dict[str, Any] = Field(default_factory=dict)

    @property
    def correct(self) -> bool:
        return self.verdict == "correct"

    def contract_json(self) -> dict[str, Any]:
        return {"verdict": self.verdict, "reason": self.reason, **self.details}
