"""A judge model for answers whose reference is prose (``reference_format: prose``): no rule reads
them, so a model named by the user (``--judge MODEL``) decides, through the model seam.

What a judge sees is the problem, the reference answer and the candidate's final answer -- never the
candidate's reasoning or anything else of the run -- as the string fields of one JSON object (the
candidate's text cannot close its field), under instructions from ``judge.md`` that treat the fields
as data. The verdict comes only through a structured reply (``JudgeReply``: pydantic-ai output in the
model's output mode), so a candidate's text cannot make a reply in another shape count; a reply that
is not one is no verdict (``ungraded``). An answer that addresses its grader ("ignore previous
instructions ...") is not sent at all. The judge's calls go to their own meter, counted apart from
the run's.
"""

from __future__ import annotations

import json
import re
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, Field

from physlab.grading.grader import prose_verdict
from physlab.grading.verdict import Verdict
from physlab.problems.model import Problem

if TYPE_CHECKING:
    from physlab.llm.models import RunModels

ROLE = "judge"
OUTPUT_RETRIES = 2  # a malformed reply is sent back with its error this many times, then no verdict
MAX_FINAL_ANSWER = 4000

# An answer that speaks to its grader instead of answering (the shapes of prompt injection).
_ADDRESSES_GRADER = re.compile(
    r"ignore\s+(?:all\s+|any\s+)?(?:the\s+)?(?:previous|prior|above|earlier|preceding)\s+(?:instructions|prompts?|rules)"
    r"|disregard\s+(?:all\s+|the\s+)?(?:previous|prior|above)\b"
    r"|(?:you\s+are|act\s+as)\s+(?:now\s+)?(?:a|the)\s+(?:grader|judge|evaluator)"
    r"|(?:mark|grade|rate|score|judge|consider)\s+(?:this|it|the\s+answer|my\s+answer)\s+(?:as\s+)?(?:correct|right|true)"
    r"|(?:say|answer|reply|respond|output|return)\s+(?:with\s+)?[\"'“]?(?:correct|right)\b"
    r"|verdict\s*[:=]\s*[\"'“]?correct",
    re.IGNORECASE)


class JudgeReply(BaseModel):
    """The judge's structured reply: the only channel a verdict comes through."""

    reasoning: str = Field(description="Two or three sentences: what the candidate's final answer says and how it "
                                       "compares with the reference answer.", max_length=4000)
    verdict: Literal["correct", "incorrect"] = Field(description="correct: it states the reference's result; "
                                                                 "incorrect: anything else.")


@lru_cache(maxsize=1)
def instructions() -> str:
    """The judge's instructions (``judge.md`` beside this module): they never hold candidate text."""
    return (Path(__file__).with_name("judge.md")).read_text(encoding="utf-8")


def judge_request(problem: Problem, final_answer: str) -> str:
    """The one message a judge gets: the problem, the reference and the candidate's final answer as
    the string fields of a JSON object (JSON escaping keeps the candidate's text inside its field)."""
    return json.dumps({"problem": problem.statement, "reference_answer": problem.reference or "",
                       "candidate_final_answer": final_answer[:MAX_FINAL_ANSWER]}, ensure_ascii=False, indent=1)


def addresses_grader(text: str) -> bool:
    return bool(_ADDRESSES_GRADER.search(text or ""))


async def judge(problem: Problem, candidate: str, models: RunModels) -> Verdict:
    """The verdict on ``candidate`` (a reply, or its final answer) for a problem whose reference is
    prose, from the judge model of ``models`` (its ``judge`` role). The rules' own verdict when they
    give one (no final answer: invalid); ``ungraded`` when the judge gives no verdict."""
    from pydantic_ai import Agent

    from physlab.llm.output import structured_output

    rules = prose_verdict(candidate)
    if rules.verdict != "ungraded":
        return rules
    final = str(rules.details.get("candidate_normalized", ""))
    spec = models.spec_for(ROLE)
    if addresses_grader(final):
        return Verdict(verdict="invalid", reason="the final answer holds instructions to its grader; it was not judged",
                       details={**rules.details, "stage": "judge", "method": "judge",
                                "judge": {"model": spec, "verdict": None, "reasoning": "", **_usage(models)}})
    model = models.for_role(ROLE)
    agent = Agent(model, output_type=structured_output(model, JudgeReply, name="verdict"),
                  instructions=instructions(), retries=OUTPUT_RETRIES)
    try:
        reply = (await agent.run(judge_request(problem, final))).output
    except Exception as exc:  # noqa: BLE001 - no verdict from the judge: the answer stays ungraded
        why = models.describe_failure(exc) or f"{type(exc).__name__}: {exc}"
        return Verdict(verdict="ungraded", reason=f"the judge {spec} gave no verdict ({why})"[:500],
                       details={**rules.details, "stage": "judge", "method": "judge",
                                "judge": {"model": spec, "verdict": None, "reasoning": "", **_usage(models)}})
    return Verdict(verdict=reply.verdict, reason=f"judged by {spec}: {reply.reasoning}"[:600],
                   details={**rules.details, "stage": "judge", "method": "judge",
                            "judge": {"model": spec, "verdict": reply.verdict, "reasoning": reply.reasoning,
                                      **_usage(models)}})


def _usage(models: RunModels) -> dict:
    """The judge's calls, tokens and cost so far (its own meter: counted apart from the run's)."""
    total = models.meter.total()
    return {"calls": total.calls, "input_tokens": total.input_tokens, "output_tokens": total.output_tokens,
            "cost_usd": round(total.cost_usd, 6)}


async def judge_with(problem: Problem, candidate: str, spec: str, *, api_base: str | None = None,
                     api_key_env: str | None = None, registry=None, calls_path: str | Path | None = None,
                     output_mode: str | None = None) -> Verdict:
    """:func:`judge` with the model ``spec`` opened for this one answer (its calls on a meter of their
    own, written to ``calls_path`` when given), closed after."""
    from physlab.llm.meter import RunMeter
    from physlab.llm.models import RunModels

    meter = RunMeter(calls_path=calls_path)
    try:
        async with RunModels(spec, meter=meter, api_base=api_base, api_key_env=api_key_env, registry=registry,
                             output_mode=output_mode) as models:
            return await judge(problem, candidate, models)
    finally:
        meter.close()
