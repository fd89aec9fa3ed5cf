"""multi-round: reasoning rounds, every earlier round's reasoning carried forward within the model's context
(Algorithm 1, line 7), an answer recorded after every round."""

from __future__ import annotations

from sampling_ctx import make_ctx, solution

from physlab.llm.scripted import last_user_text
from physlab.llm.usage import Budget
from physlab.strategies.multi_round import MultiRound

ANSWERS = ["1 - p", "1 - 2*p", "(1 - p)**2"]


def _scenario(log: dict, pad: int = 0):
    def factory():
        state = {"reasoner": 0, "summarizer": 0}

        def respond(role, messages, info):
            state[role] += 1
            n = state[role]
            log.setdefault(role, []).append(last_user_text(messages))
            if role == "reasoner":
                return f"reasoning of round {n - 1}" + " (a long derivation)" * pad
            # the summarizer continues the round's conversation: its reasoning is in context
            log.setdefault("contexts", []).append(str(messages))
            return solution(ANSWERS[min(n - 1, len(ANSWERS) - 1)], reasoning=f"summary-{n - 1}")
        return respond
    return factory


async def test_every_round_builds_on_the_reasoning_of_all_rounds_before(tmp_path):
    log: dict = {}
    ctx = make_ctx(tmp_path, _scenario(log))
    attempt = await MultiRound.configured({"extra_rounds": 2}).run(ctx)
    assert attempt.status == "complete"
    answers = attempt.details["answers"]
    assert len(answers) == 3
    for code, expr in zip(answers, ANSWERS):
        assert f"F = {expr}" in code
    assert "(1 - p)**2" in attempt.answer_code  # the last round's answer is final
    first, second, third = log["reasoner"]
    assert "previous rounds" not in first and "neither fails" in first
    # Algorithm 1, line 7: PreviousThinking += Reasoning -- round 2 sees rounds 0 and 1, in order
    assert "reasoning of round 0" in second
    assert third.index("reasoning of round 0") < third.index("reasoning of round 1")
    assert attempt.details["rounds"][2]["carried"] == ["full", "full"]
    assert "reasoning of round 1" in log["contexts"][1]  # the conclusion is drawn from the reasoning above
    assert attempt.usage.calls == 6
    assert set(attempt.usage_by_role) == {"reasoner", "summarizer"}
    # a checkpoint per round whose answer changed, at what the run had spent by then
    assert [c.step for c in ctx.checkpoints] == ["round 0", "round 1", "round 2"]
    assert [c.calls for c in ctx.checkpoints] == [2, 4, 6]


async def test_what_no_longer_fits_the_context_is_carried_by_its_conclusion(tmp_path):
    log: dict = {}
    ctx = make_ctx(tmp_path, _scenario(log, pad=100))  # ~2,000 characters of reasoning a round
    attempt = await MultiRound.configured({"extra_rounds": 3, "context_tokens": 2000}).run(ctx)
    assert attempt.status == "complete" and attempt.details["context_tokens"] == 2000
    last = log["reasoner"][-1]
    carried = attempt.details["rounds"][-1]["carried"]
    assert carried[-1] == "full" and "conclusion" in carried  # the newest whole, older ones by conclusion
    assert "reasoning of round 2" in last and "summary-0" in last and "reasoning of round 0" not in last
    assert len(last) < 2000 * 3 * 0.5 + 2000  # within half the window, plus the problem and instructions


async def test_budget_keeps_last_recorded_answer(tmp_path):
    log: dict = {}
    ctx = make_ctx(tmp_path, _scenario(log), budget=Budget(max_calls=3))
    attempt = await MultiRound().run(ctx)
    assert attempt.status == "partially_complete"
    assert "F = 1 - p" in attempt.answer_code
    assert attempt.details["rounds"][-1]["error"].startswith("BudgetExceeded")
    assert len([a for a in attempt.details["answers"] if a]) == 1
    assert attempt.ran_as == "1 of 5 rounds"  # the cap made it something else: reported as such
