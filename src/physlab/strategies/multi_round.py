"""`multi-round`: TPBench sequential multi-round reasoning (§3.2, Algorithm 1).

Round 0 reasons from the problem alone (role ``reasoner``); each later round reasons from the
problem plus the summary of the rounds before (the summary, not the full transcript, is carried,
to bound the context). After every round a separate request (role ``summarizer``) concludes that
round's reasoning into one final result and the filled template; that conclusion is the answer
recorded for the round and the summary carried into the next one. ``extra_rounds`` (default 4, the
paper's largest "4+Round") rounds follow the first; the final answer is the last round that gave
one. Every round's answer is in ``details.rounds``.
"""

from __future__ import annotations

import time
from typing import Any

from physlab.strategies.base import Attempt
from physlab.strategies.tpbench_common import (
    answer_requirements, ask, budget_reason, check_known_params, error_text, extract_code,
    finish, is_budget_error, load_prompt, model_settings, param_int, render,
)

NAME = "multi-round"


class MultiRound:
    name = NAME

    async def run(self, ctx: Any) -> Attempt:
        check_known_params(ctx, NAME, ["extra_rounds"])
        # --max-iterations N means N reasoning rounds in all when extra_rounds is not given
        iterations = (ctx.params or {}).get("max_iterations")
        default_extra = int(iterations) - 1 if isinstance(iterations, int) else 4
        extra = param_int(ctx, NAME, "extra_rounds", default_extra, minimum=0)
        settings = model_settings(ctx, NAME)
        started = time.monotonic()
        problem = ctx.problem
        statement = problem.statement.strip()
        summarize = render("multi_round_summarize", requirements=answer_requirements(problem))
        rounds: list[dict[str, Any]] = []
        summary: str | None = None
        best: tuple[str, str | None] | None = None  # (text, code) of the latest answer
        stop: BaseException | None = None
        for r in range(extra + 1):
            if summary is None:
                prompt = render("multi_round_initial", problem=statement)
            else:
                prompt = render("multi_round_next",
                                instructions=load_prompt("multi_round_instructions").strip(),
                                problem=statement, summary=summary)
            record: dict[str, Any] = {"round": r}
            try:
                reasoning, history = await ask(ctx, "reasoner", prompt, settings=settings)
                record["reasoning_chars"] = len(reasoning)
                conclusion, _ = await ask(ctx, "summarizer", summarize, settings=settings,
                                          history=history)
            except Exception as exc:  # noqa: BLE001
                record["error"] = error_text(exc)
                rounds.append(record)
                stop = exc
                break
            code = extract_code(conclusion) if problem.has_template else None
            record.update(answer_code=code, conclusion=conclusion)
            rounds.append(record)
            ctx.events("round", strategy=NAME, round=r, has_answer=bool(code or conclusion))
            if code or not problem.has_template:
                best = (conclusion, code)
            summary = conclusion
        details = {"extra_rounds": extra, "rounds": rounds,
                   "answers": [r.get("answer_code") for r in rounds]}
        if stop is not None:
            budget = is_budget_error(stop)
            reason = budget_reason(stop) if budget else "model_error"
            if best is None:
                return finish(ctx, NAME, "no_answer" if budget else "error", reason,
                              started=started, details=details)
            return finish(ctx, NAME, "partially_complete" if budget else "error", reason,
                          started=started, answer_text=best[0], answer_code=best[1],
                          details=details)
        if best is None:
            return finish(ctx, NAME, "no_answer", "no_code_in_reply", started=started,
                          details=details)
        return finish(ctx, NAME, "complete", "rounds_done", started=started, answer_text=best[0],
                      answer_code=best[1], details=details)


def strategy() -> MultiRound:
    return MultiRound()
