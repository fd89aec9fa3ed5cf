"""Checkpoints: a run's best answer so far, with what it had spent when that answer became best.

Every strategy records one whenever its best answer changes (the lab per iteration, RSA per
round, TPBench after each sample and verification, Minions and SCALAR per round). The runner
grades each distinct answer once; a sweep stores them beside the cell, and the report reads each
strategy's accuracy at any token or cost cap off them, from one sweep (`physlab bench report`).
The run's final answer at its full spend is the cell itself, not a checkpoint.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from pydantic import BaseModel, Field

from physlab.grading.verdict import Verdict
from physlab.llm.usage import Usage

T = TypeVar("T")
K = TypeVar("K")


class Checkpoint(BaseModel):
    step: str = Field(description="Where in the run it became best: 'round 2', 'sample 5', 'iteration 3'.")
    answer_code: str | None = None
    answer_text: str | None = None
    calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0
    verdict: Verdict | None = Field(default=None, description="The grader's, filled by the runner.")

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens

    @property
    def has_answer(self) -> bool:
        return bool(self.answer_code or self.answer_text)


def record_best(ctx: Any, step: str, *, answer_code: str | None = None, answer_text: str | None = None,
                spent: Usage | None = None) -> None:
    """Note that the run's best answer is now this one, at what ``ctx.usage`` has spent so far (or
    at ``spent``, read when the answer arrived, for a best found once a batch is back). An answer
    equal to the last one noted is no new checkpoint: it became best earlier."""
    if not (answer_code or answer_text):
        return
    log: list[Checkpoint] = ctx.checkpoints
    if log and (log[-1].answer_code, log[-1].answer_text) == (answer_code, answer_text):
        return
    spent = spent if spent is not None else ctx.usage.total()
    log.append(Checkpoint(step=step, answer_code=answer_code, answer_text=answer_text, calls=spent.calls,
                          input_tokens=spent.input_tokens, output_tokens=spent.output_tokens,
                          cost_usd=spent.cost_usd))


def record_as_they_came(ctx: Any, finished: Sequence[tuple[T, Usage]], leader: Callable[[list[T]], K | None],
                        answer: Callable[[K], tuple[str | None, str | None]], step: str) -> None:
    """Checkpoints of a choice made once a batch is back (a vote, verifier scores), replayed in the
    order the batch came in: ``finished`` holds (result, spend when it arrived) in that order,
    ``leader(results so far)`` the choice they would make then (None: none yet) and
    ``answer(choice)`` its (code, text). Each time the choice changes, that answer became best."""
    shown: K | None = None
    for n in range(1, len(finished) + 1):
        best = leader([item for item, _ in finished[:n]])
        if best is not None and best != shown:
            shown = best
            code, text = answer(best)
            record_best(ctx, f"{step} {n}", answer_code=code, answer_text=text, spent=finished[n - 1][1])


async def grade_checkpoints(checkpoints: list[Checkpoint], grader: Any) -> None:
    """Give every checkpoint with an answer the grader's verdict, grading each distinct answer once."""
    seen: dict[str, Verdict] = {}
    for cp in checkpoints:
        if not cp.has_answer or cp.verdict is not None:
            continue
        candidate = cp.answer_code or cp.answer_text or ""
        if candidate not in seen:
            try:
                seen[candidate] = await grader.grade(candidate)
            except Exception as exc:  # noqa: BLE001 - a grader failure must not lose the run
                seen[candidate] = Verdict(verdict="invalid", reason=f"grader failed: {type(exc).__name__}: {exc}"[:500])
        cp.verdict = seen[candidate].model_copy(deep=True)
