"""Usage, cost and budget records shared by every strategy (the seam sweeps compare on)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field


class Budget(BaseModel):
    """One budget for every strategy, so sweeps can compare at equal budget. None = unlimited."""

    max_calls: int | None = Field(default=None, ge=1)
    max_tokens: int | None = Field(default=None, ge=1, description="Input + output tokens.")
    max_input_tokens: int | None = Field(default=None, ge=1)
    max_output_tokens: int | None = Field(default=None, ge=1)
    max_cost_usd: float | None = Field(default=None, gt=0)
    max_wall_s: float | None = Field(default=None, gt=0)


class Usage(BaseModel):
    calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0
    wall_s: float = Field(default=0.0, description="Sum of request latencies.")

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens

    def add(self, other: "Usage") -> "Usage":
        return Usage(
            calls=self.calls + other.calls,
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
            cost_usd=self.cost_usd + other.cost_usd,
            wall_s=self.wall_s + other.wall_s,
        )


class CallRecord(BaseModel):
    """One line of a run's calls.jsonl: one model request (contract fields first)."""

    role: str
    model: str
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0
    latency_s: float = 0.0
    finish_reason: str | None = None
    error: str | None = None
    retries: int = 0
    ts: float = 0.0
    seq: int = 0
    request: Any = Field(default=None, description="The request messages (for audit and replay).")
    response: Any = Field(default=None, description="The full response (for replay).")
    note: str | None = Field(default=None, description="What the model seam did (e.g. truncation retry).")

    def usage(self) -> Usage:
        return Usage(
            calls=1,
            input_tokens=self.input_tokens,
            output_tokens=self.output_tokens,
            cost_usd=self.cost_usd,
            wall_s=self.latency_s,
        )
