"""`two-step`: CritPt's default procedure.

Call 1 (role ``solver``) sees the problem only and derives a free-form solution ending in
"Final Answer:". Call 2 (role ``formatter``) continues the same conversation (the first reply is
in its context) and fills the answer template. An open question (no template) needs only call 1.
"""

from __future__ import annotations

import time
from typing import Any

from physlab.grading.extract import extract_code
from physlab.run.environment import RunEnvironment
from physlab.strategies.base import Attempt, Strategy
from physlab.strategies.params import ModelParams
from physlab.strategies.sampling import (
    answer_requirements,
    ask,
    ended_by,
    error_text,
    finish,
    model_settings,
    render,
)


class TwoStep(Strategy[ModelParams]):
    """CritPt's procedure: derive freely, then fill the template in the same conversation."""

    name = "two-step"
    Params = ModelParams

    async def run(self, ctx: RunEnvironment) -> Attempt:
        settings = model_settings(self.params)
        started = time.monotonic()
        problem = ctx.problem
        derive_prompt = render("two_step_derive", problem=problem.statement.strip())
        try:
            derivation, history = await ask(ctx, "solver", derive_prompt, settings=settings)
        except Exception as exc:  # noqa: BLE001
            status, reason = ended_by(exc, answered=False)
            return finish(ctx, self.name, status, reason, started=started, details={"error": error_text(exc)})
        ctx.events("step", strategy=self.name, step="derive")
        details: dict[str, Any] = {"derivation": derivation}
        if not problem.has_template:
            return finish(ctx, self.name, "complete", "answered", started=started,
                          answer_text=derivation, details=details)
        populate_prompt = render("two_step_populate", requirements=answer_requirements(problem))
        try:
            filled, _ = await ask(ctx, "formatter", populate_prompt, settings=settings,
                                  history=history)
        except Exception as exc:  # noqa: BLE001
            details["error"] = error_text(exc)
            # The derivation is the best answer we have; its code (if it wrote one) is kept.
            status, reason = ended_by(exc, answered=True)
            return finish(ctx, self.name, status, reason, started=started, answer_text=derivation,
                          answer_code=extract_code(derivation), details=details)
        details["populate_reply"] = filled
        code = extract_code(filled)
        return finish(ctx, self.name, "complete" if code else "no_answer",
                      "answered" if code else "no_code_in_reply", started=started,
                      answer_text=derivation + "\n\n" + filled, answer_code=code, details=details)
