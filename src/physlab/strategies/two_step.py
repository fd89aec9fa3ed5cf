"""`two-step`: CritPt's default procedure (:mod:`physlab.strategies.critpt_protocol`).

Call 1 (role ``solver``) has CritPt's two-step system prompt and the problem only, and derives a
solution ending in "Final Answer:". Call 2 (role ``formatter``) continues the same conversation
(the system prompt and the first reply in its context) with CritPt's template step: transcribe the
final answer into the template, no new reasoning, no import beyond the template's. An open question
(no template) needs only call 1.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from physlab.grading.extract import extract_code
from physlab.run.environment import RunEnvironment
from physlab.run.events import Step
from physlab.strategies.base import Attempt, Strategy
from physlab.strategies.critpt_protocol import TwoStepParams, user_message
from physlab.strategies.sampling import ask, ended_by, error_text, finish, model_settings


class TwoStep(Strategy[TwoStepParams]):
    """CritPt's procedure: derive freely, then fill the template in the same conversation."""

    name = "two-step"
    Params = TwoStepParams

    async def run(self, ctx: RunEnvironment) -> Attempt:
        settings = model_settings(self.params)
        started = time.monotonic()
        problem = ctx.problem
        # a prompt file is read now, when the run starts, and rendered in a child process (off the loop)
        protocol = await asyncio.to_thread(self.params.protocol)
        template = problem.answer_template or ""
        system = await asyncio.to_thread(protocol.system, "two-step", template)
        try:
            derivation, history = await ask(ctx, "solver", user_message(problem, with_template=False),
                                            system=system, settings=settings)
        except Exception as exc:  # noqa: BLE001
            status, reason = ended_by(exc, answered=False)
            return finish(ctx, self.name, status, reason, started=started, details={"error": error_text(exc)})
        ctx.events(Step(strategy=self.name, step="derive"))
        details: dict[str, Any] = {"derivation": derivation}
        if not problem.has_template:
            return finish(ctx, self.name, "complete", "answered", started=started,
                          answer_text=derivation, details=details)
        try:
            # The system prompt stays with the conversation, as in CritPt's pipeline.
            parse = await asyncio.to_thread(protocol.parse, template)
            filled, _ = await ask(ctx, "formatter", parse, system=system, settings=settings,
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
