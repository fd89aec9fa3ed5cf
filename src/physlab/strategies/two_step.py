"""`two-step`: CritPt's default procedure.

Call 1 (role ``solver``) sees the problem only and derives a free-form solution ending in
"Final Answer:". Call 2 (role ``formatter``) continues the same conversation (the first reply is
in its context) and fills the answer template. An open question (no template) needs only call 1.
"""

from __future__ import annotations

import time
from typing import Any

from physlab.strategies.base import Attempt
from physlab.strategies.tpbench_common import (
    answer_requirements, ask, budget_reason, check_known_params, error_text, extract_code,
    finish, is_budget_error, model_settings, render,
)

NAME = "two-step"


class TwoStep:
    name = NAME

    async def run(self, ctx: Any) -> Attempt:
        check_known_params(ctx, NAME, [])
        settings = model_settings(ctx, NAME)
        started = time.monotonic()
        problem = ctx.problem
        derive_prompt = render("two_step_derive", problem=problem.statement.strip())
        try:
            derivation, history = await ask(ctx, "solver", derive_prompt, settings=settings)
        except Exception as exc:  # noqa: BLE001
            status = "no_answer" if is_budget_error(exc) else "error"
            reason = budget_reason(exc) if is_budget_error(exc) else "model_error"
            return finish(ctx, NAME, status, reason, started=started,
                          details={"error": error_text(exc)})
        ctx.events("step", strategy=NAME, step="derive")
        details: dict[str, Any] = {"derivation": derivation}
        if not problem.has_template:
            return finish(ctx, NAME, "complete", "answered", started=started,
                          answer_text=derivation, details=details)
        populate_prompt = render("two_step_populate", requirements=answer_requirements(problem))
        try:
            filled, _ = await ask(ctx, "formatter", populate_prompt, settings=settings,
                                  history=history)
        except Exception as exc:  # noqa: BLE001
            details["error"] = error_text(exc)
            # The derivation is the best answer we have; its code (if it wrote one) is kept.
            status = "partially_complete" if is_budget_error(exc) else "error"
            reason = budget_reason(exc) if is_budget_error(exc) else "model_error"
            return finish(ctx, NAME, status, reason, started=started, answer_text=derivation,
                          answer_code=extract_code(derivation), details=details)
        details["populate_reply"] = filled
        code = extract_code(filled)
        return finish(ctx, NAME, "complete" if code else "no_answer",
                      "answered" if code else "no_code_in_reply", started=started,
                      answer_text=derivation + "\n\n" + filled, answer_code=code, details=details)


def strategy() -> TwoStep:
    return TwoStep()
