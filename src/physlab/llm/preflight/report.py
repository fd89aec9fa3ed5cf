"""What a preflight found (``physlab models check``): one typed finding per check, the figures a
lab run is estimated from, and the report as the terminal shows it."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Literal

from pydantic import BaseModel, Field, PrivateAttr, computed_field

Status = Literal["ok", "warn", "fail", "skip"]
# The findings in the order they are shown: can it answer, how, within what, at what price.
CHECKS = ("reachable", "system message", "tool calling", "native output", "constrained output", "prompted output",
          "output mode", "lab prompts", "context window", "output cap", "concurrency", "streaming", "cached tokens",
          "usage", "price", "estimate")
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
    """What the lab's first requests weigh for one problem (physlab.lab.footprint): the largest as
    sent, and the largest of the shortest each role can be shrunk to (no run can go in a window
    smaller than that). In the server's tokens when ``counted_by`` names its tokenizer, else
    estimated from characters."""

    problem: str
    largest_role: str
    largest_chars: int
    floor_role: str
    floor_chars: int
    counted_by: str | None = None  # the server's tokenizer that counted the tokens below
    mode: str | None = None  # the output mode the requests were made in (their tools and schema in it)
    largest_counted: int | None = None
    floor_counted: int | None = None

    @property
    def largest_tokens(self) -> int:
        return self.largest_counted if self.largest_counted is not None else -(-self.largest_chars // CHARS_PER_TOKEN)

    @property
    def floor_tokens(self) -> int:
        return self.floor_counted if self.floor_counted is not None else -(-self.floor_chars // CHARS_PER_TOKEN)


# The lab's first requests of a problem in an output mode: role -> (as sent, at its shortest), as text.
LabRequests = Callable[[str], Awaitable[dict[str, tuple[str, str]]]]


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
    api_key_env: str | None = None  # the variable the check was told to read the key from (the run needs it too)
    findings: list[Finding] = []
    output_mode: str | None = None
    output_cap_field: str | None = None  # the request field the server reads the output cap from
    slots: int | None = None  # 1: it answered two requests one after the other
    drops_system: bool | None = None  # its chat format leaves the system message (the instructions) out
    tool_choice_auto_only: bool | None = None
    tokenizer: str | None = None  # the server's tokenizer endpoint, when it has one
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

    _listener: Callable[[Finding], None] | None = PrivateAttr(default=None)

    def listen(self, fn: Callable[[Finding], None] | None) -> None:
        """Call ``fn`` with each finding as soon as it is found (the terminal prints it then)."""
        self._listener = fn

    def add(self, check: str, status: Status, text: str) -> None:
        self.findings.append(Finding(check=check, status=status, text=text))
        if self._listener is not None:
            self._listener(self.findings[-1])

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


def heading(report: Preflight) -> str:
    where = f" at {report.api_base}" if report.api_base else ""
    return f"physlab models check {report.model}{where}"


def finding_line(f: Finding) -> str:
    shown = {"ok": "ok", "warn": "warn", "fail": "FAIL", "skip": "skip"}
    return f"{shown[f.status]:5} {f.check}: {f.text}"


def footer(report: Preflight) -> list[str]:
    """What the check cost, and the conclusion: the command that runs the lab as checked."""
    from physlab.llm.advice import solve_command

    out = []
    if report.requests:
        requests = f"{report.requests} request" + ("s" if report.requests != 1 else "")
        out.append(f"(this check: {requests}, {report.tokens:,} tokens, ${report.cost_usd:.4f})")
    if report.ok:
        command = solve_command(report.model, api_base=report.api_base, api_key_env=report.api_key_env,
                                output_mode=report.output_mode)
        out.append(f"lab run: can start ({command})")
        if registry := registry_lines(report):
            out.append("model registry (--models-config FILE) for this server:")
            out += registry
    else:
        out.append(f"lab run: would fail ({', '.join(report.failed())})")
    return out


def registry_lines(report: Preflight) -> list[str]:
    """The registry entry that makes what the check found hold in a run (what no flag says)."""
    keys = []
    if report.context_window and report.tokenizer:  # a window the server says only when a prompt overflows it
        keys.append(f"context_window: {report.context_window}")
    if report.output_cap_field == "max_completion_tokens" and report.api_base:
        keys.append("output_cap_field: max_completion_tokens")
    if report.slots == 1:
        keys.append("slots: 1")
    if not keys:
        return []
    return [f'  models: {{"{report.model}": {{{", ".join(keys)}}}}}']


def lines(report: Preflight) -> list[str]:
    """The report as the terminal shows it: a heading, one line per finding, the conclusion."""
    return [heading(report), *(finding_line(f) for f in report.findings), *footer(report)]
