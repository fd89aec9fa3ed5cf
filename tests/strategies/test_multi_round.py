"""multi-round: reasoning rounds, a summary carried forward, an answer recorded after every round."""

from __future__ import annotations

from physlab.llm.scripted import last_user_text
from physlab.llm.usage import Budget
from physlab.strategies.multi_round import MultiRound

from sampling_ctx import make_ctx, solution

ANSWERS = ["1 - p", "1 - 2*p", "(1 - p)**2"]


def _scenario(log: dict):
    def factory():
        state = {"reasoner": 0, "summarizer": 0}

        def respond(role, messages, info):
            state[role] += 1
            n = state[role]
            log.setdefault(role, []).append(last_user_text(messages))
            if role == "reasoner":
                return f"reasoning of round {n - 1}"
            # the summarizer continues the round's conversation: its reasoning is in context
            log.setdefault("contexts", []).append(str(messages))
            return solution(ANSWERS[min(n - 1, len(ANSWERS) - 1)], reasoning=f"summary-{n - 1}")
        return respond
    return factory


async def test_rounds_record_answers_and_carry_the_summary(tmp_path):
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
    assert "Summary" not in first and "neither fails" in first
    assert "summary-0" in second and "summary-1" in third and "summary-0" not in third
    assert "reasoning of round 1" in log["contexts"][1]
    assert attempt.usage.calls == 6
    assert set(attempt.usage_by_role) == {"reasoner", "summarizer"}


async def test_budget_keeps_last_recorded_answer(tmp_path):
    log: dict = {}
    ctx = make_ctx(tmp_path, _scenario(log), budget=Budget(max_calls=3))
    attempt = await MultiRound().run(ctx)
    assert attempt.status == "partially_complete"
    assert "F = 1 - p" in attempt.answer_code
    assert attempt.details["rounds"][-1]["error"].startswith("BudgetExceeded")
    assert len([a for a in attempt.details["answers"] if a]) == 1
