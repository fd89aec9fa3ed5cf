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
    cache_read_tokens: int = Field(default=0, description="Input tokens served from the provider's prompt cache "
                                   "(part of input_tokens).")
    cache_write_tokens: int = Field(default=0, description="Input tokens written to the provider's prompt cache "
                                    "(part of input_tokens).")

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens

    def add(self, other: Usage) -> Usage:
        return Usage(
            calls=self.calls + other.calls,
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
            cost_usd=self.cost_usd + other.cost_usd,
            wall_s=self.wall_s + other.wall_s,
            cache_read_tokens=self.cache_read_tokens + other.cache_read_tokens,
            cache_write_tokens=self.cache_write_tokens + other.cache_write_tokens,
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
    cache_read_tokens: int = Field(default=0, description="Of input_tokens, read from the prompt cache.")
    cache_write_tokens: int = Field(default=0, description="Of input_tokens, written to the prompt cache.")
    price_source: str | None = Field(
        default=None, description="Where cost_usd came from: proxy (the server's stated cost), genai-prices, "
        "registry (a price in the model registry), free (local or marked free), unpriced (no price known), replay.")
    max_tokens: int | None = Field(default=None, description="The output cap the request was sent with.")
    tokens_estimated: bool = Field(default=False, description=(
        "The tokens are PhysLab's estimate, not the server's report: a request that timed out (its prompt as "
        "estimated, and the output cap it was sent with, which a server that goes on generating for a client "
        "that left may spend)."))

    def usage(self) -> Usage:
        """This request's share of the totals: one call, answered or not (it went out, and a server
        may have worked on it), and the tokens the server reported for it (an unusable reply's
        usage block too: they were served; a timed-out request's as estimated, ``tokens_estimated``)."""
        return Usage(
            calls=1,
            input_tokens=self.input_tokens,
            output_tokens=self.output_tokens,
            cost_usd=self.cost_usd,
            wall_s=self.latency_s,
            cache_read_tokens=self.cache_read_tokens,
            cache_write_tokens=self.cache_write_tokens,
        )
