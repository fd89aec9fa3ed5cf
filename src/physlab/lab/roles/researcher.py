"""Researcher: analytical reasoning and derivations that produce evidence.

The derivation travels as Markdown with LaTeX, not inside a JSON string: the researcher writes it
as the text of its reply and calls ``submit_derivation`` with the metadata (findings, checks,
confidence) in the same reply or the next. ``derivation_markdown`` is there for output modes in
which a reply cannot carry both text and a tool call."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel, Field
from pydantic_ai import ModelRetry, RunContext
from pydantic_ai.messages import ModelResponse, TextPart

from physlab.lab.roles._base import LabEnv, PromptSource, run_role

ROLE = "researcher"


class DerivationReport(BaseModel):
    findings: str = Field(description="The result in a few sentences with every value and expression it claims "
                                      "(the reviewer checks exactly these).")
    checks: list[str] = Field(default_factory=list,
                              description="Each routine check made and its outcome (dimensions, limits, "
                                          "symmetries, special values, sanity checks SC-n).")
    confidence: Literal["exact", "approximate", "partial"]
    derivation_markdown: str = Field(default="", description="Leave empty when the derivation is the text of "
                                                             "your reply; otherwise the derivation in Markdown.")


@dataclass
class Notebook:
    derivation: str = ""


def _replies_text(ctx: RunContext[Notebook]) -> str:
    texts = [p.content.strip() for m in ctx.messages if isinstance(m, ModelResponse)
             for p in m.parts if isinstance(p, TextPart) and p.content.strip()]
    return "\n\n".join(texts)


def _validate(ctx: RunContext[Notebook], r: DerivationReport) -> DerivationReport:
    text = _replies_text(ctx) or r.derivation_markdown.strip()
    if not text:
        raise ModelRetry("No derivation: write it as Markdown with LaTeX in the text of your reply (not inside the "
                         "tool arguments), then call submit_derivation with the findings, checks and confidence.")
    ctx.deps.derivation = text
    return r


async def run(env: LabEnv, user_prompt: PromptSource) -> tuple[DerivationReport, str]:
    """The metadata and the derivation text."""
    nb = Notebook()
    report = await run_role(env, ROLE, user_prompt, DerivationReport, deps=nb, output_name="submit_derivation",
                            output_validator=_validate)
    return report, nb.derivation
