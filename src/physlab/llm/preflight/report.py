"""What a preflight found (``physlab models check``): one typed finding per check, the figures a
lab run is estimated from, and the report as the terminal shows it."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field, computed_field

Status = Literal["ok", "warn", "fail", "skip"]
# The findings in the order they are shown: can it answer, how, within what, at what price.
CHECKS = ("reachable", "tool calling", "native output", "prompted output", "output mode", "lab prompts",
          "context window", "output cap", "streaming", "cached tokens", "usage", "price", "estimate")
CHARS_PER_TOKEN = 4  # English prose; code and LaTeX run nearer 3, so prompt sizes here are not overstated


class Finding(BaseModel):
    check: str
    status: Status
    text: str


class LabRunFigures(BaseModel):
    """What one physics-intern run took per CritPt problem: seed 000_dd0601bf2cd9213d.txt §5,
    "Analysis of runs and agent behavior" (Gemini 3.1 Pro on the 70 problems)."""

    tokens: int = Field(default=600_000, description="'The average number of tokens was about 600k'")
    input_share: float = Field(default=0.5, description="'roughly equal split between input and output'")
    low_tokens: int = Field(default=113_000, description="'from 113K on the cheapest problem'")
    high_tokens: int = Field(default=3_900_000, description="'to 3.9M on the most demanding'")
    calls: int = Field(default=28, description="'mean 28 LLM calls per problem'")
    iterations: int = Field(default=8, description="'median 8 iterations' (3 up to 40)")
    source: str = "seed 000 §5: Gemini 3.1 Pro on CritPt"

    @property
    def call_input(self) -> int:
        """The average lab call's prompt."""
        return round(self.tokens * self.input_share / self.calls)

    @property
    def call_output(self) -> int:
        """The average lab call's reply."""
        return round(self.tokens * (1 - self.input_share) / self.calls)


class LabPrompts(BaseModel):
    """What the lab's first requests weigh for one problem, in characters (physlab.lab.footprint):
    the largest as sent, and the largest of the shortest each role can be shrunk to (no run can
    go in a window smaller than that)."""

    problem: str
    largest_role: str
    largest_chars: int
    floor_role: str
    floor_chars: int

    @property
    def largest_tokens(self) -> int:
        return -(-self.largest_chars // CHARS_PER_TOKEN)

    @property
    def floor_tokens(self) -> int:
        return -(-self.floor_chars // CHARS_PER_TOKEN)


class Price(BaseModel):
    input_usd_per_mtok: float | None = None
    output_usd_per_mtok: float | None = None
    source: str = "unpriced"  # free | registry | genai-prices | proxy | unpriced
    stated_usd_per_token: float | None = None  # proxy: what its stated costs came to per token in the check


class Estimate(BaseModel):
    tokens: int
    input_tokens: int
    output_tokens: int
    low_tokens: int
    high_tokens: int
    calls: int
    iterations: int
    cost_usd: float | None = None
    low_cost_usd: float | None = None
    high_cost_usd: float | None = None
    source: str


class Preflight(BaseModel):
    """The check of one model: its findings in the order they are shown, and what they found."""

    model: str
    api_base: str | None = None
    findings: list[Finding] = []
    output_mode: str | None = None
    context_window: int | None = None
    max_output_tokens: int | None = None
    limit_refusal: str | None = None  # a refusal of the limit probe the seam could not read
    price: Price = Price()
    estimate: Estimate | None = None
    lab_prompts: LabPrompts | None = None
    requests: int = 0
    tokens: int = 0
    cost_usd: float = 0.0

    @computed_field  # type: ignore[prop-decorator]
    @property
    def ok(self) -> bool:
        """A lab run can start: no finding is a failure."""
        return not any(f.status == "fail" for f in self.findings)

    def add(self, check: str, status: Status, text: str) -> None:
        self.findings.append(Finding(check=check, status=status, text=text))

    def status_of(self, check: str) -> Status | None:
        return next((f.status for f in self.findings if f.check == check), None)

    def failed(self) -> list[str]:
        return [f.check for f in self.findings if f.status == "fail"]


def k(n: int) -> str:
    """600000 -> '600K', 3900000 -> '3.9M', 10714 -> '10.7K'."""
    for div, unit in ((1_000_000, "M"), (1_000, "K")):
        if n >= div:
            return f"{n / div:.1f}".rstrip("0").rstrip(".") + unit
    return str(n)


def lines(report: Preflight) -> list[str]:
    """The report as the terminal shows it: a heading, one line per finding, the conclusion."""
    where = f" at {report.api_base}" if report.api_base else ""
    out = [f"physlab models check {report.model}{where}"]
    shown = {"ok": "ok", "warn": "warn", "fail": "FAIL", "skip": "skip"}
    out += [f"{shown[f.status]:5} {f.check}: {f.text}" for f in report.findings]
    if report.requests:
        requests = f"{report.requests} request" + ("s" if report.requests != 1 else "")
        out.append(f"(this check: {requests}, {report.tokens:,} tokens, ${report.cost_usd:.4f})")
    if report.ok:
        flags = f" --api-base {report.api_base}" if report.api_base else ""
        if report.output_mode and report.output_mode != "tool":
            flags += f" --output-mode {report.output_mode}"
        out.append(f"lab run: can start (physlab solve PROBLEM --model {report.model}{flags})")
    else:
        out.append(f"lab run: would fail ({', '.join(report.failed())})")
    return out
