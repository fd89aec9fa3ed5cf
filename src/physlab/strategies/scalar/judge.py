"""The Judge: outside the loop, scores each Actor turn with the rubric (strict JSON). Eq(A, R)
comes from PhysLab's grader when the problem is gradable (the Judge never sees the reference);
otherwise the Judge's own equivalence decision is used."""

from __future__ import annotations

from typing import Any

from physlab.llm.text import ask_text

from physlab.strategies.scalar.common import render
from physlab.strategies.scalar.rubric import (
    CRITIC_MAX, ERROR_CATEGORIES, FLAGS, MISSING_LABELS, JudgeVerdict, parse_judge_reply, with_equivalence,
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


async def score(model: Any, problem_text: str, attempt: str, turn: int, feedback_before: str | None,
                critique: str | None, settings: dict[str, Any] | None = None) -> JudgeVerdict:
    """One Judge call on one Actor turn (``model`` is a pydantic-ai Model)."""
    reply, _ = await ask_text(model, user_prompt(problem_text, attempt, turn, feedback_before, critique),
                              system=system_prompt(), settings=settings)
    return parse_judge_reply(reply)


def apply_equivalence(verdict: JudgeVerdict, grader_verdict: dict[str, Any] | None) -> JudgeVerdict:
    """Eq from the grader's verdict when there is one, else the Judge's own."""
    if grader_verdict is not None:
        return with_equivalence(verdict, grader_verdict.get("verdict") == "correct", "grader", grader_verdict)
    return with_equivalence(verdict, bool(verdict.judge_equivalent), "judge")
