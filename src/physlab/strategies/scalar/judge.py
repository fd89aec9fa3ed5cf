"""The Judge: outside the loop, scores each Actor turn with the rubric (a structured reply: the
``submit_evaluation`` tool's arguments are a :class:`JudgeReply`). As in the paper (seed 003,
Appendix C, 'Inputs') it reads the problem, the Actor's solution, the Critic's feedback and the
reference solution, and decides Eq(A, R) itself; PhysLab's grader's verdict on the same answer is
stored beside it, never in its place. Without a reference (an open question) it grades the
process and judges the final result on its own (Appendix C, 'Reference-free use')."""

from __future__ import annotations

from typing import Any

from pydantic_ai import capture_run_messages
from pydantic_ai.exceptions import UnexpectedModelBehavior
from pydantic_ai.messages import ModelMessage, ModelResponse, ToolCallPart
from pydantic_ai.models import Model

from physlab.strategies.sampling import structured_reply
from physlab.strategies.scalar.common import render
from physlab.strategies.scalar.rubric import (
    CRITIC_MAX,
    ERROR_CATEGORIES,
    FLAGS,
    MISSING_LABELS,
    JudgeReply,
    JudgeVerdict,
    unparsed_verdict,
    verdict_from_reply,
)

ROLE = "judge"


def system_prompt() -> str:
    critic = ", ".join(f"{k} (0-{v})" for k, v in CRITIC_MAX.items())
    return render("judge_system", categories=", ".join(ERROR_CATEGORIES), flags=", ".join(FLAGS),
                  missing=", ".join(MISSING_LABELS), critic=critic)


def user_prompt(problem_text: str, attempt: str, turn: int, feedback_before: str | None,
                critique: str | None, reference: str | None = None) -> str:
    shown = (f"# Reference solution (compare the solver's final result with it)\n{reference.strip()}\n"
             if reference else "# Reference solution\n(none: judge the final result on its own merits)\n")
    return render("judge", problem=problem_text, attempt=attempt, turn=str(turn),
                  feedback=feedback_before or "(none: first attempt)", critique=critique or "(none)",
                  reference=shown)


async def score(model: Model, problem_text: str, attempt: str, turn: int, feedback_before: str | None,
                critique: str | None, settings: dict[str, Any] | None = None, *,
                reference: str | None = None) -> JudgeVerdict:
    """One Judge evaluation of one Actor turn, against ``reference`` when there is one. A reply
    that does not validate goes back to the Judge with the error (pydantic-ai's output retries);
    one that still fails is a failing, unparsed verdict that keeps the Judge's last reply."""
    prompt = user_prompt(problem_text, attempt, turn, feedback_before, critique, reference)
    with capture_run_messages() as messages:
        try:
            reply = await structured_reply(model, prompt, JudgeReply, tool="submit_evaluation",
                                           system=system_prompt(), settings=settings)
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


def with_grader(verdict: JudgeVerdict, grader_verdict: dict[str, Any] | None) -> JudgeVerdict:
    """The Judge's verdict with the grader's stored beside it (Eq and the pass rule stay the Judge's)."""
    return verdict.model_copy(update={"grader_verdict": grader_verdict})
