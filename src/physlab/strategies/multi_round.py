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

from physlab.grading.extract import extract_code
from physlab.runs.context import RunContext
from physlab.strategies.base import Attempt, Strategy
from physlab.strategies.params import TPBENCH, ModelParams, param
from physlab.strategies.sampling import (
    answer_requirements, ask, ended_by, error_text, finish, load_prompt, model_settings, render,
)


class MultiRoundParams(ModelParams):
    extra_rounds: int = param(4, "Reasoning rounds after the first, each from the summary of the ones before.",
                              f"{TPBENCH} §4.3, Tables 1-3: the largest setting, '4+Round Reasoning'", ge=0)

    @classmethod
    def from_max_iterations(cls, n: int) -> dict[str, Any]:
        return {"extra_rounds": n - 1}  # --max-iterations N: N rounds in all


class MultiRound(Strategy[MultiRoundParams]):
    """TPBench's sequential multi-round reasoning, carrying a summary from round to round."""

    name = "multi-round"
    Params = MultiRoundParams

    async def run(self, ctx: RunContext) -> Attempt:
        extra = self.params.extra_rounds
        settings = model_settings(self.params)
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
            ctx.events("round", strategy=self.name, round=r, has_answer=bool(code or conclusion))
            if code or not problem.has_template:
                best = (conclusion, code)
            summary = conclusion
        details = {"extra_rounds": extra, "rounds": rounds,
                   "answers": [r.get("answer_code") for r in rounds]}
        if stop is not None:
            status, reason = ended_by(stop, answered=best is not None)
            return finish(ctx, self.name, status, reason, started=started,
                          answer_text=best[0] if best else None, answer_code=best[1] if best else None,
                          details=details)
        if best is None:
            return finish(ctx, self.name, "no_answer", "no_code_in_reply", started=started,
                          details=details)
        return finish(ctx, self.name, "complete", "rounds_done", started=started, answer_text=best[0],
                      answer_code=best[1], details=details)

