"""The Judge: outside the loop, scores each Actor turn with the rubric (a structured reply: the
``submit_evaluation`` tool's arguments are a :class:`JudgeReply`). Eq(A, R) comes from PhysLab's
grader when the problem is gradable (the Judge never sees the reference); otherwise the Judge's
own equivalence decision is used."""

from __future__ import annotations

from typing import Any

from pydantic_ai import capture_run_messages
from pydantic_ai.exceptions import UnexpectedModelBehavior
from pydantic_ai.messages import ModelMessage, ModelResponse, ToolCallPart
from pydantic_ai.models import Model

from physlab.strategies.sampling import structured_reply
from physlab.strategies.scalar.common import render
from physlab.strategies.scalar.rubric import (
    CRITIC_MAX, ERROR_CATEGORIES, FLAGS, MISSING_LABELS, JudgeReply, JudgeVerdict, unparsed_verdict,
    verdict_from_reply, with_equivalence,
)

ROLE = "judge"


def system_prompt() -> str:
    critic = ", ".join(f"{k} (0-{v})" for k, v in CRITIC_MAX.items())
    return render("judge_system", categories=", ".join(ERROR_CATEGORIES), flags=", ".join(FLAGS),
                  missing=", ".join(MISSING_LABELS), critic=critic)


def user_prompt(problem_text: str, attempt: str, turn: int, feedback_before: str | None,
                critique: str | None) -> str:
    return render("judge", problem=problem_text, attempt=attempt, turn=str(turn),
                  feedback=feedback_before or "(none: first attempt)", critique=critique or "(none)")


async def score(model: Model, problem_text: str, attempt: str, turn: int, feedback_before: str | None,
                critique: str | None, settings: dict[str, Any] | None = None) -> JudgeVerdict:
    """One Judge evaluation of one Actor turn. A reply that does not validate goes back to the
    Judge with the error (pydantic-ai's output retries); one that still fails is a failing,
    unparsed verdict that keeps the Judge's last reply."""
    with capture_run_messages() as messages:
        try:
            reply = await structured_reply(model, user_prompt(problem_text, attempt, turn, feedback_before, critique),
                                           JudgeReply, tool="submit_evaluation", system=system_prompt(),
                                           settings=settings)
        except UnexpectedModelBehavior as exc:
            return unparsed_verdict(str(exc), last_reply(messages))
    return verdict_from_reply(reply)


def last_reply(messages: list[ModelMessage]) -> str:
    """What the model last said: its text, or the arguments of its tool call."""
    for msg in reversed(messages):
        if isinstance(msg, ModelResponse):
            calls = [p for p in msg.parts if isinstance(p, ToolCallPart)]
            return calls[-1].args_as_json_str() if calls else (msg.text or "")
    return ""


def apply_equivalence(verdict: JudgeVerdict, grader_verdict: dict[str, Any] | None) -> JudgeVerdict:
    """Eq from the grader's verdict when there is one, else the Judge's own."""
    if grader_verdict is not None:
        return with_equivalence(verdict, grader_verdict.get("verdict") == "correct", "grader", grader_verdict)
    return with_equivalence(verdict, bool(verdict.judge_equivalent), "judge")
