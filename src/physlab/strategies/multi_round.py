"""`multi-round`: TPBench sequential multi-round reasoning (§3.2, Algorithm 1, prompts of Appendix A.2).

Round 0 reasons from the problem alone (role ``reasoner``). After every round a separate request
(role ``summarizer``), continuing that round's conversation, concludes its reasoning into one final
result and the filled template (line 8); that conclusion is the round's answer. Each later round
reasons from the general instructions, the problem and the summaries of the rounds before it: the
paper carries "Summary from Previous Iterations Reasoning" to limit the context (§3.2, A.2's
subsequent-iteration prompt). ``carry=reasoning`` (PhysLab's switch) carries each earlier round's
full reasoning instead (Algorithm 1's line 7 read literally), the newest in full while they fit
the model's context and older ones by their summary. Either way what no longer fits is left out,
oldest first. ``extra_rounds`` (default 4, the paper's largest "4+Round") rounds follow the first;
the final answer is the last round that gave one. Every round's answer, and what each round was
shown, is in ``details.rounds``.
"""

from __future__ import annotations

import time
from typing import Any, Literal

from physlab.grading.extract import extract_code
from physlab.run.checkpoints import record_best
from physlab.run.environment import RunEnvironment
from physlab.run.events import Round
from physlab.strategies.base import Attempt, Strategy
from physlab.strategies.params import TPBENCH, ModelParams, param
from physlab.strategies.sampling import (
    answer_requirements,
    ask,
    ended_by,
    error_text,
    finish,
    load_prompt,
    model_settings,
    render,
)

CONTEXT_FALLBACK = 128_000  # tokens, for a model whose context window pydantic-ai does not know
CARRY_SHARE = 0.5  # of the window for earlier rounds; the rest for the problem, the new round and its conclusion
CHARS_PER_TOKEN = 3  # a cautious estimate (LaTeX-heavy text runs below English's ~4); no tokenizer for every provider


class MultiRoundParams(ModelParams):
    extra_rounds: int = param(4, "Reasoning rounds after the first, each from the reasoning of the ones before.",
                              f"{TPBENCH} §4.3, Tables 1-3: the largest setting, '4+Round Reasoning'", ge=0)
    carry: Literal["summary", "reasoning"] = param(
        "summary", "What a round is shown of the rounds before it: their summaries, or their full reasoning.",
        f"{TPBENCH} §3.2 and Appendix A.2: 'Summary from Previous Iterations Reasoning' ('reasoning' is "
        "PhysLab's switch)")
    context_tokens: int | None = param(
        None, "The model's context window in tokens (unset: what pydantic-ai knows of the model, from its "
              f"profile or genai-prices, else {CONTEXT_FALLBACK:,}); earlier rounds are carried within half of it.",
        f"{TPBENCH} §3.2: accumulate the reasoning 'to limit context length' by summaries", ge=1000)

    @classmethod
    def from_max_iterations(cls, n: int) -> dict[str, Any]:
        return {"extra_rounds": n - 1}  # --max-iterations N: N rounds in all


class MultiRound(Strategy[MultiRoundParams]):
    """TPBench's sequential multi-round reasoning, carrying a summary from round to round."""

    name = "multi-round"
    Params = MultiRoundParams

    async def run(self, ctx: RunEnvironment) -> Attempt:
        extra = self.params.extra_rounds
        settings = model_settings(self.params)
        started = time.monotonic()
        problem = ctx.problem
        statement = problem.statement.strip()
        window = self.params.context_tokens or ctx.models.for_role("reasoner").context_window or CONTEXT_FALLBACK
        summarize = render("multi_round_summarize", requirements=answer_requirements(problem))
        instructions = load_prompt("multi_round_instructions").strip()
        rounds: list[dict[str, Any]] = []
        thinking: list[tuple[str, str]] = []  # (reasoning, conclusion) of every finished round
        best: tuple[str, str | None] | None = None  # (text, code) of the latest answer
        stop: BaseException | None = None
        for r in range(extra + 1):
            record: dict[str, Any] = {"round": r}
            if not thinking:
                prompt = render("multi_round_initial", problem=statement)
            else:
                previous, record["carried"] = carried(thinking, int(window * CARRY_SHARE) * CHARS_PER_TOKEN,
                                                      summaries_only=self.params.carry == "summary")
                prompt = render("multi_round_next", instructions=instructions, problem=statement, previous=previous)
            try:
                reasoning, history = await ask(ctx, "reasoner", prompt, settings=settings)
                record["reasoning_chars"] = len(reasoning)
                conclusion, _ = await ask(ctx, "summarizer", summarize, settings=settings, history=history)
            except Exception as exc:  # noqa: BLE001
                record["error"] = error_text(exc)
                rounds.append(record)
                stop = exc
                break
            code = extract_code(conclusion) if problem.has_template else None
            record.update(answer_code=code, conclusion=conclusion)
            rounds.append(record)
            thinking.append((reasoning, conclusion))
            ctx.events(Round(strategy=self.name, round=r, has_answer=bool(code or conclusion)))
            if code or not problem.has_template:
                best = (conclusion, code)
                record_best(ctx, f"round {r}", answer_code=code, answer_text=conclusion)
        details = {"extra_rounds": extra, "context_tokens": window, "rounds": rounds,
                   "answers": [r.get("answer_code") for r in rounds]}
        if stop is not None:
            status, reason = ended_by(stop, answered=best is not None)
            attempt = finish(ctx, self.name, status, reason, started=started,
                             answer_text=best[0] if best else None, answer_code=best[1] if best else None,
                             details=details)
            attempt.ran_as = f"{len(thinking)} of {extra + 1} rounds"  # stopped early: not the full multi-round
            return attempt
        if best is None:
            return finish(ctx, self.name, "no_answer", "no_code_in_reply", started=started,
                          details=details)
        return finish(ctx, self.name, "complete", "rounds_done", started=started, answer_text=best[0],
                      answer_code=best[1], details=details)


def carried(thinking: list[tuple[str, str]], limit_chars: int, *, summaries_only: bool = False
            ) -> tuple[str, list[str]]:
    """The earlier rounds as the next round is shown them, within ``limit_chars``. With
    ``summaries_only`` each round by its summary (the paper); otherwise the newest in full while they
    fit, then older ones by their summary. The oldest is left out if even that does not fit. Returns
    the text and, per round, what went in ("full", "summary" or "left out")."""
    kept: list[str] = []
    how: list[str] = []
    used, whole = 0, not summaries_only
    for k in range(len(thinking) - 1, -1, -1):
        reasoning, conclusion = thinking[k]
        full = f"## Round {k + 1}\n{reasoning.strip()}"
        short = f"## Round {k + 1} (its summary)\n{conclusion.strip()}"
        whole = whole and used + len(full) <= limit_chars  # once a round is cut short, older ones are too
        part = full if whole else short if used + len(short) <= limit_chars else None
        how.append("left out" if part is None else "full" if whole else "summary")
        if part is not None:
            kept.append(part)
            used += len(part) + 2
    return "\n\n".join(reversed(kept)), list(reversed(how))
